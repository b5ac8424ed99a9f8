"""Start or resume a run of either task: the configuration's type picks the worker.

    from objrel.engine import run, resume
    report = run(RunConfig(model="efficientnet-lite0", dataset="demo"), "var/objrel.db")
    report = run(DetectionConfig(detector="mtcnn", dataset="demo-faces"), "var/objrel.db")
    report = resume(3, "var/objrel.db")        # a classifier or a detection run alike
"""

from __future__ import annotations

from objrel.config import DetectionConfig, RunConfig, config_from_dict
from objrel.data import Dataset
from objrel.engine.classify import Engine
from objrel.engine.detect import DetectionEngine
from objrel.engine.loop import ProgressFn, RunReport
from objrel.models import Classifier, Detector
from objrel.store import Store


def open_store(store: Store | str | None) -> Store:
    """``store`` itself, or the store at that URL or SQLite path (None: $OBJREL_STORE or ./objrel.db)."""
    return store if isinstance(store, Store) else Store(store)


def engine_for(store: Store, config: RunConfig | DetectionConfig, model: Classifier | Detector | None = None,
               dataset: Dataset | None = None) -> Engine | DetectionEngine:
    """The worker for ``config``: the classifier ``Engine`` for a ``RunConfig``, the ``DetectionEngine`` for a
    ``DetectionConfig`` (their Ray engines when its ``engine`` is ``ray``).  ``model`` (a classifier or a detector
    to match) and ``dataset`` replace the ones the configuration names."""
    if isinstance(config, DetectionConfig):
        if config.engine == "ray":  # imported here: Ray is optional and slow to import
            from objrel.engine.ray_engine import RayDetectionEngine

            return RayDetectionEngine(store, config, model, dataset)
        return DetectionEngine(store, config, model, dataset)
    if isinstance(config, RunConfig):
        if config.engine == "ray":  # imported here: Ray is optional and slow to import
            from objrel.engine.ray_engine import RayEngine

            return RayEngine(store, config, model, dataset)
        return Engine(store, config, model, dataset)
    raise TypeError(f"expected a RunConfig or a DetectionConfig, got {type(config).__name__}")


def run(config: RunConfig | DetectionConfig, store: Store | str | None = None,
        model: Classifier | Detector | None = None, dataset: Dataset | None = None,
        progress: ProgressFn | None = None) -> RunReport:
    """Create and execute a run; the one-call library entry point for both tasks."""
    return engine_for(open_store(store), config, model, dataset).execute(progress=progress)


def resume(run_id: int, store: Store | str | None = None, model: Classifier | Detector | None = None,
           dataset: Dataset | None = None, progress: ProgressFn | None = None) -> RunReport:
    """Continue a stopped run with its stored configuration; finished samples (images) are not redone."""
    opened = open_store(store)
    config = config_from_dict(opened.get_run(run_id).config)
    return engine_for(opened, config, model, dataset).execute(run_id=run_id, progress=progress)
