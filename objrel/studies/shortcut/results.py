"""What the planted-shortcut benchmark produces, as typed frozen results, and its results file.

The arms (``arms``) return these; ``BenchResults.to_dict`` is the JSON of ``OUT/results.json`` (what the
Shortcut page and the tables read back with ``load_results``).  The file's keys and their order are fixed:
the page, the tests and earlier results files all read them.

Nothing here imports torch: the app reads results files without loading a model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from objrel.analysis.summary import Summary
    from objrel.studies.shortcut.attack import PairResult
    from objrel.studies.shortcut.config import BenchConfig
    from objrel.studies.shortcut.groundtruth import Reliance, UnitReliance
    from objrel.studies.shortcut.repair import RepairResult
    from objrel.studies.shortcut.scenes import SyntheticConfig, SyntheticSplit
    from objrel.studies.shortcut.scoring import DetectorScore

# The SQLite store of the benchmark's objrel runs, in its output folder (the Shortcut page reads progress from it).
STORE_FILE = "shortcut.db"
DEFAULT_OUT = "var/shortcut"
RESULTS_FILE = "results.json"
# The two trained models of every seed: on biased (rho) and on unbiased (1/K) training scenes.
MODELS = ("biased", "unbiased")


@dataclass(frozen=True)
class ModelResult:
    """One trained model of one seed: its weights, the objrel run on the test split, accuracies, the
    ground-truth reliance of its correct inferences and every vote group scored against it."""

    weights: str
    train_log: list
    run_id: int
    summary: Summary
    swapped_accuracy: float
    test_accuracy: float
    reliance: Mapping[str, Any]            # groundtruth.reliance_share
    scores: tuple[DetectorScore, ...]      # against "reliant", then against "matched" (every draw, "any")
    truth: Mapping[str, Reliance]
    flags: Mapping[str, Any]               # scoring.flags_to_dict: tested ids and every detector's flags
    relevancy: Mapping[str, tuple]         # sample id -> (S_p, S_r, S) of ORMR, None where undefined

    def to_dict(self) -> dict:
        """This result as the results file holds it."""
        return {"weights": self.weights, "train_log": self.train_log, "run_id": self.run_id,
                "summary": self.summary.to_dict(), "swapped_accuracy": self.swapped_accuracy,
                "test_accuracy": self.test_accuracy, "reliance": self.reliance,
                "scores": [s.to_dict() for s in self.scores],
                "truth": {k: v.to_dict() for k, v in self.truth.items()}, "flags": dict(self.flags),
                "relevancy": {k: list(v) for k, v in self.relevancy.items()}}


@dataclass(frozen=True)
class MultiLabelResult:
    """One multi-label model of one seed (trained at bias rate ``rho``): its run, the ground truth of its
    correct inferences, its flags and its scores against reliance (every draw, threshold "any")."""

    weights: str
    rho: float
    run_id: int
    summary: Summary
    reliance: Mapping[str, Any]
    scores: tuple[DetectorScore, ...]
    truth: Mapping[str, Reliance]
    flags: Mapping[str, Any]

    def to_dict(self) -> dict:
        """This result as the results file holds it."""
        return {"weights": self.weights, "rho": self.rho, "run_id": self.run_id, "summary": self.summary.to_dict(),
                "reliance": self.reliance, "scores": [s.to_dict() for s in self.scores],
                "truth": {k: v.to_dict() for k, v in self.truth.items()}, "flags": dict(self.flags)}


@dataclass(frozen=True)
class DetectionRun:
    """One ``DetectionEngine`` run of the detection arm (one plan)."""

    run_id: int
    summary: Summary
    flags: Mapping[str, Any]               # scoring.flags_to_dict over its detected units

    def to_dict(self) -> dict:
        """This result as the results file holds it."""
        return {"run_id": self.run_id, "summary": self.summary.to_dict(), "flags": dict(self.flags)}


@dataclass(frozen=True)
class PlantedAgreement:
    """Over the detected (T = 1) units: how many there are, how many the planted rule names from the
    background, and on how many the rule agrees with the counterfactual truth."""

    correct: int
    planted: int
    agree: int

    def to_dict(self) -> dict:
        """This result as the results file holds it."""
        return {"correct": self.correct, "planted": self.planted, "agree": self.agree}


@dataclass(frozen=True)
class DetectionResult:
    """The detection arm of one seed: the planted detector, its scenes, one run per plan and the scores."""

    detector: Mapping[str, Any]            # PlantedDetector.describe()
    data: SyntheticConfig
    runs: Mapping[str, DetectionRun]       # by plan, in DETECTION_PLANS order
    reliance: Mapping[str, Any]
    planted: PlantedAgreement
    scores: tuple[DetectorScore, ...]
    truth: Mapping[str, UnitReliance]

    def to_dict(self) -> dict:
        """This result as the results file holds it."""
        return {"detector": self.detector, "data": self.data.to_dict(),
                "runs": {k: v.to_dict() for k, v in self.runs.items()}, "reliance": self.reliance,
                "planted": self.planted.to_dict(), "scores": [s.to_dict() for s in self.scores],
                "truth": {k: v.to_dict() for k, v in self.truth.items()}}


@dataclass(frozen=True)
class AttackResult:
    """The transplanting attack on one model: every label pair and the totals per scenario and strategy."""

    pairs: tuple[PairResult, ...]
    totals: list                           # attack.totals

    def to_dict(self) -> dict:
        """This result as the results file holds it."""
        return {"pairs": [p.to_dict() for p in self.pairs], "totals": self.totals}


@dataclass(frozen=True)
class SeedResult:
    """Everything one seed produced; the multi-label and detection arms are None when they were not run."""

    seed: int
    splits: Mapping[str, SyntheticSplit]
    models: Mapping[str, ModelResult]      # by name, in MODELS order
    repair: RepairResult
    attack: Mapping[str, AttackResult]
    multi_label: Mapping[str, MultiLabelResult] | None = None   # by name, in MODELS order
    detection: DetectionResult | None = None

    def to_dict(self) -> dict:
        """This result as the results file holds it."""
        out = {"seed": self.seed, "splits": {k: v.to_dict() for k, v in self.splits.items()},
               "models": {k: v.to_dict() for k, v in self.models.items()}, "repair": self.repair.to_dict(),
               "attack": {k: v.to_dict() for k, v in self.attack.items()}}
        if self.multi_label is not None:
            out["multi_label"] = {k: v.to_dict() for k, v in self.multi_label.items()}
        if self.detection is not None:
            out["detection"] = self.detection.to_dict()
        return out


@dataclass(frozen=True)
class BenchResults:
    """The whole benchmark: its configuration, one result per seed, the store and the seconds per stage."""

    config: BenchConfig
    seeds: tuple[SeedResult, ...]
    store: str
    timings: Mapping[str, float]

    def to_dict(self) -> dict:
        """The results file's JSON object."""
        return {"config": self.config.to_dict(), "seeds": [s.to_dict() for s in self.seeds], "store": self.store,
                "timings": dict(self.timings)}


def write_results(results: BenchResults, path: Path) -> None:
    """Write ``results`` as the results file at ``path`` (numpy scalars become JSON numbers)."""
    Path(path).write_text(json.dumps(results.to_dict(), default=_json_default), encoding="utf-8")


def _json_default(o):
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")


def load_results(path) -> dict:
    """The results file at ``path``, held to ``MAX_RESULTS_FILE_BYTES`` and ``MAX_NESTING_DEPTH`` before it is
    parsed; ``ValueError`` (``InputFileError``) in one line for a file too large, too deep or not JSON."""
    from objrel.constants import MAX_RESULTS_FILE_BYTES
    from objrel.data.bounded import parse_json

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no benchmark results at {p}; run `objrel bench shortcut --out {p.parent}` first")
    data = parse_json(p, f"benchmark results {p}", MAX_RESULTS_FILE_BYTES)
    if not isinstance(data, dict):
        raise ValueError(f"benchmark results {p} is a JSON {type(data).__name__}, expected an object")
    return data
