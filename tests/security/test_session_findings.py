"""A session ended elsewhere acts no more, even in a callback that runs before the page checks its sign-in
(finding S3: after "End all my sessions" an open tab still saved one call)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review
from objrel.app import widgets as W
from objrel.review import sessions

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "review.py")


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2 ** 10)


def call_button(at: AppTest, verdict: str):
    found = [b for b in at.button if b.key and b.key.startswith(f"judge_{verdict}_")]
    assert len(found) == 1, [b.key for b in at.button]
    return found[0]


def test_a_call_pressed_in_a_tab_whose_session_ended_elsewhere_saves_nothing(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase", roles=(review.REVIEWER,))
    token = review.start_session(store, "alice")
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state[W.SESSION_KEY] = token                    # this tab signed in with a password session
    at.session_state[W.REVIEWER_KEY] = "alice"
    at.run()
    assert not at.exception and not call_button(at, "tp").disabled
    review.end_sessions(store, "alice", sessions.SIGN_OUT_EVERYWHERE)   # "End all my sessions" in another tab
    call_button(at, "tp").click().run()
    assert not at.exception
    assert review.judgments(store, run_id, "MR-2", reviewer="alice") == []
    assert not any(t.value.startswith("Signed in as alice") for t in at.sidebar.text)
