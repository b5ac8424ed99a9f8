"""Precision and recall of objrel's detectors against the counterfactual ground truth.

EMSE21 s5.1 measured precision only (reviewers judged the flagged inferences);
s7.3 names recall (false negatives) as out of reach.  With ``groundtruth.Reliance``
per tested inference both are counts:

* TP: flagged and background-reliant;  FP: flagged, not reliant;
* FN: not flagged, reliant;            TN: neither;

precision = TP / (TP + FP), recall = TP / (TP + FN), each with a Wilson score
interval (95% by default), which stays inside [0, 1] and behaves at 0 and n.

A *detector* is one vote group of a run's plan (``MR-1 3 colours``, ``MR-2 15 colours``,
``inpaint``, ``move_to_background``, ...) read from the store's vote rows, plus the
union of MR-1 and MR-2 for the 3-colour and the 15-colour votes.

Detection runs (``score_detection_run``) are scored the same way over their units detected
on the source (T = 1), against ``groundtruth.UnitReliance``; a plan whose primary votes are
not a colour pair (``erase_noise``) gets the union of its primary MR-1 and MR-2 votes.

The flags themselves are kept (``flags_to_dict``) beside the ground truth's per-swap outcomes, so
``score_at`` re-scores every detector at any draw count and reliance threshold from a results file.
``roc_auc`` measures how well a continuous score (ORMR's S_p, S_r, S) ranks reliant inferences above the
others: low S (the object matters little) is read as *more* reliant, so the ranking value is ``-S``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from objrel.intervals import Z_95, wilson_interval
from objrel.store import Store
from objrel.studies.shortcut.groundtruth import ANY_FLIP, Reliance, Threshold

TRUTHS = ("reliant", "matched")
UNION = "MR-1 ∪ MR-2"
COLOUR_FAMILIES = ("3 colours", "15 colours")


def wilson(k: int, n: int, z: float = Z_95) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion ``k / n``; ``(None, None)`` when ``n == 0``."""
    ci = wilson_interval(k, n, z)
    return (None, None) if ci is None else ci


@dataclass(frozen=True)
class DetectorScore:
    """One detector's confusion counts against the ground truth, with precision and recall.

    detector: vote group name or ``"MR-1 ∪ MR-2 3 colours"``; relation: ``MR-1``, ``MR-2`` or
    ``union``; family: ``3 colours``, ``15 colours`` or ``operator``; truth: ``reliant`` (the
    union of both facts) or ``matched`` (MR-2 against swap-dependence, MR-1 against
    background-sufficiency, the union against reliance).
    """

    detector: str
    relation: str
    family: str
    truth: str
    tp: int
    fp: int
    fn: int
    tn: int

    @property
    def n(self) -> int:
        """All the units scored."""
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float | None:
        """tp / (tp + fp), or None when nothing was flagged."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """tp / (tp + fn), or None when nothing is truly reliant."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def precision_ci(self) -> tuple[float | None, float | None]:
        """The Wilson 95% interval of the precision."""
        return wilson(self.tp, self.tp + self.fp)

    @property
    def recall_ci(self) -> tuple[float | None, float | None]:
        """The Wilson 95% interval of the recall."""
        return wilson(self.tp, self.tp + self.fn)

    @property
    def flagged_ratio(self) -> float | None:
        """The share of units the detector flagged."""
        return (self.tp + self.fp) / self.n if self.n else None

    def __add__(self, other: "DetectorScore") -> "DetectorScore":
        if (self.detector, self.truth) != (other.detector, other.truth):
            raise ValueError(f"cannot pool {self.detector!r}/{self.truth} with {other.detector!r}/{other.truth}")
        return DetectorScore(self.detector, self.relation, self.family, self.truth, self.tp + other.tp,
                             self.fp + other.fp, self.fn + other.fn, self.tn + other.tn)

    def to_dict(self) -> dict:
        """The score as a JSON-ready dict with precision, recall and their intervals."""
        d = asdict(self)
        (plo, phi), (rlo, rhi) = self.precision_ci, self.recall_ci
        d.update(n=self.n, flagged_ratio=self.flagged_ratio, precision=self.precision, precision_lo=plo,
                 precision_hi=phi, recall=self.recall, recall_lo=rlo, recall_hi=rhi)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DetectorScore":
        """A score from a ``to_dict`` dict."""
        return cls(d["detector"], d["relation"], d["family"], d["truth"], int(d["tp"]), int(d["fp"]),
                   int(d["fn"]), int(d["tn"]))


def _family(group: str) -> str:
    for fam in COLOUR_FAMILIES:
        if group.endswith(fam):
            return fam
    return "operator"


def detector_flags(store: Store, run_id: int) -> tuple[set[str], dict[str, tuple[str, str, set[str]]]]:
    """Tested sample ids, and ``{detector: (relation, family, flagged sample ids)}`` of a run."""
    tested = {r["sample_id"] for r in store.samples(run_id, status="tested")}
    flags: dict[str, tuple[str, str, set[str]]] = {}
    for v in store.votes(run_id):
        g = v["group_name"]
        if g not in flags:
            flags[g] = (v["relation"], _family(g), set())
        if v["flagged"]:
            flags[g][2].add(v["sample_id"])
    for fam in COLOUR_FAMILIES:
        mr1, mr2 = flags.get(f"MR-1 {fam}"), flags.get(f"MR-2 {fam}")
        if mr1 and mr2:
            flags[f"{UNION} {fam}"] = ("union", fam, mr1[2] | mr2[2])
    return tested, flags


def _truth_of(r: Reliance, relation: str, truth: str) -> bool:
    if truth == "reliant" or relation == "union":
        return bool(r.reliant)
    return bool(r.swap_dependent) if relation == "MR-2" else bool(r.background_sufficient)


def score_run(store: Store, run_id: int, truth: dict[str, Reliance], kind: str = "reliant") -> list[DetectorScore]:
    """Score every detector of a run over its tested inferences that have a ground truth.

    kind: ``reliant`` (every detector against background reliance) or ``matched``.
    """
    if kind not in TRUTHS:
        raise ValueError(f"truth kind must be one of {TRUTHS}, got {kind!r}")
    tested, flags = detector_flags(store, run_id)
    return score_flags(flags, [s for s in tested if s in truth], truth, kind)


def score_flags(flags: dict[str, tuple[str, str, set[str]]], ids, truth: dict, kind: str = "reliant"
                ) -> list[DetectorScore]:
    """Confusion counts of every detector ``{name: (relation, family, flagged ids)}`` over the ``ids`` whose
    truth (``Reliance`` or ``UnitReliance``) is correct."""
    if kind not in TRUTHS:
        raise ValueError(f"truth kind must be one of {TRUTHS}, got {kind!r}")
    ids = sorted(s for s in ids if truth[s].correct)
    out = []
    for name, (relation, family, flagged) in flags.items():
        tp = fp = fn = tn = 0
        for s in ids:
            pos = _truth_of(truth[s], relation, kind)
            hit = s in flagged
            tp += hit and pos
            fp += hit and not pos
            fn += pos and not hit
            tn += not pos and not hit
        out.append(DetectorScore(name, relation, family, kind, tp, fp, fn, tn))
    return out


def detection_flags(store: Store, run_id: int) -> tuple[set[str], dict[str, tuple[str, str, set[str]]]]:
    """``detector_flags`` of a detection run: the ids of its tested units with T = 1 on the source (its correct
    inferences; votes name units by unit id), and every vote group's flags.  Besides the colour unions, the
    union of the plan's primary MR-1 and MR-2 votes is added when they are not a colour pair (``erase_noise``:
    ``MR-1 ∪ MR-2 (random erase + background noise)``)."""
    from objrel.store.detections import units

    _, flags = detector_flags(store, run_id)
    correct = {u.unit_id for u in units(store, run_id, tested=True) if u.detected}
    primary = {}
    for v in store.votes(run_id):
        if v["is_primary"]:
            primary.setdefault(v["relation"], v["group_name"])
    g1, g2 = primary.get("MR-1"), primary.get("MR-2")
    if g1 and g2 and _family(g1) == "operator" and g1 in flags and g2 in flags:
        name = f"{UNION} ({g1.removeprefix('MR-1 ')} + {g2.removeprefix('MR-2 ')})"
        flags[name] = ("union", "operator", flags[g1][2] | flags[g2][2])
    return correct, flags


def score_detection_run(store: Store, run_id: int, truth: dict, kind: str = "reliant") -> list[DetectorScore]:
    """``score_run`` for a detection run: every detector over the tested units that were detected on the source
    (T = 1) and have a ground truth (``groundtruth.detection_ground_truth``, keyed by unit id)."""
    correct, flags = detection_flags(store, run_id)
    return score_flags(flags, [u for u in correct if u in truth], truth, kind)


def pool(scores) -> list[DetectorScore]:
    """Sum the counts of the same detector over runs (models, seeds); keeps first-seen order."""
    acc: dict[tuple[str, str], DetectorScore] = {}
    for s in scores:
        key = (s.detector, s.truth)
        acc[key] = acc[key] + s if key in acc else s
    return list(acc.values())


Flags = dict[str, tuple[str, str, set[str]]]


def flags_to_dict(tested, flags: Flags) -> dict:
    """A run's tested ids (the ids scored) and every detector's flags as the results file holds them."""
    return {"tested": sorted(tested), "detectors": {name: {"relation": rel, "family": fam, "flagged": sorted(ids)}
                                                    for name, (rel, fam, ids) in flags.items()}}


def flags_from_dict(d: dict) -> tuple[list[str], Flags]:
    """``flags_to_dict``'s dict back as ``(tested ids, {detector: (relation, family, flagged ids)})``."""
    return list(d["tested"]), {name: (v["relation"], v["family"], set(v["flagged"]))
                               for name, v in d["detectors"].items()}


def score_at(flags: Flags, ids, truth: dict, draws: int | None = None, threshold: Threshold = ANY_FLIP,
             kind: str = "reliant") -> list[DetectorScore]:
    """``score_flags`` against the truth re-derived at ``draws`` per type (None: every draw made) and
    ``threshold`` from each inference's stored per-swap outcomes (``groundtruth.Outcomes.verdict``)."""
    ids = [s for s in ids if s in truth]
    verdicts = {s: truth[s].verdict(draws, threshold) for s in ids}
    return score_flags(flags, ids, verdicts, kind)


def roc_auc(values, positives) -> float | None:
    """The area under the ROC curve of ``values`` (higher = more likely positive) against the booleans
    ``positives``: the chance that a random positive outranks a random negative, ties counting half (the
    Mann-Whitney U / (n_pos * n_neg)).  None when either class is empty."""
    pos = [float(v) for v, y in zip(values, positives) if y]
    neg = [float(v) for v, y in zip(values, positives) if not y]
    if not pos or not neg:
        return None
    from scipy.stats import rankdata

    ranks = rankdata(pos + neg)                  # 1-based, ties given their average rank
    u = ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2
    return float(u / (len(pos) * len(neg)))
