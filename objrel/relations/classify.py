"""Metamorphic relations, votes and object-relevancy scores.

Exactly as EMSE21 s4.4 (binary verdicts) and ORMR s V-A (continuous scores):

* single-label certainty C = min_{j != l} |p_l - p_j|, which for the top-1 label is
  top-1 minus top-2 probability (s4.4.1);
* single-label MR-1 holds when the top-1 label changes, or stays and its certainty
  is *strictly* lower on the mutant; MR-2 holds when the top-1 label stays (s4.4.2);
* multi-label certainty of label l is |2p - 1|; MR-1 holds when the predicted label
  set changes, or stays and *every* label's certainty is strictly lower; MR-2 holds
  when the set stays;
* an inference is flagged for a relation when at least k of n mutations violate it
  (2 of 3 colours, 8 of 15 for the palette, s4.4 and s5.2.1).

The paper's comparisons are strict; objrel decides each on a margin with ``TIE_TOLERANCE`` (float noise of
the runtimes, ``objrel.relations.common``), so a mutant equal to its source gets the same verdict on every
runtime and batch size:

* the label *changes* only when the source's top-1 label ``l`` ends more than the tolerance below the
  mutant's best other label (margin ``p'_l - max_{j != l} p'_j < -tol``), not when the argmax differs;
* MR-1's certainty *falls* only when ``C - C' > tol`` (every label's, multi-label);
* a multi-label set *changes* only through a label that crosses the threshold and whose probability moved by
  more than the tolerance (``|p' - p| > tol``).

A margin within the tolerance is a tie, decided as no change (MR-1 violated, MR-2 holds: the strict
comparison's answer for an exact tie), and the check says so (``Check.tie``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from objrel.constants import CLASSIFIER_TASKS, MULTI_LABEL_THRESHOLD, TOP_K
from objrel.relations.common import HOLDS, VIOLATED, beyond, tied



# Below this many classes ``_top_and_ranks`` sorts the whole vector; above, it sorts only the top.
FULL_SORT_CLASSES = 64


def _top_and_ranks(p: np.ndarray, k: int, interest: list[int]) -> tuple[np.ndarray, dict[int, int]]:
    """The ``k`` labels of highest probability, descending, ties in label order (a stable sort of ``-p``), and
    the 1-based rank in that order of each label of ``interest``.  A stable sort of all ``C`` classes per
    output cost 40 us of the engine's single-threaded checks; for large ``C`` the top is found by partition
    and the ranks by counting: ``rank(i) = 1 + #{j: p_j > p_i} + #{j < i: p_j = p_i}``.  The same answer,
    NaN (sorted last) included, which takes the full sort."""
    if p.size <= FULL_SORT_CLASSES or np.isnan(p).any():
        order = np.argsort(-p, kind="stable")
        rank_of = np.empty(p.size, dtype=np.int64)
        rank_of[order] = np.arange(1, p.size + 1)
        return order[:k], {i: int(rank_of[i]) for i in interest}
    kth = np.partition(p, p.size - k)[p.size - k]       # the k-th highest probability
    candidates = np.flatnonzero(p >= kth)                # label order; every label of the top, ties included
    top = candidates[np.argsort(-p[candidates], kind="stable")][:k]
    ranks = {i: 1 + int(np.count_nonzero(p > p[i])) + int(np.count_nonzero(p[:i] == p[i])) for i in interest}
    return top, ranks


@dataclass(frozen=True)
class Prediction:
    """What the store keeps of one model output: what each relation needs, so a vote re-evaluates without the model.

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
        if task not in CLASSIFIER_TASKS:
            raise ValueError(f"task must be one of {CLASSIFIER_TASKS}, got {task!r}")
        p = np.asarray(probs, dtype=np.float64).ravel()
        interest = sorted({int(i) for i in interest if 0 <= int(i) < p.size})
        top, ranks = _top_and_ranks(p, max(2, top_k), interest)
        predicted = (int(top[0]),) if task == "single" else tuple(int(i) for i in np.nonzero(p >= threshold)[0])
        return cls._summary(task, p, top, predicted, interest, ranks, threshold)

    @classmethod
    def _summary(cls, task: str, p: np.ndarray, top, predicted: tuple[int, ...], interest: list[int],
                 ranks: dict[int, int], threshold: float) -> "Prediction":
        """The prediction of the vector ``p`` (``(C,)`` float64) from its top labels, predicted labels, labels of
        interest and their ranks, keeping the probability of every label a relation or score compares."""
        top = tuple(int(i) for i in top)
        keep = set(interest) | set(predicted) | set(top)
        return cls(task=task, top_labels=top, top_probs=tuple(float(p[i]) for i in top), predicted=predicted,
                   probs={i: float(p[i]) for i in sorted(keep)}, ranks=ranks, threshold=float(threshold))

    @classmethod
    def from_batch(cls, probs: np.ndarray, task: str, interests: Sequence[Iterable[int]],
                   threshold: float = MULTI_LABEL_THRESHOLD, top_k: int = TOP_K) -> list["Prediction"]:
        """``from_probs`` of each row of ``probs`` ``(N, C)`` with that row's ``interests[i]``: the same
        predictions, the top labels found and the ranks counted for the whole batch in a few numpy calls, where
        ``from_probs`` makes about ten a row.  A batch with a NaN, or with few classes, goes row by row."""
        if task not in CLASSIFIER_TASKS:
            raise ValueError(f"task must be one of {CLASSIFIER_TASKS}, got {task!r}")
        p = np.asarray(probs, dtype=np.float64)
        if p.ndim != 2 or p.shape[0] != len(interests):
            raise ValueError(f"from_batch needs (N, C) probabilities and N sets of labels of interest, got "
                             f"{p.shape} and {len(interests)}")
        n, classes = p.shape
        k = max(2, top_k)
        if n == 0 or classes <= max(FULL_SORT_CLASSES, k) or np.isnan(p).any():
            return [cls.from_probs(row, task, interest=i, threshold=threshold, top_k=top_k)
                    for row, i in zip(p, interests)]
        kth = np.partition(p, classes - k, axis=1)[:, classes - k]      # each row's k-th highest probability
        rows, labels = np.nonzero(p >= kth[:, None])                     # by row, then label: ties included
        values = p[rows, labels]
        order = np.lexsort((labels, -values, rows))                     # by row, then descending, then label
        rows, labels = rows[order], labels[order]
        starts = np.searchsorted(rows, np.arange(n))
        wanted = [sorted({int(i) for i in interest if 0 <= int(i) < classes}) for interest in interests]
        at_row = np.fromiter((r for r, w in enumerate(wanted) for _ in w), dtype=np.intp)
        at_label = np.fromiter((i for w in wanted for i in w), dtype=np.intp)
        ranks_of = np.zeros(0, dtype=np.int64)
        if at_row.size:  # rank(i) = 1 + #{j: p_j > p_i} + #{j < i: p_j = p_i}, as _top_and_ranks counts
            mine = p[at_row, at_label][:, None]
            rowwise = p[at_row]
            before = np.arange(classes)[None, :] < at_label[:, None]
            ranks_of = (1 + np.count_nonzero(rowwise > mine, axis=1)
                        + np.count_nonzero((rowwise == mine) & before, axis=1))
        multi = None if task == "single" else p >= threshold
        out, used = [], 0
        for r in range(n):
            top = labels[starts[r] : starts[r] + k].tolist()
            interest = wanted[r]
            ranks = dict(zip(interest, ranks_of[used : used + len(interest)].tolist()))
            used += len(interest)
            predicted = (top[0],) if multi is None else tuple(np.flatnonzero(multi[r]).tolist())
            out.append(cls._summary(task, p[r], top, predicted, interest, ranks, threshold))
        return out

    @property
    def top1(self) -> int:
        """The top-ranked label."""
        return self.top_labels[0]

    def prob(self, label: int) -> float:
        """The kept probability of ``label``; KeyError naming the kept labels when it was not kept."""
        try:
            return self.probs[int(label)]
        except KeyError:
            raise KeyError(f"probability of label {label} was not kept; kept {sorted(self.probs)}") from None

    def to_dict(self) -> dict:
        """The prediction as a JSON-ready dict (label keys as text)."""
        # field by field, not ``dataclasses.asdict`` (which deep-copies every value): the same dict, made once
        # per stored prediction, a few times faster
        return {"task": self.task, "top_labels": self.top_labels, "top_probs": self.top_probs,
                "predicted": self.predicted, "probs": {str(k): v for k, v in self.probs.items()},
                "ranks": {str(k): v for k, v in self.ranks.items()}, "threshold": self.threshold}

    @classmethod
    def from_dict(cls, d: dict) -> "Prediction":
        """A prediction from a ``to_dict`` dict."""
        return cls(
            task=d["task"], top_labels=tuple(d["top_labels"]), top_probs=tuple(d["top_probs"]),
            predicted=tuple(d["predicted"]), probs={int(k): float(v) for k, v in d["probs"].items()},
            ranks={int(k): int(v) for k, v in d.get("ranks", {}).items()},
            threshold=float(d.get("threshold", MULTI_LABEL_THRESHOLD)),
        )


# ---------------------------------------------------------------- certainty


def certainty_single(probs: Sequence[float], label: int) -> float:
    """min over j != label of |p_label - p_j| (EMSE21 s4.4.1) on a full vector."""
    p = np.asarray(probs, dtype=np.float64)
    if p.size < 2:
        raise ValueError(f"certainty needs at least 2 classes, got {p.size}")
    others = np.delete(p, label)
    return float(np.min(np.abs(p[label] - others)))


def top_certainty(pred: Prediction) -> float:
    """Certainty of the top-1 label: top-1 minus top-2 probability."""
    return pred.top_probs[0] - pred.top_probs[1]


def certainty_multi(p: float) -> float:
    """|2p - 1|: certainty of one label of a multi-label output (EMSE21 s4.4.1)."""
    return abs(2.0 * float(p) - 1.0)


# ---------------------------------------------------------------- relations


def label_certainty(pred: Prediction, label: int) -> float:
    """C of ``label`` on ``pred``: min over the other kept labels of |p_label - p_j| (EMSE21 s4.4.1).  For
    the top-1 label it is ``top_certainty``; for another label the nearest kept neighbours are the top-k and
    the labels of interest, which hold every label near the top."""
    if label == pred.top1:
        return top_certainty(pred)
    p = pred.prob(label)
    return min(abs(p - q) for j, q in pred.probs.items() if j != label)


def label_margin(pred: Prediction, label: int) -> float:
    """How far ``label`` leads the best other label on ``pred``: ``p_label - max_{j != label} p_j``, over the
    kept labels; positive when it is the top-1, negative when another label is above it.  A label that was
    not kept lies below the whole top-k: its margin is at most ``top_probs[-1] - top_probs[0]``."""
    if label not in pred.probs:
        return pred.top_probs[-1] - pred.top_probs[0]
    p = pred.probs[label]
    return p - max(q for j, q in pred.probs.items() if j != label)


def label_changed(src: Prediction, mut: Prediction) -> bool:
    """True when the source's top-1 label is more than ``TIE_TOLERANCE`` below another label on the mutant
    (EMSE21 s4.4's ``l != l'``, where a label within the tolerance of the top still counts as the top)."""
    return beyond(-label_margin(mut, src.top1))


@dataclass(frozen=True)
class Check:
    """One relation check: source vs one mutant.

    tie: the margin that decided the verdict was within ``TIE_TOLERANCE`` and was counted as no change.
    """

    relation: str
    verdict: str
    source_certainty: float | None = None
    mutant_certainty: float | None = None
    label_changed: bool | None = None
    tie: bool = False


def mr1_single(src: Prediction, mut: Prediction) -> Check:
    """Single-label MR-1: holds when the top label changes or its certainty falls, each by more than
    ``TIE_TOLERANCE``; a certainty change within it is a tie: violated (the certainty did not fall)."""
    cs = top_certainty(src)
    if label_changed(src, mut):
        return Check("MR-1", HOLDS, cs, None, True)
    cm = label_certainty(mut, src.top1)
    fell = cs - cm
    # a tie when the certainty's fall is, or when a label within the tolerance above the source's decided
    # "same label" and the certainty did not fall (counted as a change, it would have held)
    tie = tied(fell) or (tied(label_margin(mut, src.top1)) and not beyond(fell))
    return Check("MR-1", HOLDS if beyond(fell) else VIOLATED, cs, cm, False, tie)


def mr2_single(src: Prediction, mut: Prediction) -> Check:
    """Single-label MR-2: holds when the top label stays, i.e. unless another label ends more than
    ``TIE_TOLERANCE`` above it on the mutant; a margin within it is a tie: holds."""
    margin = label_margin(mut, src.top1)
    same = not beyond(-margin)
    return Check("MR-2", HOLDS if same else VIOLATED, top_certainty(src),
                 label_certainty(mut, src.top1) if same else None, not same, tied(margin))


def _multi_certainties(pred: Prediction, labels) -> list[float]:
    return [certainty_multi(pred.prob(label)) for label in labels]


def _unpredicted_prob(pred: Prediction, label: int) -> float:
    """The probability of a label ``pred`` does not predict: kept, or (not kept: below the whole top-k and
    below the threshold) its upper bound ``min(threshold, top_probs[-1])``."""
    return pred.probs[label] if label in pred.probs else min(pred.threshold, pred.top_probs[-1])


def set_moves(src: Prediction, mut: Prediction) -> list[float]:
    """For every label in one predicted set and not the other: how far its probability moved across the
    threshold, ``|p' - p|`` (a lower bound where the side that does not predict it did not keep it)."""
    moves = [mut.prob(label) - _unpredicted_prob(src, label) for label in set(mut.predicted) - set(src.predicted)]
    moves += [src.prob(label) - _unpredicted_prob(mut, label) for label in set(src.predicted) - set(mut.predicted)]
    return sorted(moves)


def set_changed(src: Prediction, mut: Prediction) -> tuple[bool, bool]:
    """(changed, tie) of the predicted label sets: they differ when a label crossed the threshold with a move of
    more than ``TIE_TOLERANCE``; crossings all within it are a tie (the sets count as equal)."""
    moves = set_moves(src, mut)
    changed = any(beyond(d) for d in moves)
    return changed, bool(moves) and not changed


def mr1_multi(src: Prediction, mut: Prediction) -> Check:
    """Multi-label MR-1: holds when the predicted set changes or every predicted label's certainty falls by
    more than ``TIE_TOLERANCE``; the smallest fall within it is a tie: violated."""
    changed, set_tie = set_changed(src, mut)
    if changed:
        return Check("MR-1", HOLDS, None, None, True)
    cs = _multi_certainties(src, src.predicted)
    cm = _multi_certainties(mut, src.predicted)
    least = min((s - m for s, m in zip(cs, cm)), default=None)
    if least is None:  # an empty set: "every label's certainty falls" holds vacuously
        return Check("MR-1", HOLDS, None, None, False, set_tie)
    return Check("MR-1", HOLDS if beyond(least) else VIOLATED, min(cs), min(cm), False,
                 tied(least) or (set_tie and not beyond(least)))


def mr2_multi(src: Prediction, mut: Prediction) -> Check:
    """Multi-label MR-2: holds when the predicted set stays; a crossing within ``TIE_TOLERANCE`` is a tie:
    holds."""
    changed, set_tie = set_changed(src, mut)
    return Check("MR-2", VIOLATED if changed else HOLDS, None, None, changed, set_tie)


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


def highest_ranked_label(source: Prediction, labels: Iterable[int]) -> int | None:
    """The ground-truth label the model ranks highest on ``source`` (ORMR s V-A.1: "the object whose
    label has the highest rank"); ties go to the smaller class index; None when no label has a rank."""
    ranked = [(source.ranks[int(label)], int(label)) for label in labels if int(label) in source.ranks]
    return min(ranked)[1] if ranked else None


def inference_distance(relation: str, source: Prediction, mutant: Prediction, labels: Iterable[int],
                       highest_ranked: bool = False) -> float | None:
    """D of one mutant (``distance_preserving`` for MR-2, ``distance_removing`` for MR-1).

    ``highest_ranked`` (runs that test every inference, ``--all``): D of the ground-truth label the source
    ranks highest, as ORMR s V-A.1 picks the object.  Otherwise the mean of D over ``labels`` (the
    labels of interest of a correct inference).  None when no label has a rank on both predictions.
    """
    if relation not in ("MR-1", "MR-2"):
        raise ValueError(f"relation must be MR-1 or MR-2, got {relation!r}")
    fn = distance_preserving if relation == "MR-2" else distance_removing
    labels = [int(label) for label in labels]
    if highest_ranked:
        best = highest_ranked_label(source, labels)
        labels = [] if best is None else [best]
    ds = [fn(source.probs[k], source.ranks[k], mutant.probs[k], mutant.ranks[k])
          for k in labels if k in source.ranks and k in mutant.ranks]
    if len(ds) == 1:  # most samples have one label of interest: np.mean of one value is that value, 3 us slower
        return ds[0]
    return float(np.mean(ds)) if ds else None
