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
from objrel.review.judgments import check_relation, check_run_id
from objrel.review.lime_pair import SOURCE_KEY
from objrel.store import Store, review_jobs
from objrel.store.leases import pid_alive, this_host
from objrel.store.store import ENV_VAR, now

LIME_KIND = "lime"
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

    @property
    def share(self) -> float:
        """Share done, in [0, 1] (0 while the total is not known yet)."""
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self) -> str:
        """``LIME: 3/12 images explained (running)``, as a progress bar's caption."""
        counted = f"{self.done}/{self.total} images explained" if self.total else "starting"
        return f"LIME: {counted} ({self.status})" + (f": {self.error}" if self.error else "")


def _status(row: dict) -> JobStatus:
    dead = row["status"] in review_jobs.ACTIVE_STATUSES and _is_dead(row)
    status = "failed" if dead else row["status"]
    return JobStatus(status=status, done=int(row["done"]), total=int(row["total"]),
                     error=DIED_ERROR if dead else row["error"], finished=status in FINISHED_STATUSES)


def _aware_age(t) -> float:
    import datetime as dt

    t = t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc)
    return (now() - t).total_seconds()


def _is_dead(row: dict) -> bool:
    """A queued or running job whose process is gone: a dead pid on this host, or no beat for
    ``JOB_STALE_S`` (a queued job not yet given a process counts from its creation)."""
    if row["pid"] is not None and row["host"] == this_host() and not pid_alive(row["pid"]):
        return True
    return _aware_age(row["updated_at"]) > JOB_STALE_S


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
    from objrel.review.items import DETECTION_TASK

    return store.get_run(int(run_id)).task != DETECTION_TASK


def _check_explainable(store: Store, run_id: int, relation: str) -> list[str]:
    """The stored review sample's ids; ValueError for a detection run or a sample not drawn yet."""
    from objrel.review.sampling import review_sample_info

    if not explainable_run(store, run_id):
        raise ValueError(f"LIME explains classifier outputs; run {run_id} is a detection run")
    draw = review_sample_info(store, run_id, relation)
    if draw is None:
        raise ValueError(f"run {run_id} has no {relation} review sample drawn yet; draw it before explaining it")
    return list(draw.sample_ids)


def _job_dir() -> Path:
    d = Path(tempfile.gettempdir()) / "objrel-jobs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _reap(proc: subprocess.Popen) -> None:
    """Wait for the child from a daemon thread, so a finished job leaves no zombie in a long-lived app."""
    threading.Thread(target=proc.wait, name=f"objrel-lime-reaper-{proc.pid}", daemon=True).start()


def start_lime_job(actor: Actor, store: Store | str, run_id: int, relation: str,
                   num_samples: int = AHEAD_SAMPLES, echo: bool = False) -> JobStatus:
    """Start explaining the review sample of (run, relation) in a background process; return its status.

    ``store``: a Store or its URL.  ``actor`` must be allowed to explain (reviewer, adjudicator, admin;
    NotAllowed otherwise).  When a live job of (run, relation) is queued or running, that one's status comes
    back and nothing starts.  ``echo``: the child prints a progress line per image to this process's
    standard error (the demo build), else to a log file in the temporary folder.  ValueError for a detection
    run or a sample not drawn yet.  A process that cannot be started makes the job failed (its status says
    why), never an exception."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.EXPLAIN, f"the {relation} review sample of run {rid}")
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 2:
        raise ValueError(f"num_samples must be an integer of at least 2; got {num_samples!r}")
    own = not isinstance(store, Store)
    st = Store(store) if own else store
    try:
        _check_explainable(st, rid, relation)
        row, new = review_jobs.claim_job(st, LIME_KIND, rid, relation, _is_dead, DIED_ERROR)
        if not new:
            return _status(row)
        _spawn(st, row["id"], num_samples, echo)
        return _status(review_jobs.job(st, row["id"]))
    finally:
        if own:
            st.dispose()


def _spawn(store: Store, job_id: int, num_samples: int, echo: bool) -> None:
    cmd = [sys.executable, *CHILD_ARGS, "--job", str(job_id), "--samples", str(num_samples)]
    # The store's URL travels in the environment, not on the command line (a PostgreSQL URL may hold a
    # password that every user's `ps` would show).
    env = {**os.environ, ENV_VAR: store.url, "OMP_NUM_THREADS": str(JOB_THREADS),
           "MKL_NUM_THREADS": str(JOB_THREADS),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))}
    try:
        if echo:
            # file descriptor 2: this process's standard error, also where a test or pytest swapped sys.stderr
            proc = subprocess.Popen(cmd, stdout=2, stderr=2, stdin=subprocess.DEVNULL, env=env,
                                    start_new_session=True)
        else:
            with open(_job_dir() / f"lime-{job_id}-{os.getpid()}.log", "wb") as log:
                proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=env, start_new_session=True)
    except OSError as exc:
        review_jobs.finish_job(store, job_id, "failed", f"the LIME process could not start: {one_line_error(exc)}")
        return
    _reap(proc)
    review_jobs.set_process(store, job_id, proc.pid, this_host())


def ensure_lime_job(actor: Actor, store: Store, run_id: int, relation: str,
                    num_samples: int = AHEAD_SAMPLES) -> JobStatus | None:
    """The LIME job of (run, relation), started now when none ever was (a sample drawn before explaining
    ahead existed, or by a caller that opted out); None for a detection run, a sample not drawn yet, or an
    actor who may not explain.  A failed or cancelled job is not restarted here (``start_lime_job`` does)."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    known = lime_job_status(store, rid, relation)
    if known is not None:
        return known
    from objrel.review.sampling import review_sample_info

    if (not A.permits(actor, A.EXPLAIN) or not explainable_run(store, rid)
            or review_sample_info(store, rid, relation) is None):
        return None
    return start_lime_job(actor, store, rid, relation, num_samples)


def cancel_lime_job(actor: Actor, store: Store, run_id: int, relation: str) -> bool:
    """Stop the running LIME job of (run, relation) after its current image; False when none ran."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.EXPLAIN, f"the {relation} review sample of run {rid}")
    return review_jobs.cancel_job(store, LIME_KIND, rid, relation)


# ---------------------------------------------------------------- the job's own process


class _Beater:
    """Beats job ``job_id`` every ``JOB_BEAT_S`` from a daemon thread while the block runs, so a long image
    does not make the job look dead."""

    def __init__(self, store: Store, job_id: int):
        self.store, self.job_id = store, job_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, name="objrel-lime-beat", daemon=True)

    def _work(self) -> None:
        while not self._stop.wait(JOB_BEAT_S):
            try:
                review_jobs.beat(self.store, self.job_id)
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


def run_lime_job(store: Store, job_id: int, num_samples: int = AHEAD_SAMPLES, log=None, model=None) -> JobStatus:
    """Do job ``job_id``'s work in this process: explain every item of its review sample in queue order,
    recording progress after each image, until done or cancelled.  ``log``: a file for one line per image
    (``LIME run 1 MR-2 3/12: 5.jpg mutant ... 4.1 s``).  ``model``: the run's classifier when the caller has
    it loaded (else it is loaded here).  A failure marks the job failed with a one-line error and is raised
    again."""
    from objrel.explain import explanation_for

    row = review_jobs.job(store, job_id)
    if row is None:
        raise ValueError(f"no review job {job_id} in the store")
    rid, relation = int(row["run_id"]), row["relation"]
    label = f"LIME run {rid} {relation}"
    try:
        ids = _check_explainable(store, rid, relation)
        steps = [(sid, key) for sid in ids for key in ahead_keys(store, rid, sid, relation)]
        if not review_jobs.mark_running(store, job_id, os.getpid(), this_host(), len(steps)):
            return _status(review_jobs.job(store, job_id))
        if model is None:
            from objrel.engine.retest import run_model

            model = run_model(store, rid)
        t0 = time.perf_counter()
        with _Beater(store, job_id):
            for done, (sid, key) in enumerate(steps, start=1):
                t = time.perf_counter()
                explanation_for(store, model, rid, sid, key, num_samples=num_samples)
                if log is not None:
                    print(f"{label} {done}/{len(steps)}: sample {sid} {key} ({time.perf_counter() - t:.1f} s)",
                          file=log, flush=True)
                if not review_jobs.set_progress(store, job_id, done):
                    if log is not None:
                        print(f"{label}: stopped (cancelled)", file=log, flush=True)
                    return _status(review_jobs.job(store, job_id))
        review_jobs.finish_job(store, job_id, "finished")
        if log is not None:
            print(f"{label}: {len(steps)} images explained in {time.perf_counter() - t0:.0f} s", file=log, flush=True)
    except BaseException as exc:
        review_jobs.finish_job(store, job_id, "cancelled" if isinstance(exc, KeyboardInterrupt) else "failed",
                               None if isinstance(exc, KeyboardInterrupt) else one_line_error(exc))
        raise
    return _status(review_jobs.job(store, job_id))


def explain_sample_now(actor: Actor, store: Store, run_id: int, relation: str, num_samples: int = AHEAD_SAMPLES,
                       log=None, model=None) -> JobStatus:
    """Explain the review sample of (run, relation) in this process (the CLI, the demo build), as a job the
    pages see like a background one.  When a live job already works on it, its status comes back."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.EXPLAIN, f"the {relation} review sample of run {rid}")
    _check_explainable(store, rid, relation)
    row, new = review_jobs.claim_job(store, LIME_KIND, rid, relation, _is_dead, DIED_ERROR)
    if not new:
        return _status(row)
    return run_lime_job(store, row["id"], num_samples, log=log, model=model)


def run_child(job_id: int, num_samples: int) -> int:
    """The background process's body (``objrel explain-sample --job``): the store from the environment."""
    _go_easy()
    store = Store(None)
    try:
        status = run_lime_job(store, job_id, num_samples, log=sys.stdout)
    finally:
        store.dispose()
    return 0 if status.status in ("finished", "cancelled") else 1
