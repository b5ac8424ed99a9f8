"""Which browser sessions may send files to Streamlit's upload endpoint, and how large.

Streamlit keeps an uploaded file in the server's memory until its browser session ends, and its endpoint takes
a file from any session that has connected, signed in or not.  Here a page that draws a file uploader first
asks for a grant for its browser session (``grant``): the gate (``objrel.access``) must permit the signed-in
account the upload action, and the grant names the largest file that page takes.  The web gate then lets an
upload through only for a granted session, only while the account's session is still live and still holds the
role (``check``, asked of the store on each upload), only when the request carries that account's session
cookie, and only when its declared length is within the grant.  An account's uploads are also bounded over a
window of ``BUDGET_WINDOW_S`` seconds, in files and in bytes (``UPLOAD_BUDGET_FACTOR`` files of its grant's
size), since Streamlit keeps a file in memory until the page that asked for it runs again or the browser
session ends.  Everything else is refused before a byte of its body is read.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from objrel import access
from objrel.access import Actor

# Seconds a grant lasts after the page that made it last drew its uploader.
GRANT_LIFETIME_S = 30 * 60.0
# Grants held at once in one server; the oldest are dropped beyond it.
MAX_GRANTS = 10_000
# An account's uploads within this many seconds count against its budget.
BUDGET_WINDOW_S = GRANT_LIFETIME_S
# An account may send this many files of its grant's largest size within the window (a dataset is two files).
UPLOAD_BUDGET_FACTOR = 3
# ... and at most this many files, whatever their size.
MAX_FILES_PER_WINDOW = 24


@dataclass(frozen=True)
class Grant:
    """``name`` may upload through browser session ``session_id`` files of at most ``max_bytes`` for
    ``action`` until ``until`` (monotonic seconds); ``token``: the sign-in session it rests on (None for a
    single sign-on account, whose login Streamlit keeps)."""

    session_id: str
    name: str
    token: str | None
    action: str
    max_bytes: int
    until: float


_lock = threading.Lock()
_grants: dict[str, Grant] = {}
_sent: dict[str, list[tuple[float, int]]] = {}   # account -> (time, bytes) of its accepted uploads


def grant(actor: Actor, session_id: str, action: str, max_bytes: int, token: str | None,
          now: float | None = None) -> Grant:
    """Let browser session ``session_id`` upload files of at most ``max_bytes`` for ``action`` as ``actor``
    (refused by the gate when ``actor`` may not).  A session's later grant for a larger file replaces a smaller
    one; the largest stands while the page is open."""
    access.authorize(actor, action)
    if not isinstance(max_bytes, int) or max_bytes <= 0:
        raise ValueError(f"an upload grant is for a positive number of bytes; got {max_bytes!r}")
    now = time.monotonic() if now is None else now
    with _lock:
        old = _grants.get(session_id)
        if old is not None and old.name == actor.name and old.until >= now and old.max_bytes > max_bytes:
            action, max_bytes = old.action, old.max_bytes
        g = _grants[session_id] = Grant(session_id, actor.name, token, action, max_bytes, now + GRANT_LIFETIME_S)
        for sid in [s for s, x in _grants.items() if x.until < now]:
            del _grants[sid]
        while len(_grants) > MAX_GRANTS:
            del _grants[next(iter(_grants))]
    return g


def revoke(session_id: str) -> None:
    """Forget the grant of browser session ``session_id`` (sign-out)."""
    with _lock:
        _grants.pop(session_id, None)


def granted(session_id: str, now: float | None = None) -> Grant | None:
    """The live grant of browser session ``session_id``, or None."""
    now = time.monotonic() if now is None else now
    with _lock:
        g = _grants.get(session_id)
    return g if g is not None and g.until >= now else None


def check(store, session_id: str, content_length: str | None, cookie_token: str | None = None,
          now: float | None = None) -> tuple[int, str] | None:
    """Why an upload to browser session ``session_id`` declaring ``content_length`` bytes, sent with the session
    cookie ``cookie_token``, is refused, as (HTTP status, reason); None when it may go on (its bytes are then
    counted against the account's budget).  The account is looked up in ``store`` again: a session signed out,
    ended or stripped of the role since the grant uploads nothing."""
    from objrel import review
    from objrel.review.roles import actor_of

    now = time.monotonic() if now is None else now
    g = granted(session_id, now)
    if g is None:
        return 403, "uploads are for signed-in accounts whose role uploads, from the page that asks for the file"
    if content_length is None:
        return 411, "an upload states its length"
    try:
        length = int(content_length)
    except ValueError:
        return 400, "an upload's length is a number"
    if length < 0 or length > g.max_bytes:
        return 413, f"this upload takes files of at most {g.max_bytes // (1024 * 1024)} MiB"
    if g.token is not None and review.session_user(store, g.token) != g.name:
        revoke(session_id)
        return 403, "the sign-in this upload rests on has ended"
    if g.token is not None and review.session_user(store, cookie_token) != g.name:
        return 403, "an upload comes from the browser that signed in"
    if not access.permits(actor_of(store, g.name), g.action):
        revoke(session_id)
        return 403, "this account may no longer upload"
    with _lock:
        recent = [(t, n) for t, n in _sent.get(g.name, ()) if t >= now - BUDGET_WINDOW_S]
        sent = sum(n for _, n in recent)
        if len(recent) >= MAX_FILES_PER_WINDOW or sent + length > UPLOAD_BUDGET_FACTOR * g.max_bytes:
            _sent[g.name] = recent
            return 429, (f"this account has sent {len(recent)} files ({sent // (1024 * 1024)} MiB) in the last "
                         f"{BUDGET_WINDOW_S / 60:.0f} minutes; wait before uploading more")
        _sent[g.name] = recent + [(now, length)]
    return None
