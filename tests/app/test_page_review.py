"""AppTest of the Review page on a temporary store with flagged inferences."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "review.py")


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    # scrypt at full cost takes ~0.5 s per sign-in; the cost parameter is not what these tests check
    if hasattr(review.accounts, "SCRYPT_N"):
        monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


def page(monkeypatch, store, reviewer=None):
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(PAGE, default_timeout=60)
    if reviewer:
        at.session_state["reviewer"] = reviewer
    return at


def texts(at) -> str:
    return " ".join(m.value for m in at.markdown) + " ".join(s.value for s in at.subheader)


def test_asks_to_sign_in_first(monkeypatch, flagged_store):
    store, _ = flagged_store
    at = page(monkeypatch, store).run()
    assert not at.exception
    assert any("Sign in" in i.value for i in at.info)


def test_shows_source_and_six_mutants_and_records_a_judgment(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice").run()
    assert not at.exception, at.exception
    # source + 3 MR-2 and 3 MR-1 mutants + the box-redraw preview
    assert len(at.get("image")) == 8
    # both primary votes are violated: at least 2 of 3 mutants each (a decided vote may skip its third mutant)
    assert sum("violated" in m.value for m in at.markdown) >= 4
    assert sum("violated" in m.value or "not evaluated" in m.value for m in at.markdown) == 6
    first = at.query_params["item"]
    assert at.query_params["relation"] == "MR-2" and at.query_params["run"] == str(run_id)
    at.button(key="judge_tp").click().run()
    assert not at.exception
    js = review.judgments(store, run_id, "MR-2", reviewer="alice")
    assert [(j.sample_id, j.verdict) for j in js] == [(first, "tp")]
    assert at.query_params["item"] != first  # moved on to the next item


def test_blind_review_never_shows_the_other_call(monkeypatch, flagged_store):
    store, run_id = flagged_store
    for name in ("alice", "bob"):
        review.create_reviewer(store, name, f"{name}-passphrase")
    sid = review.draw_review_sample(store, run_id, "MR-2")[0]
    review.record_judgment(store, run_id, sid, "MR-2", "alice", "fp", reasons=["incomplete-removal"])
    at = page(monkeypatch, store, "bob").run()
    assert at.query_params["item"] == sid
    shown = texts(at)
    assert "False positive" not in shown and "incomplete-removal" not in shown.replace("False-positive reasons", "")
    assert "Your call: **not yet**" in shown


def test_deep_link_opens_the_linked_item(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "carol", "carol-passphrase")
    ids = review.draw_review_sample(store, run_id, "MR-1")
    at = page(monkeypatch, store, "carol")
    at.query_params["run"] = str(run_id)
    at.query_params["relation"] = "MR-1"
    at.query_params["item"] = ids[-1]
    at.run()
    assert not at.exception
    assert at.query_params["item"] == ids[-1]
    assert any(f"(sample {ids[-1]})" in s.value for s in at.subheader)


def test_empty_store_says_what_to_do(monkeypatch, tmp_path):
    from objrel.store import Store

    at = page(monkeypatch, Store(tmp_path / "empty.db")).run()
    assert any("No run with tested inferences" in i.value for i in at.info)
