"""AppTest of the sign-in box's lasting sessions: a sign-in opens a session (and asks the browser to keep its
cookie), a session ended elsewhere signs the tab out at its next run, sign-out ends it, and the Users page says
when a change of roles ended someone's sessions.  (The cookie itself, in a real browser: tests/e2e.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.app import widgets as W
from objrel.review import sessions
from objrel.store import Store

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "users.py")


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = Store(tmp_path / "sessions.db")
    R.create_reviewer(s, "root", "root-passphrase", roles=[R.ADMIN])
    R.create_reviewer(s, "alice", "alice-passphrase", roles=[R.REVIEWER])
    monkeypatch.setenv("OBJREL_STORE", s.url)
    yield s
    s.dispose()


def signed_in_as(at: AppTest, name: str) -> bool:
    return any(t.value.startswith(f"Signed in as {name} ") for t in at.sidebar.text)


def sign_in(name: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.text_input(key="signin_name").set_value(name)
    at.text_input(key="signin_pass").set_value(f"{name}-passphrase")
    at.button(key="signin_submit").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert signed_in_as(at, name)
    return at


def test_a_sign_in_opens_a_session_and_hands_its_token_to_the_cookie_route_once(store):
    from objrel.web import handoff

    at = sign_in("alice")
    token = at.session_state[W.SESSION_KEY]
    assert R.session_user(store, token) == "alice"
    op, code = at.session_state[W.COOKIE_OP_KEY]
    assert op == "set" and token not in code and handoff.well_formed(code)
    scripts = [h.proto.body for h in at.get("html")]
    assert any(code in body and "POST" in body for body in scripts)     # the page posts the code ...
    assert not any(token in body for body in scripts)                   # ... never the token
    assert handoff.take(code) == token and handoff.take(code) is None   # the route gets the token once
    at.run()
    assert W.COOKIE_OP_KEY not in at.session_state or not at.session_state[W.COOKIE_OP_KEY]
    assert not any(code in h.proto.body for h in at.get("html"))        # taken: the script is no longer drawn


def test_a_session_ended_elsewhere_signs_the_tab_out_at_its_next_run(store):
    at = sign_in("alice")
    R.end_sessions(store, "alice", sessions.SIGN_OUT_EVERYWHERE)    # e.g. "End all my sessions" in another tab
    at.run()
    assert not signed_in_as(at, "alice")
    assert W.REVIEWER_KEY not in at.session_state and W.SESSION_KEY not in at.session_state
    assert any("Your session ended" in i.value for i in at.sidebar.info)


def test_sign_out_ends_the_session_in_the_store(store):
    at = sign_in("alice")
    token = at.session_state[W.SESSION_KEY]
    other = R.start_session(store, "alice")                          # alice in another browser
    at.button(key="signout_btn").click().run()
    assert not signed_in_as(at, "alice")
    assert R.session_user(store, token) is None
    assert R.session_user(store, other) == "alice"                   # only this tab's session ends
    at = sign_in("alice")
    at.button(key="signout_all_btn").click().run()
    assert R.session_user(store, other) is None and R.live_sessions(store, "alice") == 0


def test_the_users_page_says_a_change_of_roles_ended_their_sessions(store):
    alice = R.start_session(store, "alice")
    at = sign_in("root")
    at.selectbox(key="users_target").set_value("alice")
    at.selectbox(key="users_role").set_value(R.ADJUDICATOR)
    at.radio(key="users_action").set_value("grant")
    at.button(key="users_roles_btn").click().run()
    assert not at.exception
    assert any(s.value == "alice: adjudicator, reviewer. Their 1 signed-in session ended: they sign in again to act "
                          "with the new roles." for s in at.success), [s.value for s in at.success]
    assert R.session_user(store, alice) is None
    assert signed_in_as(at, "root")                                  # the admin's own session goes on
