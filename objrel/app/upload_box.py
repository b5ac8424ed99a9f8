"""A file uploader that only a signed-in account allowed to upload can use, never above objrel's own limit.

Streamlit's upload endpoint takes files for a browser session before any page code runs, so drawing the widget
is also where the session is granted uploads (``objrel.web.upload_grants``, through the gate of
``objrel.access``): the web gate lets a file through only for such a grant, only up to ``max_bytes``.  The
widget is told the same limit, so the browser refuses a larger file before sending it.
"""

from __future__ import annotations

import streamlit as st

from objrel.access import Actor

MIB = 1024 * 1024


def _browser_session_id() -> str | None:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else None


def upload_box(actor: Actor, action: str, label: str, max_bytes: int, **kwargs):
    """``st.file_uploader(label, **kwargs)`` for ``actor`` doing ``action`` with files of at most
    ``max_bytes``; refused by the gate (``NotAllowed``) when ``actor`` may not do ``action``."""
    from objrel.app.widgets import SESSION_KEY
    from objrel.web import upload_grants

    session_id = _browser_session_id()
    if session_id is not None:
        upload_grants.grant(actor, session_id, action, max_bytes, st.session_state.get(SESSION_KEY))
    else:
        from objrel import access

        access.authorize(actor, action)
    return st.file_uploader(label, max_upload_size=max(1, -(-max_bytes // MIB)), **kwargs)
