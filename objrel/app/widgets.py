"""Streamlit widgets shared by the pages: the app's navigation, the sidebar every page shows (sign-in box and
the store the app reads) and the reviewer sign-in box.

Only drawing and session state live here; every figure comes from objrel functions.
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
    return st.session_state.get(REVIEWER_KEY)


def client_id() -> str:
    """Who is asking, for sign-in throttling: a random id made on this browser session's first sign-in and
    kept in its (server-side) session state, so no one else can share it.  Not the address: behind the
    default 127.0.0.1 bind or a reverse proxy every visitor has the same one."""
    cid = st.session_state.get(CLIENT_KEY)
    if not cid:
        cid = st.session_state[CLIENT_KEY] = f"session:{secrets.token_urlsafe(CLIENT_ID_BYTES)}"
    return cid


def sign_in_box(store: Store) -> str | None:
    """Sidebar sign-in: name + passphrase (stored hashed), or the configured OIDC provider.

    Accounts are made by an admin (Users page) or on the server (``objrel users add``), never here.
    Returns the signed-in account's name, or None.
    """
    from objrel import review

    with st.sidebar:
        if oidc_configured() and getattr(st.user, "is_logged_in", False):
            name = st.user.get("email") or st.user.get("name") or "oidc-user"
            account = review.ensure_oidc_reviewer(store, name, st.user.get("sub") or name)
            st.session_state[REVIEWER_KEY] = account.name  # the stored name, stable for this subject
        who = signed_in()
        if who:
            roles = review.roles_of(store, who)
            st.text(f"Signed in as {who} ({', '.join(roles) if roles else 'no role yet'})")
            if st.button("Sign out", key="signout_btn"):
                st.session_state.pop(REVIEWER_KEY, None)
                if oidc_configured() and getattr(st.user, "is_logged_in", False):
                    st.logout()
                st.rerun()
            return who
        st.markdown("**Sign in**")
        if oidc_configured():
            st.button("Log in with single sign-on", key="oidc_login_btn", on_click=st.login)
        with st.form("signin_form", clear_on_submit=False):
            name = st.text_input("Name", key="signin_name")
            passphrase = st.text_input("Passphrase", type="password", key="signin_pass")
            submitted = st.form_submit_button("Sign in", key="signin_submit")
        st.caption("No account? An admin invites you (Users page).")
        if submitted:
            result = review.verify_reviewer(store, name, passphrase, client=client_id())
            if result.ok:
                st.session_state[REVIEWER_KEY] = result.name
                st.rerun()
            st.error(result.message)
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
