"""Lasting sign-in sessions: a random token the browser keeps in a cookie, its SHA-256 hash in the store.

``start_session`` makes a token of ``TOKEN_BYTES`` random bytes for an account that has just proved who it
is and stores only the token's hash (``objrel.store.sessions``), so a copy of the store opens no session.
``session_user`` turns a token back into the account's name while the session is live: not revoked and less
than ``SESSION_LIFETIME`` old.  The lifetime is fixed from sign-in (a reviewer's working day), not sliding:
activity never stretches a session, and the browser's cookie can end at the same moment.
``end_session`` revokes one session (sign-out); ``end_sessions`` every session of an account (sign-out
everywhere, and ``objrel.review.roles`` on every change of the account's roles, so new rights start with a
new sign-in).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from objrel.store import Store
from objrel.store import sessions as session_rows

# A session lasts this long from sign-in, however active (a reviewer's working day).
SESSION_LIFETIME = dt.timedelta(hours=12)
# A live session's last_seen_at is written at most this often.
SESSION_TOUCH_EVERY = dt.timedelta(minutes=1)
# Random bytes in a session token (URL-safe base64 text, 43 characters).
TOKEN_BYTES = 32
# Longest token text looked up; anything longer is no token of ours.
MAX_TOKEN_LENGTH = 100
# Why a session ended (``app_sessions.revoked_because``).
SIGN_OUT = "sign-out"
SIGN_OUT_EVERYWHERE = "sign-out-everywhere"
ROLE_CHANGE = "role-change"
ACCOUNT_REMOVED = "account-removed"
END_REASONS = (SIGN_OUT, SIGN_OUT_EVERYWHERE, ROLE_CHANGE, ACCOUNT_REMOVED)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def token_hash(token: str) -> str:
    """The stored form of a token: the hex SHA-256 of its text.  (A token carries 256 random bits, so a fast
    hash suffices: nothing about it can be guessed, unlike a passphrase.)"""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _usable(token: object) -> bool:
    return isinstance(token, str) and 0 < len(token) <= MAX_TOKEN_LENGTH


def start_session(store: Store, name: str, now: dt.datetime | None = None) -> str:
    """Open a session for the account ``name`` (who has just signed in) and return its token, for the browser
    only: the store keeps the token's hash.  It ends ``SESSION_LIFETIME`` after ``now`` (the present)."""
    at = now or _now()
    token = secrets.token_urlsafe(TOKEN_BYTES)
    session_rows.add_session(store, token_hash(token), name, at, at + SESSION_LIFETIME)
    return token


def session_user(store: Store, token: object, now: dt.datetime | None = None) -> str | None:
    """The name of the account whose live session ``token`` opens at ``now`` (the present); None for a token
    that is unknown, revoked, expired or not text."""
    if not _usable(token):
        return None
    row = session_rows.live_session(store, token_hash(token), now or _now(), SESSION_TOUCH_EVERY)
    return row["reviewer"] if row else None


def end_session(store: Store, token: object, because: str = SIGN_OUT) -> bool:
    """Revoke the session of ``token``; True when it was live."""
    if not _usable(token):
        return False
    return session_rows.revoke_session(store, token_hash(token), _now(), _reason(because))


def end_sessions(store: Store, name: str, because: str) -> int:
    """Revoke every live session of the account ``name``; returns how many ended."""
    return session_rows.revoke_reviewer_sessions(store, name, _now(), _reason(because))


def live_sessions(store: Store, name: str) -> int:
    """How many live sessions the account ``name`` has."""
    return session_rows.live_session_count(store, name, _now())


def _reason(because: str) -> str:
    if because not in END_REASONS:
        raise ValueError(f"a session ends for one of {', '.join(END_REASONS)}; got {because!r}")
    return because
