"""Runs started from the app: separate processes that outlive the page (long work never runs in a page's script thread).

``start_run`` launches ``python -m objrel.engine.background`` detached from the Streamlit
process for a classifier or a detection run (or to resume a stopped one of either), waits
until the child has created its run row, and returns the run id; progress, cancel and
liveness then go through the store, so any page, in any session, sees the same state.

Starting, resuming and cancelling are for run operators and admins: ``start_run`` and ``cancel`` take
the ``actor`` and check the role here, whatever the page shows.  ``start_web_run`` adds the app's
policy (models from the list, data only from the allowed roots: ``objrel.engine.run_form``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from objrel.config import DetectionConfig, RunConfig
from objrel.progress import estimate_text, format_duration, run_estimate, share
from objrel import access as A
from objrel import work_queue
from objrel.access import Actor
from objrel.store import RunRecord, Store, leases
from objrel.store.leases import display_status, pid_alive  # noqa: F401  (pid_alive: the pages' liveness check)

# How long start_run waits for the child to create its run row.
START_TIMEOUT_S = 120.0
LOG_DIR_ENV = "OBJREL_LOG_DIR"
# The module a background run executes in (``python -m``).
CHILD_MODULE = "objrel.engine.background"
# The folder that holds the objrel package: the child imports objrel from here, as this process does.
PACKAGE_PARENT = Path(__file__).resolve().parents[2]
# Runs shown with a progress bar, and stopped runs that can be resumed while samples are left.
ACTIVE_STATUSES = ("running", "pending")
STOPPED_STATUSES = ("stalled", "cancelled", "failed", "pending")
# A run keeps its (full) progress line this many seconds after it finished, so a watcher sees it end at N/N.
SHOW_FINISHED_S = 60.0


@dataclass(frozen=True)
class Job:
    run_id: int
    pid: int
    log: str


def _log_dir() -> Path:
    d = Path(os.environ.get(LOG_DIR_ENV) or Path(tempfile.gettempdir()) / "objrel-jobs")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _refuse_held(store_url: str, run_id: int) -> None:
    """RunHeld (naming the holder and its last beat) when a live process works on run ``run_id``: resuming
    it would start a second process on the same run.  The child takes the lease itself as well (a race
    between two resumes is settled there)."""
    store = Store(store_url)
    try:
        leases.refuse_held(store, run_id, "resume it")
    finally:
        store.dispose()


def start_run(actor: Actor, store_url: str, config: RunConfig | DetectionConfig | None = None,
              resume: int | None = None, timeout: float = START_TIMEOUT_S) -> Job:
    """Start a classifier or detection run (``config``; a default classifier run when neither is given), or
    resume run ``resume`` with its stored settings, in a new process; return once its run row exists.

    ``actor`` must hold the run-operator or admin role (NotAllowed otherwise).  A run that a live process
    holds (``objrel.store.leases``) is not resumed (RunHeld).  The process starts in a slot of the work queue
    (``objrel.work_queue``), which it holds while it lives: with the server's or the actor's cap reached,
    WorkRefused and nothing starts.  No policy on the model or the data here: the app starts runs through
    ``start_web_run``."""
    if config is not None and resume is not None:
        raise ValueError("give a configuration for a new run or the id of a run to resume, not both")
    if resume is not None:
        A.authorize(actor, A.RESUME_RUN, f"run {int(resume)}")
        _refuse_held(store_url, int(resume))
    else:
        A.authorize(actor, A.START_RUN)
    what = f"resuming run {int(resume)}" if resume is not None else "a new run"
    with work_queue.admit(actor, work_queue.RUN, what) as ticket:
        return _spawn_run(ticket, store_url, config, resume, timeout)


def _spawn_run(ticket: work_queue.Ticket, store_url: str, config: RunConfig | DetectionConfig | None,
               resume: int | None, timeout: float) -> Job:
    """The run's process, started in ``ticket``'s slot; its Job once its run row exists."""
    work = _log_dir()
    stamp = f"{int(time.time() * 1000)}-{os.getpid()}"
    id_file = work / f"run-{stamp}.id"
    log = work / f"run-{stamp}.log"
    cmd = [sys.executable, "-m", CHILD_MODULE, "--store", store_url, "--run-id-file", str(id_file)]
    if resume is not None:
        cmd += ["--resume", str(int(resume))]
    else:
        cfg_file = work / f"run-{stamp}.json"
        cfg_file.write_text(json.dumps((config or RunConfig()).to_dict()))
        cmd += ["--config-json", str(cfg_file)]
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_PARENT), os.environ.get("PYTHONPATH")]))}
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, cwd=os.getcwd())
    ticket.attach(proc)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if id_file.exists() and id_file.read_text().strip():
            return Job(int(id_file.read_text().strip()), proc.pid, str(log))
        if proc.poll() is not None:
            raise RuntimeError(f"the run process exited with code {proc.returncode}: {_tail(log)}")
        time.sleep(0.1)
    raise TimeoutError(f"the run process did not create its run within {timeout:.0f} s; its log is "
                       f"{log.name} in the server's run logs")


# An absolute path in a log line (a traceback's file, the store's folder): shown by its last part only.
SERVER_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s/'\"(),:]+/)+([^\s/'\"(),:]+)")


def _tail(path: Path, lines: int = 5) -> str:
    """The log's last ``lines`` lines in one line, each server path shortened to its file name (the message
    reaches the web page, which shows no server path)."""
    try:
        text = " | ".join(Path(path).read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
    return SERVER_PATH.sub(lambda m: m.group(1), text)


def start_web_run(actor: Actor, store: Store, config: RunConfig | DetectionConfig,
                  timeout: float = START_TIMEOUT_S) -> Job:
    """Start a run asked for in the web app: the actor's role first, then the app's policy
    (``run_form.check_web_config``: a listed model, never ``py:``, data and weights inside the allowed
    roots), then ``start_run``.  NotAllowed or ConfigError say what was refused."""
    from objrel.engine.run_form import check_web_config

    A.authorize(actor, A.START_RUN)
    return start_run(actor, store.url, check_web_config(store, config), timeout=timeout)


def resume_web_run(actor: Actor, store: Store, run_id: int, timeout: float = START_TIMEOUT_S) -> Job:
    """Resume a stopped run from the web app: the actor's role, then the app's policy on the run's stored
    settings (a run started on the server with a ``py:`` model is resumed there, not from the web)."""
    from objrel.engine.run_form import check_web_config, stored_config

    A.authorize(actor, A.RESUME_RUN, f"run {int(run_id)}")
    check_web_config(store, stored_config(store, int(run_id)))
    return start_run(actor, store.url, resume=int(run_id), timeout=timeout)


def cancel(actor: Actor, store: Store, run_id: int) -> None:
    """Ask a running run to stop after its current chunk (it marks itself cancelled).  ``actor`` must hold
    the run-operator or admin role (NotAllowed otherwise)."""
    A.authorize(actor, A.CANCEL_RUN, f"run {int(run_id)}")
    store.request_cancel(run_id)


def log_tail(actor: Actor, path: str | os.PathLike, lines: int = 20) -> str:
    """The last ``lines`` lines of a run's log, for run operators and admins only (NotAllowed otherwise):
    a log can hold paths and tracebacks that reviewers and stakeholders need not see."""
    A.authorize(actor, A.READ_LOG)
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def is_active(run: RunRecord) -> bool:
    """A run in progress (or waiting to go on): shown with a progress bar."""
    return display_status(run) in ACTIVE_STATUSES


def can_cancel(run: RunRecord) -> bool:
    """True when the run is running, so a user may stop it."""
    return run.status == "running"


def is_resumable(run: RunRecord) -> bool:
    """A run that stopped (cancelled, failed, stalled, or left pending) with samples still to do."""
    return display_status(run) in STOPPED_STATUSES and run.n_done < run.n_total


def active_runs(store: Store) -> list[RunRecord]:
    """The store's runs in progress or waiting to go on."""
    return [r for r in store.list_runs() if is_active(r)]


def resumable_runs(store: Store) -> list[RunRecord]:
    """The store's stopped runs that still have samples to do."""
    return [r for r in store.list_runs() if is_resumable(r)]


def just_finished(run: RunRecord, now_ts: float | None = None) -> bool:
    """A run that finished less than ``SHOW_FINISHED_S`` ago: still shown with its (final) progress line."""
    if run.status != "finished" or run.finished_at is None:
        return False
    at = run.finished_at if run.finished_at.tzinfo else run.finished_at.replace(tzinfo=dt.timezone.utc)  # stored in UTC
    return (now_ts or time.time()) - at.timestamp() < SHOW_FINISHED_S


def progress_share(run: RunRecord) -> float:
    """Share of the run done, in [0, 1]: by forward passes while the run reports them, else by samples; 1 once
    it finished."""
    return 1.0 if run.status == "finished" else share(run_estimate(run))


def progress_text(run: RunRecord) -> str:
    """Samples done/total (tested, skipped and untested alike), forward passes, images per second and ETA of a
    running run (``objrel.progress``); for a finished one its samples, passes and time, no ETA."""
    if run.status == "finished":
        seconds = (run.timings or {}).get("seconds")
        took = f" in {format_duration(seconds)}" if seconds is not None else ""
        return (f"finished: {run.n_done}/{run.n_total} samples, {int(run.passes_done or 0)} forward passes{took}")
    return estimate_text(run_estimate(run))
