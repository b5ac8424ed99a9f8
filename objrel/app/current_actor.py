"""The actor a callback, a fragment or a button handler acts as, read again from the store each time it acts.

A page reads its actor once per full run (``objrel.app.widgets.page_sidebar``, which checks the session token
against the store).  A fragment that reruns on its own (``st.fragment(run_every=...)``) and a widget's
callback run without that check: an actor captured when the page ran, or the name left in session state,
would outlive a sign-out in another tab, a session ended everywhere, an expired session or a revoked role.
``current_actor`` loads it afresh: this browser session's token (``st.session_state['session_token']``)
checked against the store's live sessions (``objrel.review.session_user``), then the account's roles now
(``objrel.review.roles.actor_of``).  A token the store no longer honours gives ``objrel.access.ANONYMOUS``.
Without any token the name the sidebar keeps is used (a single sign-on login, which has no password session;
its roles are still read now).
"""

from __future__ import annotations

import streamlit as st

from objrel.access import Actor
from objrel.store import Store


def current_actor(store: Store) -> Actor:
    """Who this browser session is now: the account of its live session with its roles now, or
    ``objrel.access.ANONYMOUS`` once the session has ended (or was never opened)."""
    from objrel.app.widgets import REVIEWER_KEY, SESSION_KEY   # widgets calls this module: imported when used
    from objrel.review.roles import actor_of
    from objrel.review.sessions import session_user

    token = st.session_state.get(SESSION_KEY)
    who = session_user(store, token) if token is not None else st.session_state.get(REVIEWER_KEY)
    return actor_of(store, who)


def same_actor(a: Actor, b: Actor) -> bool:
    """Whether ``a`` and ``b`` are the same account with the same roles (a page drawn for ``a`` still fits
    ``b``)."""
    return (a.name, a.roles, a.server) == (b.name, b.roles, b.server)
