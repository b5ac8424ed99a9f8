"""Metamorphic relations, votes and object-relevancy scores.

Exactly as seed 000 s4.4 (binary verdicts) and seed 002 s V-A (continuous scores):

* single-label certainty C = min_{j != l} |p_l - p_j|, which for the top-1 label is
  top-1 minus top-2 probability (s4.4.1);
* single-label MR-1 holds when the top-1 label changes, or stays and its certainty
  is *strictly* lower on the mutant; MR-2 holds when the top-1 label stays (s4.4.2);
* multi-label certainty of label l is |2p - 1|; MR-1 holds when the predicted label
  set changes, or stays and *every* label's certainty is strictly lower; MR-2 holds
  when the set stays;
* an inference is flagged for a relation when at least k of n mutations violate it
  (2 of 3 colours, 8 of 15 for the palette, s4.4 and s5.2.1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Sequence

import numpy as np

from objrel.constants import MULTI_LABEL_THRESHOLD, TOP_K

HOLDS = "holds"
VIOLATED = "violated"
NOT_APPLICABLE = "n/a"
# A mutation a lazy run never fed to the model: every vote group it belongs to was already decided
# (stored with the note ``VOTE_DECIDED``).  Never a "holds": counts neither as applicable nor as violated.
NOT_EVALUATED = "not evaluated"
VOTE_DECIDED = "vote decided"
VERDICTS = (HOLDS, VIOLATED, NOT_APPLICABLE, NOT_EVALUATED)
TASKS = ("single", "multi")


@dataclass(frozen=True)
class Prediction:
    """What the store keeps of one model output (ARCHITECTURE.md decision 2).

    task:       ``single`` (softmax) or ``multi`` (sigmoid, ``threshold``).
    top_labels: class indices of the ``top_k`` highest probabilities, descending.
    top_probs:  their probabilities.
    predicted:  the predicted labels: ``(top-1,)`` for single-label, every label with
                ``p >= threshold`` (sorted by index) for multi-label.
    probs:      ``{label: p}`` for every label a relation or score compares: the
                predicted labels, the labels of interest (ground truth, the source's
                labels) and the top-k.
    ranks:      ``{label: 1-based rank}`` for the labels of interest.
    """

    task: str
    top_labels: tuple[int, ...]
    top_probs: tuple[float, ...]
    predicted: tuple[int, ...]
    probs: dict = field(default_factory=dict)
    ranks: dict = field(default_factory=dict)
    threshold: float = MULTI_LABEL_THRESHOLD

    @classmethod
    def from_probs(cls, probs: np.ndarray, task: str = "single", interest: Iterable[int] = (),
                   threshold: float = MULTI_LABEL_THRESHOLD, top_k: int = TOP_K) -> "Prediction":
        """Summarise a probability vector ``(C,)`` of floats in [0, 1]."""
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        p = np.asarray(probs, dtype=np.float64).ravel()
        order = np.argsort(-p, kind="stable")
        top = order[: max(2, top_k)]
        predicted = (int(order[0]),) if task == "single" else tuple(int(i) for i in np.nonzero(p >= threshold)[0])
        interest = sorted({int(i) for i in interest if 0 <= int(i) < p.size})
        keep = set(interest) | set(predicted) | {int(i) for i in top}
        rank_of = np.empty(p.size, dtype=np.int64)
        rank_of[order] = np.arange(1, p.size + 1)
        return cls(
            task=task,
            top_labels=tuple(int(i) for i in top),
            top_probs=tuple(float(p[i]) for i in top),
            predicted=predicted,
            probs={int(i): float(p[i]) for i in sorted(keep)},
            ranks={int(i): int(rank_of[i]) for i in interest},
            threshold=float(threshold),
        )

    @property
    def top1(self) -> int:
        return self.top_labels[0]

    def prob(self, label: int) -> float:
        try:
            return self.probs[int(label)]
        except KeyError:
            raise KeyError(f"probability of label {label} was not kept; kept {sorted(self.probs)}") from None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["probs"] = {str(k): v for k, v in self.probs.items()}
        d["ranks"] = {str(k): v for k, v in self.ranks.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Prediction":
        return cls(
            task=d["task"], top_labels=tuple(d["top_labels"]), top_probs=tuple(d["top_probs"]),
            predicted=tuple(d["predicted"]), probs={int(k): float(v) for k, v in d["probs"].items()},
            ranks={int(k): int(v) for k, v in d.get("ranks", {}).items()},
            threshold=float(d.get("threshold", MULTI_LABEL_THRESHOLD)),
        )


# ---------------------------------------------------------------- certainty


def certainty_single(probs: Sequence[float], label: int) -> float:
    """min over j != label of |p_label - p_j| (seed 000 s4.4.1) on a full vector."""
    p = np.asarray(probs, dtype=np.float64)
    if p.size < 2:
        raise ValueError(f"certainty needs at least 2 classes, got {p.size}")
    others = np.delete(p, label)
    return float(np.min(np.abs(p[label] - others)))


def top_certainty(pred: Prediction) -> float:
    """Certainty of the top-1 label: top-1 minus top-2 probability."""
    return pred.top_probs[0] - pred.top_probs[1]


def certainty_multi(p: float) -> float:
    """|2p - 1|: certainty of one label of a multi-label output (seed 000 s4.4.1)."""
    return abs(2.0 * float(p) - 1.0)


# ---------------------------------------------------------------- relations


@dataclass(frozen=True)
class Check:
    """One relation check: source vs one mutant."""

    relation: str
    verdict: str
    source_certainty: float | None = None
    mutant_certainty: float | None = None
    label_changed: bool | None = None


def mr1_single(src: Prediction, mut: Prediction) -> Check:
    cs, cm = top_certainty(src), top_certainty(mut)
    if mut.top1 != src.top1:
        return Check("MR-1", HOLDS, cs, None, True)
    return Check("MR-1", HOLDS if cm < cs else VIOLATED, cs, cm, False)


def mr2_single(src: Prediction, mut: Prediction) -> Check:
    same = mut.top1 == src.top1
    return Check("MR-2", HOLDS if same else VIOLATED, top_certainty(src), top_certainty(mut) if same else None, not same)


def _multi_certainties(pred: Prediction, labels) -> list[float]:
    return [certainty_multi(pred.prob(l)) for l in labels]


def mr1_multi(src: Prediction, mut: Prediction) -> Check:
    if set(mut.predicted) != set(src.predicted):
        return Check("MR-1", HOLDS, None, None, True)
    cs = _multi_certainties(src, src.predicted)
    cm = _multi_certainties(mut, src.predicted)
    lower_everywhere = all(m < s for s, m in zip(cs, cm))
    return Check("MR-1", HOLDS if lower_everywhere else VIOLATED,
                 min(cs) if cs else None, min(cm) if cm else None, False)


def mr2_multi(src: Prediction, mut: Prediction) -> Check:
    same = set(mut.predicted) == set(src.predicted)
    return Check("MR-2", HOLDS if same else VIOLATED, None, None, not same)


_CHECKS = {("single", "MR-1"): mr1_single, ("single", "MR-2"): mr2_single,
           ("multi", "MR-1"): mr1_multi, ("multi", "MR-2"): mr2_multi}


def check(relation: str, src: Prediction, mut: Prediction) -> Check:
    """Dispatch on the task of ``src`` and the relation name (``MR-1`` or ``MR-2``)."""
    try:
        fn = _CHECKS[(src.task, relation)]
    except KeyError:
        raise ValueError(f"no relation {relation!r} for task {src.task!r}; expected MR-1 or MR-2") from None
    return fn(src, mut)


# ---------------------------------------------------------------- votes


@dataclass(frozen=True)
class Vote:
    """k-of-n vote: ``flagged`` when ``violations >= k``; ``n/a`` verdicts do not count."""

    group: str
    relation: str
    k: int
    n: int
    applicable: int
    violations: int

    @property
    def flagged(self) -> bool:
        return self.violations >= self.k


def vote(group: str, relation: str, verdicts: Sequence[str], k: int) -> Vote:
    bad = [v for v in verdicts if v not in VERDICTS]
    if bad:
        raise ValueError(f"unknown verdicts {bad}; expected {VERDICTS}")
    if k < 1:
        raise ValueError(f"vote threshold k must be >= 1, got {k}")
    applicable = sum(v not in (NOT_APPLICABLE, NOT_EVALUATED) for v in verdicts)
    return Vote(group, relation, k, len(verdicts), applicable, sum(v == VIOLATED for v in verdicts))


# ---------------------------------------------------------------- relevancy (seed 002 s V-A)


def distance_preserving(p: float, rank: int, p2: float, rank2: int) -> float:
    """[1 - max(0, p - p')/p] * [1 - max(0, 1/j - 1/j')] for an object-preserving mutant.

    ``p, rank`` are the probability and 1-based rank of the target label on the
    source, ``p2, rank2`` on the mutant.  1 when nothing dropped (the object alone
    keeps the prediction), towards 0 as probability and rank fall.  (The paper's
    prose says the ideal is 0, but its formula gives 1; we implement the formula,
    so higher S means more object-relevant for both halves.)
    """
    if p <= 0:
        return 0.0
    return (1.0 - max(0.0, p - p2) / p) * (1.0 - max(0.0, 1.0 / rank - 1.0 / rank2))


def distance_removing(p: float, rank: int, p2: float, rank2: int) -> float:
    """[max(0, p - p')/p] * [max(0, 1/j - 1/j')] for an object-removing mutant: 1 when removal
    took the label's probability to 0 and its rank to the bottom."""
    if p <= 0:
        return 0.0
    return (max(0.0, p - p2) / p) * max(0.0, 1.0 / rank - 1.0 / rank2)


# Seed 002 s V-A, Table I: the six mutation functions (three object-preserving, three object-removing)
# and the number of mutation operations the paper gives each (12 + 12 + 1 = 25 preserving, 9 + 2 + 2 = 13
# removing, 38 in all), keyed by the objrel operator that implements the function.
SEED002_PRESERVING = ("move_to_background", "blend_to_background", "gray_background_blur")  # MvObjToImg, BldObjToImg, PsvObj
SEED002_REMOVING = ("fill_object_blur", "inpaint", "margin_fill")  # RmvObjByRGB, RmvObjByTool, RmvObjByMM
SEED002_PAPER_OPERATIONS = {"move_to_background": 12, "blend_to_background": 12, "gray_background_blur": 1,
                            "fill_object_blur": 9, "inpaint": 2, "margin_fill": 2}
SEED002_FUNCTION_NAMES = {"move_to_background": "MvObjToImg", "blend_to_background": "BldObjToImg",
                          "gray_background_blur": "PsvObj", "fill_object_blur": "RmvObjByRGB",
                          "inpaint": "RmvObjByTool", "margin_fill": "RmvObjByMM"}
# Names of the two scoring definitions a Relevancy can carry.
SCORING_SEED002 = "seed002"        # seed 002 s V-A as written: fixed H_n (applicable or not), N functions per type
SCORING_APPLICABLE = "applicable"  # objrel's variant: H_n and N count only operations that gave a distance


@dataclass(frozen=True)
class Relevancy:
    """S_p, S_r and S of one inference, with the definition they were computed by (``scoring``) and the
    mutation operations (keys) they were computed over (``operations``; empty when not recorded)."""

    s_p: float | None
    s_r: float | None
    scoring: str = SCORING_APPLICABLE
    operations: tuple[str, ...] = ()

    @property
    def s(self) -> float | None:
        """S = (S_p + S_r) / 2; None unless both halves exist."""
        if self.s_p is None or self.s_r is None:
            return None
        return (self.s_p + self.s_r) / 2.0


def weighted_score(distances: dict[str, list[float]]) -> float | None:
    """sum over functions n and operations h of D / (H_n * N) (seed 002 s V-A).

    ``distances`` maps each mutation function (operator) to the distances of its
    operations; functions with no applicable operation are left out of N.
    """
    used = {fn: ds for fn, ds in distances.items() if ds}
    if not used:
        return None
    n = len(used)
    return float(sum(sum(ds) / (len(ds) * n) for ds in used.values()))


def relevancy(preserving: dict[str, list[float]], removing: dict[str, list[float]]) -> Relevancy:
    return Relevancy(weighted_score(preserving), weighted_score(removing))


def seed002_weighted_score(distances: dict[str, Sequence[float]], operations: dict[str, int]) -> float:
    """S_p or S_r exactly as seed 002 s V-A writes it: sum_n sum_h D(m(i), m(i'_nh)) / (H_n N).

    ``operations`` maps each of the N mutation functions of this type to H_n, the number of its mutation
    operations *applicable or not*; ``distances`` maps a function to the distances its operations gave.
    An operation that was not applicable (RmvObjByMM without a mask) or gave no distance adds 0: the
    weights are not renormalised, so the weights of all operations sum to 1 (a weighted average over
    the N functions, each function's operations sharing 1/N equally).
    """
    if not operations or any(h < 1 for h in operations.values()):
        raise ValueError(f"every mutation function needs H_n >= 1 operations; got {operations}")
    extra = sorted(set(distances) - set(operations))
    if extra:
        raise ValueError(f"distances of functions outside the scoring definition: {extra}")
    n = len(operations)
    total = 0.0
    for fn, h in operations.items():
        ds = list(distances.get(fn, ()))
        if len(ds) > h:
            raise ValueError(f"{fn}: {len(ds)} distances but only H_n = {h} operations")
        total += sum(ds) / (h * n)
    return float(total)


def seed002_relevancy(preserving: dict[str, Sequence[float]], removing: dict[str, Sequence[float]],
                      preserving_operations: dict[str, int], removing_operations: dict[str, int],
                      keys: Sequence[str] = ()) -> Relevancy:
    """S_p, S_r (``seed002_weighted_score``) and S = (S_p + S_r) / 2 of seed 002 s V-A; ``keys`` records
    the mutation operations the score was computed over.  Distances of other functions are ignored."""
    p = {fn: ds for fn, ds in preserving.items() if fn in preserving_operations}
    r = {fn: ds for fn, ds in removing.items() if fn in removing_operations}
    return Relevancy(seed002_weighted_score(p, preserving_operations), seed002_weighted_score(r, removing_operations),
                     SCORING_SEED002, tuple(keys))


def highest_ranked_label(source: Prediction, labels: Iterable[int]) -> int | None:
    """The ground-truth label the model ranks highest on ``source`` (seed 002 s V-A.1: "the object whose
    label has the highest rank"); ties go to the smaller class index; None when no label has a rank."""
    ranked = [(source.ranks[int(l)], int(l)) for l in labels if int(l) in source.ranks]
    return min(ranked)[1] if ranked else None


def inference_distance(relation: str, source: Prediction, mutant: Prediction, labels: Iterable[int],
                       highest_ranked: bool = False) -> float | None:
    """D of one mutant (``distance_preserving`` for MR-2, ``distance_removing`` for MR-1).

    ``highest_ranked`` (runs that test every inference, ``--all``): D of the ground-truth label the source
    ranks highest, as seed 002 s V-A.1 picks the object.  Otherwise the mean of D over ``labels`` (the
    labels of interest of a correct inference).  None when no label has a rank on both predictions.
    """
    if relation not in ("MR-1", "MR-2"):
        raise ValueError(f"relation must be MR-1 or MR-2, got {relation!r}")
    fn = distance_preserving if relation == "MR-2" else distance_removing
    labels = [int(l) for l in labels]
    if highest_ranked:
        best = highest_ranked_label(source, labels)
        labels = [] if best is None else [best]
    ds = [fn(source.probs[l], source.ranks[l], mutant.probs[l], mutant.ranks[l])
          for l in labels if l in source.ranks and l in mutant.ranks]
    return float(np.mean(ds)) if ds else None
