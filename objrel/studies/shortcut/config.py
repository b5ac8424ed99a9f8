"""The planted-shortcut benchmark's sizes: ``BenchConfig`` (full and quick)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from objrel.studies.shortcut.attack import DEFAULT_ATTEMPTS
from objrel.studies.shortcut.groundtruth import DEFAULT_DRAWS
from objrel.studies.shortcut.models import TrainConfig
from objrel.studies.shortcut.repair import RepairConfig

# Biased training data: the background type names the class in 95% of the scenes.
BIASED_RHO = 0.95
# Torch threads while training and testing.  One thread is the default: on a shared
# 2-core machine OpenMP's spinning threads made two-thread training 5-10x *slower*
# whenever another process held a core; on an idle machine two threads are ~1.7x faster.
DEFAULT_THREADS = 1


@dataclass(frozen=True)
class BenchConfig:
    """Sizes of the benchmark.  The defaults train on 2 CPU cores in minutes; ``quick()`` is for tests.

    seeds: one full pipeline per seed.  n_classes: K.  n_train / n_val / n_test: scenes per split.
    plan: the preset run on the test split and scored (``all`` scores every operator).
    draws: counterfactual backgrounds per other class type (from the pool, ``scenes.pool_background``); the tables
    re-derive the truth at every draw count of ``groundtruth.REPORT_DRAWS`` up to it.  attack_attempts / attack_pairs:
    transplants per label pair and strategy, and how many ordered pairs (None = all).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    n_classes: int = 4
    size: int = 64
    rho: float = BIASED_RHO
    n_train: int = 1000
    n_val: int = 200
    n_test: int = 300
    train: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=8))
    plan: str = "all"
    draws: int = DEFAULT_DRAWS
    repair: RepairConfig = field(default_factory=RepairConfig)
    attack_attempts: int = DEFAULT_ATTEMPTS
    attack_pairs: int | None = None
    threads: int = DEFAULT_THREADS
    quick: bool = False
    # Also train two multi-label models on multi-label scenes (MULTI_OBJECTS objects of distinct classes; the
    # background goes with the first-drawn one at rate rho for the biased model, 1/K for the other), test both on
    # the same biased scenes and score MR-1, MR-2 and their union against their ground truth (EMSE21 s4.4
    # multi-label relations).
    multi_label: bool = True
    # Also run the planted stand-in detector (``planted.PlantedDetector``: small objects named by the background
    # colour, large ones by their outline) on n_test flat-colour detection scenes and score MR-1, MR-2 and their
    # union, for the 3-colour fills and the detectors' erase/noise plan, against each unit's counterfactual truth.
    detection: bool = True

    def __post_init__(self):
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        if min(self.n_train, self.n_val, self.n_test) < 1:
            raise ValueError(f"split sizes must be >= 1, got {self.n_train}, {self.n_val}, {self.n_test}")

    @classmethod
    def quick_config(cls, seeds=(0,)) -> "BenchConfig":
        """About 20 s on one CPU thread: 3 classes, small splits, short training, two repair shares."""
        return cls(seeds=tuple(seeds), n_classes=3, n_train=240, n_val=45, n_test=60,
                   train=TrainConfig(epochs=5), plan="all",
                   repair=RepairConfig(shares=(0.0, 0.2), epochs=2, plan="colours3"),
                   attack_attempts=4, quick=True)

    def to_dict(self) -> dict:
        """The sizes as the results file's ``config`` holds them."""
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        d["train"] = self.train.to_dict()
        d["repair"] = self.repair.to_dict()
        return d
