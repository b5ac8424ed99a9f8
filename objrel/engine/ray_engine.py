"""Classifier and detection runs on Ray: the same plan, rows and store code as the local engines, models in actors.

    objrel run --engine ray --workers 4 ...        (the cluster at $RAY_ADDRESS, else a local Ray for the run)
    objrel detect --engine ray --workers 4 ...

The driver creates (or resumes) the run and starts ``workers`` actors (one CPU each, plus any custom Ray
``resources`` asked for); each actor builds one local engine (``Engine`` or ``DetectionEngine``: one model,
loaded once, from the run's configuration) and no store.  The driver cuts the samples not yet stored into the
chunks the shared ``execute_run`` loop will ask for, reads each sample's image file itself and sends the batch
to an actor as the samples (their image path blanked) with the file bytes (``objrel.data.images.ImageBytes``):
an actor never opens a path, so it may run on any node of a cluster.  The actor decodes the bytes with objrel's
decoder and its limits (``load_rgb``) and returns the rows of each sample, made by the local engine's own code
(``Engine.result_rows``, ``DetectionEngine.image_result``).  A file the driver cannot read travels as the error
the local engine would have met, so the sample becomes the same skipped row.  The driver commits each chunk's
rows inside ``execute_run``, so resume, cancel, failure marking and timings work as for the local engines; at
most ``IN_FLIGHT_PER_ACTOR`` batches wait on each actor, so the driver holds a few batches of bytes at a time.

On a cluster every node runs its own installed objrel (the same version as the driver's) and loads the model by
name; the driver's files (dataset, images) stay on the driver.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections import Counter, deque

from objrel.config import DEFAULT_RAY_WORKERS, DetectionConfig, RunConfig
from objrel.constants import AUTO_RUNTIME, RUNTIMES
from objrel.data import Dataset
from objrel.data.images import read_image_bytes
from objrel.data.sample import Sample
from objrel.engine.classify import Engine
from objrel.engine.detect import DetectionEngine
from objrel.engine.loop import (CHUNK_MEMORY_BUDGET_BYTES, MEMORY_BUDGET_ENV, ProgressFn, RunReport, _chunks,
                                execute_run)
from objrel.errors import BadSampleError
from objrel.models import Classifier, Detector
from objrel.models.threads import configure_inference_threads, set_preprocess_threads
from objrel.mutations import Plan
from objrel.store import Store

# Torch threads per actor: each actor asks Ray for one CPU, so its model runs on one core (two actors
# with a thread per core each would put four threads on two cores and stall both at their barriers).
ACTOR_THREADS = 1
# Batches sent to each actor ahead of their results: one it works on and one waiting, so it never idles
# between batches; more would only hold more image bytes in the object store.
IN_FLIGHT_PER_ACTOR = 2
# The dataset of an actor's engine: the samples come with each batch, from the driver.
_NO_DATASET = Dataset(name="ray batch", format="ray", root="", annotation="", samples=())


def ray_started(address: str | None = None, num_cpus: int = DEFAULT_RAY_WORKERS) -> bool:
    """Connect to Ray at ``address`` (or $RAY_ADDRESS), or start a local one with ``num_cpus``; True when
    this call connected or started it (the caller then shuts it down).

    A local Ray's workers get the driver's ``sys.path`` as PYTHONPATH, so they import what the driver imports
    (``py:`` models, an uninstalled checkout).  A cluster's nodes get nothing from the driver: its paths mean
    nothing on another machine, and each node runs the objrel installed there.
    """
    import ray

    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        path = os.pathsep.join(p for p in sys.path if p)
        ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": path}},
                 log_to_driver=False)
    return True


# ---------------------------------------------------------------- the actor's side


class _SentImages:
    """Mixin for an actor's engine: ``_prepare`` decodes the bytes the driver sent with the batch (``sent``: sample
    id -> ``ImageBytes`` or ``BadSampleError``), never a path."""

    def image_source(self, sample: Sample):
        got = self.sent[sample.sample_id]
        if isinstance(got, BadSampleError):  # the driver could not read the file: what load_rgb would have raised
            raise BadSampleError(got.code, got.reason)
        return got


class _ActorEngine(_SentImages, Engine):
    pass


class _ActorDetectionEngine(_SentImages, DetectionEngine):
    pass


def _actor_engine(task: str, config: dict, plan: dict, model, class_names: list[str] | None,
                  memory_budget: int) -> Engine | DetectionEngine:
    """The local engine of one actor: no store, no dataset (each batch brings its samples), the run's plan."""
    if task == "detection":
        cfg = dataclasses.replace(DetectionConfig.from_dict(config), engine="local", regions_from=None)
        engine = _ActorDetectionEngine(None, cfg, model, _NO_DATASET, Plan.from_dict(plan))
        engine.class_names = list(class_names)  # the driver's: a detector without a vocabulary takes the dataset's
    else:
        engine = _ActorEngine(None, RunConfig.from_dict(config).replace(engine="local"), model=model,
                              dataset=_NO_DATASET, plan=Plan.from_dict(plan))
        engine.read_ahead = False  # an actor's next batch is not the dataset's next samples
        engine.prefetch_mutants = False  # the actors share the cores: no thread beside the forward
    engine.memory_budget = memory_budget  # the driver's budget, not this node's environment
    engine.sent = {}
    return engine


class _BatchActor:
    """One model per actor: a local engine that tests the batches the driver sends."""

    def __init__(self, task: str, config: dict, plan: dict, model, class_names, memory_budget: int):
        configure_inference_threads(ACTOR_THREADS)  # before the model: once per actor process
        set_preprocess_threads(ACTOR_THREADS)       # the actor's share of the cores, not the machine's
        self.engine = _actor_engine(task, config, plan, model, class_names, memory_budget)

    def test(self, batch: list[tuple[Sample, object]]) -> tuple[str, list, int]:
        """(this node's id, ``_test_batch``'s rows and forward passes) of ``batch``."""
        import ray

        return ray.get_runtime_context().get_node_id(), *_test_batch(self.engine, batch)


def _test_batch(engine: Engine | DetectionEngine, batch: list[tuple[Sample, object]]) -> tuple[list, int]:
    """Each sample's rows in batch order (``result_rows`` / ``image_result``) and the forward passes, of
    ``batch``'s (sample, ``ImageBytes`` or the ``BadSampleError`` of its unreadable file) pairs."""
    engine.sent = {s.sample_id: image for s, image in batch}
    try:
        report = RunReport(run_id=-1, status="running")
        items = engine.process_chunk([s for s, _ in batch], report)
        made = engine.image_result if isinstance(engine, DetectionEngine) else engine.result_rows
        return [made(item) for item in items], report.forward_passes
    finally:
        engine.sent = {}


# ---------------------------------------------------------------- the driver's side


def _sent(sample: Sample):
    """``sample`` as it travels to an actor (no image path) and its file's bytes, or the error reading them."""
    try:
        image = read_image_bytes(sample.image_path)
    except BadSampleError as exc:
        image = exc
    return dataclasses.replace(sample, image_path=""), image


class _Pool:
    """The actors and the batches on their way: sent ``IN_FLIGHT_PER_ACTOR`` per actor ahead, results taken
    in the order sent."""

    def __init__(self, actors: list, batches: list[list[Sample]]):
        self.actors = actors
        self.waiting = deque(batches)
        self.in_flight: deque = deque()
        self.sent = 0
        self.node_samples: Counter = Counter()

    def _fill(self) -> None:
        while self.waiting and len(self.in_flight) < IN_FLIGHT_PER_ACTOR * len(self.actors):
            batch = self.waiting.popleft()
            actor = self.actors[self.sent % len(self.actors)]   # in turn: each actor's queue stays in order
            self.sent += 1
            self.in_flight.append(actor.test.remote([_sent(s) for s in batch]))

    def next_batch(self) -> tuple[list, int]:
        """The rows and forward passes of the next batch sent."""
        import ray

        self._fill()
        if not self.in_flight:
            raise RuntimeError("the Ray run asked for more samples than it sent to its actors")
        node, rows, passes = ray.get(self.in_flight.popleft())
        self._fill()
        self.node_samples[node] += len(rows)
        return rows, passes

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors, self.in_flight = [], deque()


class _OnRay:
    """The driver's side of a Ray run, shared by the classifier and the detection engine: the actors, the
    batches, and ``_process_chunk`` answered from their results; the commits are the local engine's."""

    def _ray_init(self, model, workers: int | None, address: str | None, resources: dict | None) -> None:
        workers = self.config.workers if workers is None else workers
        if workers < 1:
            raise ValueError(f"a Ray run needs at least 1 worker, got {workers}")
        self.workers = int(workers)
        self.address = address
        self.resources = dict(resources or {})
        self._given_model = model
        self._pool: _Pool | None = None
        self._ready: dict[str, object] = {}
        # samples tested per Ray node id, of the last ``execute``
        self.node_samples: Counter = Counter()

    def _class_names(self) -> list[str] | None:
        return None

    def execute(self, run_id: int | None = None, progress: ProgressFn | None = None,
                stop_after: int | None = None) -> RunReport:
        import ray

        run_id = run_id if run_id is not None else self.create_run()
        done = self.store.done_sample_ids(run_id)
        todo = [s for s in self.samples if s.sample_id not in done]
        if stop_after is not None:
            todo = todo[:stop_after]
        # the chunks execute_run will ask for, in its order; samples with a problem never reach an actor
        batches = [[s for s in chunk if not s.problem]
                   for chunk, _ in _chunks(todo, self.store.attempts(run_id), self.config.batch_size)]
        batches = [b for b in batches if b]
        started = ray_started(self.address, self.workers) if batches else False
        try:
            if batches:
                self._pool = _Pool(self._actors(), batches)
            self._ready = {}
            return execute_run(self, run_id, self.store.done_sample_ids, progress, stop_after)
        finally:
            if self._pool is not None:
                self.node_samples = Counter(self._pool.node_samples)
                self._pool.close()
            self._pool = None
            if started:
                ray.shutdown()

    def _actors(self) -> list:
        import ray

        budget = getattr(self, "memory_budget", None) or int(os.environ.get(MEMORY_BUDGET_ENV) or
                                                             CHUNK_MEMORY_BUDGET_BYTES)
        actor = ray.remote(_BatchActor).options(num_cpus=1, resources=self.resources or None)
        task = "detection" if isinstance(self, DetectionEngine) else "classification"
        return [actor.remote(task, self._actor_config(), self.plan.to_dict(), self._given_model,
                             self._class_names(), budget) for _ in range(self.workers)]

    def _actor_config(self) -> dict:
        """The run's configuration as the actors load their model from it: with ``auto`` replaced by the runtime
        the driver's model runs on, so every node runs the model the run's record names (and none measures)."""
        config = self.config.to_dict()
        ran = getattr(self._driver_model(), "runtime", None)
        if config.get("runtime") == AUTO_RUNTIME and ran in RUNTIMES:
            config["runtime"] = ran
        return config

    def process_chunk(self, chunk: list[Sample], report: RunReport, speculate: bool = True) -> list:
        """The rows of ``chunk``'s samples: those with a problem made here (nothing to decode or run), the others
        taken from the actors' results, in the order they were sent (the actors never work ahead)."""
        local = [s for s in chunk if s.problem]
        if local:
            for item in super().process_chunk(local, report, speculate=False):
                self._ready[_item_id(item)] = self._rows(item)
        while any(s.sample_id not in self._ready for s in chunk):
            if self._pool is None:
                raise RuntimeError("the Ray run asked for samples it never sent to its actors")
            rows, passes = self._pool.next_batch()
            report.forward_passes += passes
            for r in rows:
                self._ready[_row_id(r)] = r
        return [self._ready.pop(s.sample_id) for s in chunk]


def _item_id(item) -> str:
    """The sample id of a local engine's processed item (a classifier's ``_Prepared``, a detection ``_Image``)."""
    return item.sample.sample_id


def _row_id(rows) -> str:
    """The sample id of one sample's rows (a classifier's row tuple, a detection ``ImageResult``)."""
    return rows.sample["sample_id"] if hasattr(rows, "sample") else rows[0]["sample_id"]


class RayEngine(_OnRay, Engine):
    """``Engine`` whose chunks are tested by Ray actors; commits stay on the driver."""

    def __init__(self, store: Store, config: RunConfig, model: Classifier | None = None,
                 dataset: Dataset | None = None, plan: Plan | None = None, workers: int | None = None,
                 address: str | None = None, resources: dict | None = None):
        super().__init__(store, config, model, dataset, plan)
        self._ray_init(model, workers, address, resources)
        self.read_ahead = self.prefetch_mutants = False  # the driver decodes nothing ahead: the actors do

    def _rows(self, prep) -> tuple:
        return self.result_rows(prep)

    def _driver_model(self):
        return self.model

    def commit_chunk(self, run_id: int, items: list[tuple], report: RunReport) -> None:
        """The chunk's rows, made by the actors, in one transaction."""
        self._commit_rows(run_id, list(items), report)


class RayDetectionEngine(_OnRay, DetectionEngine):
    """``DetectionEngine`` whose chunks are tested by Ray actors; commits stay on the driver."""

    def __init__(self, store: Store, config: DetectionConfig, detector: Detector | None = None,
                 dataset: Dataset | None = None, plan: Plan | None = None, region_detector: Detector | None = None,
                 workers: int | None = None, address: str | None = None, resources: dict | None = None):
        super().__init__(store, config, detector, dataset, plan, region_detector)
        self._ray_init(detector, workers, address, resources)

    def _driver_model(self):
        return self.detector

    def _class_names(self) -> list[str]:
        return list(self.class_names)

    def _rows(self, img):
        return self.image_result(img)

    def commit_chunk(self, run_id: int, results: list, report: RunReport) -> None:
        """Each image's result, made by the actors, one transaction per image."""
        for result in results:
            self._commit_result(run_id, result, report)
