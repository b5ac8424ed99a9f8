"""AppTest of the My work page (pages/my_work.py) through app.py's navigation."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review
from objrel.access import SERVER
from objrel.review.roles import actor_of

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


@pytest.fixture
def team(flagged_store, monkeypatch):
    """flagged_store with alice and bob (reviewers) and carol (adjudicator); MR-2's sample drawn, alice has
    judged two of its items, bob all of them, and they differ on the first."""
    store, run_id = flagged_store
    for name, role in (("alice", review.REVIEWER), ("bob", review.REVIEWER), ("carol", review.ADJUDICATOR)):
        review.create_reviewer(store, name, f"{name}-passphrase", roles=[role])
    ids = review.draw_review_sample(SERVER, store, run_id, "MR-2")
    alice, bob = actor_of(store, "alice"), actor_of(store, "bob")
    review.record_judgment(alice, store, run_id, ids[0], "MR-2", "tp")
    review.record_judgment(alice, store, run_id, ids[1], "MR-2", "tp")
    for i, sid in enumerate(ids):
        review.record_judgment(bob, store, run_id, sid, "MR-2", "fp" if i == 0 else "tp",
                               reasons=["multiple-objects"] if i == 0 else ())
    monkeypatch.setenv("OBJREL_STORE", store.url)
    return store, run_id, ids


def open_app(name: str | None) -> AppTest:
    """The app as ``name`` opens it, then its My work page (from the top bar)."""
    at = AppTest.from_file(APP, default_timeout=60)
    if name:
        at.session_state["reviewer"] = name
    at.run()
    assert not at.exception, at.exception
    at.switch_page("pages/my_work.py").run()
    assert not at.exception, at.exception
    return at


def shown(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in (at.markdown, at.info, at.caption, at.subheader, at.title)
                    for e in kind).replace("\\", "")


def test_a_reviewer_sees_their_queues_with_judged_of_total(team):
    store, run_id, ids = team
    at = open_app("alice")
    assert at.title[0].value == "My work"
    assert f"Run {run_id}, MR-2" in shown(at)
    bars = [p for p in at.get("progress")]
    assert any(f"2 of {len(ids)} judged" in p.proto.text for p in bars)
    assert "Disagreements to decide" not in shown(at)          # a reviewer never sees disagreements


def test_the_next_open_item_button_opens_review_on_it(team):
    store, run_id, ids = team
    at = open_app("alice")
    at.button(key=f"home_queue_{run_id}_MR-2").click().run()
    assert not at.exception, at.exception
    assert (at.query_params["run"], at.query_params["relation"], at.query_params["item"]) == (str(run_id), "MR-2",
                                                                                              ids[2])
    assert any(f"(sample {ids[2]})" in s.value for s in at.subheader)


def test_an_adjudicator_sees_the_open_disagreements_and_opens_agreement_on_them(team):
    store, run_id, ids = team
    at = open_app("carol")
    assert "1 open, 0 decided" in shown(at) and "Review queues" not in shown(at)
    at.button(key=f"home_dispute_{run_id}_MR-2").click().run()
    assert not at.exception, at.exception
    assert at.query_params["run"] == str(run_id) and at.query_params["relation"] == "MR-2"
    assert any(r.key == f"adj_verdict_{run_id}_MR-2_{ids[0]}" for r in at.radio)


def test_a_visitor_still_lands_on_the_overview_and_stays_there(team):
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert at.title[0].value == "objrel"
    at.run()        # a rerun (any widget) stays on the Overview (a page file named home.py took its place here)
    assert at.title[0].value == "objrel"


def test_a_reviewer_sees_their_own_pace(team):
    at = open_app("alice")
    pace = next(m.value for m in at.markdown if m.value.startswith("**Your pace**"))
    # alice's two calls were made a moment apart: the median gap is under a second; nothing of bob's is counted
    assert pace.startswith("**Your pace** in all your queues: a median **") and pace.endswith("; 2 calls")
