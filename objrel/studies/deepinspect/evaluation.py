"""Judging a ranking of class pairs against the ground truth (DeepInspect s4.3).

Precision ``|A n E| / |E|`` and recall ``|A n E| / |A|`` of the flagged pairs E against the
true pairs A; the cost-effectiveness curve (share of true pairs found after inspecting
the top k of P ranked pairs, k = 0..P) and the area under it, AUCEC, with the random
ranking's expected curve (y = x, AUCEC 0.5) and the optimal one (all true pairs first).
The weight-vector baseline ranks pairs by the distance between the classes' rows of the
model's last linear layer (DeepInspect s4.3, "MODE-inspired").
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from objrel.studies.deepinspect.constants import TOP_FRACTION
from objrel.studies.deepinspect.metrics import rank_order

# The stored curve has at most this many points (the AUCEC itself uses every point).
CURVE_POINTS = 201


def _check_pairs(flagged_or_order: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(flagged_or_order)
    t = np.asarray(truth, dtype=bool)
    if a.ndim != 1 or t.ndim != 1 or len(a) != len(t):
        raise ValueError(f"expected two (P,) arrays over the same pairs, got shapes {a.shape} and {t.shape}")
    return a, t


def precision_recall(flagged: np.ndarray, truth: np.ndarray) -> tuple[int, int, float | None, float | None]:
    """(tp, fp, precision, recall) of the flagged pairs; None where the ratio has no denominator."""
    f, t = _check_pairs(np.asarray(flagged, dtype=bool), truth)
    tp = int((f & t).sum())
    fp = int((f & ~t).sum())
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / int(t.sum()) if t.sum() else None
    return tp, fp, precision, recall


def cost_effectiveness(order: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cost-effectiveness curve of a ranking.

    order: ``(P,)`` pair indices, most suspicious first.  truth: ``(P,)`` bool.
    Returns ``(x, y)``, each ``(P + 1,)``: x = k / P pairs inspected, y = true pairs among
    the first k over all true pairs (0 everywhere when there is no true pair).
    """
    o, t = _check_pairs(order, truth)
    p = len(o)
    found = np.concatenate([[0], np.cumsum(t[o.astype(int)])]).astype(np.float64)
    n_true = t.sum()
    x = np.arange(p + 1, dtype=np.float64) / max(p, 1)
    y = found / n_true if n_true else np.zeros_like(found)
    return x, y


def optimal_curve(n_pairs: int, n_true: int) -> tuple[np.ndarray, np.ndarray]:
    """The best possible curve: every true pair ranked first, y = min(k, |A|) / |A|."""
    k = np.arange(n_pairs + 1, dtype=np.float64)
    x = k / max(n_pairs, 1)
    y = np.minimum(k, n_true) / n_true if n_true else np.zeros_like(k)
    return x, y


def aucec(x: np.ndarray, y: np.ndarray) -> float:
    """Area under a cost-effectiveness curve (trapezoids between its points), in [0, 1]."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 1 or len(x) < 2:
        raise ValueError(f"expected two (K,) arrays with K >= 2, got {x.shape} and {y.shape}")
    return float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2.0))


def thin_curve(x: np.ndarray, y: np.ndarray, points: int = CURVE_POINTS) -> tuple[list, list]:
    """At most ``points`` points of a curve (first and last kept), for storing and drawing."""
    if len(x) <= points:
        return [float(v) for v in x], [float(v) for v in y]
    idx = np.unique(np.linspace(0, len(x) - 1, points).round().astype(int))
    return [float(v) for v in x[idx]], [float(v) for v in y[idx]]


def top_k(n_pairs: int, fraction: float = TOP_FRACTION) -> int:
    """Pairs reported at the "top 1%" cut-off: at least one."""
    return max(1, int(n_pairs * fraction))


@dataclass(frozen=True)
class Evaluation:
    """One ranking judged against the ground truth of one error type.

    error:  'confusion' or 'bias'.  method: 'deepinspect', 'weights', 'random' (expected
    values of a random ranking) or 'optimal'.
    n_flagged / tp / fp / precision / recall: at the method's 1-std cut-off (for random,
    the expectation at DeepInspect's number of flags).  top_*: the same for the first
    ``top_k`` ranked pairs.  aucec: area under the cost-effectiveness curve;
    gain_vs_random: ``(aucec - 0.5) / 0.5``.  curve_x / curve_y: the curve, thinned.
    Ratios without a denominator are None.
    """

    error: str
    method: str
    n_pairs: int
    n_true: int
    n_flagged: int
    tp: float
    fp: float
    precision: float | None
    recall: float | None
    top_k: int
    top_tp: float
    top_precision: float | None
    top_recall: float | None
    aucec: float | None
    gain_vs_random: float | None
    curve_x: tuple = ()
    curve_y: tuple = ()

    def to_dict(self) -> dict:
        """The evaluation as a JSON-ready dict."""
        d = asdict(self)
        d["curve_x"], d["curve_y"] = list(self.curve_x), list(self.curve_y)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Evaluation":
        """An evaluation from a ``to_dict`` dict."""
        d = dict(d)
        d["curve_x"], d["curve_y"] = tuple(d.get("curve_x", ())), tuple(d.get("curve_y", ()))
        return cls(**d)


def _gain(area: float | None) -> float | None:
    return None if area is None else (area - 0.5) / 0.5


def evaluate_ranking(error: str, method: str, scores: np.ndarray, ascending: bool, flagged: np.ndarray,
                     truth: np.ndarray) -> Evaluation:
    """Judge one method's pair scores: ascending=True when low scores are suspicious (NAPVD)."""
    s, t = _check_pairs(np.asarray(scores, dtype=np.float64), truth)
    order = rank_order(s, ascending)
    tp, fp, precision, recall = precision_recall(flagged, t)
    k = top_k(len(s))
    top = np.zeros(len(s), dtype=bool)
    top[order[:k]] = True
    ttp, _, tprec, trec = precision_recall(top, t)
    x, y = cost_effectiveness(order, t)
    area = aucec(x, y) if t.any() else None
    cx, cy = thin_curve(x, y)
    return Evaluation(error, method, len(s), int(t.sum()), int(np.sum(flagged)), tp, fp, precision, recall,
                      k, ttp, tprec, trec, area, _gain(area), tuple(cx), tuple(cy))


def random_evaluation(error: str, n_pairs: int, n_true: int, n_flagged: int) -> Evaluation:
    """What a random ranking finds on average: tp = |E| |A| / P at every cut-off, AUCEC 0.5."""
    k = top_k(n_pairs)
    rate = n_true / n_pairs if n_pairs else 0.0
    tp = n_flagged * rate
    ttp = k * rate
    return Evaluation(error, "random", n_pairs, n_true, n_flagged, tp, n_flagged - tp,
                      rate if n_flagged else None, (tp / n_true) if n_true else None,
                      k, ttp, rate, (ttp / n_true) if n_true else None,
                      0.5 if n_true else None, 0.0 if n_true else None, (0.0, 1.0),
                      (0.0, 1.0) if n_true else (0.0, 0.0))


def optimal_evaluation(error: str, n_pairs: int, n_true: int) -> Evaluation:
    """The perfect ranking (every true pair first), flagging exactly the true pairs."""
    x, y = optimal_curve(n_pairs, n_true)
    area = aucec(x, y) if n_true else None
    k = top_k(n_pairs)
    ttp = min(k, n_true)
    cx, cy = thin_curve(x, y)
    return Evaluation(error, "optimal", n_pairs, n_true, n_true, n_true, 0, 1.0 if n_true else None,
                      1.0 if n_true else None, k, ttp, ttp / k, (ttp / n_true) if n_true else None,
                      area, _gain(area), tuple(cx), tuple(cy))


def last_linear(module, n_classes: int):
    """The model's last ``nn.Linear`` with ``n_classes`` outputs (the layer producing the logits), as
    ``(name, layer)``.  torch is imported here: reading a result needs none of it."""
    from torch import nn

    found = [(name, m) for name, m in module.named_modules()
             if isinstance(m, nn.Linear) and m.out_features == n_classes]
    if not found:
        shapes = [(name, m.out_features) for name, m in module.named_modules() if isinstance(m, nn.Linear)]
        raise ValueError(f"the weight-vector baseline needs a final nn.Linear with {n_classes} outputs; "
                         f"the model's linear layers are {shapes[-5:] or 'none'}")
    return found[-1]


def weight_distances(weights: np.ndarray) -> np.ndarray:
    """Euclidean distance between the per-class weight vectors: ``(C, F)`` rows -> ``(C, C)``."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 2:
        raise ValueError(f"expected a (classes, features) weight matrix, got shape {w.shape}")
    import torch

    t = torch.from_numpy(np.ascontiguousarray(w))
    d = torch.cdist(t, t, p=2.0, compute_mode="donot_use_mm_for_euclid_dist").numpy()
    np.fill_diagonal(d, 0.0)
    return (d + d.T) / 2.0
