"""Detection run configuration (frozen, TOML-readable) and the detection test plans.

The default plan, ``seed001``, is seed 001's operators with its 2-of-3 vote (s4.4):

* ``MR-1 random erase``: random pixels over the centre-out 50%, 70% and 90% of the associated
  object's box; flagged when 2 of 3 still detect the object;
* ``MR-2 background noise`` (primary MR-2 vote): Gaussian noise of variance 400, 1600 and 2500
  (pixel units squared) on the background; flagged when 2 of 3 change T;
* ``MR-2 object noise``: low-variance noise (16, 64, 160) on the whole object (ratio 1.0).

Every classifier preset (``colours3``, ``palette15``, ``all``) works too: its operators are
applied to the associated object's region.  ``operators`` adds one majority-vote group per
named operator to the chosen plan.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from ..errors import ConfigError
from ..mutations import PRESETS, Mutation, Plan, VoteGroup, operator_group, preset
from .relations import DEFAULT_IOU_THRESHOLD, check_threshold

SEED001 = "seed001"
DETECTION_PRESETS = (SEED001,) + tuple(PRESETS)
# Centre-out erase ratios of the MR-1 vote: large enough that a detector looking at the object loses it.
SEED001_ERASE_RATIOS = (0.5, 0.7, 0.9)
# Background noise variances (0-255 pixel units squared; std 20, 40, 50) of the primary MR-2 vote.
SEED001_BACKGROUND_VARIANCES = (400.0, 1600.0, 2500.0)
# Object noise variances (std 4, 8, 12.6) over the whole object: low enough to keep its features (s2.3).
SEED001_OBJECT_VARIANCES = (16.0, 64.0, 160.0)
# Votes: flagged when at least this many of the three mutations are violated (seed 001 s4.4).
SEED001_VOTE_K = 2
# Images per forward pass of the detector (detectors run on full-size images: keep it small).
DETECTION_BATCH_SIZE = 8


def seed001_groups(k: int | None = None) -> list[VoteGroup]:
    kk = k or SEED001_VOTE_K
    return [
        VoteGroup("MR-1 random erase", "MR-1",
                  tuple(Mutation.of("random_erase", ratio=r) for r in SEED001_ERASE_RATIOS), kk),
        VoteGroup("MR-2 background noise", "MR-2",
                  tuple(Mutation.of("background_noise", variance=v) for v in SEED001_BACKGROUND_VARIANCES), kk),
        VoteGroup("MR-2 object noise", "MR-2",
                  tuple(Mutation.of("object_noise", ratio=1.0, variance=v) for v in SEED001_OBJECT_VARIANCES),
                  SEED001_VOTE_K),
    ]


def detection_plan(name: str = SEED001, operators=(), k: int | None = None, dilate: int = 0) -> Plan:
    """``seed001`` or a classifier preset, plus a majority-vote group per extra operator not in it."""
    if name not in DETECTION_PRESETS:
        raise ConfigError(f"plan must be one of {DETECTION_PRESETS}, got {name!r}")
    groups = seed001_groups(k) if name == SEED001 else list(preset(name, k=k, dilate=dilate).groups)
    have = {m.operator for g in groups for m in g.mutations}
    for op in operators:
        if op not in have:
            groups.append(operator_group(op))
            have.add(op)
    return Plan(tuple(groups), dilate)


@dataclass(frozen=True)
class DetectionConfig:
    """Everything that defines a detection run (detector x dataset x plan).

    detector:        adapter name (``haar:frontalface_default``, ``mtcnn``, ``torchvision:ssd300_vgg16``, ...).
    weights:         torchvision only: local state-dict file or torchvision weights name.
    score_threshold: drop records below this score (None: the adapter's default).
    labels:          torchvision only: class names by output index (default COCO's).
    iou_threshold:   Delta_c of test T (seed 001 s4.4), in (0, 1].
    dataset:         annotation file / folder, ``demo-faces`` for the bundled face boxes, or None with
                     ``images`` for a plain folder of images (then ``regions_from`` must be set).
    images, fmt, padding, synset_mapping: as for classifier runs.
    regions_from:    a detector that supplies the ground truth of images without boxes (seed 000 s4.2);
                     their samples are stored with ``region_source = "detector"``.
    plan:            ``seed001`` (default) or a classifier preset; operators: extra operator groups.
    vote_k:          k of the primary votes (2 of 3 by default); dilate: grow regions by N pixels.
    detected_only:   test only units detected on the source (T = 1); by default undetected ground-truth
                     objects are tested too, for MR-2's incorrect detections (seed 001 Tables 3-4).
    seed, batch_size, limit (images), name: as for classifier runs.
    """

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
    plan: str = SEED001
    operators: tuple[str, ...] = field(default_factory=tuple)
    vote_k: int | None = None
    dilate: int = 0
    detected_only: bool = False
    seed: int = 0
    batch_size: int = DETECTION_BATCH_SIZE
    limit: int = 0
    name: str | None = None

    def __post_init__(self):
        if self.plan not in DETECTION_PRESETS:
            raise ConfigError(f"plan must be one of {DETECTION_PRESETS}, got {self.plan!r}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.dilate < 0:
            raise ConfigError(f"dilate must be >= 0 pixels, got {self.dilate}")
        try:
            check_threshold(self.iou_threshold)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        if not self.dataset and not self.images:
            raise ConfigError("a detection run needs a dataset (annotation file, 'demo-faces') or an images folder")
        object.__setattr__(self, "operators", tuple(self.operators))
        object.__setattr__(self, "labels", tuple(self.labels))

    def build_plan(self) -> Plan:
        return detection_plan(self.plan, self.operators, k=self.vote_k, dilate=self.dilate)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["operators"] = list(self.operators)
        d["labels"] = list(self.labels)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DetectionConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown detection run settings {unknown}; valid settings: {sorted(known)}")
        return cls(**d)

    @classmethod
    def from_toml(cls, path) -> "DetectionConfig":
        """A ``[detect]`` table (or top-level keys); relative paths are relative to the file."""
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {p}: {exc}") from exc
        data = data.get("detect", data)
        for key in ("dataset", "images", "weights", "synset_mapping"):
            v = data.get(key)
            if isinstance(v, str) and v != "demo-faces" and not Path(v).is_absolute() and "_Weights." not in v:
                data[key] = str((p.parent / v).resolve())
        return cls.from_dict(data)

    def replace(self, **changes) -> "DetectionConfig":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})
