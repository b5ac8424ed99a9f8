"""What an inspection produces, as frozen dataclasses that round-trip through JSON (no pickle).

Matrices are ``(m, m)`` float64 numpy arrays over the *analysed* classes (those the model
predicted at least ``MIN_CLASS_IMAGES`` times), in model-output order; ``class_index``
maps each row back to the model's output index.  Pair tables are built from them on
demand (``confusion_table``, ``bias_table``), so the file stays one matrix per score.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from objrel.studies.deepinspect.evaluation import Evaluation
from objrel.studies.deepinspect.metrics import bias, pair_indices, pair_values, rank_order, ranks

FORMAT_VERSION = 1


def _matrix(value) -> np.ndarray:
    return np.asarray(value, dtype=np.float64)


def _json_float(x):
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def _matrix_to_list(mat: np.ndarray) -> list:
    return np.asarray(mat, dtype=np.float64).tolist()     # floats round-trip exactly through JSON


@dataclass(frozen=True, eq=False)
class GroundTruth:
    """The model's true errors on labelled images (DeepInspect s4.2).

    kind: 'type1' (single-label) or 'type2' (multi-label).  n_images: images with a truth.
    error: ``(m, m)`` type1conf / type2conf.  avg_cd: ``(m, m)`` average confusion disparity.
    confusion_cutoff / bias_cutoff: mean + 1 std of the two over all pairs; pairs above are
    the true confusion / bias errors.
    """

    kind: str
    n_images: int
    error: np.ndarray
    avg_cd: np.ndarray
    confusion_cutoff: float
    bias_cutoff: float

    def to_dict(self) -> dict:
        """The ground truth as a JSON-ready dict."""
        return {"kind": self.kind, "n_images": self.n_images, "error": _matrix_to_list(self.error),
                "avg_cd": _matrix_to_list(self.avg_cd), "confusion_cutoff": self.confusion_cutoff,
                "bias_cutoff": self.bias_cutoff}

    @classmethod
    def from_dict(cls, d: dict) -> "GroundTruth":
        """A ground truth from a ``to_dict`` dict."""
        return cls(d["kind"], int(d["n_images"]), _matrix(d["error"]), _matrix(d["avg_cd"]),
                   float(d["confusion_cutoff"]), float(d["bias_cutoff"]))

    def confused(self) -> np.ndarray:
        """Per class pair: True when its error exceeds the confusion cutoff."""
        return pair_values(self.error) > self.confusion_cutoff

    def biased(self) -> np.ndarray:
        """Per class pair: True when its average confusion difference exceeds the bias cutoff."""
        return pair_values(self.avg_cd) > self.bias_cutoff


@dataclass(frozen=True, eq=False)
class WeightBaseline:
    """DeepInspect s4.3's MODE-inspired baseline: distances between the last linear layer's class rows.

    layer: the layer's name.  distances / avg_bias: ``(m, m)``; cut-offs as for NAPVD.
    """

    layer: str
    distances: np.ndarray
    avg_bias: np.ndarray
    confusion_cutoff: float
    bias_cutoff: float

    def to_dict(self) -> dict:
        """The weight baseline as a JSON-ready dict."""
        return {"layer": self.layer, "distances": _matrix_to_list(self.distances),
                "avg_bias": _matrix_to_list(self.avg_bias), "confusion_cutoff": self.confusion_cutoff,
                "bias_cutoff": self.bias_cutoff}

    @classmethod
    def from_dict(cls, d: dict) -> "WeightBaseline":
        """A weight baseline from a ``to_dict`` dict."""
        return cls(d["layer"], _matrix(d["distances"]), _matrix(d["avg_bias"]), float(d["confusion_cutoff"]),
                   float(d["bias_cutoff"]))


@dataclass(frozen=True, eq=False)
class InspectResult:
    """One DeepInspect analysis of one model on one set of images.

    model:        the adapter's ``describe()``.
    source:       where the images came from: ``{"kind": "dataset", "root": ..., ...}``,
                  ``{"kind": "planted", "spec": {...}}`` or ``{"kind": "images"}``.
    task:         'single' or 'multi'; activation_threshold: Th.
    n_images:     images streamed through the model.
    layers:       ``((name, neurons), ...)`` hooked, in order.
    class_index / class_names / class_counts: the m analysed classes (model index, name,
                  images predicted as it).
    napvd:        ``(m, m)`` NAPVD; confusion_cutoff: mean - 1 std over pairs (flag below).
    avg_bias:     ``(m, m)``; bias_cutoff: mean + 1 std over pairs (flag above);
                  far_cutoff: the far-triplet threshold used.
    ground_truth: from labelled images, or None.  weights: the baseline, or None.
    evaluations:  precision / recall / AUCEC of every method against the ground truth.
    examples:     model class index -> image references (dataset-relative paths, or
                  ``'test:12'`` for the planted benchmark).
    planted:      ``{"confusion": [a, b], "bias": [a, b]}`` class names, for the benchmark.
    notes:        what was skipped or left out, and why.
    """

    model: dict
    source: dict
    task: str
    activation_threshold: float
    n_images: int
    layers: tuple
    class_index: tuple
    class_names: tuple
    class_counts: tuple
    napvd: np.ndarray
    confusion_cutoff: float
    avg_bias: np.ndarray
    bias_cutoff: float
    far_cutoff: float
    ground_truth: GroundTruth | None = None
    weights: WeightBaseline | None = None
    evaluations: tuple = ()
    examples: dict = field(default_factory=dict)
    planted: dict | None = None
    notes: tuple = ()
    seconds: float = 0.0

    @property
    def n_classes(self) -> int:
        """How many classes the result covers."""
        return len(self.class_index)

    @property
    def n_neurons(self) -> int:
        """The neurons over all inspected layers."""
        return int(sum(n for _, n in self.layers))

    def position(self, name_or_index) -> int:
        """Row of a class given its name or its model index."""
        if isinstance(name_or_index, str):
            if name_or_index not in self.class_names:
                raise ValueError(f"class {name_or_index!r} is not among the analysed classes "
                                 f"{list(self.class_names)[:10]}")
            return self.class_names.index(name_or_index)
        if int(name_or_index) not in self.class_index:
            raise ValueError(f"model class {name_or_index} is not among the analysed classes")
        return self.class_index.index(int(name_or_index))

    def evaluation(self, error: str, method: str) -> Evaluation | None:
        """The evaluation of ``method`` against ``error``, or None."""
        for e in self.evaluations:
            if e.error == error and e.method == method:
                return e
        return None

    def to_dict(self) -> dict:
        """The result as a JSON-ready dict with its format name and version."""
        return {
            "format": "objrel-deepinspect", "version": FORMAT_VERSION,
            "model": self.model, "source": self.source, "task": self.task,
            "activation_threshold": self.activation_threshold, "n_images": self.n_images,
            "layers": [[n, int(s)] for n, s in self.layers],
            "class_index": [int(i) for i in self.class_index], "class_names": list(self.class_names),
            "class_counts": [int(c) for c in self.class_counts],
            "napvd": _matrix_to_list(self.napvd), "confusion_cutoff": self.confusion_cutoff,
            "avg_bias": _matrix_to_list(self.avg_bias), "bias_cutoff": self.bias_cutoff,
            "far_cutoff": self.far_cutoff,
            "ground_truth": self.ground_truth.to_dict() if self.ground_truth else None,
            "weights": self.weights.to_dict() if self.weights else None,
            "evaluations": [{k: (_json_float(v) if isinstance(v, float) else v) for k, v in e.to_dict().items()}
                            for e in self.evaluations],
            "examples": {str(k): list(v) for k, v in self.examples.items()},
            "planted": self.planted, "notes": list(self.notes), "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "InspectResult":
        """A result from a ``to_dict`` dict; ValueError for another format or a newer version."""
        if not isinstance(d, dict) or d.get("format") != "objrel-deepinspect":
            got = d.get("format") if isinstance(d, dict) else type(d).__name__
            raise ValueError(f"not an objrel inspect result: expected format 'objrel-deepinspect', got {got!r}")
        if int(d.get("version", 0)) > FORMAT_VERSION:
            raise ValueError(f"inspect result version {d.get('version')} is newer than this objrel "
                             f"(reads up to {FORMAT_VERSION})")
        return _checked(cls(
            model=dict(d["model"]), source=dict(d["source"]), task=d["task"],
            activation_threshold=float(d["activation_threshold"]), n_images=int(d["n_images"]),
            layers=tuple((n, int(s)) for n, s in d["layers"]),
            class_index=tuple(int(i) for i in d["class_index"]), class_names=tuple(d["class_names"]),
            class_counts=tuple(int(c) for c in d["class_counts"]),
            napvd=_matrix(d["napvd"]), confusion_cutoff=float(d["confusion_cutoff"]),
            avg_bias=_matrix(d["avg_bias"]), bias_cutoff=float(d["bias_cutoff"]), far_cutoff=float(d["far_cutoff"]),
            ground_truth=GroundTruth.from_dict(d["ground_truth"]) if d.get("ground_truth") else None,
            weights=WeightBaseline.from_dict(d["weights"]) if d.get("weights") else None,
            evaluations=tuple(Evaluation.from_dict(e) for e in d.get("evaluations", ())),
            examples={int(k): tuple(v) for k, v in d.get("examples", {}).items()},
            planted=d.get("planted"), notes=tuple(d.get("notes", ())), seconds=float(d.get("seconds", 0.0)),
        ))

    def save(self, path) -> Path:
        """Write the result as JSON to ``path`` (making its folder) and return the path."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(self.to_dict(), allow_nan=False), encoding="utf-8")
        return p

    @classmethod
    def load(cls, path_or_text) -> "InspectResult":
        """From a file path, or from the JSON text itself (an upload).

        The file is held to ``MAX_RESULTS_FILE_BYTES`` and ``MAX_NESTING_DEPTH`` before it is parsed; a file
        that is too large, too deep, not JSON or not an inspect result raises ``ValueError`` in one line.
        """
        from objrel.constants import MAX_RESULTS_FILE_BYTES
        from objrel.data.bounded import parse_json

        if isinstance(path_or_text, (bytes, bytearray)):
            source, what = bytes(path_or_text), "the inspect result"
        elif isinstance(path_or_text, str) and path_or_text.lstrip().startswith("{"):
            source, what = path_or_text.encode("utf-8"), "the inspect result"
        else:
            p = Path(path_or_text)
            if not p.is_file():
                raise ValueError(f"inspect result {p} does not exist; expected a JSON file written by "
                                 f"`objrel inspect --out`")
            source, what = p, f"inspect result {p}"
        data = parse_json(source, what, MAX_RESULTS_FILE_BYTES)
        if not isinstance(data, dict):
            raise ValueError(f"{what} is a JSON {type(data).__name__}, expected an object written by "
                             f"`objrel inspect --out`")
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
            detail = f"no field {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}"
            raise ValueError(f"{what} is not an inspect result written by `objrel inspect --out` "
                             f"({detail})".splitlines()[0]) from exc


# ---------------------------------------------------------------- tables


def _pairs(result: InspectResult):
    ia, ib = pair_indices(result.n_classes)
    names = np.asarray(result.class_names, dtype=object)
    return ia, ib, names[ia], names[ib]


def confusion_table(result: InspectResult) -> pd.DataFrame:
    """Every class pair, most confused first (lowest NAPVD).

    Columns: rank, a, b, napvd, flagged (NAPVD < cut-off); with a ground truth the
    type1/type2 confusion and whether it is a true confusion error; with the weight
    baseline its distance and rank.
    """
    ia, ib, na, nb = _pairs(result)
    values = pair_values(result.napvd)
    df = pd.DataFrame({"rank": ranks(values, ascending=True), "a": na, "b": nb, "napvd": values,
                       "flagged": values < result.confusion_cutoff})
    if result.ground_truth is not None:
        gt = result.ground_truth
        df[f"{gt.kind}_confusion"] = pair_values(gt.error)
        df["true_error"] = gt.confused()
    if result.weights is not None:
        w = pair_values(result.weights.distances)
        df["weight_distance"] = w
        df["weight_rank"] = ranks(w, ascending=True)
    return df.sort_values("rank").reset_index(drop=True)


def most_biasing_third(result: InspectResult, chunk: int = 4096) -> np.ndarray:
    """For every pair, the name of the third class c with the largest kept bias(a, b, c) ('' if none).

    Works through the pairs ``chunk`` at a time, so memory stays ``chunk x m`` floats.
    """
    d = result.napvd
    ia, ib = pair_indices(result.n_classes)
    names = np.asarray(result.class_names, dtype=object)
    out = np.empty(len(ia), dtype=object)
    for start in range(0, len(ia), chunk):
        a, b = ia[start:start + chunk], ib[start:start + chunk]
        rows = np.arange(len(a))
        terms = bias(d[a], d[b])                                    # (pairs, c): d(a, c) against d(b, c)
        keep = ~((d[a] > result.far_cutoff) & (d[b] > result.far_cutoff))
        keep[rows, a] = False
        keep[rows, b] = False
        terms = np.where(keep, terms, -1.0)
        best = terms.argmax(axis=1)
        out[start:start + chunk] = np.where(terms[rows, best] >= 0, names[best], "")
    return out


def bias_table(result: InspectResult) -> pd.DataFrame:
    """Every class pair, most biased first (highest avg_bias).

    Columns: rank, a, b, avg_bias, flagged (above the cut-off), third (the class with the
    largest bias(a, b, c)); with a ground truth avg_cd and whether it is a true bias error;
    with the weight baseline its avg_bias and rank.
    """
    ia, ib, na, nb = _pairs(result)
    values = pair_values(result.avg_bias)
    df = pd.DataFrame({"rank": ranks(values, ascending=False), "a": na, "b": nb, "avg_bias": values,
                       "flagged": values > result.bias_cutoff, "third": most_biasing_third(result)})
    if result.ground_truth is not None:
        df["avg_cd"] = pair_values(result.ground_truth.avg_cd)
        df["true_error"] = result.ground_truth.biased()
    if result.weights is not None:
        w = pair_values(result.weights.avg_bias)
        df["weight_avg_bias"] = w
        df["weight_rank"] = ranks(w, ascending=False)
    return df.sort_values("rank").reset_index(drop=True)


def evaluation_table(result: InspectResult) -> pd.DataFrame:
    """One row per (error, method): flags, tp, precision, recall, top-1% and AUCEC (DeepInspect Tables 3-4)."""
    rows = [{k: v for k, v in e.to_dict().items() if k not in ("curve_x", "curve_y")} for e in result.evaluations]
    return pd.DataFrame(rows)


def pair_rank(result: InspectResult, a: str, b: str, score: str = "napvd") -> int:
    """1-based rank of the pair (a, b) by ``score``: 'napvd' (ascending), 'avg_bias', 'error' or 'avg_cd'
    (descending; the last two need a ground truth)."""
    i, j = sorted((result.position(a), result.position(b)))
    if i == j:
        raise ValueError(f"a pair needs two different classes, got {a!r} twice")
    mats = {"napvd": (result.napvd, True), "avg_bias": (result.avg_bias, False)}
    if result.ground_truth is not None:
        mats["error"] = (result.ground_truth.error, False)
        mats["avg_cd"] = (result.ground_truth.avg_cd, False)
    if score not in mats:
        raise ValueError(f"score must be one of {sorted(mats)}, got {score!r}")
    mat, asc = mats[score]
    ia, ib = pair_indices(result.n_classes)
    r = ranks(pair_values(mat), ascending=asc)
    return int(r[np.flatnonzero((ia == i) & (ib == j))[0]])


def heatmap_classes(result: InspectResult, limit: int = 40) -> list[str]:
    """At most ``limit`` class names for a readable NAPVD heatmap: the classes of the most
    confused pairs first (all classes when there are few), in model order."""
    if limit < 2:
        raise ValueError(f"a heatmap needs at least 2 classes, got limit={limit}")
    if result.n_classes <= limit:
        return list(result.class_names)
    ia, ib = pair_indices(result.n_classes)
    chosen: dict[int, None] = {}
    for p in rank_order(pair_values(result.napvd), ascending=True):
        chosen.setdefault(int(ia[p]))
        if len(chosen) < limit:
            chosen.setdefault(int(ib[p]))
        if len(chosen) >= limit:
            break
    return [result.class_names[i] for i in sorted(chosen)]


def napvd_frame(result: InspectResult, classes=None) -> pd.DataFrame:
    """The NAPVD matrix as a labelled ``(k, k)`` DataFrame over ``classes`` (default all)."""
    names = list(classes) if classes is not None else list(result.class_names)
    idx = [result.position(n) for n in names]
    return pd.DataFrame(result.napvd[np.ix_(idx, idx)], index=names, columns=names)


def aucec_curves(result: InspectResult, error: str) -> pd.DataFrame:
    """Long-form cost-effectiveness curves of one error type: columns method, inspected, found."""
    if error not in ("confusion", "bias"):
        raise ValueError(f"error must be 'confusion' or 'bias', got {error!r}")
    rows = []
    for e in result.evaluations:
        if e.error == error:
            rows += [{"method": e.method, "inspected": x, "found": y} for x, y in zip(e.curve_x, e.curve_y)]
    return pd.DataFrame(rows, columns=["method", "inspected", "found"])


def _checked(result: InspectResult) -> InspectResult:
    """``result`` when its parts agree on the number of classes m (names, indices, counts, every (m, m)
    matrix); ValueError naming the first part that does not, so a hand-made file fails here in one line
    instead of deep inside the ranking."""
    m = len(result.class_index)
    parts = {"class_names": len(result.class_names), "class_counts": len(result.class_counts)}
    for name, n in parts.items():
        if n != m:
            raise ValueError(f"the inspect result lists {m} class indices but {n} {name}; expected as many")
    matrices = {"napvd": result.napvd, "avg_bias": result.avg_bias}
    if result.ground_truth is not None:
        matrices |= {"ground_truth.error": result.ground_truth.error, "ground_truth.avg_cd": result.ground_truth.avg_cd}
    if result.weights is not None:
        matrices |= {"weights.distances": result.weights.distances, "weights.avg_bias": result.weights.avg_bias}
    for name, matrix in matrices.items():
        if matrix.shape != (m, m):
            raise ValueError(f"the inspect result's {name} is {'x'.join(map(str, matrix.shape))}; expected {m}x{m} "
                             f"for its {m} classes")
    return result
