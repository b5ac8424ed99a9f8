"""The review loop in a real browser (Debian's chromium through Playwright) on the demo store.

Keys work whatever the mouse did last: after a click on "valid test" and on a false-positive reason the call's
key still saves the call, on that item, with those answers.  A key pressed twice saves one call on the item
shown and none on the next.  A note takes every letter typed into it (none is a call) and Escape leaves it.
On every demo item the call buttons sit on the first screen, at 1,400 x 900 and at 900 x 800.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest

from objrel import review
from objrel.store import Store
from tests.e2e.app_server import serving
from tests.e2e.test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, settled

pytestmark = [pytest.mark.browser, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("OBJREL_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "review-keys"
PASSPHRASE = "alice-demo-pass"
RELATION = "MR-2"
SIZES = ((1400, 900), (900, 800))


@pytest.fixture
def demo_server(tmp_path, demo_db):
    db = tmp_path / "demo.db"
    shutil.copyfile(demo_db, db)
    store = Store(str(db))
    with serving(tmp_path, str(db)) as base:
        yield base, store
    store.dispose()


def three_colour_run(store: Store) -> int:
    return next(r.id for r in store.list_runs() if "3 colours" in r.name)


def open_review(browser, base: str, params: dict, size=(1400, 900)):
    """A new browser context signed in as alice on Review at ``params``, the sign-in stored in the browser."""
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{base}/review?{urlencode(params)}")
    page.get_by_label("Name").fill("alice")
    page.get_by_label("Passphrase").fill(PASSPHRASE)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text("Signed in as alice").wait_for()
    page.get_by_text("Saving your sign-in").wait_for(state="detached")
    deadline = time.time() + 30                     # the cookie reaches the browser a moment after that line goes
    while not any(c["name"] == "objrel_session" for c in ctx.cookies()) and time.time() < deadline:
        time.sleep(0.1)
    settled(page)
    return page


def shown_item(page) -> str:
    text = page.locator("h3", has_text="(sample ").first.inner_text()
    return re.search(r"\(sample (\S+)\)", text).group(1)


def wait_for_item_after(page, item: str) -> str:
    """Wait until the page shows an item other than ``item`` and has settled; return it."""
    page.wait_for_function("""(item) => {
        const h = [...document.querySelectorAll('h3')].find(e => e.innerText.includes('(sample '));
        return h && !h.innerText.includes('(sample ' + item + ')');
    }""", arg=item)
    settled(page)
    return shown_item(page)


def mine(store: Store, run_id: int) -> dict:
    return {j.sample_id: j for j in review.judgments(store, run_id, RELATION, reviewer="alice")}


def versions(store: Store, run_id: int, sample_id: str) -> int:
    return len(review.judgment_history(review.roles.actor_of(store, "alice"), store, run_id, sample_id, RELATION,
                                       "alice"))


def test_keys_work_after_the_mouse_answered_and_a_double_press_saves_once(demo_server):
    from playwright.sync_api import sync_playwright

    base, store = demo_server
    run_id = three_colour_run(store)
    items = store.flagged_sample_ids(run_id, RELATION)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = open_review(browser, base, {"run": run_id, "relation": RELATION, "queue": "all", "item": items[0]})
        first = shown_item(page)
        assert first == items[0]

        # the mouse answers the mutant's validity and picks a reason; the focus stays in the form, and T still
        # saves the call on this item, with the validity (a reason counts only with a false positive)
        page.get_by_text("valid test", exact=True).first.click()
        page.locator('[class*="st-key-review_reason_1_"] label').first.click()
        page.keyboard.press("t")
        second = wait_for_item_after(page, first)
        saved = mine(store, run_id)
        assert (saved[first].verdict, saved[first].validity, saved[first].reasons) == ("tp", "valid", ())
        assert second == items[1] and second not in saved

        # the same with F: the reason picked with the mouse is saved with the call
        page.locator('[class*="st-key-review_reason_1_"] label').first.click()
        page.get_by_text("invalid mutant", exact=True).first.click()
        page.keyboard.press("f")
        third = wait_for_item_after(page, second)
        saved = mine(store, run_id)
        assert (saved[second].verdict, saved[second].validity, saved[second].reasons) == \
            ("fp", "invalid", ("incomplete-removal",))

        # two presses 0.1 s apart: one call on the item shown, none on the next
        page.keyboard.press("u")
        page.wait_for_timeout(100)
        page.keyboard.press("u")
        fourth = wait_for_item_after(page, third)
        page.wait_for_timeout(1500)                 # a late second call would have landed by now
        settled(page)
        saved = mine(store, run_id)
        assert saved[third].verdict == "uncertain" and versions(store, run_id, third) == 1
        assert fourth not in saved, "the second press saved a call on the next item"
        assert shown_item(page) == fourth

        # keys answer the form too: 1 ticks the first reason, Q says "unsure"; a note takes every letter (none
        # of them is a call) and Escape leaves it; F then saves all of it with the call
        page.wait_for_timeout(500)                  # a look at the item before the next key
        page.keyboard.press("1")
        page.keyboard.press("q")
        page.keyboard.press("/")
        note = page.locator('[class*="st-key-review_note_"] input').first
        page.wait_for_function("() => document.activeElement && document.activeElement.tagName === 'INPUT'")
        page.keyboard.type("tfu noted")
        assert note.input_value() == "tfu noted"
        page.keyboard.press("Escape")
        page.wait_for_function("() => !document.activeElement || document.activeElement.tagName !== 'INPUT'")
        assert fourth not in mine(store, run_id)
        page.keyboard.press("f")
        fifth = wait_for_item_after(page, fourth)
        saved = mine(store, run_id)[fourth]
        assert (saved.verdict, saved.reasons, saved.validity, saved.note) == \
            ("fp", ("multiple-objects",), "unsure", "tfu noted")

        # undo (Z) goes back to the item called last, to call it again
        page.keyboard.press("z")
        assert wait_for_item_after(page, fifth) == fourth
        browser.close()


def test_the_call_buttons_are_on_the_first_screen_on_every_demo_item(demo_server):
    from playwright.sync_api import sync_playwright

    base, store = demo_server
    queues = [(r.id, rel, sid) for r in store.list_runs() for rel in review.RELATIONS
              for sid in store.flagged_sample_ids(r.id, rel)]
    assert len(queues) >= 10, queues
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for width, height in SIZES:
            run_id, rel, sid = queues[0]
            page = open_review(browser, base, {"run": run_id, "relation": rel, "queue": "all", "item": sid},
                               (width, height))
            for run_id, rel, sid in queues:
                page.goto(f"{base}/review?{urlencode({'run': run_id, 'relation': rel, 'queue': 'all', 'item': sid})}")
                page.locator("h3", has_text=f"(sample {sid})").first.wait_for()
                settled(page)
                for name in ("True positive", "False positive", "Uncertain"):
                    box = page.get_by_role("button", name=name).first.bounding_box()
                    assert box is not None and box["y"] >= 0 and box["x"] >= 0
                    assert box["y"] + box["height"] <= height and box["x"] + box["width"] <= width, \
                        (width, height, run_id, rel, sid, name, box)
            page.screenshot(path=str(ARTIFACTS / f"item-{width}x{height}.png"))
            page.context.close()
        browser.close()
