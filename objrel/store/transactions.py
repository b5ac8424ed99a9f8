"""Short write transactions that survive contention: retry on a lock, race-free upsert, run lock.

Several processes may write to one store at once (two reviewers on one SQLite file, or app
servers on one PostgreSQL database).  ``write`` runs a unit of work in one transaction and
repeats it when SQLite gives up on a lock quickly or, on request, when a concurrent insert of
the same key won the race; ``upsert`` and ``lock_run`` are the building blocks such units use.
The writes to one SQLite file wait their turn in arrival order (``_turn``), and a write that
cannot get the store within the busy timeout raises ``StoreBusy``.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Table, and_, insert, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from objrel.constants import SQLITE_BUSY_TIMEOUT_MS
from objrel.errors import StoreBusy
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
# The file beside a SQLite store (its path plus this) on whose OS lock the store's writers queue.
WRITER_QUEUE_SUFFIX = "-writers"

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: writers meet in SQLite's busy handler alone
    fcntl = None  # type: ignore[assignment]  # no such module here: the checks read None


def _is_lock_error(exc: OperationalError) -> bool:
    msg = str(exc.orig if exc.orig is not None else exc).lower()
    return "locked" in msg or "busy" in msg


def write(store: Store, work: Callable[[Connection], Any], *, retry_on_integrity: bool = False) -> Any:
    """Run ``work(connection)`` in one short transaction and return its result.

    Retried (up to ``WRITE_ATTEMPTS`` in all) when SQLite reports "database is locked" *without*
    having waited out its busy timeout (a lock it would not wait for, e.g. a stale WAL snapshot);
    a lock that outlasted the busy timeout is raised at once instead of blocking the caller for
    minutes.  A lock that is given up on that way, or no pooled connection free within the pool's
    timeout, raises ``StoreBusy`` (nothing was written; the caller may try the same write again).
    With ``retry_on_integrity`` an IntegrityError (a concurrent insert of the same key won the race)
    repeats the transaction too.  Any other error rolls back and propagates.
    """
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        t0 = time.monotonic()
        try:
            with _turn(store), store.engine.begin() as c:
                return work(c)
        except PoolTimeout as exc:
            raise _busy(time.monotonic() - t0, "no free connection to the store") from exc
        except OperationalError as exc:
            waited = time.monotonic() - t0
            if not _is_lock_error(exc):
                raise
            if attempt == WRITE_ATTEMPTS or waited >= RETRY_ONLY_BELOW_BUSY_SHARE * SQLITE_BUSY_TIMEOUT_MS / 1000:
                raise _busy(waited, "other writers held the store's lock") from exc
        except IntegrityError:
            if not retry_on_integrity or attempt == WRITE_ATTEMPTS:
                raise
        time.sleep(WRITE_RETRY_DELAY_S * attempt * (1 + secrets.randbelow(100) / 100))
    raise AssertionError("unreachable")  # pragma: no cover


# ---------------------------------------------------------------- the writers' queue of a SQLite store

# The turns this thread holds: the paths of the stores it is writing to (a write inside a write takes no turn).
_held = threading.local()
# The descriptors of this process's turns, taken or waited for: a child forked meanwhile closes its copies, which
# would otherwise hold the turn for as long as the child lives.
_turn_fds: set[int] = set()


def _open_turn(path: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    _turn_fds.add(fd)
    return fd


def _close_turn(fd: int) -> None:
    _turn_fds.discard(fd)
    os.close(fd)


def _close_inherited_turns() -> None:
    for fd in list(_turn_fds):
        try:
            os.close(fd)
        except OSError:
            pass
    _turn_fds.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_turns)


@contextmanager
def _turn(store: Store) -> Iterator[None]:
    """Wait for this write's turn among the store's writers (SQLite on a POSIX system; elsewhere at once).

    SQLite has no queue: a writer that finds the lock taken sleeps in its busy handler for 1, 2, 5, ... and
    then 100 ms at a time, and every newcomer may take the lock in between, so under load a few writes wait
    seconds while most pass at once.  The writers that go through ``write`` first take an exclusive OS lock
    (``flock``) on a file beside the database, on which the kernel queues them and wakes the next as soon as
    one ends; each then meets the engine's writes in SQLite's lock as before.  Raises ``StoreBusy`` when the
    turn has not come within the busy timeout.
    """
    database = store.engine.url.database
    held = getattr(_held, "paths", None)
    if held is None:
        held = _held.paths = set()
    if fcntl is None or not store.is_sqlite or not database or database == ":memory:" or database in held:
        yield
        return
    t0 = time.monotonic()
    fd = _open_turn(database + WRITER_QUEUE_SUFFIX)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if not _wait_for_turn(fd, SQLITE_BUSY_TIMEOUT_MS / 1000):
            raise _busy(time.monotonic() - t0, "other writers held the store's lock") from None
    except BaseException:
        _close_turn(fd)
        raise
    held.add(database)
    try:
        yield
    finally:
        held.discard(database)
        _close_turn(fd)        # closing the file's only descriptor ends the turn


def _wait_for_turn(fd: int, timeout_s: float) -> bool:
    """Block for the lock on ``fd`` at most ``timeout_s`` seconds.  True: taken (the caller closes ``fd`` to
    give it back); False: timed out, and ``fd`` now belongs to a helper thread, which closes it once the lock
    comes (a blocking ``flock`` cannot be given a timeout, so a helper thread waits in it)."""
    guard, taken = threading.Lock(), threading.Event()
    gave_up: list[bool] = []

    def take() -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with guard:
            if gave_up:
                _close_turn(fd)
            else:
                taken.set()

    threading.Thread(target=take, name="objrel-store-writer-turn", daemon=True).start()
    try:
        came = taken.wait(timeout_s)
    except BaseException:           # interrupted while waiting: the turn, when it comes, is given back at once
        with guard:
            if taken.is_set():
                _close_turn(fd)
            else:
                gave_up.append(True)
        raise
    if came:
        return True
    with guard:
        if taken.is_set():
            return True
        gave_up.append(True)
    return False


def _busy(waited_s: float, why: str) -> StoreBusy:
    return StoreBusy(f"the store is busy ({why}; waited {waited_s:.1f} s): nothing was saved, try again")


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


def touch_run(c: Connection, run_id: int) -> bool:
    """A no-op UPDATE of the run row (``cancel_requested`` set to itself), so the transaction holds SQLite's
    write lock / PostgreSQL's row lock on the run until it ends; False when there is no such run.

    The column is not a key: SQLite checks the foreign keys of a run's child rows only when a key of the row
    is written, so the cost stays that of one row however many samples, verdicts and votes the run has."""
    res = c.execute(update(S.runs).where(S.runs.c.id == run_id).values(cancel_requested=S.runs.c.cancel_requested))
    return res.rowcount > 0


def lock_run(c: Connection, run_id: int) -> None:
    """Serialise writers of one run until the transaction ends (``touch_run``).  Raises ValueError for an
    unknown run."""
    if not touch_run(c, run_id):
        raise ValueError(f"no run {run_id} in the store")
