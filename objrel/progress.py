"""Progress arithmetic: rate and time left of a run (from its stored record) and of a LIME explanation.

Pure functions over plain values, so the run loop, the demo build, the Runs page and the Review page share
one definition and tests check it by hand.  A run's invocation writes ``passes_done`` (forward passes since
it started), ``passes_expected`` (its running estimate) and ``progress_at`` (when) through
``Store.set_progress``; ``run_estimate`` turns a record into samples done, images per second and an ETA.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

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


def expected_passes(passes_done: int, samples_done: int, samples_left: int, passes_per_sample_guess: float) -> int:
    """The invocation's total forward passes, estimated: the passes done plus the samples still to do at the
    observed passes per finished sample (at the guess before any sample finished); never below the passes done."""
    left = max(0, samples_left)
    if samples_done > 0:
        guess = passes_done + left * (passes_done / samples_done)
    else:  # the passes so far belong to samples still counted as left
        guess = left * float(passes_per_sample_guess)
    return max(int(passes_done), int(math.ceil(guess)))


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
        return min(1.0, e.passes_done / e.passes_expected)
    return min(1.0, e.samples_done / e.samples_total) if e.samples_total else 0.0


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
    return f"{100 * min(1.0, max(0.0, fraction)):.0f}% of the pair, {format_duration(fraction_eta(fraction, elapsed_s))} left"
