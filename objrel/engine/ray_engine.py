"""The classifier run on Ray Data: the same plan, rows and store code as the local engine, models in an actor pool.

    objrel run --engine ray ...            (a local Ray is started when RAY_ADDRESS / ``address`` names none)

The driver creates (or resumes) the run, lists the samples not yet stored and streams their ids through
``map_batches`` with an actor pool of ``workers`` actors; each actor builds one local ``Engine`` (one
model, loaded once) and returns the sample, prediction, verdict and vote rows of its batch, made by the
same ``Engine.result_rows`` the local engine commits.  The driver commits each chunk's rows in one
transaction through ``Store.write_samples`` inside the shared ``execute_run`` loop, so resume, cancel,
failure marking and timings work as for the local engine.  Results come back in sample order
(``preserve_order``), so the same seed gives the same rows as a local run.
"""

from __future__ import annotations

import json
import os
import sys

from objrel.config import DEFAULT_RAY_WORKERS, RunConfig
from objrel.data import Dataset
from objrel.engine.classify import Engine
from objrel.engine.loop import ProgressFn, RunReport, execute_run
from objrel.models import Classifier
from objrel.models.threads import configure_inference_threads, set_preprocess_threads
from objrel.mutations import Plan
from objrel.store import Store

# Torch threads per actor: each actor asks Ray for one CPU, so its model runs on one core (two actors
# with a thread per core each would put four threads on two cores and stall both at their barriers).
ACTOR_THREADS = 1


def _jsonable(o):
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"cannot send {type(o).__name__} back from a Ray worker")


class _RunActor:
    """One model per actor: a local ``Engine`` (no store) that tests a batch of sample ids."""

    def __init__(self, config: dict, plan: dict, samples: dict, model: Classifier | None = None,
                 dataset: Dataset | None = None):
        configure_inference_threads(ACTOR_THREADS)  # before the model: once per actor process
        set_preprocess_threads(ACTOR_THREADS)       # the actor's share of the cores, not the machine's
        cfg = RunConfig.from_dict(config).replace(engine="local")
        self.engine = Engine(None, cfg, model=model, dataset=dataset, plan=Plan.from_dict(plan))
        self.engine.read_ahead = False  # an actor's next batch is not the dataset's next samples
        self.engine.prefetch_mutants = False  # the actors share the cores: no thread beside the forward
        self.samples = samples

    def __call__(self, batch: dict) -> dict:
        ids = [str(i) for i in batch["sample_id"]]
        report = RunReport(run_id=-1, status="running")
        preps = self.engine._process_chunk([self.samples[i] for i in ids], report)
        rows = [json.dumps(self.engine.result_rows(p), default=_jsonable) for p in preps]
        passes = [report.forward_passes] + [0] * (len(ids) - 1)
        return {"sample_id": ids, "rows": rows, "passes": passes}


def ray_started(address: str | None = None, num_cpus: int = DEFAULT_RAY_WORKERS) -> bool:
    """Connect to Ray at ``address`` (or $RAY_ADDRESS), or start a local one with ``num_cpus``; True when
    this call started it (the caller then shuts it down)."""
    import ray

    if ray.is_initialized():
        return False
    path = os.pathsep.join(p for p in sys.path if p)  # workers import what the driver imports (py: models)
    runtime_env = {"env_vars": {"PYTHONPATH": path}}
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
    else:
        ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=runtime_env, log_to_driver=False)
    return True


class RayEngine(Engine):
    """``Engine`` whose chunks are tested by a Ray Data actor pool; commits stay on the driver."""

    def __init__(self, store: Store, config: RunConfig, model: Classifier | None = None,
                 dataset: Dataset | None = None, plan: Plan | None = None, workers: int | None = None,
                 address: str | None = None):
        super().__init__(store, config, model, dataset, plan)
        workers = self.config.workers if workers is None else workers
        if workers < 1:
            raise ValueError(f"a Ray run needs at least 1 worker, got {workers}")
        self.workers = int(workers)
        self.address = address
        self._given_model = model
        self._given_dataset = dataset
        self._stream = None
        self._buffer: dict[str, tuple] = {}

    def execute(self, run_id: int | None = None, progress: ProgressFn | None = None,
                stop_after: int | None = None) -> RunReport:
        import ray

        run_id = run_id if run_id is not None else self.create_run()
        done = self.store.done_sample_ids(run_id)
        todo = [s for s in self.samples if s.sample_id not in done]
        if stop_after is not None:
            todo = todo[:stop_after]
        started = ray_started(self.address, self.workers)
        try:
            self._stream = self._start(todo) if todo else iter(())
            self._buffer = {}
            return execute_run(self, run_id, self.store.done_sample_ids, progress, stop_after)
        finally:
            self._stream = None
            if started:
                ray.shutdown()

    def _start(self, todo):
        import ray
        import ray.data

        ctx = ray.data.DataContext.get_current()
        ctx.execution_options.preserve_order = True
        ctx.enable_progress_bars = False
        ids = ray.data.from_items([{"sample_id": s.sample_id} for s in todo],
                                  override_num_blocks=max(1, min(len(todo), self.workers * 4)))
        kwargs = {"config": self.config.to_dict(), "plan": self.plan.to_dict(),
                  "samples": {s.sample_id: s for s in todo}, "model": self._given_model,
                  "dataset": self._given_dataset}
        out = ids.map_batches(_RunActor, fn_constructor_kwargs=kwargs, batch_size=self.config.batch_size,
                              compute=ray.data.ActorPoolStrategy(size=self.workers), num_cpus=1,
                              batch_format="numpy")
        return iter(out.iter_rows())

    def _process_chunk(self, chunk, report: RunReport) -> list[tuple]:
        """The rows of ``chunk``'s samples, pulled from the actor pool's ordered stream."""
        want = [s.sample_id for s in chunk]
        while any(i not in self._buffer for i in want):
            row = next(self._stream)
            report.forward_passes += int(row["passes"])
            self._buffer[str(row["sample_id"])] = tuple(json.loads(row["rows"]))
        return [self._buffer.pop(i) for i in want]

    def _commit_chunk(self, run_id: int, items: list[tuple], report: RunReport) -> None:
        self._commit_rows(run_id, list(items), report)
