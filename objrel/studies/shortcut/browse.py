"""Browsing the planted-shortcut benchmark's results: where they are, the score table for a choice of
models and ground truth, and the state of a quick benchmark started in the background (no Streamlit:
the Shortcut page draws these).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from objrel.access import OPEN_RESULTS, READ_LOG, SEE_PROGRESS, START_BENCHMARK, Actor, authorize, permits
from objrel.engine.jobs import pid_alive
from objrel.studies.shortcut import results as R
from objrel.studies.shortcut.groundtruth import THRESHOLDS, threshold_named
from objrel.studies.shortcut.tables import base_rate, score_table, scores_at, settings

QUICK_DIR = "quick"   # a quick benchmark started from the app writes in this folder of the results root
BOTH_MODELS = "both"
MODEL_CHOICES = (BOTH_MODELS, *R.MODELS)
MODEL_LABELS = {BOTH_MODELS: "both models pooled", "biased": "biased model", "unbiased": "unbiased model"}
TRUTH_CHOICES = ("reliant", "matched")
TRUTH_LABELS = {"reliant": "background-reliant (every detector)",
                "matched": "matched facet (MR-2: swap-dependent; MR-1: background-sufficient)"}
RUNNING, FINISHED, FAILED = "running", "finished", "failed"
THRESHOLD_CHOICES = tuple(t.name for t in THRESHOLDS)
THRESHOLD_LABELS = {t.name: f"{t.name} ({t.label})" for t in THRESHOLDS}


def draw_choices(results: dict) -> list[int]:
    """The draw counts the results' tables are reported at (``tables.settings``), fewest first."""
    return sorted({d for d, _ in settings(results)})


def score_table_for(results: dict, model: str, truth: str, draws: int | None = None,
                    threshold: str = THRESHOLD_CHOICES[0], arm: str = "single") -> pd.DataFrame:
    """Detector scores summed over seeds for ``model`` (one of MODEL_CHOICES) against ``truth``, re-derived at
    ``draws`` backgrounds per type (None: every draw made) and ``threshold`` (a name of ``THRESHOLDS``)."""
    if model not in MODEL_CHOICES or truth not in TRUTH_CHOICES:
        raise ValueError(f"expected a model of {MODEL_CHOICES} and a truth of {TRUTH_CHOICES}, got {model!r}, "
                         f"{truth!r}")
    return score_table(scores_at(results, arm, None if model == BOTH_MODELS else model, draws,
                                 threshold_named(threshold), truth))


def base_rate_text(results: dict, model: str, draws: int, threshold: str, arm: str = "single") -> str:
    """'k of n correct inferences are reliant (p%)' at a setting: what flagging everything scores as precision."""
    k, n = base_rate(results, arm, None if model == BOTH_MODELS else model, draws, threshold_named(threshold))
    share = f" ({100 * k / n:.0f}%)" if n else ""
    return (f"{k} of {n} correct inferences are reliant at {draws} draw{'s' if draws > 1 else ''} per type and "
            f"threshold {THRESHOLD_LABELS[threshold]}{share}: flagging every inference would score that precision.")


@dataclass(frozen=True)
class QuickState:
    state: str             # RUNNING, FINISHED or FAILED
    results_file: str      # where its results are (once FINISHED)


def quick_state(pid: int, out: str) -> QuickState:
    """A quick benchmark's state: running while its process lives, then finished if it wrote its results."""
    results_file = str(Path(out).resolve() / R.RESULTS_FILE)
    if pid_alive(pid):
        return QuickState(RUNNING, results_file)
    return QuickState(FINISHED if Path(results_file).is_file() else FAILED, results_file)


# ---------------------------------------------------------------- what the Shortcut page may open and start

RESULTS_DIR_ENV = "OBJREL_SHORTCUT_DIR"   # the benchmark's results folder (default results.DEFAULT_OUT)
QUICK_LOCK = "quick.lock"                 # in the quick folder: who started the quick benchmark running there
# Seconds ``start_quick_benchmark`` takes, start to results, on the 2-core development machine.  Since the quick
# benchmark draws 8 counterfactual backgrounds per type and trains two multi-label models: 51 s with the machine
# lightly loaded (load average 1-2) and 76 s beside a full benchmark and other work (load average 3.3).  Until a
# quick benchmark has run on this server, the page promises this range; afterwards the time the last one took here.
QUICK_IDLE_S = 50
QUICK_BUSY_S = 80
# The share of the time bar never reaches 1 while the job runs (it may take longer than expected).
QUICK_BAR_MAX = 0.95


def results_root() -> Path:
    """The folder the Shortcut page reads from and a quick benchmark writes under: $OBJREL_SHORTCUT_DIR, else
    ``var/shortcut``, resolved."""
    import os

    return Path(os.environ.get(RESULTS_DIR_ENV) or R.DEFAULT_OUT).expanduser().resolve()


def results_files(root: Path | None = None) -> list[str]:
    """The results files the page offers, as names relative to ``results_root()``: the full benchmark's and the
    quick one's, where they exist.  Nobody types a server path."""
    root = results_root() if root is None else Path(root)
    names = [R.RESULTS_FILE, f"{QUICK_DIR}/{R.RESULTS_FILE}"]
    return [n for n in names if (root / n).is_file() and not (root / n).is_symlink()]


def open_results(actor: Actor, name: str, root: Path | None = None) -> dict:
    """The results file ``name`` (one of ``results_files``) for ``actor`` (anyone may look); any other name is
    refused with ValueError, so the page opens no other server file."""
    authorize(actor, OPEN_RESULTS, repr(name))
    root = results_root() if root is None else Path(root)
    if name not in results_files(root):
        raise ValueError(f"{name!r} is not one of the benchmark's results files "
                         f"({', '.join(results_files(root)) or 'none yet'})")
    return R.load_results(root / name)


@dataclass(frozen=True)
class QuickJob:
    """The quick benchmark running (or last run) in the quick folder: who started it and when; its process
    id stays on the server."""

    started_by: str
    started_at: float
    state: str             # RUNNING, FINISHED or FAILED
    finished_at: float | None = None   # when its results were written (FINISHED)

    @property
    def seconds(self) -> float | None:
        """How long it took, start to results (FINISHED only)."""
        return None if self.finished_at is None else max(0.0, self.finished_at - self.started_at)


def _lock(root: Path) -> Path:
    return root / QUICK_DIR / QUICK_LOCK


def quick_job(actor: Actor, root: Path | None = None) -> QuickJob | None:
    """The quick benchmark of the quick folder, or None when none was started from the app (anyone may ask;
    the gate hears of it, since the lock file is read)."""
    import json

    authorize(actor, SEE_PROGRESS, "quick shortcut benchmark")
    root = results_root() if root is None else Path(root)
    try:
        held = json.loads(_lock(root).read_text())
        pid, who, at = int(held["pid"]), str(held["by"]), float(held["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    state = quick_state(pid, str(root / QUICK_DIR)).state
    results = root / QUICK_DIR / R.RESULTS_FILE
    done = results.stat().st_mtime if state == FINISHED else None
    if done is not None and done < at:
        state, done = FAILED, None   # results older than this start: the run stopped without writing new ones
    return QuickJob(who, at, state, done)


def quick_expected_s(actor: Actor, root: Path | None = None) -> tuple[float, float, bool]:
    """``(low, high, measured)`` seconds a quick benchmark takes: the time the last one took on this server
    (both bounds, ``measured`` True) once one finished here, else ``QUICK_IDLE_S`` to ``QUICK_BUSY_S``."""
    last = quick_job(actor, root)
    if last is not None and last.seconds is not None:
        return last.seconds, last.seconds, True
    return float(QUICK_IDLE_S), float(QUICK_BUSY_S), False


def quick_duration_text(expected: tuple[float, float, bool]) -> str:
    """``about 45 s (the last one here)`` or ``30 s to 1 min 00 s on two cores, longer beside other work``."""
    from objrel.progress import format_duration

    low, high, measured = expected
    if measured:
        return f"about {format_duration(low)} (the last one here took that)"
    return f"{format_duration(low)} to {format_duration(high)} on two cores, longer beside other work"


def quick_time_share(job: QuickJob, expected: tuple[float, float, bool], now_ts: float | None = None) -> float:
    """How far a running quick benchmark is by its time so far over the longer expected time, capped at
    ``QUICK_BAR_MAX`` while it runs (1 once finished)."""
    import time

    if job.state != RUNNING:
        return 1.0
    elapsed = (time.time() if now_ts is None else now_ts) - job.started_at
    return min(QUICK_BAR_MAX, max(0.0, elapsed / max(expected[1], 1.0)))


def start_quick_benchmark(actor: Actor, root: Path | None = None) -> QuickJob:
    """Start ``objrel bench shortcut --quick`` in the quick folder as its own process, for run operators and
    admins, in a slot of the work queue (``objrel.work_queue``) that the process holds while it lives.  One
    quick benchmark per folder at a time: WorkRefused while one started here runs (clicks at the same moment
    included, so they never pile up processes), ValueError while the folder's lock names a running one (started
    by another server); WorkRefused too with the server's or the actor's cap reached.  The child is reaped when
    it ends (no zombie under the app)."""
    import json
    import threading
    import time

    from objrel import work_queue

    authorize(actor, START_BENCHMARK, "quick shortcut benchmark")
    root = results_root() if root is None else Path(root)
    with work_queue.admit(actor, work_queue.BENCHMARK, "a quick shortcut benchmark",
                          exclusive=f"quick benchmark in {root / QUICK_DIR}") as ticket:
        running = quick_job(actor, root)
        if running is not None and running.state == RUNNING:
            raise ValueError(f"a quick benchmark is already running (started by {running.started_by} "
                             f"{time.time() - running.started_at:.0f} s ago); wait for it to finish")
        out = root / QUICK_DIR
        out.mkdir(parents=True, exist_ok=True)
        from objrel.studies.shortcut.bench import start_quick   # the arms load torch: only when one starts

        proc = start_quick(out)
        ticket.attach(proc)
        at = time.time()
        _lock(root).write_text(json.dumps({"pid": proc.pid, "by": actor.name or "server", "at": at}))
    threading.Thread(target=proc.wait, name="objrel-quick-reaper", daemon=True).start()
    return QuickJob(actor.name or "server", at, RUNNING)


def quick_progress(actor: Actor, job: QuickJob, root: Path | None = None):
    """How far the running quick benchmark ``job`` is (``objrel.progress.JobProgress``): its time so far and the
    objrel run it is making, read from its store; the last line of its log only for an ``actor`` who may read
    logs (a log line can name server paths)."""
    from objrel.progress import job_progress

    authorize(actor, SEE_PROGRESS, "quick shortcut benchmark")
    quick = (results_root() if root is None else Path(root)) / QUICK_DIR
    log = None
    if permits(actor, READ_LOG):
        authorize(actor, READ_LOG, "quick shortcut benchmark")
        log = quick / "quick.log"
    return job_progress(job.started_at, log, quick / R.STORE_FILE)
