"""Progress arithmetic: rate and time left of a run (from its stored record) and of a LIME explanation.

Pure functions over plain values, so the run loop, the demo build, the Runs page and the Review page share
one definition and tests check it by hand; only ``job_progress`` reads files (a background job's log and
the store it writes runs to), for a job that writes no progress of its own.  A run's invocation writes
``passes_done`` (forward passes since it started), ``passes_expected`` (its running estimate) and ``progress_at``
(when) through ``Store.set_progress``; ``run_estimate`` turns a record into samples done, images per second and an ETA.

The expected passes: ``1 + len(mutations)`` per sample is only an upper bound (lazy votes stop a sample's
mutants once its votes are decided; an incorrect inference gets the source pass only), so the estimate
switches to the passes observed per finished sample as soon as one finishes.  ``PassEstimate`` keeps that
estimate for one invocation: it counts the passes of samples still in flight toward the samples left, and
never lets the share ``passes_done / passes_expected`` fall, so the bar never goes backwards.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path

# Bytes read back from the end of a background job's log for its last line.
LOG_TAIL_BYTES = 4096
# Below this many seconds of work a rate is too noisy to show.
MIN_RATE_WINDOW_S = 1.0
SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 3600
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Estimate:
    samples_done: int
    samples_total: int
    passes_done: int
    passes_expected: int | None
    images_per_s: float | None    # forward passes (images through the model) per second
    eta_s: float | None           # seconds left, None while unknown


def expected_passes(passes_done: int, samples_done: int, samples_left: int, passes_per_sample_guess: float,
                    passes_finished: int | None = None) -> int:
    """The invocation's total forward passes, estimated: the passes of the finished samples plus the samples still
    to do at the observed passes per finished sample (at the guess before any sample finished); never below the
    passes done.

    ``passes_finished``: the passes when the ``samples_done`` samples were finished; the passes since then belong
    to samples in flight, counted among ``samples_left``.  Without it every pass done counts as a finished
    sample's (an overshoot while a chunk is in flight)."""
    left = max(0, samples_left)
    finished = int(passes_done if passes_finished is None else min(passes_finished, passes_done))
    if samples_done > 0:
        guess = finished + left * (finished / samples_done)
    else:  # the passes so far belong to samples still counted as left
        guess = left * float(passes_per_sample_guess)
    return max(int(passes_done), int(math.ceil(guess)))


def steady_expected(passes_done: int, expected: int, last_done: int, last_expected: int | None) -> int:
    """``expected``, lowered where needed so that the share ``passes_done / expected`` never falls below the last
    one written (``last_done / last_expected``), and never below ``passes_done`` (the share never exceeds 1)."""
    if last_expected and last_done > 0 and passes_done >= last_done:
        expected = min(expected, passes_done * last_expected // last_done)
    return max(int(passes_done), int(expected))


class PassEstimate:
    """The expected forward passes of one invocation (``todo`` samples), as its progress ticks write them.

    ``finished(samples, passes)`` records that ``samples`` samples of this invocation are done after ``passes``
    forward passes (the run loop commits a chunk once all its passes are made, so these passes belong to
    finished samples, but for the next chunk's source passes of a worker that works ahead: a slight
    overestimate); ``expected(passes_done)`` is ``expected_passes`` over them, with the passes since then
    counted as samples in flight, held by ``steady_expected`` so the share written never goes backwards, and
    one pass above the passes done while samples are left (never 100 % before the last sample finishes).
    """

    def __init__(self, todo: int, passes_per_sample_guess: float):
        self.todo, self.guess = int(todo), float(passes_per_sample_guess)
        self.samples_done = 0
        self.passes_finished = 0
        self._last: tuple[int, int | None] = (0, None)

    def finished(self, samples_done: int, passes_done: int) -> None:
        """Record that ``samples_done`` samples of this invocation were done after ``passes_done`` passes."""
        self.samples_done, self.passes_finished = int(samples_done), int(passes_done)

    def expected(self, passes_done: int) -> int:
        """The expected passes of this invocation after ``passes_done``, never lower in share than the last one."""
        left = max(0, self.todo - self.samples_done)
        raw = expected_passes(passes_done, self.samples_done, left, self.guess, self.passes_finished)
        if left:
            raw = max(raw, int(passes_done) + 1)
        out = steady_expected(passes_done, raw, *self._last)
        if left:
            out = max(out, int(passes_done) + 1)
        self._last = (int(passes_done), out)
        return out


def rate_and_eta(passes_done: int, passes_expected: int | None, elapsed_s: float,
                 since_update_s: float = 0.0) -> tuple[float | None, float | None]:
    """(passes per second, seconds left) after ``passes_done`` passes in ``elapsed_s`` seconds, the last count
    ``since_update_s`` seconds old.  None for either while it cannot be told (no pass yet, too short a window,
    no expected total)."""
    if passes_done <= 0 or elapsed_s < MIN_RATE_WINDOW_S:
        return None, None
    rate = passes_done / elapsed_s
    if passes_expected is None:
        return rate, None
    left = max(0, passes_expected - passes_done) / rate
    return rate, max(0.0, left - max(0.0, since_update_s))


def _seconds(a: dt.datetime | None, b: dt.datetime | None) -> float | None:
    if a is None or b is None:
        return None
    if a.tzinfo is None:
        a = a.replace(tzinfo=dt.timezone.utc)
    if b.tzinfo is None:
        b = b.replace(tzinfo=dt.timezone.utc)
    return (b - a).total_seconds()


def run_estimate(run, now: dt.datetime | None = None) -> Estimate:
    """Samples, forward passes, images per second and ETA of a run record (``objrel.store.RunRecord`` or any
    object with its fields).  The rate is the passes of the current invocation over the time from its start
    (``started_at``) to the last progress write (``progress_at``); the ETA counts down from that write."""
    now = now or dt.datetime.now(dt.timezone.utc)
    done = int(getattr(run, "passes_done", None) or 0)
    expected = getattr(run, "passes_expected", None)
    rate = eta = None
    if run.status == "running":
        elapsed = _seconds(run.started_at, getattr(run, "progress_at", None))
        since = _seconds(getattr(run, "progress_at", None), now) or 0.0
        if elapsed is not None:
            rate, eta = rate_and_eta(done, expected, elapsed, since)
    elif run.status == "finished":
        eta = 0.0
    return Estimate(int(run.n_done), int(run.n_total), done, None if expected is None else int(expected), rate, eta)


def format_duration(seconds: float | None) -> str:
    """``'45 s'``, ``'3 min 05 s'``, ``'2 h 07 min'``; ``'unknown'`` for None."""
    if seconds is None or not math.isfinite(seconds):
        return UNKNOWN
    s = int(round(max(0.0, seconds)))
    if s < SECONDS_PER_MINUTE:
        return f"{s} s"
    if s < SECONDS_PER_HOUR:
        return f"{s // SECONDS_PER_MINUTE} min {s % SECONDS_PER_MINUTE:02d} s"
    return f"{s // SECONDS_PER_HOUR} h {(s % SECONDS_PER_HOUR) // SECONDS_PER_MINUTE:02d} min"


def estimate_text(e: Estimate) -> str:
    """One line: samples done/total, forward passes done/expected, images per second, ETA."""
    passes = f"{e.passes_done}/{e.passes_expected}" if e.passes_expected is not None else f"{e.passes_done}"
    rate = f"{e.images_per_s:.1f} images/s" if e.images_per_s is not None else "rate unknown"
    return (f"{e.samples_done}/{e.samples_total} samples, {passes} forward passes, {rate}, "
            f"ETA {format_duration(e.eta_s)}")


def share(e: Estimate) -> float:
    """Progress in [0, 1]: by forward passes while an estimate exists, else by samples."""
    if e.passes_expected:
        return min(1.0, max(0.0, e.passes_done / e.passes_expected))
    return min(1.0, max(0.0, e.samples_done / e.samples_total)) if e.samples_total else 0.0


def fraction_eta(fraction: float, elapsed_s: float) -> float | None:
    """Seconds left of a job ``fraction`` done (in [0, 1]) after ``elapsed_s`` seconds, at the same pace;
    None before any progress or within ``MIN_RATE_WINDOW_S``."""
    if fraction <= 0 or elapsed_s < MIN_RATE_WINDOW_S:
        return None
    if fraction >= 1:
        return 0.0
    return elapsed_s * (1 - fraction) / fraction


def lime_eta_text(fraction: float, elapsed_s: float) -> str:
    """``'40% of the pair, 1 min 05 s left'`` for LIME's progress bar."""
    left = format_duration(fraction_eta(fraction, elapsed_s))
    return f"{100 * min(1.0, max(0.0, fraction)):.0f}% of the pair, {left} left"


# ---------------------------------------------------------------- a background job without progress of its own


@dataclass(frozen=True)
class JobProgress:
    """What can be told of a background job that writes no progress count (the shortcut benchmark): how long it
    has run, the last line of its log (the stage it reported last), and the objrel run it is making now, if
    any, with that run's samples, passes, rate and ETA."""

    elapsed_s: float
    stage: str | None
    run_label: str | None = None
    estimate: Estimate | None = None


def last_log_line(path) -> str | None:
    """The last non-empty line of a log file, None while it has none (or cannot be read)."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - LOG_TAIL_BYTES))
            tail = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1] if lines else None


def job_progress(started_ts: float, log_path, store_path=None, now_ts: float | None = None) -> JobProgress:
    """A background job's ``JobProgress``: started at ``started_ts`` (a Unix time), logging to ``log_path``, and
    writing its runs to the SQLite store at ``store_path`` (read when the file exists; never created)."""
    import time

    from objrel.store import Store

    now_ts = time.time() if now_ts is None else now_ts
    out = JobProgress(max(0.0, now_ts - started_ts), None if log_path is None else last_log_line(log_path))
    if store_path is None or not Path(store_path).is_file():
        return out
    try:
        store = Store(store_path, create=False)
    except Exception:  # being replaced or created by the job: try again on the next refresh
        return out
    try:
        running = [r for r in store.list_runs() if r.status == "running"]
    except Exception:  # the job's first write has not made the tables yet
        running = []
    finally:
        store.dispose()
    if not running:
        return out
    run = running[-1]
    return JobProgress(out.elapsed_s, out.stage, f"#{run.id} {run.name}",
                       run_estimate(run, dt.datetime.fromtimestamp(now_ts, dt.timezone.utc)))


def job_progress_text(p: JobProgress) -> str:
    """``Running for 1 min 05 s; last log line: ...`` (the log's line left out while it has none)."""
    text = f"Running for {format_duration(p.elapsed_s)}"
    return text + (f"; last log line: {p.stage}" if p.stage else "")


def job_run_text(p: JobProgress) -> str | None:
    """``run #2 biased seed 0 test: 3/60 samples, 40/180 forward passes, ... ETA 12 s`` for the run the job is
    making, None while it makes none."""
    return None if p.estimate is None else f"run {p.run_label}: {estimate_text(p.estimate)}"
