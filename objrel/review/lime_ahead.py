"""LIME ahead of the reviewers: a background job explains a drawn review sample before anyone opens it.

A review item's LIME takes seconds to minutes of model time; computed on demand it blocks the reviewer.
``start_lime_job`` therefore starts one separate, low-priority process per run and relation (``python -m
objrel explain-sample --job ID``) that explains every item of the stored review sample in queue order (the
first items are ready first): for each item the source and the relation's applied primary mutants
(violated ones first), each cached in the store's ``explanations`` table with :data:`AHEAD_SAMPLES` LIME
samples.  Its progress lives in the ``review_jobs`` table, so any page in any session reads the same
state (``lime_job_status``), and a page shows an item's overlays as soon as they are stored
(``objrel.review.lime_pair.cached_pair``) without ever running the model itself.

One job per run and relation at a time: a second start while one is queued or running returns that one.
A job whose process died (its pid is gone on this host, or it has not beaten for :data:`JOB_STALE_S`)
reads as failed and may be started again; what it had explained stays cached and is not redone.

The jobs form one queue per store on each host: at most ``max_processes()`` LIME processes (``$OBJREL_LIME_PROCESSES``,
default :data:`DEFAULT_PROCESSES`) run at once, each 1.3-1.5 GB with its model, and a process starts only in a
slot of the app's work queue (``objrel.work_queue``: the server's cap on costly work and the cap of the person
who opened the sample), which it holds while it lives.  A job started while a cap is reached waits, queued
with no process; a process that finishes its jobs takes the waiting ones, oldest
first, and a reviewer opening a waiting sample starts a process when there is room.  A job the app starts is
*tied* to the app's server: its process watches the server and, once the server is gone, puts its unfinished
jobs back in the queue and ends (the next server's reviewers start them again).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from objrel import access as A
from objrel.access import Actor
from objrel.constants import LIME_AHEAD_ENV
from objrel.review.judgments import check_relation, check_run_id
from objrel.review.lime_pair import SOURCE_KEY
from objrel.store import Store, review_jobs
from objrel.store import reviews as review_rows
from objrel.store.leases import pid_alive, this_host
from objrel.store.store import ENV_VAR, now

LIME_KIND = "lime"
# How many LIME processes may run at once on one host (each holds the model and LIME's samples: 1.3-1.5 GB).
PROCESSES_ENV = "OBJREL_LIME_PROCESSES"
DEFAULT_PROCESSES = 1
# A process started for a server carries the server's pid here and ends (its jobs back in the queue) once the
# server is gone; it looks every PARENT_CHECK_S seconds.
PARENT_ENV = "OBJREL_LIME_PARENT"
PARENT_CHECK_S = 1.0
# Set to "0" to keep the app from starting LIME jobs ahead (objrel.constants.LIME_AHEAD_ENV).
AHEAD_ENV = LIME_AHEAD_ENV
# LIME samples per explanation computed ahead: the Review page looks its overlays up with the same number.
AHEAD_SAMPLES = 300
# Seconds between two beats of a job's process (it beats after each image as well).
JOB_BEAT_S = 5.0
# A queued or running job whose process has not beaten for this long is presumed dead (on another host,
# or hung): twelve beats, so a busy store delays a beat without killing the job.
JOB_STALE_S = 60.0
# Niceness the job's process adds to itself, and its torch threads: it must not starve the app's pages.
JOB_NICE = 10
JOB_THREADS = 1
# The command the job's process runs (``python -m objrel explain-sample --job ID``).
CHILD_ARGS = ("-m", "objrel", "explain-sample")
# The folder that holds the objrel package: the child imports objrel from here, as this process does.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]
DIED_ERROR = "the LIME process stopped before it finished (killed or crashed); start it again"
FINISHED_STATUSES = ("finished", "failed", "cancelled")
# Anything that looks like a file path (two or more slash-separated parts) in an error: only its last part
# is kept, so a job's error line names no server folder.
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/][^\s\\/'\"]+){2,}")


@dataclass(frozen=True)
class JobStatus:
    """Where a LIME job stands: ``status`` (queued, running, finished, failed, cancelled), ``done`` of
    ``total`` images explained, a one-line ``error`` (no path) for a failed job, and ``finished``: True
    once the job no longer runs (finished, failed or cancelled)."""

    status: str
    done: int
    total: int
    error: str | None
    finished: bool
    waiting: bool = False       # queued with no process yet: the cap on LIME processes is reached

    @property
    def share(self) -> float:
        """Share done, in [0, 1] (0 while the total is not known yet)."""
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self) -> str:
        """``LIME: 3/12 images explained (running)``, as a progress bar's caption."""
        counted = f"{self.done}/{self.total} images explained" if self.total else "starting"
        status = WAITING_TEXT if self.waiting else self.status
        return f"LIME: {counted} ({status})" + (f": {self.error}" if self.error else "")


WAITING_TEXT = "waiting for a free LIME process"


def _status(row: dict) -> JobStatus:
    if _waiting(row):
        return JobStatus(status="queued", done=int(row["done"]), total=int(row["total"]), error=None,
                         finished=False, waiting=True)
    dead = row["status"] in review_jobs.ACTIVE_STATUSES and _is_dead(row)
    status = "failed" if dead else row["status"]
    return JobStatus(status=status, done=int(row["done"]), total=int(row["total"]),
                     error=DIED_ERROR if dead else row["error"], finished=status in FINISHED_STATUSES)


def _aware_age(t) -> float:
    import datetime as dt

    t = t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)
    return (now() - t).total_seconds()


def max_processes() -> int:
    """The cap on LIME processes running at once on this host: ``$OBJREL_LIME_PROCESSES``, else
    ``DEFAULT_PROCESSES``; ValueError naming the variable for a value that is not a whole number >= 1."""
    raw = os.environ.get(PROCESSES_ENV, "").strip()
    if not raw:
        return DEFAULT_PROCESSES
    if not re.fullmatch(r"[0-9]{1,4}", raw) or int(raw) < 1:
        raise ValueError(f"{PROCESSES_ENV} must be a whole number of processes >= 1; got {raw!r}")
    return int(raw)


def _waiting(row: dict) -> bool:
    """A queued job that no process has taken: it waits in the queue (it is not dead)."""
    return row["status"] == "queued" and row["pid"] is None


def _is_dead(row: dict) -> bool:
    """A queued or running job whose process is gone: on this host, a pid that no longer runs; elsewhere,
    no beat for ``JOB_STALE_S``.  A job waiting in the queue for a process is not dead."""
    if _waiting(row):
        return False
    if row["pid"] is not None and row["host"] == this_host():
        return not pid_alive(row["pid"])
    return _aware_age(row["updated_at"]) > JOB_STALE_S


def _is_lime_process(pid: int) -> bool:
    """Whether ``pid`` runs a LIME job process now: alive, not a zombie, and (where /proc tells) running
    ``objrel explain-sample`` (a pid an unrelated process took over does not count)."""
    if not pid_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                return False
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return CHILD_ARGS[-1].encode() in fh.read()
    except (OSError, IndexError):
        return True            # no /proc here: alive is all that can be told


def live_processes(store: Store) -> list[int]:
    """The LIME processes of this store running on this host now (their pids), between jobs too."""
    return [p for p in review_jobs.recorded_processes(store, LIME_KIND, this_host()) if _is_lime_process(p)]


def one_line_error(exc: BaseException) -> str:
    """``exc`` as one line with every path cut to its last part: fit for a page any reviewer sees."""
    msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    msg = _PATH.sub(lambda m: re.split(r"[\\/]", m.group(0))[-1], " ".join(str(msg).split()))
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def lime_job_status(store: Store, run_id: int, relation: str) -> JobStatus | None:
    """The newest LIME job of (run, relation), or None when none was started.  Reads only (any page may
    ask on every redraw); a queued or running job whose process died reads as failed."""
    row = review_jobs.latest_job(store, LIME_KIND, check_run_id(run_id), check_relation(relation))
    return _status(row) if row is not None else None


def ahead_keys(store: Store, run_id: int, sample_id: str, relation: str) -> list[str]:
    """What the job explains for one item, in order: ``source``, then the applied mutants of the relation's
    primary vote, violated ones first (the Review page's natural default is the second key)."""
    from objrel.mutations import Plan

    run = store.get_run(int(run_id))
    group = Plan.from_dict(run.plan).primary(relation)
    if group is None:
        return [SOURCE_KEY]
    preds = store.predictions(int(run_id), str(sample_id))
    verdicts = {v["mutation_key"]: v["verdict"] for v in store.verdicts(int(run_id), str(sample_id))}
    made = [m.key for m in group.mutations if (preds.get(m.key) or {}).get("prediction") is not None]
    return [SOURCE_KEY] + sorted(made, key=lambda k: verdicts.get(k) != "violated")


def explainable_run(store: Store, run_id: int) -> bool:
    """Whether LIME explains run ``run_id``'s outputs: a classifier run (not a detection run)."""
    from objrel.constants import DETECTION_TASK

    return store.get_run(int(run_id)).task != DETECTION_TASK


def _check_explainable(store: Store, run_id: int, relation: str) -> list[str]:
    """The stored review sample's ids; ValueError for a detection run or a sample not drawn yet."""
    if not explainable_run(store, run_id):
        raise ValueError(f"LIME explains classifier outputs; run {run_id} is a detection run")
    # read through the store, not objrel.review.sampling: its draw starts these jobs
    draw = review_rows.review_sample(store, int(run_id), relation)
    if draw is None:
        raise ValueError(f"run {run_id} has no {relation} review sample drawn yet; draw it before explaining it")
    return list(draw["sample_ids"])


def _job_dir() -> Path:
    d = Path(tempfile.gettempdir()) / "objrel-jobs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _reap(proc: subprocess.Popen) -> None:
    """Wait for the child from a daemon thread, so a finished job leaves no zombie in a long-lived app."""
    threading.Thread(target=proc.wait, name=f"objrel-lime-reaper-{proc.pid}", daemon=True).start()


def start_lime_job(actor: Actor, store: Store | str, run_id: int, relation: str,
                   num_samples: int = AHEAD_SAMPLES, echo: bool = False, tied: bool = False) -> JobStatus:
    """Start explaining the review sample of (run, relation) in a background process; return its status.

    ``store``: a Store or its URL.  ``actor`` must be allowed to explain (reviewer, adjudicator, admin;
    NotAllowed otherwise).  When a live job of (run, relation) is queued or running, that one's status comes
    back and nothing starts.  ``echo``: the child prints a progress line per image to this process's
    standard error (the demo build), else to a log file in the temporary folder.  ValueError for a detection
    run or a sample not drawn yet.  A process that cannot be started makes the job failed (its status says
    why), never an exception.  With the cap on LIME processes reached the job waits in the queue (its status
    says so).  ``tied``: the process ends with this one (the app's server), its unfinished jobs back in the
    queue; untied (the CLI's ``--background``, the demo build) it runs to the end on its own."""
    return start_lime_jobs(actor, store, [(run_id, relation)], num_samples, echo, tied)[0]


def start_lime_jobs(actor: Actor, store: Store | str, samples, num_samples: int = AHEAD_SAMPLES,
                    echo: bool = False, tied: bool = False) -> list[JobStatus]:
    """``start_lime_job`` for several review samples ``[(run id, relation), ...]`` at once: the ones without
    a live job are explained by *one* background process, item by item across the samples (every sample's
    first item first), or wait in the queue while the cap on processes is reached.  Returns each sample's
    status, in order."""
    wanted = [(check_run_id(r), check_relation(rel)) for r, rel in samples]
    for rid, relation in wanted:
        A.authorize(actor, A.EXPLAIN, f"the {relation} review sample of run {rid}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 2:
        raise ValueError(f"num_samples must be an integer of at least 2; got {num_samples!r}")
    own = not isinstance(store, Store)
    st = Store(store) if own else store
    try:
        for rid, relation in wanted:
            _check_explainable(st, rid, relation)
        claimed = [review_jobs.claim_job(st, LIME_KIND, rid, relation, _is_dead, DIED_ERROR)
                   for rid, relation in wanted]
        new_ids = [row["id"] for row, new in claimed if new]
        if new_ids:
            _dispatch(actor, st, new_ids, num_samples, echo, tied)
        return [_status(review_jobs.job(st, row["id"]) if new else row) for row, new in claimed]
    finally:
        if own:
            st.dispose()


# One server process dispatches one job at a time: the count of running processes and the start of a new one
# are one step (a second page asking at the same moment sees the process the first one started).
_dispatch_lock = threading.Lock()


def _dispatch(actor: Actor, store: Store, job_ids: list[int], num_samples: int, echo: bool, tied: bool) -> bool:
    """Start one process for the waiting jobs ``job_ids`` when fewer than ``max_processes()`` run on this
    host and the work queue (``objrel.work_queue``) gives ``actor`` a slot, which the process then holds;
    otherwise leave them waiting (a running process takes them when it is done).  True when a process was
    started."""
    from objrel import work_queue
    from objrel.errors import WorkRefused

    with _dispatch_lock:
        if len(live_processes(store)) >= max_processes():
            return False
        try:
            ticket = work_queue.admit(actor, work_queue.LIME, "LIME ahead of the reviewers")
        except WorkRefused:
            return False
        with ticket:
            proc = _spawn(store, job_ids, num_samples, echo, tied)
            if proc is not None:
                ticket.attach(proc)
        return proc is not None


def _spawn(store: Store, job_ids: list[int], num_samples: int, echo: bool,
           tied: bool = False) -> subprocess.Popen | None:
    """The process started for ``job_ids``, or None when it could not start (the jobs are then failed)."""
    cmd = [sys.executable, *CHILD_ARGS, "--samples", str(num_samples)]
    for job_id in job_ids:
        cmd += ["--job", str(job_id)]
    # The store's URL travels in the environment, not on the command line (a PostgreSQL URL may hold a
    # password that every user's `ps` would show).
    env = {**os.environ, ENV_VAR: store.url, "OMP_NUM_THREADS": str(JOB_THREADS),
           "MKL_NUM_THREADS": str(JOB_THREADS),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))}
    env.pop(PARENT_ENV, None)
    if tied:
        env[PARENT_ENV] = str(os.getpid())
    try:
        if echo:
            # file descriptor 2: this process's standard error, also where a test or pytest swapped sys.stderr
            proc = subprocess.Popen(cmd, stdout=2, stderr=2, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        else:
            with open(_job_dir() / f"lime-{job_ids[0]}-{os.getpid()}.log", "wb") as log:
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=env, start_new_session=True)
    except OSError as exc:
        for job_id in job_ids:
            review_jobs.finish_job(store, job_id, "failed",
                                   f"the LIME process could not start: {one_line_error(exc)}")
        return None
    _reap(proc)
    for job_id in job_ids:
        review_jobs.take_job(store, job_id, proc.pid, this_host())
    return proc


def ensure_lime_job(actor: Actor, store: Store, run_id: int, relation: str,
                    num_samples: int = AHEAD_SAMPLES, tied: bool = True) -> JobStatus | None:
    """The LIME job of (run, relation), started now when none ever was (a sample drawn before explaining
    ahead existed, or by a caller that opted out), or given a process when it waits in the queue (or its
    server ended) and there is room under the cap; None for a detection run, a sample not drawn yet, or an
    actor who may not explain.  A failed or cancelled job is not restarted here (``start_lime_job`` does).
    ``tied`` (the app): a process started here ends with this server."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    if os.environ.get(AHEAD_ENV) == "0":
        return lime_job_status(store, rid, relation)
    row = review_jobs.latest_job(store, LIME_KIND, rid, relation)
    if row is not None and (not A.permits(actor, A.EXPLAIN) or not _waiting(row)):
        return _status(row)
    if (not A.permits(actor, A.EXPLAIN) or not explainable_run(store, rid)
            or review_rows.review_sample(store, rid, relation) is None):
        return None
    if row is None:
        return start_lime_job(actor, store, rid, relation, num_samples, tied=tied)
    A.authorize(actor, A.EXPLAIN, f"the {relation} review sample of run {rid}")
    _dispatch(actor, store, [row["id"]], num_samples, echo=False, tied=tied)
    return _status(review_jobs.job(store, row["id"]))


def cancel_lime_job(actor: Actor, store: Store, run_id: int, relation: str) -> bool:
    """Stop the running LIME job of (run, relation) after its current image; False when none ran."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.EXPLAIN, f"the {relation} review sample of run {rid}")
    return review_jobs.cancel_job(store, LIME_KIND, rid, relation)


# ---------------------------------------------------------------- the job's own process


class _Beater:
    """Beats the jobs in ``job_ids`` every ``JOB_BEAT_S`` from a daemon thread while the block runs, so a
    long image does not make them look dead."""

    def __init__(self, store: Store, job_ids: list[int]):
        self.store, self.job_ids = store, list(job_ids)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="objrel-lime-beat", daemon=True)

    def _work(self) -> None:
        while not self._stop.wait(JOB_BEAT_S):
            for job_id in self.job_ids:
                try:
                    review_jobs.beat(self.store, job_id)
                except Exception:  # a busy store delays a beat; the next one tries again  # noqa: BLE001
                    continue

    def __enter__(self) -> _Beater:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def _go_easy() -> None:
    """Lower this process's priority and use one torch thread: the app's pages come first."""
    try:
        os.nice(JOB_NICE)
    except OSError:  # pragma: no cover - a platform without nice
        pass
    import torch

    torch.set_num_threads(JOB_THREADS)


@dataclass
class _Work:
    """One job's part of a process: its (sample id, key) steps, one list per item, in queue order."""

    job_id: int
    run_id: int
    relation: str
    items: list
    total: int
    done: int = 0
    stopped: bool = False

    @property
    def label(self) -> str:
        return f"LIME run {self.run_id} {self.relation}"


def _plan(store: Store, job_id: int) -> _Work:
    row = review_jobs.job(store, job_id)
    if row is None:
        raise ValueError(f"no review job {job_id} in the store")
    rid, relation = int(row["run_id"]), row["relation"]
    items = [[(sid, key) for key in ahead_keys(store, rid, sid, relation)]
             for sid in _check_explainable(store, rid, relation)]
    return _Work(job_id, rid, relation, items, sum(len(i) for i in items))


def _fail(store: Store, job_ids, exc: BaseException) -> None:
    interrupted = isinstance(exc, KeyboardInterrupt)
    for job_id in job_ids:
        review_jobs.finish_job(store, job_id, "cancelled" if interrupted else "failed",
                               None if interrupted else one_line_error(exc))


def run_lime_jobs(store: Store, job_ids: list[int], num_samples: int = AHEAD_SAMPLES, log=None,
                  models: dict | None = None) -> list[JobStatus]:
    """Do the work of jobs ``job_ids`` in this process: every item of each job's review sample, the first
    item of every job first, then the second, ...; progress is recorded after each image and a job that
    was cancelled (or replaced) meanwhile is left where it stands.  ``log``: a file for one line per image
    (``LIME run 1 MR-2 3/12: sample 5 source (4.1 s)``).  ``models``: {run id: the run's classifier} for
    runs the caller has loaded (the others are loaded here).  A failure marks the unfinished jobs failed
    with a one-line error and is raised again."""
    from objrel.config import run_model
    from objrel.review.explanations import explanation_for

    models = dict(models or {})
    open_ids = list(job_ids)
    try:
        work = [_plan(store, job_id) for job_id in job_ids]
        for w in work:
            w.stopped = not review_jobs.mark_running(store, w.job_id, os.getpid(), this_host(), w.total)
        t0 = time.perf_counter()
        with _Beater(store, job_ids):
            for position in range(max((len(w.items) for w in work), default=0)):
                for w in work:
                    if w.stopped or position >= len(w.items):
                        continue
                    if w.run_id not in models:
                        models[w.run_id] = run_model(store, w.run_id)
                    for sid, key in w.items[position]:
                        t = time.perf_counter()
                        explanation_for(store, models[w.run_id], w.run_id, sid, key, num_samples=num_samples)
                        w.done += 1
                        if log is not None:
                            print(f"{w.label} {w.done}/{w.total}: sample {sid} {key} "
                                  f"({time.perf_counter() - t:.1f} s)", file=log, flush=True)
                        if not review_jobs.set_progress(store, w.job_id, w.done):
                            w.stopped = True
                            if log is not None:
                                print(f"{w.label}: stopped (cancelled)", file=log, flush=True)
                            break
                    if not w.stopped and w.done == w.total:
                        review_jobs.finish_job(store, w.job_id, "finished")
                        open_ids.remove(w.job_id)
                        if log is not None:
                            print(f"{w.label}: {w.total} images explained ({time.perf_counter() - t0:.0f} s since "
                                  "the start)", file=log, flush=True)
        for w in work:  # a job with nothing to explain
            if not w.stopped and w.job_id in open_ids and w.done == w.total:
                review_jobs.finish_job(store, w.job_id, "finished")
    except BaseException as exc:
        _fail(store, open_ids, exc)
        raise
    return [_status(review_jobs.job(store, job_id)) for job_id in job_ids]


def explain_sample_now(actor: Actor, store: Store, run_id: int, relation: str, num_samples: int = AHEAD_SAMPLES,
                       log=None, model=None) -> JobStatus:
    """Explain the review sample of (run, relation) in this process (the CLI), as a job the pages see like a
    background one.  When a live job already works on it, its status comes back and nothing is computed."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.EXPLAIN, f"the {relation} review sample of run {rid}")
    _check_explainable(store, rid, relation)
    row, new = review_jobs.claim_job(store, LIME_KIND, rid, relation, _is_dead, DIED_ERROR)
    if not new:
        return _status(row)
    review_jobs.set_process(store, row["id"], os.getpid(), this_host())
    return run_lime_jobs(store, [row["id"]], num_samples, log=log,
                         models={rid: model} if model is not None else None)[0]


def _mine(store: Store, job_ids: list[int]) -> list[int]:
    """Of ``job_ids``, those this process is to do: given to it, or waiting and taken by it now (another
    process may have taken a waiting one first)."""
    me, host = os.getpid(), this_host()
    out = []
    for job_id in job_ids:
        row = review_jobs.job(store, job_id)
        if row is None or row["status"] not in review_jobs.ACTIVE_STATUSES:
            continue
        if row["pid"] == me or (row["pid"] is None and review_jobs.take_job(store, job_id, me, host)):
            out.append(job_id)
    return out


# Set once the server this process works for is gone: it takes no more jobs.
_stopping = threading.Event()


def _next_waiting(store: Store) -> list[int]:
    """The oldest waiting job, taken by this process ([] when the queue is empty or the process is ending)."""
    if _stopping.is_set():
        return []
    for row in review_jobs.waiting_jobs(store, LIME_KIND):
        if _stopping.is_set():
            return []
        if review_jobs.take_job(store, row["id"], os.getpid(), this_host()):
            return [row["id"]]
    return []


def _watch_parent(store: Store, parent: int) -> None:
    """End this process once ``parent`` (the server that started it) is gone: its unfinished jobs go back in
    the queue first.  Runs in a daemon thread."""
    while True:
        time.sleep(PARENT_CHECK_S)
        if os.getppid() != parent:
            me = os.getpid()
            _stopping.set()
            time.sleep(PARENT_CHECK_S / 5)      # a job being taken at this moment is recorded before the requeue
            try:
                for row in review_jobs.jobs_of_process(store, LIME_KIND, me):
                    review_jobs.requeue_job(store, row["id"], me)
            finally:
                os._exit(0)


def run_child(job_ids: list[int], num_samples: int) -> int:
    """The background process's body (``objrel explain-sample --job ID ...``): the store from the
    environment; its own jobs first, then the jobs waiting in the queue, oldest first, until none is left.
    Tied to a server (``$OBJREL_LIME_PARENT``), it ends with it.  Exit status 1 when a job failed."""
    _go_easy()
    store = Store(None)
    parent = os.environ.get(PARENT_ENV, "")
    if parent.isdigit():
        threading.Thread(target=_watch_parent, args=(store, int(parent)), name="objrel-lime-parent",
                         daemon=True).start()
    failed = False
    try:
        todo = _mine(store, list(job_ids))
        while todo:
            try:
                statuses = run_lime_jobs(store, todo, num_samples, log=sys.stdout)
                failed = failed or any(s.status == "failed" for s in statuses)
            except Exception:  # noqa: BLE001 - recorded on the job (run_lime_jobs); the queue goes on
                failed = True
            todo = _next_waiting(store)
    finally:
        store.dispose()
    return 1 if failed else 0
