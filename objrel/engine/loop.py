"""The run loop both engines share: chunks of samples, processed and committed one by one, resumable.

``execute_run`` drives a worker (the classifier ``Engine`` or the ``DetectionEngine``): it skips the
samples already stored, processes the rest in chunks of ``batch_size``, commits each sample's rows
in one transaction (the classifier engines: each chunk's samples in one), stops between chunks when a
cancel is requested and marks a crashed run failed.
``prefetch`` makes the next batch of mutants in a worker thread while the model runs on this one, when the
forward pass leaves cores for it (``overlap_default``); otherwise each batch is made on every core just
before its forward pass (``mutant_batches(parallel=True)``).
"""

from __future__ import annotations

import gc
import os
import queue
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Callable, Protocol

from objrel.errors import RunLeaseLost
from objrel.models import threads as per_image_threads
from objrel.models.threads import overlap_beside_forward, parallel_each
from objrel.mutations import NotApplicable, derive_seed, make_mutant
from objrel.progress import PassEstimate
from objrel.store import leases
from objrel.store.store import Store, lease_lost, now

ProgressFn = Callable[[int, int], None]
# pass_progress(samples done, samples total, forward passes of this invocation, passes expected, seconds)
PassProgressFn = Callable[[int, int, int, int, float], None]

# Least seconds between two writes of a run's forward-pass count to the store (and calls of a worker's
# ``pass_progress``): often enough for a live bar, rarely enough to cost nothing next to the model.
PROGRESS_INTERVAL_S = 0.5

# Mutant batches made ahead of the model; each holds batch_size full-size images.
PREFETCH_BATCHES = 2
# Memory one chunk may use for decoded images, in bytes (sources, mutants in flight, model copies);
# $OBJREL_MEMORY_BUDGET or a worker's ``memory_budget`` attribute overrides it.
CHUNK_MEMORY_BUDGET_BYTES = 6 * 2**30
MEMORY_BUDGET_ENV = "OBJREL_MEMORY_BUDGET"
# Full-size copies of one image a chunk may hold at once: the source, a mutant in each prefetched
# batch plus the one the model is on, and the model's own preprocessed copy.
COPIES_PER_IMAGE = PREFETCH_BATCHES + 3
# And, in each thread of per-image work, one image's float32 copy for its resize (4 bytes a value) plus the
# bytes of its object's pixels (a fill basis): bytes per byte of one image.
FLOAT_COPIES_PER_THREAD = 5
# Starts ALONE (one sample per chunk, no working ahead) without a commit after which a sample is recorded as
# skipped ('crashed-twice') on resume.  A start inside a chunk of several samples marks them all suspect
# (retried alone) but counts for none of them: the process may have died of another sample or of a kill.
MAX_CRASH_ATTEMPTS = 2
# Commits a run whose samples fit in one batch is cut into (when it has that many samples): the samples count
# a run shows moves at each commit, and one chunk would read 0/N until the run ends.  A larger run commits
# once per batch_size samples as before.
PROGRESS_COMMITS = 3


class frozen_heap:
    """While at least one run is inside it, the objects that existed when the first entered are frozen
    (``gc.freeze``): the cyclic collector's full passes during the run then visit only what was made since.

    A process that has loaded torch, a runtime and SQLAlchemy (or the app: Streamlit, pandas) tracks about
    half a million objects, and a full pass over them took 0.3 s, landing inside a chunk now and then (in the
    throughput benchmark, on its commit: 4% of the run's time instead of 1.7%, in 3 of 4 runs).  The last run
    to leave unfreezes them (``gc.unfreeze``: back into the oldest generation); garbage among them waits until
    then.  Runs in threads of one process share the count."""

    _lock = threading.Lock()
    _inside = 0

    def __enter__(self) -> frozen_heap:
        with frozen_heap._lock:
            if frozen_heap._inside == 0:
                gc.freeze()
            frozen_heap._inside += 1
        return self

    def __exit__(self, *exc) -> None:
        with frozen_heap._lock:
            frozen_heap._inside -= 1
            if frozen_heap._inside == 0:
                gc.unfreeze()


class prefetch:
    """Run ``iterable`` in a worker thread, ``depth`` items ahead; its exceptions re-raise in the consumer.

    The worker starts at once (not at the first ``next``), so the consumer can do other work while the
    first item is made; iterate it (or ``close()`` it) to stop the worker.
    """

    _DONE = object()

    def __init__(self, iterable, depth: int = PREFETCH_BATCHES):
        self._q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._work, args=(iterable,), name="objrel-mutants", daemon=True)
        self._thread.start()

    def _work(self, iterable) -> None:
        try:
            for item in iterable:
                if self._stop.is_set():
                    return
                self._q.put(item)
        except BaseException as exc:  # handed to the consumer
            self._q.put(exc)
            return
        self._q.put(self._DONE)

    def __iter__(self):
        try:
            while True:
                item = self._q.get()
                if item is self._DONE:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker (it may be blocked on a full queue) and wait for it."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._q.get_nowait()
            except queue.Empty:
                pass
            self._thread.join(timeout=0.05)


@dataclass
class RunReport:
    """What ``execute`` returns: counts of this invocation plus the run's totals."""

    run_id: int
    status: str
    processed: int = 0
    tested: int = 0
    untested: int = 0
    skipped: Counter = field(default_factory=Counter)
    skip_examples: dict = field(default_factory=dict)
    seconds: float = 0.0
    forward_passes: int = 0
    # Seconds the run loop's thread spent on (or waited for) each step: decode, mutants, prepare, forward,
    # check, commit (``step``); the rest of ``seconds`` is bookkeeping.
    steps: Counter = field(default_factory=Counter)

    @contextmanager
    def step(self, name: str):
        """Add the block's wall time to ``steps[name]``."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.steps[name] += time.perf_counter() - t

    def step_shares(self) -> list[tuple[str, float, float]]:
        """``(step, seconds, share of the run's seconds)``, longest first, then ``other`` for the rest."""
        total = self.seconds or sum(self.steps.values()) or 1.0
        rows = [(k, v, v / total) for k, v in self.steps.most_common()]
        rest = total - sum(self.steps.values())
        return rows + ([("other", rest, rest / total)] if rest > 0 else [])

    def count_skip(self, code: str, message: str) -> None:
        """Count a skipped sample or image under its skip code, keeping the first message as the example."""
        self.skipped[code] += 1
        self.skip_examples.setdefault(code, message)

    def count_sample(self, status: str, skip_code: str | None = None, skip_message: str = "") -> None:
        """Count one committed classifier sample by its stored status (tested | untested | skipped)."""
        self.processed += 1
        if status == "skipped":
            self.count_skip(skip_code, skip_message)
        elif status == "tested":
            self.tested += 1
        else:
            self.untested += 1


def mutant_batches(jobs, run_seed: int, batch_size: int, parallel: bool = False,
                   instead: Callable[[object, object], object] | None = None):
    """Make the mutants of ``jobs`` and yield them in lists of at most ``batch_size`` ``(holder, mutation,
    mutant)``.

    jobs: ``(holder, sample_id, image, target, mutation)``; the holder (a sample's or unit's state) gets
    ``holder.seeds[key]``, the seed derived from (run seed, sample id, mutation), and for a mutation that
    does not apply ``holder.mutants[key] = NotApplicable(...)``: those never reach the model.  With
    ``parallel`` the jobs that fill the current batch are made spread over the cores; the batches are the
    same either way, and no job is taken before the batch it fills (one batch of mutants alive at a time).
    ``instead(holder, mutation)``, when given, may return what the model takes in the mutant's place (a
    ``PaintedInput``); None makes the mutant.
    """
    jobs = iter(jobs)
    batch: list = []
    while group := list(islice(jobs, batch_size - len(batch))):
        made: list = [None] * len(group)

        def make(i: int, group: list = group, made: list = made) -> None:
            holder, sample_id, image, target, mutation = group[i]
            seed = derive_seed(run_seed, sample_id, mutation.key)
            try:
                quick = instead(holder, mutation) if instead is not None else None
                made[i] = (seed, quick if quick is not None else make_mutant(image, target, mutation, seed))
            except NotApplicable as exc:
                made[i] = (seed, exc)

        if parallel:
            parallel_each(make, len(group))
        else:
            for i in range(len(group)):
                make(i)
        for (holder, _, _, _, mutation), (seed, mutant) in zip(group, made):
            holder.seeds[mutation.key] = seed
            if isinstance(mutant, NotApplicable):
                holder.mutants[mutation.key] = mutant
            else:
                batch.append((holder, mutation, mutant))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


class RunWorker(Protocol):
    """What ``execute_run`` drives: the classifier and detection engines, and their Ray forms.

    store:        where the run is recorded; config: its settings (``batch_size`` sizes the chunks);
    samples:      the run's samples, in order;
    pass_progress: called with (samples done, samples, passes done, passes expected, seconds) at each progress
                  tick, or None;
    passes_per_sample_guess: forward passes a sample takes, guessed before any has finished;
    create_run(): records a new run and returns its id;
    process_chunk(chunk, report, speculate): tests the chunk's samples and returns what ``commit_chunk`` takes;
                  with ``speculate`` False it touches no other sample (no working ahead: a suspected killer);
    commit_chunk(run_id, items, report): writes the chunk's results to the store.
    """

    store: Store
    config: Any
    samples: list
    pass_progress: Callable | None

    @property
    def passes_per_sample_guess(self) -> float:
        """Forward passes a sample takes, guessed before any has finished."""

    def create_run(self) -> int:
        """Record a new run; returns its id."""

    def process_chunk(self, chunk: list, report: RunReport, speculate: bool = True) -> list:
        """Test the chunk's samples; returns what ``commit_chunk`` writes."""

    def commit_chunk(self, run_id: int, items: list, report: RunReport) -> None:
        """Write the chunk's results to the store."""


def overlap_default(worker, device: str = "cpu") -> None:
    """Fill a worker's unset (None) ``read_ahead`` / ``prefetch_mutants`` with whether threads beside the
    forward pass have cores of their own (``objrel.models.threads.overlap_beside_forward``)."""
    beside = overlap_beside_forward(device)
    for knob in ("read_ahead", "prefetch_mutants"):
        if getattr(worker, knob, None) is None:
            setattr(worker, knob, beside)


def image_budget(worker) -> int:
    """Bytes one decoded source may take so that a chunk of ``batch_size`` (``COPIES_PER_IMAGE`` byte copies of
    each image) and the float32 copies of per-image work (``FLOAT_COPIES_PER_THREAD`` in each thread) stay
    within the memory budget."""
    budget = getattr(worker, "memory_budget", None) or int(os.environ.get(MEMORY_BUDGET_ENV) or
                                                           CHUNK_MEMORY_BUDGET_BYTES)
    config = getattr(worker, "config", None)  # a stub worker without one counts as a batch of 1
    batch_size = max(1, int(getattr(config, "batch_size", 1) or 1))
    threads = max(1, int(per_image_threads.PREPROCESS_THREADS))
    return max(1, int(budget) // (batch_size * COPIES_PER_IMAGE + threads * FLOAT_COPIES_PER_THREAD))


def _chunks(todo: list, attempts: dict[str, int], batch_size: int) -> list[tuple[list, bool]]:
    """The work as ``(chunk, suspect)`` pairs: samples a dead process left unfinished (those in ``attempts``)
    come first, one per chunk so the one that kills it is singled out (``suspect`` True: no working ahead);
    those whose process died ``MAX_CRASH_ATTEMPTS`` times while they ran alone become skipped samples
    ('crashed-twice'); the rest go in chunks of ``batch_size``, or in ``PROGRESS_COMMITS`` shorter ones when
    they fit in one (so the samples count moves while a small run works)."""
    crashed, suspects, rest = [], [], []
    for s in todo:
        n = attempts.get(s.sample_id)
        if n is not None and n >= MAX_CRASH_ATTEMPTS:
            crashed.append(replace(s, problem=("crashed-twice", f"the process died {n} times while testing this "
                                                                f"sample alone (limit {MAX_CRASH_ATTEMPTS}); not "
                                                                f"tried again")))
        elif n is not None:
            suspects.append(s)
        else:
            rest.append(s)
    out = [(crashed, True)] if crashed else []  # nothing to gain from working ahead of skips
    out += [([s], True) for s in suspects]
    size = batch_size if len(rest) > batch_size else max(1, -(-len(rest) // PROGRESS_COMMITS))
    out += [(rest[i : i + size], False) for i in range(0, len(rest), size)]
    return out


class PassTicker:
    """Reports a running invocation's forward passes (``report.forward_passes``, counted by the worker per
    batch) every ``PROGRESS_INTERVAL_S`` from a daemon thread: to the store (``Store.set_progress``) and to
    the worker's optional ``pass_progress`` callable.  The samples count comes from the loop (``samples``)."""

    def __init__(self, worker, run_id: int, report: RunReport, total: int, done_before: int, todo: int,
                 interval: float | None = None):
        self.worker, self.run_id, self.report, self.total = worker, run_id, report, total
        # read when the ticker is made (not when the module loaded), so a setting of the constant takes effect
        self.done_before, self.todo = done_before, todo
        self.interval = PROGRESS_INTERVAL_S if interval is None else interval
        # passes per sample until one finishes: the worker's guess, else the source and each mutation
        guess = worker.passes_per_sample_guess
        self.estimate = PassEstimate(todo, guess)
        self.samples = done_before
        self.t0 = time.perf_counter()
        self._stop = threading.Event()
        self._last: tuple | None = None
        self._thread = threading.Thread(target=self._work, name="objrel-progress", daemon=True)

    @property
    def samples(self) -> int:
        """Samples of the run done so far (committed)."""
        return self._samples

    @samples.setter
    def samples(self, n: int) -> None:
        """The loop sets the samples done after each commit: the passes so far belong to finished samples."""
        self._samples = n
        self.estimate.finished(n - self.done_before, self.report.forward_passes)

    def expected(self) -> int:
        """The forward passes the whole run is expected to take, from the passes and samples so far."""
        return self.estimate.expected(self.report.forward_passes)

    def tick(self) -> None:
        """Write the passes done and expected to the store and the worker's hook, when they changed."""
        passes = self.report.forward_passes
        state = (passes, self.samples)
        if state == self._last:
            return
        self._last = state
        expected = self.expected()
        try:
            self.worker.store.set_progress(self.run_id, passes, expected)
        except Exception as exc:  # a busy store must not stop the run; the next tick tries again
            print(f"objrel: progress not recorded ({type(exc).__name__}: {exc})", file=sys.stderr)
            self._last = None
        hook = self.worker.pass_progress
        if hook is not None:
            hook(self.samples, self.total, passes, expected, time.perf_counter() - self.t0)

    def _work(self) -> None:
        while not self._stop.wait(self.interval):
            self.tick()

    def __enter__(self) -> PassTicker:
        self.tick()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.tick()


def execute_run(worker: RunWorker, run_id: int | None, done_ids: Callable[[int], set[str]],
                progress: ProgressFn | None = None, stop_after: int | None = None) -> RunReport:
    """The run loop shared by the classifier and detection engines.

    ``worker`` is a ``RunWorker``; ``done_ids(run_id)`` gives the sample ids already stored.  Chunks of
    ``batch_size`` samples are processed and committed one by one; a cancel request stops between chunks; an
    exception marks the run failed.

    A worker may work ahead on the next chunk while it processes this one (decode, source predictions);
    a process that dies then blames this chunk, whose samples are retried one at a time on resume.  For
    those suspects ``speculate`` is False: the worker must touch no other sample, or a killer
    read ahead would be blamed on an innocent sample until it was skipped as 'crashed-twice'.
    """
    run_id = run_id if run_id is not None else worker.create_run()
    store = worker.store
    # The run's lease (objrel.store.leases): RunHeld when a live process works on it; every write below checks it.
    token = store.lease(run_id) or leases.acquire(store, run_id)
    report = RunReport(run_id=run_id, status="running")
    try:
        done = done_ids(run_id)
        todo = [s for s in worker.samples if s.sample_id not in done]
        if stop_after is not None:
            todo = todo[:stop_after]
        store.update_run(run_id, status="running", started_at=now(), pid=os.getpid(), error=None,
                         cancel_requested=False, passes_done=0, passes_expected=None, progress_at=None)
    except BaseException:
        leases.release(store, run_id, token)
        raise
    t_start = time.perf_counter()
    n_done = len(done)
    total = len(worker.samples)
    if progress:
        progress(n_done, total)
    status = "finished"
    try:
        with frozen_heap(), leases.Keeper(store, run_id, token) as keeper, \
                PassTicker(worker, run_id, report, total, n_done, len(todo)) as ticker:
            for chunk, suspect in _chunks(todo, store.attempts(run_id), worker.config.batch_size):
                keeper.check()
                if store.cancel_requested(run_id):
                    status = "cancelled"
                    break
                ids = [s.sample_id for s in chunk]
                store.record_attempts(run_id, ids, alone=suspect and len(ids) == 1)
                items = worker.process_chunk(chunk, report, speculate=not suspect)
                with report.step("commit"):
                    worker.commit_chunk(run_id, items, report)
                for _ in items:
                    n_done += 1
                    ticker.samples = n_done
                    if progress:
                        progress(n_done, total)
                store.clear_attempts(run_id, ids)
    except RunLeaseLost:
        store.let_go(run_id)   # the run is gone or someone else's: write nothing more
        raise
    except BaseException as exc:
        leases.release(store, run_id, token, status="failed" if not isinstance(exc, KeyboardInterrupt) else "cancelled",
                       error=f"{type(exc).__name__}: {exc}", finished_at=now())
        raise
    report.seconds = time.perf_counter() - t_start
    if stop_after is not None and n_done < total and status == "finished":
        status = "pending"
    report.status = status
    timings = {"seconds": round(report.seconds, 3), "forward_passes": report.forward_passes,
               "steps": {k: round(v, 3) for k, v in report.steps.items()}}
    if not leases.release(store, run_id, token, status=status, finished_at=now() if status != "pending" else None,
                          timings=timings):
        raise lease_lost(run_id)
    return report
