"""Run configuration: one frozen dataclass, readable from TOML and the CLI."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from .constants import DEFAULT_BATCH_SIZE, MULTI_LABEL_THRESHOLD
from .errors import ConfigError
from .mutations import PRESETS, Plan, plan_from_operators, preset


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines a run (model x dataset x plan).

    model:      adapter name (``efficientnet-lite0``, ``torchvision:resnet18``, ``py:mod:fn``).
    weights:    local state-dict file or torchvision weights name.
    task:       ``single`` or ``multi``; threshold: multi-label decision threshold.
    dataset:    annotation file / folder, or ``demo`` for the bundled photos.
    images:     dataset root (defaults to the annotation file's folder).
    fmt:        ``auto``, ``coco``, ``voc`` or ``manifest``; padding: VOC box padding (px).
    synset_mapping: LOC_synset_mapping-style file for ILSVRC XML.
    plan:       preset name (``colours3``, ``palette15``, ``all``); operators: extra
                operators to add to ``colours3`` instead of a preset.
    vote_k:     k of the 3-colour vote (2 of 3 by default).
    dilate:     grow the target region by this many pixels before mutating.
    test_all:   test incorrect inferences too (seed 000 s6.3), with every annotated object as target.
    seed:       run seed; each mutation's seed derives from (seed, sample id, mutation).
    batch_size: images per forward pass.
    limit:      test only the first N samples (0 = all).
    """

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

    def __post_init__(self):
        if self.plan not in PRESETS:
            raise ConfigError(f"plan must be one of {PRESETS}, got {self.plan!r}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be >= 1, got {self.batch_size}")
        if self.task not in ("single", "multi"):
            raise ConfigError(f"task must be 'single' or 'multi', got {self.task!r}")
        object.__setattr__(self, "operators", tuple(self.operators))

    def build_plan(self) -> Plan:
        if self.operators:
            return plan_from_operators(list(self.operators), k=self.vote_k, dilate=self.dilate)
        return preset(self.plan, k=self.vote_k, dilate=self.dilate)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["operators"] = list(self.operators)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown run settings {unknown}; valid settings: {sorted(known)}")
        return cls(**d)

    @classmethod
    def from_toml(cls, path) -> "RunConfig":
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {p}: {exc}") from exc
        data = data.get("run", data)
        # Relative paths in a config file are relative to the file.
        for key in ("dataset", "images", "weights", "synset_mapping"):
            v = data.get(key)
            if isinstance(v, str) and v != "demo" and not Path(v).is_absolute() and "_Weights." not in v:
                data[key] = str((p.parent / v).resolve())
        return cls.from_dict(data)

    def replace(self, **changes) -> "RunConfig":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})
