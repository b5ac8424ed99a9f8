"""A lasting sign-in in a real browser (Debian's chromium driven by Playwright against `streamlit run serve.py`).

Alice signs in once: a reload and a new tab of the same browser are still signed in (the session cookie, which
the server sets HttpOnly: the page's scripts never see it), the cookie holds a token the store does not (only
its hash).  Signing out in one tab clears the cookie and ends the
session, so the other tab is signed out at its next reload, and so is a copy of the old cookie in another
browser.  An admin changing Alice's roles ends her sessions: her next reload shows her signed out.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from objrel import review
from objrel.review import sessions
from objrel.store import Store
from objrel.web.session_cookie import COOKIE_NAME

from tests.e2e.app_server import serving
from tests.e2e.test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, passphrase, settled

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_MS = 60_000

pytestmark = [pytest.mark.browser, pytest.mark.subprocess,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason="Debian chromium is not installed (.ci/run installs it)")]


@pytest.fixture
def server(tmp_path):
    store = Store(tmp_path / "session.db")
    review.create_reviewer(store, "alice", passphrase("alice"), roles=(review.REVIEWER,))
    review.create_reviewer(store, "dave", passphrase("dave"), roles=(review.ADMIN,))
    with serving(tmp_path, store.url) as base:
        yield base, store, tmp_path / "session.db"


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_app(context, base: str):
    page = context.new_page()
    page.goto(base)
    page.get_by_text("Overview").first.wait_for(timeout=TIMEOUT_MS)
    settled(page)
    return page


def shows_signed_in(page, name: str) -> bool:
    return page.get_by_text(f"Signed in as {name}").count() > 0


def expect_signed_out(page) -> None:
    page.get_by_role("button", name="Sign in", exact=True).wait_for(timeout=TIMEOUT_MS)
    settled(page)
    assert not shows_signed_in(page, "alice")


def sign_in(page, name: str) -> None:
    page.get_by_label("Name").fill(name)
    page.get_by_label("Passphrase").fill(passphrase(name))
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=TIMEOUT_MS)


def session_cookie(context) -> dict | None:
    return next((c for c in context.cookies() if c["name"] == COOKIE_NAME), None)


def wait_for_cookie(context, present: bool) -> dict | None:
    deadline = time.time() + TIMEOUT_MS / 1000
    while time.time() < deadline:
        cookie = session_cookie(context)
        if bool(cookie and cookie["value"]) == present:
            return cookie
        time.sleep(0.2)
    raise AssertionError(f"expected the {COOKIE_NAME} cookie to be {'set' if present else 'gone'}; "
                         f"got {session_cookie(context)!r}")


def store_bytes(db_file: Path) -> bytes:
    """Every byte of the SQLite store: the file and its write-ahead log."""
    return b"".join(p.read_bytes() for p in sorted(db_file.parent.glob(db_file.name + "*")))


def reload(page) -> None:
    page.reload()
    page.get_by_text("Overview").first.wait_for(timeout=TIMEOUT_MS)
    settled(page)


def test_sign_in_survives_reload_and_new_tabs_and_sign_out_ends_it_everywhere(server, browser):
    base, store, db_file = server
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    tab1 = open_app(context, base)
    sign_in(tab1, "alice")                               # the first click signs in
    cookie = wait_for_cookie(context, present=True)
    assert cookie["path"] == "/" and cookie["sameSite"] == "Strict", cookie
    assert cookie["httpOnly"] and cookie["secure"], cookie
    assert cookie["value"] not in tab1.evaluate("document.cookie")  # no script of the page can read it
    assert cookie["expires"] > time.time() + sessions.SESSION_LIFETIME.total_seconds() - 600, cookie
    token = cookie["value"]
    assert review.session_user(store, token) == "alice"
    stored = store_bytes(db_file)
    assert token.encode() not in stored                  # the store holds the token's hash, never the token
    assert sessions.token_hash(token).encode() in stored

    reload(tab1)
    tab1.get_by_text("Signed in as alice").wait_for(timeout=TIMEOUT_MS)
    tab2 = open_app(context, base)                       # a new tab of the same browser
    tab2.get_by_text("Signed in as alice").wait_for(timeout=TIMEOUT_MS)

    tab2.get_by_role("button", name="Sign out", exact=True).click()
    expect_signed_out(tab2)
    wait_for_cookie(context, present=False)              # the cookie is cleared in the browser ...
    assert review.session_user(store, token) is None     # ... and the session ended in the store
    reload(tab1)
    expect_signed_out(tab1)

    # The old cookie, copied into another browser, opens nothing.
    thief = browser.new_context()
    thief.add_cookies([{"name": COOKIE_NAME, "value": token, "url": base.replace("http:", "https:"), "secure": True,
                       "httpOnly": True}])   # a copy as the server set it (host-only, secure, HttpOnly)
    expect_signed_out(open_app(thief, base))
    thief.close()
    context.close()


def test_a_role_change_signs_the_person_out_at_the_next_reload(server, browser):
    base, store, _ = server
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = open_app(context, base)
    sign_in(page, "alice")
    wait_for_cookie(context, present=True)
    reload(page)
    page.get_by_text("Signed in as alice").wait_for(timeout=TIMEOUT_MS)

    admin = review.actor_of(store, "dave")
    review.grant_roles(admin, store, "alice", review.ADJUDICATOR)
    reload(page)
    expect_signed_out(page)
    page.get_by_text("Your session ended").wait_for(timeout=TIMEOUT_MS)
    assert review.live_sessions(store, "alice") == 0
    sign_in(page, "alice")                               # a fresh sign-in carries the new roles
    page.get_by_text("Signed in as alice (adjudicator, reviewer)").wait_for(timeout=TIMEOUT_MS)
    context.close()
