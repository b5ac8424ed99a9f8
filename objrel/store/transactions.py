"""Short write transactions that survive contention: retry on a lock, race-free upsert, run lock.

Several processes may write to one store at once (two reviewers on one SQLite file, or app
servers on one PostgreSQL database).  ``write`` runs a unit of work in one transaction and
repeats it when SQLite gives up on a lock quickly or, on request, when a concurrent insert of
the same key won the race; ``upsert`` and ``lock_run`` are the building blocks such units use.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Table, and_, insert, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError

from objrel.constants import SQLITE_BUSY_TIMEOUT_MS
from objrel.store import schema as S
from objrel.store.store import Store

# A write that SQLite answers with "database is locked" is retried this many times in all ...
WRITE_ATTEMPTS = 6
# ... waiting this long (seconds) times the attempt number (plus jitter) in between.  The store's
# busy timeout already waits for locks inside SQLite; these retries cover what it gives up on.
WRITE_RETRY_DELAY_S = 0.05
# A locked attempt is only retried when it failed within this share of the busy timeout: one
# that waited the whole timeout means a writer holds the lock for long, and retrying would only
# multiply the wait.
RETRY_ONLY_BELOW_BUSY_SHARE = 0.5


def _is_lock_error(exc: OperationalError) -> bool:
    msg = str(exc.orig if exc.orig is not None else exc).lower()
    return "locked" in msg or "busy" in msg


def write(store: Store, work: Callable[[Connection], Any], *, retry_on_integrity: bool = False) -> Any:
    """Run ``work(connection)`` in one short transaction and return its result.

    Retried (up to ``WRITE_ATTEMPTS`` in all) when SQLite reports "database is locked" *without*
    having waited out its busy timeout (a lock it would not wait for, e.g. a stale WAL snapshot);
    a lock that outlasted the busy timeout is raised at once instead of blocking the caller for
    minutes.  With ``retry_on_integrity`` an IntegrityError (a concurrent insert of the same key
    won the race) repeats the transaction too.  Any other error rolls back and propagates.
    """
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        t0 = time.monotonic()
        try:
            with store.engine.begin() as c:
                return work(c)
        except OperationalError as exc:
            waited = time.monotonic() - t0
            if (not _is_lock_error(exc) or attempt == WRITE_ATTEMPTS
                    or waited >= RETRY_ONLY_BELOW_BUSY_SHARE * SQLITE_BUSY_TIMEOUT_MS / 1000):
                raise
        except IntegrityError:
            if not retry_on_integrity or attempt == WRITE_ATTEMPTS:
                raise
        time.sleep(WRITE_RETRY_DELAY_S * attempt * (1 + secrets.randbelow(100) / 100))
    raise AssertionError("unreachable")  # pragma: no cover


def upsert(c: Connection, table: Table, key: dict, values: dict, created: dict) -> None:
    """Update the row of ``table`` with ``key`` (column -> value) to ``values``; insert it (with
    the ``created`` columns too) when there is none.

    On SQLite the UPDATE takes the write lock first, so no one can insert in between; on a
    server database a concurrent insert of the same key makes our INSERT fail with an
    IntegrityError, and ``write(retry_on_integrity=True)`` repeats the whole transaction,
    whose UPDATE then finds the row.
    """
    where = and_(*(table.c[k] == v for k, v in key.items()))
    if c.execute(update(table).where(where).values(**values)).rowcount == 0:
        c.execute(insert(table).values(**key, **values, **created))


def lock_run(c: Connection, run_id: int) -> None:
    """Serialise writers of one run until the transaction ends: a no-op UPDATE of the run row
    holds SQLite's write lock / PostgreSQL's row lock.  Raises ValueError for an unknown run."""
    res = c.execute(update(S.runs).where(S.runs.c.id == run_id).values(cancel_requested=S.runs.c.cancel_requested))
    if res.rowcount == 0:
        raise ValueError(f"no run {run_id} in the store")
