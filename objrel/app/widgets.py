"""Streamlit widgets shared by the pages: the app's navigation, the sidebar every page shows (sign-in box and
the store the app reads) and the reviewer sign-in box.

Only drawing and session state live here; every figure comes from objrel functions.

A password sign-in opens a lasting session (``objrel.review.sessions``): its random token goes to the browser in
an HttpOnly cookie (``objrel.web.session_cookie``), so a reload or a new tab is still signed in, no page script
can read or plant it, and only the token's hash is stored.  Streamlit's WebSocket cannot set a cookie, so the
sign-in keeps the token under a one-time code (``objrel.web.handoff``) and draws a script that posts the code to
the server, whose answer sets the cookie; sign-out draws one that asks the server to clear it.  The cookie is read
from the request (``st.context.cookies``).  Every run checks the token against the store again, so a session
ended elsewhere (sign-out in another tab, everywhere, a change of roles, expiry) signs this tab out at its next
run, and ``fresh_actor`` checks it again inside a button's callback, before the callback acts.
"""

from __future__ import annotations

import secrets

import streamlit as st

from objrel.access import Actor
from objrel.store import Store

REVIEWER_KEY = "reviewer"
# Session-state key of this browser session's sign-in client id, and the id's random bytes.
CLIENT_KEY = "signin_client"
CLIENT_ID_BYTES = 16
# Session-state keys: this tab's session token; a cookie token found ended (not looked up again); the cookie
# write or clear still to be seen done in the browser; a note that the session ended (expired, or elsewhere).
SESSION_KEY = "session_token"
DEAD_COOKIE_KEY = "session_dead_cookie"
COOKIE_OP_KEY = "session_cookie_op"
ENDED_KEY = "session_ended_note"
# Session-state keys the sign-in and sign-out callbacks leave for the run: a refused sign-in's message; a
# sign-out that must also end the single sign-on login.
SIGN_IN_ERROR_KEY = "signin_error"
OIDC_LOGOUT_KEY = "signout_oidc"
# The page's request to the session cookie route: %(method)s and %(body)s are filled with constants and a
# one-time code (URL-safe characters only, checked by ``handoff.well_formed``), never with anything a person typed.
COOKIE_SCRIPT = """<script>
fetch("%(path)s", {method: "%(method)s", body: %(body)s, credentials: "same-origin",
                   headers: {"Content-Type": "text/plain"}});
</script>"""


def use_app_navigation() -> None:
    """Make app.py's ``st.navigation`` serve this page.

    Streamlit keeps a legacy mode for apps with a ``pages/`` folder: when the first
    request after a server start names a page (``/review``) before app.py has run,
    it executes ``pages/review.py`` on its own (.streamlit/config.toml hides that
    mode's file-name sidebar).  Every page calls this first: it leaves that mode for
    good and, on a session's first run, when no widget input can be lost, reruns
    through app.py so the app's own navigation appears at once.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if not st.session_state:
            st.rerun()


def oidc_configured() -> bool:
    """True when .streamlit/secrets.toml has an [auth] section (Streamlit's OIDC login)."""
    try:
        return "auth" in st.secrets
    except Exception:  # no secrets file at all
        return False


def signed_in() -> str | None:
    """The name of the account signed in on this session, or None."""
    return st.session_state.get(REVIEWER_KEY)


def client_id() -> str:
    """Who is asking, for sign-in throttling: a random id made on this browser session's first sign-in and
    kept in its (server-side) session state, so no one else can share it.  Not the address: behind the
    default 127.0.0.1 bind or a reverse proxy every visitor has the same one."""
    cid = st.session_state.get(CLIENT_KEY)
    if not cid:
        cid = st.session_state[CLIENT_KEY] = f"session:{secrets.token_urlsafe(CLIENT_ID_BYTES)}"
    return cid


def _page_scheme_host() -> tuple[str, str | None]:
    """The scheme and host the browser asked this app at (http and no host outside a served request)."""
    from urllib.parse import urlsplit

    try:
        url = st.context.url
        parts = urlsplit(url) if isinstance(url, str) else None
    except Exception:  # no request behind this run
        parts = None
    return (parts.scheme or "http", parts.netloc or None) if parts else ("http", None)


def cookie_token() -> str | None:
    """The session token the browser sent with this session's connection (None without one).  The request's
    cookies are those of the page load: a cookie set later shows here only after a reload."""
    from objrel.web.session_cookie import cookie_name

    try:
        token = st.context.cookies.get(cookie_name(*_page_scheme_host()))
    except Exception:  # no request behind this run
        return None
    return token if isinstance(token, str) and token else None  # a script test's stand-in request has no text


def _resume_session(store: Store) -> None:
    """Set this tab's signed-in name from its session token, or from the cookie's when the tab has neither a
    name nor a token yet; forget both when the session has ended (then the cookie is cleared too)."""
    from objrel import review

    token = st.session_state.get(SESSION_KEY)
    cookie = cookie_token()
    if token is None and signed_in() is None and cookie and cookie != st.session_state.get(DEAD_COOKIE_KEY):
        token = cookie
    if token is None:
        return
    who = review.session_user(store, token)
    if who:
        st.session_state[REVIEWER_KEY] = who
        st.session_state[SESSION_KEY] = token
        return
    st.session_state.pop(SESSION_KEY, None)
    st.session_state.pop(REVIEWER_KEY, None)
    st.session_state[ENDED_KEY] = True
    if cookie == token:
        st.session_state[DEAD_COOKIE_KEY] = cookie
        _want_cookie("clear", token)


def _want_cookie(op: str, token: str) -> None:
    """Ask the browser to hold ``token`` in the session cookie (``op`` "set", at sign-in: the token is kept under
    a one-time code for the page to post) or to drop the cookie ("clear")."""
    from objrel.web import handoff

    st.session_state[COOKIE_OP_KEY] = ("set", handoff.offer(token)) if op == "set" else ("clear", None)


def _sync_cookie() -> None:
    """Draw the script that asks the server to set or clear the session cookie (``_want_cookie``).  A set is
    drawn until the server has taken its code; a clear is drawn once."""
    op = st.session_state.get(COOKIE_OP_KEY)
    if not op:
        return
    import json

    from objrel.web import handoff
    from objrel.web.session_cookie import ROUTE_PATH

    kind, code = op
    if kind == "set":
        if handoff.claimed(code) or not handoff.well_formed(code):
            st.session_state.pop(COOKIE_OP_KEY, None)
            return
        script = COOKIE_SCRIPT % {"path": ROUTE_PATH, "method": "POST", "body": json.dumps(code)}
    else:
        st.session_state.pop(COOKIE_OP_KEY, None)
        script = COOKIE_SCRIPT % {"path": ROUTE_PATH, "method": "DELETE", "body": "null"}
    st.html(script, unsafe_allow_javascript=True)


def cookie_write_pending() -> bool:
    """Whether the page has yet to hand this tab's new session to the server for its cookie (asked at sign-in)."""
    op = st.session_state.get(COOKIE_OP_KEY)
    return bool(op) and op[0] == "set"


def _sign_out(store: Store, who: str, everywhere: bool) -> None:
    """End this tab's session (or, ``everywhere``, every session of ``who``), forget the name, clear the cookie."""
    from objrel import review
    from objrel.review import sessions

    token = st.session_state.pop(SESSION_KEY, None)
    cookie = cookie_token()
    if everywhere and (review.session_user(store, token) == who if token else signed_in() == who):
        # the button was drawn for ``who``: it ends every session only while this tab's own is still live
        review.end_sessions(store, who, sessions.SIGN_OUT_EVERYWHERE)
    else:
        for t in {token, cookie} - {None}:
            if t == token or review.session_user(store, t) == who:
                review.end_session(store, t)
    if cookie:
        st.session_state[DEAD_COOKIE_KEY] = cookie
    if token or cookie:
        _want_cookie("clear", token or cookie)
    st.session_state.pop(REVIEWER_KEY, None)
    _end_upload_grant()


def _end_upload_grant() -> None:
    """This browser session may upload no more (``objrel.web.upload_grants``) until a page grants it again."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    from objrel.web import upload_grants

    ctx = get_script_run_ctx()
    if ctx is not None:
        upload_grants.revoke(ctx.session_id)


def _sign_in(store: Store) -> None:
    """The sign-in form's callback: check the name and passphrase; on success open a session.  It runs before
    the script, so a rerun that a cookie component's answer starts at the same moment cannot drop the press."""
    from objrel import review

    result = review.verify_reviewer(store, st.session_state.get("signin_name", ""),
                                    st.session_state.get("signin_pass", ""), client=client_id())
    if not result.ok:
        st.session_state[SIGN_IN_ERROR_KEY] = result.message
        return
    token = review.start_session(store, result.name)
    st.session_state.pop(ENDED_KEY, None)
    st.session_state[REVIEWER_KEY] = result.name
    st.session_state[SESSION_KEY] = token
    _want_cookie("set", token)


def _sign_out_pressed(store: Store, who: str, everywhere: bool) -> None:
    """The sign-out buttons' callback (before the script, like ``_sign_in``)."""
    _sign_out(store, who, everywhere)
    st.session_state[OIDC_LOGOUT_KEY] = True


def sign_in_box(store: Store) -> str | None:
    """Sidebar sign-in: name + passphrase (stored hashed), or the configured OIDC provider.

    Accounts are made by an admin (Users page) or on the server (``objrel users add``), never here.  A password
    sign-in lasts (see the module's notes): the name comes from this tab's state, else from the session
    cookie, and is checked against the store's live sessions on every run.
    Returns the signed-in account's name, or None.
    """
    from objrel import review

    with st.sidebar:
        oidc_user = oidc_configured() and getattr(st.user, "is_logged_in", False)
        if st.session_state.pop(OIDC_LOGOUT_KEY, False) and oidc_user:
            st.logout()
        if oidc_user:
            name = st.user.get("email") or st.user.get("name") or "oidc-user"
            account = review.ensure_oidc_reviewer(store, name, st.user.get("sub") or name)
            st.session_state[REVIEWER_KEY] = account.name  # the stored name, stable for this subject
        _resume_session(store)
        with st.container():  # always there, so the cookie component coming and going never moves the form
            _sync_cookie()
        who = signed_in()
        if who:
            roles = review.roles_of(store, who)
            st.text(f"Signed in as {who} ({', '.join(roles) if roles else 'no role yet'})")
            st.button("Sign out", key="signout_btn", on_click=_sign_out_pressed, args=(store, who, False))
            st.button("End all my sessions", key="signout_all_btn", on_click=_sign_out_pressed,
                      args=(store, who, True), help="Signs you out in every browser and tab")
            return who
        if st.session_state.get(ENDED_KEY):  # until the next sign-in: the cookie's clearing reruns the page
            st.info("Your session ended (it expired, you signed out elsewhere, or your roles changed); sign in again.")
        st.markdown("**Sign in**")
        if oidc_configured():
            st.button("Log in with single sign-on", key="oidc_login_btn", on_click=st.login)
        with st.form("signin_form", clear_on_submit=False):
            st.text_input("Name", key="signin_name")
            st.text_input("Passphrase", type="password", key="signin_pass")
            st.form_submit_button("Sign in", key="signin_submit", on_click=_sign_in, args=(store,))
        st.caption("No account? An admin invites you (Users page).")
        error = st.session_state.pop(SIGN_IN_ERROR_KEY, None)
        if error:
            st.error(error)
    return None


def page_sidebar(store: Store) -> Actor:
    """The sidebar of every page, the same on each: the sign-in box, then the store the app reads (its file or
    database name, never its server path).  Returns the actor this request acts as: the signed-in
    account with the roles the store holds for it now, or ``objrel.access.ANONYMOUS``."""
    from objrel.app.captions import store_caption
    from objrel.review.roles import actor_of

    actor = actor_of(store, sign_in_box(store))
    st.sidebar.caption(store_caption(store))
    return actor
