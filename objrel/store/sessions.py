"""Sign-in session rows: the ``app_sessions`` table.

A row is a dict ``{"id", "token_hash", "reviewer", "created_at", "last_seen_at", "expires_at", "revoked_at",
"revoked_because"}`` with timezone-aware (UTC) datetimes.  Only the hash of a session's token is stored:
making tokens and hashing them is ``objrel.review.sessions``'s job, this module keeps what it is given.  A
session is live while it is neither revoked nor past ``expires_at``; every time here is the caller's, so a
test can pass its own clock.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Connection

from objrel.store import schema as S
from objrel.store.store import Store
from objrel.store.transactions import write

T = S.app_sessions


def _utc(ts: dt.datetime | None) -> dt.datetime | None:
    """SQLite hands back naive datetimes; every time stored here is UTC."""
    if ts is None or ts.tzinfo is not None:
        return ts
    return ts.replace(tzinfo=dt.timezone.utc)


def _row(row) -> dict:
    out = dict(row._mapping)
    for k in ("created_at", "last_seen_at", "expires_at", "revoked_at"):
        out[k] = _utc(out[k])
    return out


def _live(at: dt.datetime):
    return T.c.revoked_at.is_(None), T.c.expires_at > at


def add_session(store: Store, token_hash: str, reviewer: str, created_at: dt.datetime,
                expires_at: dt.datetime) -> int:
    """Store a new session of ``reviewer`` (its token's hash, never the token); returns the row's id."""

    def work(c: Connection) -> int:
        res = c.execute(insert(T).values(token_hash=token_hash, reviewer=reviewer, created_at=created_at,
                                         last_seen_at=created_at, expires_at=expires_at))
        return int(res.inserted_primary_key[0])  # type: ignore[index]  # an INSERT's result has its key

    return write(store, work)


def live_session(store: Store, token_hash: str, at: dt.datetime, touch_after: dt.timedelta) -> dict | None:
    """The live session whose token hashes to ``token_hash`` at time ``at`` (None when there is none, or it
    was revoked, or it expired).  Its ``last_seen_at`` is moved to ``at`` when it is more than ``touch_after``
    old, so a session seen on every page run costs a write at most once per ``touch_after``."""
    with store.engine.connect() as c:
        row = c.execute(select(T).where(T.c.token_hash == token_hash, *_live(at))).first()
    if row is None:
        return None
    found = _row(row)
    if at - found["last_seen_at"] > touch_after:
        write(store, lambda c: c.execute(update(T).where(T.c.id == found["id"], T.c.last_seen_at < at)
                                         .values(last_seen_at=at)))
        found["last_seen_at"] = at
    return found


def revoke_session(store: Store, token_hash: str, at: dt.datetime, because: str) -> bool:
    """Revoke the live session whose token hashes to ``token_hash``; True when there was one."""
    q = update(T).where(T.c.token_hash == token_hash, *_live(at)).values(revoked_at=at, revoked_because=because)
    return write(store, lambda c: c.execute(q).rowcount) > 0


def revoke_reviewer_sessions(store: Store, reviewer: str, at: dt.datetime, because: str) -> int:
    """Revoke every live session of ``reviewer``; returns how many there were."""
    q = update(T).where(T.c.reviewer == reviewer, *_live(at)).values(revoked_at=at, revoked_because=because)
    return int(write(store, lambda c: c.execute(q).rowcount))


def live_session_count(store: Store, reviewer: str, at: dt.datetime) -> int:
    """How many live sessions ``reviewer`` has at ``at``."""
    with store.engine.connect() as c:
        return int(c.execute(select(func.count()).select_from(T).where(T.c.reviewer == reviewer, *_live(at)))
                   .scalar_one())


def sessions_of(store: Store, reviewer: str) -> list[dict]:
    """Every session row of ``reviewer`` (live or ended), oldest first."""
    with store.engine.connect() as c:
        return [_row(r) for r in c.execute(select(T).where(T.c.reviewer == reviewer).order_by(T.c.id))]
