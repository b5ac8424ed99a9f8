"""Run configuration for both tasks: frozen dataclasses with one dict/TOML codec.

``RunConfig`` defines a classifier run (model x dataset x plan), ``DetectionConfig`` a detector
run.  Both share the codec of ``_Codec``: ``to_dict`` / ``from_dict`` (unknown keys are refused
with the valid ones listed), ``from_toml`` (a ``[run]`` or ``[detect]`` table, or top-level keys;
relative paths are relative to the file) and ``replace``.  ``config_from_dict`` reads either back
from a stored run.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import ClassVar

from objrel.constants import AUTO_RUNTIME, CLASSIFIER_TASKS, CPU_DEVICE, CUDA_DEVICE, DEFAULT_BATCH_SIZE, \
    MULTI_LABEL_THRESHOLD, ONNXRUNTIME, OPENVINO, RUNTIMES, TORCH_RUNTIME
from objrel.errors import ConfigError
from objrel.mutations import ERASE_NOISE, PRESETS, SEED002_PLAN, Plan, canonical_preset, plan_from_operators, preset, \
    preset_with_operators
from objrel.relations.detect import DEFAULT_IOU_THRESHOLD, check_threshold


def check_device_name(device: str) -> str:
    """``device`` if it names a place a forward pass can run (``cpu``, ``cuda``, ``cuda:N``); a ConfigError
    saying what was expected otherwise.  Whether this machine has it is the model loader's check."""
    name, _, index = str(device).partition(":")
    if device == CPU_DEVICE or (name == CUDA_DEVICE and (not _ or (index.isascii() and index.isdigit()))):
        return device
    raise ConfigError(f"device must be {CPU_DEVICE!r}, {CUDA_DEVICE!r} or '{CUDA_DEVICE}:N' (a GPU's index), "
                      f"got {device!r}")


# Settings that name files: relative paths in a TOML file are resolved against the file's folder.
PATH_SETTINGS = ("dataset", "images", "weights", "synset_mapping")
# Images per forward pass of a detector (detectors run on full-size images: keep it small).
DETECTION_BATCH_SIZE = 8
# Where a run (classifier or detection) executes: this process, or a pool of Ray actors.
ENGINES = ("local", "ray")
# Actors (one model each) of a Ray run when the configuration names none.
DEFAULT_RAY_WORKERS = 2


class _Codec:
    """The dict / TOML codec shared by both configs."""

    TOML_TABLE: ClassVar[str] = "run"
    BUILTIN_DATASETS: ClassVar[tuple[str, ...]] = ()
    LIST_FIELDS: ClassVar[tuple[str, ...]] = ("operators",)

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in self.LIST_FIELDS:
            d[key] = list(getattr(self, key))
        return d

    @classmethod
    def from_dict(cls, d: dict):
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown {cls.__name__} settings {unknown}; valid settings: {sorted(known)}")
        d = dict(d)
        if isinstance(d.get("plan"), str):
            d["plan"] = canonical_preset(d["plan"])
        return cls(**d)

    @classmethod
    def from_toml(cls, path):
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {p}: {exc}") from exc
        data = data.get(cls.TOML_TABLE, data)
        for key in PATH_SETTINGS:
            v = data.get(key)
            if (isinstance(v, str) and v not in cls.BUILTIN_DATASETS and not Path(v).is_absolute()
                    and "_Weights." not in v):
                data[key] = str((p.parent / v).resolve())
        return cls.from_dict(data)

    def replace(self, **changes):
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def _check_common(self) -> None:
        plan = canonical_preset(self.plan)
        if plan not in PRESETS:
            raise ConfigError(f"plan must be one of {PRESETS}, got {self.plan!r}")
        object.__setattr__(self, "plan", plan)
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.dilate < 0:
            raise ConfigError(f"dilate must be >= 0 pixels, got {self.dilate}")
        if self.limit < 0:
            raise ConfigError(f"limit must be >= 0 (0 = every sample), got {self.limit}")
        object.__setattr__(self, "operators", tuple(self.operators))


@dataclass(frozen=True)
class RunConfig(_Codec):
    """Everything that defines a classifier run (model x dataset x plan).

    model:      adapter name (``efficientnet-lite0``, ``torchvision:resnet18``, ``py:mod:fn``).
    weights:    local state-dict file or torchvision weights name.
    task:       ``single`` or ``multi``; threshold: multi-label decision threshold.
    dataset:    annotation file / folder, or ``demo`` for the bundled photos.
    images:     dataset root (defaults to the annotation file's folder).
    fmt:        ``auto``, ``coco``, ``voc`` or ``manifest``; padding: VOC box padding (px).
    synset_mapping: LOC_synset_mapping-style file for ILSVRC XML.
    plan:       preset name (``colours3``, ``palette15``, ``all``, ``erase_noise``); operators: extra
                operators to add to ``colours3`` instead of a preset.
    vote_k:     k of the 3-colour vote (2 of 3 by default).
    dilate:     grow the target region by this many pixels before mutating.
    test_all:   test incorrect inferences too (EMSE21 s6.3), with every annotated object as target.
    seed:       run seed; each mutation's seed derives from (seed, sample id, mutation).
    batch_size: images per forward pass.
    limit:      test only the first N samples (0 = all).
    lazy:       stop making a sample's mutants once every vote group of the sample is decided (flags
                equal the full evaluation's; the skipped mutations are stored as ``not evaluated`` and the
                continuous scores S_p / S_r / S as None).  False: every mutation runs and S is stored.
                The ``seed002`` plan exists for S, so it always runs every mutation (lazy is set False).
    compile:    run a torch model through ``torch.compile`` (once per process; the first batch pays).
    runtime:    what runs the forward pass: ``torch``, ``onnxruntime`` or ``openvino`` (the model exported once
                to ONNX, cached), or ``auto`` (the fastest whose outputs match torch's, measured on this
                machine); the run's model record says which one ran.
    device:     where the forward pass runs: ``cpu``, or ``cuda`` / ``cuda:N`` (a GPU; torch or ONNX Runtime's CUDA
                provider, f32 forced); decoding and mutating stay on the CPU.  The local engine only.
    engine:     ``local`` (this process) or ``ray`` (a pool of Ray actors with one model each, sent the image
                files' bytes; the cluster at $RAY_ADDRESS, else a local Ray started for the run).
    workers:    actors of a Ray run (one model and one CPU each).
    """

    TOML_TABLE: ClassVar[str] = "run"
    BUILTIN_DATASETS: ClassVar[tuple[str, ...]] = ("demo",)

    model: str = "efficientnet-lite0"
    weights: str | None = None
    task: str = "single"
    threshold: float = MULTI_LABEL_THRESHOLD
    dataset: str = "demo"
    images: str | None = None
    fmt: str = "auto"
    padding: int = 0
    synset_mapping: str | None = None
    plan: str = "colours3"
    operators: tuple[str, ...] = field(default_factory=tuple)
    vote_k: int | None = None
    dilate: int = 0
    test_all: bool = False
    seed: int = 0
    batch_size: int = DEFAULT_BATCH_SIZE
    limit: int = 0
    name: str | None = None
    lazy: bool = True
    compile: bool = False
    runtime: str = AUTO_RUNTIME
    device: str = CPU_DEVICE
    engine: str = "local"
    workers: int = DEFAULT_RAY_WORKERS

    def __post_init__(self):
        self._check_common()
        if self.plan == SEED002_PLAN and not self.operators:  # a plan for S: S needs every mutant
            object.__setattr__(self, "lazy", False)
        if self.task not in CLASSIFIER_TASKS:
            raise ConfigError(f"task must be one of {CLASSIFIER_TASKS}, got {self.task!r}")
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.runtime not in RUNTIMES:
            raise ConfigError(f"runtime must be one of {RUNTIMES}, got {self.runtime!r}")
        if self.compile and self.runtime not in (AUTO_RUNTIME, TORCH_RUNTIME):
            raise ConfigError(f"compile is torch.compile, for runtime {TORCH_RUNTIME}; got runtime={self.runtime!r}")
        if self.workers < 1:
            raise ConfigError(f"workers must be >= 1 (actors of a Ray run), got {self.workers}")
        check_device_name(self.device)
        if self.device != CPU_DEVICE and self.engine != "local":
            raise ConfigError(f"device {self.device} runs on the local engine (Ray actors get one CPU each); "
                              f"got engine={self.engine!r}")
        if self.device != CPU_DEVICE and self.runtime == OPENVINO:
            raise ConfigError(f"runtime {OPENVINO} runs on the CPU here; for device {self.device} use "
                              f"{TORCH_RUNTIME}, {ONNXRUNTIME} or {AUTO_RUNTIME}")

    @property
    def model_runtime(self) -> str:
        """The runtime to load the model with: ``torch`` when the run asks for ``torch.compile``."""
        return TORCH_RUNTIME if self.compile else self.runtime

    def build_plan(self) -> Plan:
        """The run's mutation plan: from its named operators when it lists any, otherwise its preset."""
        if self.operators:
            return plan_from_operators(list(self.operators), k=self.vote_k, dilate=self.dilate)
        return preset(self.plan, k=self.vote_k, dilate=self.dilate)


@dataclass(frozen=True)
class DetectionConfig(_Codec):
    """Everything that defines a detection run (detector x dataset x plan).

    detector:        adapter name (``haar:frontalface_default``, ``mtcnn``, ``torchvision:ssd300_vgg16``, ...).
    weights:         torchvision only: local state-dict file or torchvision weights name.
    score_threshold: drop records below this score (None: the adapter's default).
    labels:          torchvision only: class names by output index (default COCO's).
    iou_threshold:   Delta_c of test T (DetReport s4.4), in (0, 1].
    dataset:         annotation file / folder, ``demo-faces`` for the bundled face boxes, or None with
                     ``images`` for a plain folder of images (then ``regions_from`` must be set).
    images, fmt, padding, synset_mapping: as for classifier runs.
    regions_from:    a detector that supplies the ground truth of images without boxes (EMSE21 s4.2);
                     their samples are stored with ``region_source = "detector"``.
    plan:            ``erase_noise`` (default: DetReport's random erase and noise votes) or another
                     preset applied to each associated object; operators: extra operator groups.
    vote_k:          k of the primary votes (2 of 3 by default); dilate: grow regions by N pixels.
    detected_only:   test only units detected on the source (T = 1); by default undetected ground-truth
                     objects are tested too, for MR-2's incorrect detections (DetReport Tables 3-4).
    seed, batch_size, limit (images), name, engine, workers: as for classifier runs.
    runtime:         what runs the detector: ``torch``, or ``onnxruntime`` / ``openvino`` for a torchvision SSD or
                     SSDlite network (exported once to ONNX, cached), or ``auto`` (the fastest whose detections
                     match torch's; other detectors keep their own runtime); the model record says which ran.
    """

    TOML_TABLE: ClassVar[str] = "detect"
    BUILTIN_DATASETS: ClassVar[tuple[str, ...]] = ("demo-faces",)
    LIST_FIELDS: ClassVar[tuple[str, ...]] = ("operators", "labels")

    detector: str = "haar:frontalface_default"
    weights: str | None = None
    score_threshold: float | None = None
    labels: tuple[str, ...] = field(default_factory=tuple)
    iou_threshold: float = DEFAULT_IOU_THRESHOLD
    dataset: str | None = "demo-faces"
    images: str | None = None
    fmt: str = "auto"
    padding: int = 0
    synset_mapping: str | None = None
    regions_from: str | None = None
    plan: str = ERASE_NOISE
    operators: tuple[str, ...] = field(default_factory=tuple)
    vote_k: int | None = None
    dilate: int = 0
    detected_only: bool = False
    seed: int = 0
    batch_size: int = DETECTION_BATCH_SIZE
    limit: int = 0
    name: str | None = None
    engine: str = "local"
    workers: int = DEFAULT_RAY_WORKERS
    runtime: str = AUTO_RUNTIME

    def __post_init__(self):
        self._check_common()
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.workers < 1:
            raise ConfigError(f"workers must be >= 1 (actors of a Ray run), got {self.workers}")
        if self.runtime not in RUNTIMES:
            raise ConfigError(f"runtime must be one of {RUNTIMES}, got {self.runtime!r}")
        try:
            check_threshold(self.iou_threshold)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if not self.dataset and not self.images:
            raise ConfigError("a detection run needs a dataset (annotation file, 'demo-faces') or an images folder")
        object.__setattr__(self, "labels", tuple(self.labels))

    def build_plan(self) -> Plan:
        """The run's mutation plan: its preset plus a vote group for each named operator the preset lacks."""
        return preset_with_operators(self.plan, self.operators, k=self.vote_k, dilate=self.dilate)


def config_from_dict(d: dict) -> RunConfig | DetectionConfig:
    """Read a stored run's configuration back: a ``detector`` key makes it a detection run."""
    return DetectionConfig.from_dict(d) if "detector" in d else RunConfig.from_dict(d)


def run_model(store, run_id: int):
    """Load the classifier a stored classifier run used (its recorded name, weights, task, threshold and
    runtime); ``store`` is an ``objrel.store.Store``.  The models package (and torch) load only here."""
    from objrel.models import load_classifier

    cfg = RunConfig.from_dict(store.get_run(run_id).config)
    return load_classifier(cfg.model, cfg.weights, task=cfg.task, threshold=cfg.threshold, runtime=cfg.model_runtime)
