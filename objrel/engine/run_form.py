"""A new run as the app's start form describes it, turned into a ``RunConfig`` or a ``DetectionConfig``.

The form shows the settings both tasks share (the model or detector, data, plan, vote, seed, limit,
name) plus one task-specific switch; every other setting (multi-label threshold, IoU threshold,
batch size, ...) comes from the run it starts from, or from the task's defaults.  No Streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass

from objrel.config import DetectionConfig, RunConfig, config_from_dict
from objrel.constants import THREE_COLOUR_VOTE_K
from objrel.errors import ConfigError
from objrel.store import Store

CLASSIFIER, DETECTOR = "classifier", "detector"
TASKS = (CLASSIFIER, DETECTOR)
TASK_LABELS = {CLASSIFIER: "Image classifier", DETECTOR: "Object detector"}
# Bounds of the form's number fields.
MAX_VOTE_K = 3          # the primary votes have three mutations
MAX_DILATE_PX = 50
MAX_SEED = 2**31 - 1

AnyConfig = RunConfig | DetectionConfig


def task_of(config: AnyConfig) -> str:
    return DETECTOR if isinstance(config, DetectionConfig) else CLASSIFIER


def default_config(task: str) -> AnyConfig:
    if task not in TASKS:
        raise ConfigError(f"task must be one of {TASKS}, got {task!r}")
    return DetectionConfig() if task == DETECTOR else RunConfig()


def stored_config(store: Store, run_id: int) -> AnyConfig:
    """The configuration a stored run was made with (classifier or detection)."""
    return config_from_dict(store.get_run(run_id).config)


def base_config(task: str, base: AnyConfig | None = None) -> AnyConfig:
    """``base`` when it is a run of ``task``, else the task's defaults."""
    return base if base is not None and task_of(base) == task else default_config(task)


def extra_operator_choices() -> list[str]:
    """Operators that can be added to a plan from the form (those with a parameter grid)."""
    from objrel.mutations import operators

    return [o.name for o in operators() if o.grid]


@dataclass(frozen=True)
class RunForm:
    """The start form's fields, text as typed (a blank text field means "not set").

    model:        classifier name for a classifier run, detector name for a detection run.
    test_all:     classifier runs: test incorrect inferences too.
    detected_only: detection runs: test only objects detected on the source.
    """

    task: str = CLASSIFIER
    model: str = ""
    weights: str = ""
    dataset: str = ""
    images: str = ""
    plan: str = ""
    operators: tuple[str, ...] = ()
    vote_k: int = THREE_COLOUR_VOTE_K
    dilate: int = 0
    test_all: bool = False
    detected_only: bool = False
    seed: int = 0
    limit: int = 0
    name: str = ""

    @classmethod
    def from_config(cls, config: AnyConfig) -> RunForm:
        """The form filled in from ``config`` (the name is left blank: a new run gets its own)."""
        detection = isinstance(config, DetectionConfig)
        return cls(task=task_of(config), model=config.detector if detection else config.model,
                   weights=config.weights or "", dataset=config.dataset or "", images=config.images or "",
                   plan=config.plan, operators=tuple(config.operators), vote_k=config.vote_k or THREE_COLOUR_VOTE_K,
                   dilate=config.dilate, test_all=False if detection else config.test_all,
                   detected_only=config.detected_only if detection else False, seed=config.seed,
                   limit=config.limit)

    def to_config(self, base: AnyConfig | None = None) -> AnyConfig:
        """The run's configuration: these fields over ``base`` (when it is a run of the same task) or the
        task's defaults.  Raises ConfigError for a missing model or dataset or an invalid setting."""
        start = base_config(self.task, base)
        model = self.model.strip()
        if not model:
            raise ConfigError(f"name a {'detector' if self.task == DETECTOR else 'model'} to run")
        dataset, images = self.dataset.strip() or None, self.images.strip() or None
        if self.task == CLASSIFIER and dataset is None:
            raise ConfigError("a classifier run needs a dataset (an annotation file or 'demo')")
        changes = {"weights": self.weights.strip() or None, "dataset": dataset, "images": images,
                   "plan": self.plan or start.plan, "operators": tuple(self.operators), "vote_k": int(self.vote_k),
                   "dilate": int(self.dilate), "seed": int(self.seed), "limit": int(self.limit),
                   "name": self.name.strip() or None}
        if self.task == DETECTOR:
            changes |= {"detector": model, "detected_only": bool(self.detected_only)}
        else:
            changes |= {"model": model, "test_all": bool(self.test_all)}
        return type(start).from_dict({**start.to_dict(), **changes})

