"""AppTest of the Users page's gold items: an admin marks a flagged item with its known call and sees each
reviewer's accuracy on it; a reviewer gets no gold section."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.review.gold import gold_view
from objrel.review.queue import record_call
from objrel.review.roles import actor_of
from objrel.store import Store
from tests.review.test_review import make_run

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "users.py")
REL = "MR-1"


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = Store(tmp_path / "gold.db")
    R.create_reviewer(s, "root", "root-passphrase", roles=[R.ADMIN])
    R.create_reviewer(s, "alice", "alice-passphrase", roles=[R.REVIEWER])
    monkeypatch.setenv("OBJREL_STORE", s.url)
    return s


def open_page(who: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["reviewer"] = who
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_an_admin_marks_a_gold_item_and_sees_the_reviewers_accuracy(store):
    rid = make_run(store, mr1=["a000", "a001"])
    record_call(actor_of(store, "alice"), store, rid, "a001", REL, "fp", ["other"], "mask too small")
    at = open_page("root")
    at.selectbox(key="gold_run").set_value(rid)
    at.radio(key="gold_relation").set_value(REL).run()
    at.selectbox(key="gold_item").set_value("a001")
    at.radio(key="gold_call").set_value("tp")
    at.button(key="gold_mark_btn").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("a001" in s.value and "gold" in s.value for s in at.success)
    view = gold_view(actor_of(store, "root"), store, rid, REL)
    assert [(g.sample_id, g.call, g.marked_by) for g in view.items] == [("a001", "tp", "root")]
    scores = next(d.value for d in at.dataframe if "right" in d.value.columns)
    assert list(scores["reviewer"]) == ["alice"] and list(scores["right"]) == [0]


def test_a_reviewer_gets_no_gold_section(store):
    make_run(store, mr1=["a000"])
    at = open_page("alice")
    assert not [w for w in at.selectbox if w.key and w.key.startswith("gold_")]
