"""Three reviewers in three browser contexts on one served app: a comment thread stays hidden from the other
reviewers until the review sample closes (k = 3: all three judged every item), and a gold item an admin marked
is scored in each reviewer's calibration once it does."""

from __future__ import annotations

import re

import pytest

from objrel import review
from objrel.access import SERVER
from objrel.review.gold import mark_gold
from objrel.review.roles import actor_of
from tests.e2e.app_server import serving
from tests.e2e.test_e2e_browser import (CHROMIUM, CHROMIUM_ARGS, current_sample, judge_all, passphrase, settled,
                                        sign_in)

pytestmark = [pytest.mark.browser, pytest.mark.subprocess]

REL = "MR-2"
K = 3
ACCOUNTS = {"alice": (review.REVIEWER,), "bob": (review.REVIEWER,), "erin": (review.REVIEWER,),
            "dave": (review.ADMIN,)}
GOLD_ITEM, GOLD_CALL = "1", "tp"          # the admin's known call on sample 1
# Each reviewer's calls on the six flagged items (sample ids 1..6): erin misses the gold item.
CALLS = {"alice": dict.fromkeys("123456", "tp"),
         "bob": {**dict.fromkeys("123456", "tp"), "4": "fp"},
         "erin": {**dict.fromkeys("123456", "tp"), GOLD_ITEM: "fp"}}
COMMENT = "alice-thread-7f the background patch leaks into the mug"


@pytest.fixture
def three_reviewers(flagged_store, tmp_path):
    store, run_id = flagged_store
    for name, roles in ACCOUNTS.items():
        review.create_reviewer(store, name, passphrase(name), roles=roles)
    review.draw_review_sample(SERVER, store, run_id, REL, k=K)
    mark_gold(actor_of(store, "dave"), store, run_id, REL, GOLD_ITEM, GOLD_CALL)
    with serving(tmp_path, store.url) as base:
        yield base, store, run_id


def thread_box(page):
    """The item's comment thread (a closed expander under the judging form)."""
    return page.locator('[data-testid="stExpander"]', has=page.locator("summary", has_text="Comments")).first


def open_thread(page):
    box = thread_box(page)
    box.locator("summary").click()
    box.get_by_role("button", name="Post comment").wait_for(timeout=30_000)
    return box


def test_three_reviewers_a_thread_hidden_until_close_and_a_gold_item_in_calibration(three_reviewers):
    from playwright.sync_api import sync_playwright

    base, store, run_id = three_reviewers
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        pages = {}
        for name in CALLS:      # one browser context each: three separate sessions side by side
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.set_default_timeout(60_000)
            sign_in(page, base, name)
            page.locator("h3", has_text="(sample ").first.wait_for()
            settled(page)
            pages[name] = page

        # alice writes on her first item, then judges the sample
        alice = pages["alice"]
        item = current_sample(alice)
        box = open_thread(alice)
        box.get_by_label("Comment", exact=True).fill(COMMENT)
        box.get_by_label("Comment", exact=True).press("Control+Enter")
        settled(alice)
        box.get_by_role("button", name="Post comment").click()
        alice.get_by_text("Comment posted.").wait_for()
        alice.get_by_text(COMMENT).wait_for()
        judge_all(alice, CALLS["alice"])

        # bob, on the same first item: the thread tells him one entry waits, never its words
        bob = pages["bob"]
        bob.reload()
        bob.locator("h3", has_text="(sample ").first.wait_for()
        settled(bob)
        assert current_sample(bob) == item
        assert "1 hidden until the sample closes" in thread_box(bob).locator("summary").inner_text()
        open_thread(bob)
        assert COMMENT not in bob.content() and "alice-thread-7f" not in bob.content()
        judge_all(bob, CALLS["bob"])
        # two of three closed: still blind
        assert not review.sample_state(store, run_id, REL).closed
        bob.reload()
        settled(bob)
        assert "alice-thread-7f" not in bob.content()

        # erin closes the sample with her last call; her calibration scores the gold item
        erin = pages["erin"]
        judge_all(erin, CALLS["erin"])
        assert review.sample_state(store, run_id, REL).closed
        erin.get_by_text("Calibration: run").wait_for()
        erin.get_by_text(re.compile(r"Gold items, erin: 0 of 1 gold items right \(0%\)")).wait_for()
        erin.get_by_text(re.compile(r"Gold items, alice: 1 of 1 gold items right \(100%\)")).wait_for()

        # once closed, bob reads alice's words on the item
        bob.goto(f"{base}/review?run={run_id}&relation={REL}&queue=sample&item={item}")
        bob.locator("h3", has_text=f"(sample {item})").first.wait_for()
        settled(bob)
        summary = thread_box(bob).locator("summary").inner_text()
        assert "Comments (1, open)" in summary and "hidden" not in summary
        open_thread(bob)
        bob.get_by_text("alice-thread-7f").wait_for()
        assert {(j.reviewer, j.sample_id): j.verdict for j in review.judgments(store, run_id, REL)} == {
            (who, sid): call for who, calls in CALLS.items() for sid, call in calls.items()}
        browser.close()
