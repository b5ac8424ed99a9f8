"""Background review jobs (LIME ahead of the reviewers): the ``review_jobs`` table.

A row is one job of one ``kind`` (``lime``) on one run and relation: its ``status`` (queued, running,
finished, failed, cancelled), how far it is (``done`` of ``total``), the process that works on it (``pid``
on ``host``), a one-line ``error`` and its times; ``updated_at`` doubles as the job's heartbeat.  Rows come
back as dicts of column -> value.  Whether a queued or running job's process still lives is decided by
the caller (``claim_job`` takes the test), so this module stays free of process handling.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import insert, select, update
from sqlalchemy.engine import Connection

from objrel.store import schema as S
from objrel.store.store import Store, now
from objrel.store.transactions import lock_run, write

JOB_STATUSES = ("queued", "running", "finished", "failed", "cancelled")
ACTIVE_STATUSES = ("queued", "running")
# The ``error`` column holds one line of at most this many characters.
ERROR_CHARS = 300


def _latest(c: Connection, kind: str, run_id: int, relation: str) -> dict | None:
    j = S.review_jobs.c
    row = c.execute(select(S.review_jobs).where(j.kind == kind, j.run_id == int(run_id), j.relation == relation)
                    .order_by(j.id.desc()).limit(1)).first()
    return dict(row._mapping) if row is not None else None


def latest_job(store: Store, kind: str, run_id: int, relation: str) -> dict | None:
    """The newest job of ``kind`` on (run, relation), or None when none was ever started."""
    with store.engine.connect() as c:
        return _latest(c, kind, run_id, relation)


def job(store: Store, job_id: int) -> dict | None:
    """The row of review job ``job_id`` as a dict, or None."""
    with store.engine.connect() as c:
        row = c.execute(select(S.review_jobs).where(S.review_jobs.c.id == int(job_id))).first()
    return dict(row._mapping) if row is not None else None


def _one_line(text: str | None) -> str | None:
    return None if text is None else " ".join(str(text).split())[:ERROR_CHARS]


def claim_job(store: Store, kind: str, run_id: int, relation: str,
              is_dead: Callable[[dict], bool], dead_error: str) -> tuple[dict, bool]:
    """The job of ``kind`` on (run, relation) that is to run: ``(row, True)`` for a new queued row, or
    ``(row, False)`` for the queued or running one already there.

    One step for every process that asks at once (the run row is locked first).  An active row whose
    process ``is_dead(row)`` says is gone is marked failed with ``dead_error`` and a new row replaces it.
    ValueError for an unknown run."""
    rid = int(run_id)

    def work(c: Connection) -> tuple[dict, bool]:
        lock_run(c, rid)
        last = _latest(c, kind, rid, relation)
        at = now()
        if last is not None and last["status"] in ACTIVE_STATUSES:
            if not is_dead(last):
                return last, False
            c.execute(update(S.review_jobs).where(S.review_jobs.c.id == last["id"])
                      .values(status="failed", error=_one_line(dead_error), updated_at=at, finished_at=at))
        c.execute(insert(S.review_jobs).values(kind=kind, run_id=rid, relation=relation, status="queued",
                                               done=0, total=0, created_at=at, updated_at=at))
        return _latest(c, kind, rid, relation), True  # type: ignore[return-value]  # the row inserted above

    return write(store, work)


def _set(store: Store, job_id: int, only_active: bool, **values) -> bool:
    """Write ``values`` (and ``updated_at``) into job ``job_id``; with ``only_active`` only while it is queued
    or running.  Returns whether a row was written."""
    j = S.review_jobs.c
    q = update(S.review_jobs).where(j.id == int(job_id))
    if only_active:
        q = q.where(j.status.in_(ACTIVE_STATUSES))
    return write(store, lambda c: c.execute(q.values(updated_at=now(), **values)).rowcount) == 1


def set_process(store: Store, job_id: int, pid: int, host: str) -> bool:
    """Record the process that works on the job (while it is still active)."""
    return _set(store, job_id, True, pid=int(pid), host=str(host))


def mark_running(store: Store, job_id: int, pid: int, host: str, total: int) -> bool:
    """The job's process started work on ``total`` steps; False when the job is no longer active
    (cancelled, or replaced after it was seen dead)."""
    return _set(store, job_id, True, status="running", pid=int(pid), host=str(host), done=0, total=int(total))


def set_progress(store: Store, job_id: int, done: int) -> bool:
    """``done`` steps finished (a beat too); False when the job is no longer active: its process stops."""
    return _set(store, job_id, True, done=int(done))


def beat(store: Store, job_id: int) -> bool:
    """The job's process is alive; False when the job is no longer active."""
    return _set(store, job_id, True)


def finish_job(store: Store, job_id: int, status: str, error: str | None = None) -> bool:
    """End an active job with ``status`` (finished, failed or cancelled) and a one-line ``error``."""
    if status not in JOB_STATUSES or status in ACTIVE_STATUSES:
        raise ValueError(f"a job ends finished, failed or cancelled; got {status!r}")
    return _set(store, job_id, True, status=status, error=_one_line(error), finished_at=now())


def waiting_jobs(store: Store, kind: str) -> list[dict]:
    """Queued jobs of ``kind`` that no process has taken yet, oldest first (the queue's order)."""
    j = S.review_jobs.c
    with store.engine.connect() as c:
        rows = c.execute(select(S.review_jobs).where(j.kind == kind, j.status == "queued", j.pid.is_(None))
                         .order_by(j.id)).all()
    return [dict(r._mapping) for r in rows]


def recorded_processes(store: Store, kind: str, host: str) -> list[int]:
    """The distinct pids ever recorded on ``host`` for jobs of ``kind``, whatever the job's status (a process
    lives on between its jobs): whether they still run is for the caller to check."""
    j = S.review_jobs.c
    with store.engine.connect() as c:
        rows = c.execute(select(j.pid).where(j.kind == kind, j.pid.is_not(None), j.host == host).distinct()).all()
    return [int(p) for (p,) in rows]


def jobs_of_process(store: Store, kind: str, pid: int) -> list[dict]:
    """The queued or running jobs of ``kind`` that process ``pid`` holds."""
    j = S.review_jobs.c
    with store.engine.connect() as c:
        rows = c.execute(select(S.review_jobs).where(j.kind == kind, j.pid == int(pid),
                                                      j.status.in_(ACTIVE_STATUSES))).all()
    return [dict(r._mapping) for r in rows]


def take_job(store: Store, job_id: int, pid: int, host: str) -> bool:
    """Give the waiting job ``job_id`` to process ``pid`` on ``host``; False when another process took it first
    (or it is no longer queued): one step, so two processes never take the same job."""
    j = S.review_jobs.c
    q = (update(S.review_jobs).where(j.id == int(job_id), j.status == "queued", j.pid.is_(None))
         .values(pid=int(pid), host=str(host), updated_at=now()))
    return write(store, lambda c: c.execute(q).rowcount) == 1


def requeue_job(store: Store, job_id: int, pid: int) -> bool:
    """Put job ``job_id`` of process ``pid`` back in the queue (its process stops before it finished: the
    server that started it ended); what it had done stays done.  False when it is no longer that process's."""
    j = S.review_jobs.c
    q = (update(S.review_jobs).where(j.id == int(job_id), j.pid == int(pid), j.status.in_(ACTIVE_STATUSES))
         .values(status="queued", pid=None, host=None, updated_at=now()))
    return write(store, lambda c: c.execute(q).rowcount) == 1


def cancel_job(store: Store, kind: str, run_id: int, relation: str) -> bool:
    """Mark the active job of ``kind`` on (run, relation) cancelled (its process stops at its next step);
    False when none was active."""
    last = latest_job(store, kind, run_id, relation)
    if last is None or last["status"] not in ACTIVE_STATUSES:
        return False
    return finish_job(store, last["id"], "cancelled")
