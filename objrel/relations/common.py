"""What both tasks share after the checks: verdict names, k-of-n votes and the relevancy score.

A verdict is one relation check on one mutant; a vote combines the verdicts of a group of mutations
(k of n: EMSE21 s4.4); the relevancy score S_p / S_r / S weighs the distances the mutants moved
(ORMR s V-A).  Classifier checks live in ``classify.py``, detector checks in ``detect.py``.

Ties: the papers compare strictly (EMSE21 s4.4, DetReport s4.4).  objrel decides every comparison that decides a
verdict on a *margin* (how far a value is past the point where the verdict turns) and counts a margin within
``TIE_TOLERANCE`` as no change: equal in exact arithmetic, which is the strict comparison's answer for an exact
tie (an unchanged certainty does not fall, so MR-1 is violated; an unchanged label stays, so MR-2 holds).  Float
noise, which differs between runtimes and batch sizes, then cannot turn a verdict; the check carries ``tie`` and
the stored verdict the note ``TIE_NOTE``.  Votes count the verdicts, so they follow; S is a continuous function
of the probabilities or IoUs, so noise moves it by noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from objrel.constants import TIE_TOLERANCE

HOLDS = "holds"
VIOLATED = "violated"
NOT_APPLICABLE = "n/a"
# A mutation a lazy run never fed to the model: every vote group it belongs to was already decided
# (stored with the note ``VOTE_DECIDED``).  Never a "holds": counts neither as applicable nor as violated.
NOT_EVALUATED = "not evaluated"
VOTE_DECIDED = "vote decided"
VERDICTS = (HOLDS, VIOLATED, NOT_APPLICABLE, NOT_EVALUATED)
# The note stored beside a verdict whose deciding margin was within TIE_TOLERANCE (decided as "no change").
TIE_NOTE = f"tie: the deciding margin is within {TIE_TOLERANCE:g} (float noise), counted as no change"


def beyond(margin: float, tolerance: float = TIE_TOLERANCE) -> bool:
    """True when ``margin`` is past the turning point by more than ``tolerance``: a change float noise of the
    runtimes cannot make.  ``margin`` is signed: positive in the direction that turns the verdict."""
    return float(margin) > tolerance


def tied(margin: float, tolerance: float = TIE_TOLERANCE) -> bool:
    """True when ``|margin| <= tolerance``: the comparison is a tie, decided as no change."""
    return abs(float(margin)) <= tolerance


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
        """True when at least ``k`` mutations violated the relation."""
        return self.violations >= self.k


def vote(group: str, relation: str, verdicts: Sequence[str], k: int) -> Vote:
    """The k-of-n vote of one group's verdicts; ValueError for an unknown verdict or k < 1."""
    bad = [v for v in verdicts if v not in VERDICTS]
    if bad:
        raise ValueError(f"unknown verdicts {bad}; expected {VERDICTS}")
    if k < 1:
        raise ValueError(f"vote threshold k must be >= 1, got {k}")
    applicable = sum(v not in (NOT_APPLICABLE, NOT_EVALUATED) for v in verdicts)
    return Vote(group, relation, k, len(verdicts), applicable, sum(v == VIOLATED for v in verdicts))


# ---------------------------------------------------------------- relevancy (ORMR s V-A)


# ORMR s V-A, Table I: the six mutation functions (three object-preserving, three object-removing)
# and the number of mutation operations the paper gives each (12 + 12 + 1 = 25 preserving, 9 + 2 + 2 = 13
# removing, 38 in all), keyed by the objrel operator that implements the function.
# MvObjToImg, BldObjToImg, PsvObj
SEED002_PRESERVING = ("move_to_background", "blend_to_background", "gray_background_blur")
SEED002_REMOVING = ("fill_object_blur", "inpaint", "margin_fill")  # RmvObjByRGB, RmvObjByTool, RmvObjByMM
SEED002_PAPER_OPERATIONS = {"move_to_background": 12, "blend_to_background": 12, "gray_background_blur": 1,
                            "fill_object_blur": 9, "inpaint": 2, "margin_fill": 2}
SEED002_FUNCTION_NAMES = {"move_to_background": "MvObjToImg", "blend_to_background": "BldObjToImg",
                          "gray_background_blur": "PsvObj", "fill_object_blur": "RmvObjByRGB",
                          "inpaint": "RmvObjByTool", "margin_fill": "RmvObjByMM"}
# Names of the two scoring definitions a Relevancy can carry.
SCORING_SEED002 = "seed002"        # ORMR s V-A as written: fixed H_n (applicable or not), N functions per type
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
    """sum over functions n and operations h of D / (H_n * N) (ORMR s V-A).

    ``distances`` maps each mutation function (operator) to the distances of its
    operations; functions with no applicable operation are left out of N.
    """
    used = {fn: ds for fn, ds in distances.items() if ds}
    if not used:
        return None
    n = len(used)
    return float(sum(sum(ds) / (len(ds) * n) for ds in used.values()))


def relevancy(preserving: dict[str, list[float]], removing: dict[str, list[float]]) -> Relevancy:
    """S_p and S_r by objrel's ``applicable`` weights from the distances per operator."""
    return Relevancy(weighted_score(preserving), weighted_score(removing))


def seed002_weighted_score(distances: dict[str, Sequence[float]], operations: dict[str, int]) -> float:
    """S_p or S_r exactly as ORMR s V-A writes it: sum_n sum_h D(m(i), m(i'_nh)) / (H_n N).

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


def seed002_relevancy(preserving: Mapping[str, Sequence[float]], removing: Mapping[str, Sequence[float]],
                      preserving_operations: dict[str, int], removing_operations: dict[str, int],
                      keys: Sequence[str] = ()) -> Relevancy:
    """S_p, S_r (``seed002_weighted_score``) and S = (S_p + S_r) / 2 of ORMR s V-A; ``keys`` records
    the mutation operations the score was computed over.  Distances of other functions are ignored."""
    p = {fn: ds for fn, ds in preserving.items() if fn in preserving_operations}
    r = {fn: ds for fn, ds in removing.items() if fn in removing_operations}
    return Relevancy(seed002_weighted_score(p, preserving_operations), seed002_weighted_score(r, removing_operations),
                     SCORING_SEED002, tuple(keys))


# ---------------------------------------------------------------- S on box-only data


# ORMR s VII-B reads an inference with S <= 0.5 as having a low object-relevancy score.
SEED002_LOW_RELEVANCY = 0.5
# The flag carried beside every S computed on a region without a mask.
BOX_ONLY = "box-only"
# ORMR s V-A's removing functions are three; RmvObjByMM (``margin_fill``) needs a mask, so on box-only
# data it adds distance 0 under the paper's weights and S_r cannot exceed 2/3 (S not above 5/6).
BOX_ONLY_S_R_CAP = "2/3"


def box_only(objects: Sequence) -> bool:
    """True when the target region is box-only: it has objects and none has a segmentation (mask or
    polygon).  ``objects`` are ``TargetObject``s or their ``to_dict`` dicts."""
    segs = [o.get("segmentation") if isinstance(o, dict) else getattr(o, "segmentation", None) for o in objects]
    return bool(segs) and all(s is None for s in segs)


def box_only_caveat(scoring: str) -> str:
    """What box-only data does to S under ``scoring``, in one clause (for a help text or a note)."""
    if scoring == SCORING_SEED002:
        return (f"{BOX_ONLY}: RmvObjByMM needs a mask and counts as distance 0 under ORMR's weights, so S_r "
                f"is capped at {BOX_ONLY_S_R_CAP}")
    return f"{BOX_ONLY}: RmvObjByMM needs a mask and is left out of S_r"


def relevancy_verdict(s: float | None, is_box_only: bool, scoring: str) -> str | None:
    """ORMR's reading of S (s VII-B: low when S <= 0.5), saying when the data are box-only.

    ``at most 0.5`` / ``above 0.5``; on box-only data with ORMR's weights the verdict carries
    ``(box-only: S_r capped at 2/3)``, with objrel's ``applicable`` weights ``(box-only)``.  None without S."""
    if s is None:
        return None
    side = "at most" if s <= SEED002_LOW_RELEVANCY else "above"
    text = f"{side} {SEED002_LOW_RELEVANCY:g}"
    if not is_box_only:
        return text
    if scoring == SCORING_SEED002:
        return f"{text} ({BOX_ONLY}: S_r capped at {BOX_ONLY_S_R_CAP})"
    return f"{text} ({BOX_ONLY})"
