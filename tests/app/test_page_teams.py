"""AppTest of the review teams: an admin sets k and spreads a drawn sample over a pool on the Users page and reads
the workload there; a reviewer's My work shows only the items assigned to them."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.access import SERVER
from objrel.review import teams as T
from objrel.review.roles import actor_of
from objrel.store import Store
from objrel.store import reviews as review_rows
from tests.review.test_review import make_run

ROOT = Path(__file__).resolve().parents[2]
USERS = str(ROOT / "pages" / "users.py")
MY_WORK = str(ROOT / "pages" / "my_work.py")
POOL = ("ann", "ben", "cat", "dan")
ITEMS = [f"s{i:02d}" for i in range(8)]
RELATION = "MR-2"


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = Store(tmp_path / "teams.db")
    R.create_reviewer(s, "root", "root-passphrase", roles=[R.ADMIN])
    for name in POOL:
        R.create_reviewer(s, name, f"{name}-passphrase", roles=[R.REVIEWER])
    rid = make_run(s, mr2=ITEMS)
    R.draw_review_sample(SERVER, s, rid, RELATION)
    monkeypatch.setenv("OBJREL_STORE", s.url)
    yield s
    s.dispose()


def open_page(page: str, who: str) -> AppTest:
    at = AppTest.from_file(page, default_timeout=60)
    at.session_state["reviewer"] = who
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_an_admin_sets_k_spreads_the_sample_and_reads_the_workload(store):
    at = open_page(USERS, "root")
    at.number_input(key="teams_k_value").set_value(3)
    at.button(key="teams_k_btn").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert R.review_sample_info(store, 1, RELATION).k == 3
    at.button(key="teams_spread_btn").click().run()     # the pool is every reviewer: the four of them
    assert not at.exception, [e.value for e in at.exception]
    teams = T.teams(store, 1, RELATION)
    assert len(teams) == len(ITEMS) and all(len(t) == 3 for t in teams.values())
    assert any("each item has 3 reviewers from a pool of 4" in s.value for s in at.success)
    table = at.dataframe[-1].value            # the workload, the last table of the page
    assert list(table["reviewer"]) == list(POOL) and set(table["items"]) == {6} and set(table["judged"]) == {0}
    # k is fixed once the sample is assigned
    assert at.number_input(key="teams_k_value").disabled


def test_a_reviewers_my_work_lists_only_the_items_assigned_to_them(store):
    T.assign_reviewers(actor_of(store, "root"), store, 1, RELATION,
                       {sid: ("ann", "ben") if i < 3 else ("cat", "dan") for i, sid in enumerate(ITEMS)})
    at = open_page(MY_WORK, "ann")
    shown = " ".join(m.value for m in at.markdown)
    assert "your 3 of the sample" in shown and "2 reviewers each" in shown
    assert any("0 of 3 judged" in str(p.proto) for p in at.get("progress"))


def test_reviewers_see_no_team_section(store):
    at = open_page(USERS, "ann")
    assert not [b for b in at.button if b.key and b.key.startswith("teams_")]


def test_the_adjudicator_decides_on_the_agreement_page_an_item_where_only_a_third_reviewer_differs(store):
    """Items judged by three reviewers each: the page's pair (ann and ben) agree on every item, cat differs on one;
    that item is listed with all three calls and decided there."""
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    root = actor_of(store, "root")
    T.set_reviewers_per_item(root, store, 1, RELATION, 3)
    T.assign_reviewers(root, store, 1, RELATION, {sid: ("ann", "ben", "cat") for sid in ITEMS})
    odd = ITEMS[5]
    for name in ("ann", "ben", "cat"):
        for sid in ITEMS:
            verdict = "fp" if (name, sid) == ("cat", odd) else "tp"
            R.record_judgment(actor_of(store, name), store, 1, sid, RELATION, verdict,
                              ["multiple-objects"] if verdict == "fp" else ())
    at = AppTest.from_file(str(ROOT / "pages" / "agreement.py"), default_timeout=60)
    at.session_state["reviewer"] = "carol"
    at.query_params["run"], at.query_params["relation"] = "1", RELATION
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Items without consensus" in h.value for h in at.subheader)
    shown = " ".join(m.value for m in at.markdown)
    assert f"Item {odd}" in shown and "cat" in shown
    key = f"team_1_{RELATION}_{odd}"
    at.radio(key=f"{key}_verdict").set_value("tp")
    at.button(key=f"{key}_submit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert review_rows.adjudicator_of(store, 1, odd, RELATION) == "carol"
