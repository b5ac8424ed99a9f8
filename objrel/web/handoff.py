"""One-time codes that carry a new session token from the app to the cookie endpoint.

The app learns a session's token when someone signs in (inside Streamlit's WebSocket, which cannot set a cookie).
It keeps the token here under a random code and puts only the code in the page; the page posts the code to
``session_cookie``'s endpoint, which takes the token out (once) and answers with the HttpOnly cookie.  A code
lives ``CODE_LIFETIME_S`` seconds and opens nothing by itself: whoever posts it gets a cookie their page
scripts cannot read, for a session the store can end at any time.
"""

from __future__ import annotations

import secrets
import threading
import time

CODE_BYTES = 24
# Seconds a code waits for the page to post it (the page does so as soon as it draws).
CODE_LIFETIME_S = 60.0
# Codes outstanding at once in one server; the oldest are dropped beyond it.
MAX_CODES = 10_000
CODE_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

_lock = threading.Lock()
_codes: dict[str, tuple[str, float]] = {}   # code -> (token, time it ends)
_claimed: dict[str, float] = {}              # code -> time it ends (for ``claimed``)


def _forget_old(now: float) -> None:
    for table in (_codes, _claimed):
        for code in [c for c, v in table.items() if (v[1] if isinstance(v, tuple) else v) < now]:
            del table[code]
        while len(table) > MAX_CODES:
            del table[next(iter(table))]


def offer(token: str, now: float | None = None) -> str:
    """Keep ``token`` under a new one-time code and return the code (URL-safe text, nothing else)."""
    now = time.monotonic() if now is None else now
    code = secrets.token_urlsafe(CODE_BYTES)
    with _lock:
        _forget_old(now)
        _codes[code] = (token, now + CODE_LIFETIME_S)
    return code


def take(code: object, now: float | None = None) -> str | None:
    """The token kept under ``code``, removed so no second post gets it; None for an unknown, used or old code."""
    if not well_formed(code):
        return None
    now = time.monotonic() if now is None else now
    with _lock:
        _forget_old(now)
        kept = _codes.pop(code, None)
        if kept is None:
            return None
        _claimed[code] = now + CODE_LIFETIME_S
    return kept[0]


def claimed(code: str) -> bool:
    """Whether the page has posted ``code`` (its browser holds the cookie), within the code's lifetime."""
    with _lock:
        return code in _claimed


def well_formed(code: object) -> bool:
    """Whether ``code`` could be one of ours: text of the code's length in the URL-safe alphabet."""
    return (isinstance(code, str) and len(code) == len(secrets.token_urlsafe(CODE_BYTES))
            and set(code) <= CODE_ALPHABET)
