"""Runs own their process: a lease with a heartbeat in the ``runs`` row.

A process that works on a run first takes its lease (``acquire``): one UPDATE that writes a random token,
the process's pid and host and the time into the run row, and only succeeds where the lease is free (never
taken, released, or its holder stopped beating ``LEASE_STALE_S`` ago, or its holder is a dead process of this
host).  A second process asking for a held run gets ``RunHeld`` naming the holder and its last beat.

The holder keeps the lease alive with a ``Keeper`` thread (a beat every ``LEASE_BEAT_S``) and the ``Store``
it acquired through checks the token in every write of the run's results (``Store.check_lease``, inside the
write's transaction): where the run row is gone (deleted) or carries another token (taken over), the write
raises ``RunLeaseLost`` and rolls back, so a process never writes into a run that is no longer its own.
``release`` gives the lease back with the run's final status.
"""

from __future__ import annotations

import datetime as dt
import os
import secrets
import socket
import threading
import time
from dataclasses import dataclass

from sqlalchemy import select, update

from objrel.errors import RunHeld
from objrel.store import schema as S
from objrel.store.store import Store, lease_lost, now

# Seconds between two beats of a lease's holder.
LEASE_BEAT_S = 5.0
# A lease whose holder has not beaten for this many seconds may be taken over (its process is presumed dead:
# on another host, or hung).  Twelve beats: a busy store delays a beat, it does not lose the lease.
LEASE_STALE_S = 60.0
# A running run whose heartbeat is older than this and whose process is gone is "stalled" (``display_status``).
STALL_AFTER_S = 60.0
# Characters of a lease token (hex of 16 random bytes).
TOKEN_BYTES = 16


def this_host() -> str:
    """This machine's host name (a lease names its holder by host and pid)."""
    return socket.gethostname()


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` of this host runs (a zombie has exited)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return True


@dataclass(frozen=True)
class Holder:
    """Who holds a run's lease: ``pid`` on ``host``, last beat at ``beat_at`` (UTC)."""

    run_id: int
    pid: int | None
    host: str | None
    beat_at: dt.datetime | None

    def age_s(self, at: dt.datetime | None = None) -> float | None:
        """Seconds since the lease's last beat (at ``at``, default now), or None before its first beat."""
        if self.beat_at is None:
            return None
        return ((at or now()) - _aware(self.beat_at)).total_seconds()

    def describe(self) -> str:
        """The lease's holder and last beat, in words."""
        age = self.age_s()
        beat = f"last beat {age:.0f} s ago ({_aware(self.beat_at).isoformat(timespec='seconds')})" \
            if age is not None and self.beat_at is not None else "no beat yet"
        return f"process {self.pid} on {self.host or 'an unknown host'}, {beat}"


def display_status(run, now_ts: float | None = None) -> str:
    """``stalled`` for a running run whose process died without saying so; else the stored status."""
    if run.status != "running":
        return run.status
    now_ts = now_ts or time.time()
    beat = (run.heartbeat_at or run.started_at)
    age = now_ts - beat.timestamp() if beat else float("inf")
    if age > STALL_AFTER_S and not pid_alive(run.pid):
        return "stalled"
    return "running"


def _aware(t: dt.datetime) -> dt.datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)


def _free(row, at: dt.datetime, host: str) -> bool:
    """A lease no one holds: never taken or released, stale, or held by a dead process of this host."""
    if row.lease_token is None or row.heartbeat_at is None:
        return True
    if (at - _aware(row.heartbeat_at)).total_seconds() > LEASE_STALE_S:
        return True
    return row.lease_host == host and not pid_alive(row.pid)


def holder(store: Store, run_id: int) -> Holder | None:
    """The live holder of run ``run_id``'s lease, or None when the lease is free.  KeyError for no such run."""
    with store.engine.connect() as c:
        row = c.execute(select(S.runs.c.lease_token, S.runs.c.lease_host, S.runs.c.pid, S.runs.c.heartbeat_at)
                        .where(S.runs.c.id == int(run_id))).first()
    if row is None:
        raise KeyError(f"no run {run_id} in {store!r}; expected the id of a stored run")
    if _free(row, now(), this_host()):
        return None
    return Holder(int(run_id), row.pid, row.lease_host, row.heartbeat_at)


def refuse_held(store: Store, run_id: int, action: str = "work on it") -> None:
    """RunHeld when a live process holds run ``run_id``."""
    h = holder(store, run_id)
    if h is not None:
        raise _held(h, action)


def _held(h: Holder, action: str) -> RunHeld:
    return RunHeld(f"run {h.run_id} is held by {h.describe()}; a second process may not {action}: wait for it to "
                   f"finish or cancel it (a lease with no beat for {LEASE_STALE_S:.0f} s may be taken over)")


def acquire(store: Store, run_id: int, *, pid: int | None = None, host: str | None = None) -> str:
    """Take run ``run_id``'s lease for this process (or ``pid`` on ``host``) and register it with ``store``,
    whose writes of the run then check it.  Returns the token.  RunHeld when a live process holds it;
    KeyError for no such run."""
    rid, pid, host = int(run_id), int(pid if pid is not None else os.getpid()), host or this_host()
    token = secrets.token_hex(TOKEN_BYTES)
    with store.engine.begin() as c:
        # A no-op write first: SQLite's write lock / PostgreSQL's row lock until the transaction ends, so the
        # check below and the take-over are one step for every process that tries at once.
        locked = c.execute(update(S.runs).where(S.runs.c.id == rid).values(lease_token=S.runs.c.lease_token))
        if locked.rowcount == 0:
            raise KeyError(f"no run {run_id} in {store!r}; expected the id of a stored run")
        row = c.execute(select(S.runs.c.lease_token, S.runs.c.lease_host, S.runs.c.pid, S.runs.c.heartbeat_at)
                        .where(S.runs.c.id == rid)).one()
        at = now()
        if not _free(row, at, host):
            raise _held(Holder(rid, row.pid, row.lease_host, row.heartbeat_at), "work on it")
        c.execute(update(S.runs).where(S.runs.c.id == rid).values(lease_token=token, lease_host=host, pid=pid,
                                                                  heartbeat_at=at))
    store.hold(rid, token)
    return token


def renew(store: Store, run_id: int, token: str) -> bool:
    """One beat: True while the lease is still ``token``'s (False: the run was deleted or taken over)."""
    with store.engine.begin() as c:
        n = c.execute(update(S.runs).where(S.runs.c.id == int(run_id), S.runs.c.lease_token == token)
                      .values(heartbeat_at=now())).rowcount
    return n == 1


def release(store: Store, run_id: int, token: str, **final) -> bool:
    """Give the lease back, writing ``final`` run values (status, finished_at, ...) in the same statement;
    nothing is written where the lease is no longer ``token``'s.  Returns whether it was."""
    rid = int(run_id)
    try:
        with store.engine.begin() as c:
            n = c.execute(update(S.runs).where(S.runs.c.id == rid, S.runs.c.lease_token == token)
                          .values(lease_token=None, **final)).rowcount
    finally:
        store.let_go(rid)
    return n == 1


class Keeper:
    """Beats run ``run_id``'s lease every ``LEASE_BEAT_S`` from a daemon thread while the block runs;
    ``lost`` turns True when a beat finds the lease gone (the loop then stops at its next step)."""

    def __init__(self, store: Store, run_id: int, token: str, interval: float = LEASE_BEAT_S):
        self.store, self.run_id, self.token, self.interval = store, int(run_id), token, interval
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="objrel-lease", daemon=True)

    def _work(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if not renew(self.store, self.run_id, self.token):
                    self.lost = True
                    return
            except Exception:  # a busy store delays a beat; the next one tries again  # noqa: BLE001
                continue

    def check(self) -> None:
        """RunLeaseLost once a beat found the lease gone."""
        if self.lost:
            raise lease_lost(self.run_id)

    def __enter__(self) -> Keeper:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

