"""What both workers derive from the verdicts of one tested sample (or detection unit): the vote rows of
the plan's groups, and the relevancy score S_p / S_r / S from the distances its mutants moved; and, for
lazy runs, which mutations a sample still needs (``VoteSchedule``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from objrel.mutations import Mutation, Plan
from objrel.relations import common as C

# The relations whose distances feed S_p (object preserved) and S_r (object removed).
PRESERVING, REMOVING = "MR-2", "MR-1"


def vote_rows(plan: Plan, sample_id: str, verdict_by_key: dict[str, str]) -> list[dict]:
    """One ``votes`` row per vote group of ``plan``; ``verdict_by_key`` maps each mutation key to its verdict."""
    rows = []
    for group in plan.groups:
        vote = C.vote(group.name, group.relation, [verdict_by_key[m.key] for m in group.mutations], group.k)
        primary = plan.primary(group.relation)
        rows.append({"sample_id": sample_id, "group_name": group.name, "relation": group.relation,
                     "is_primary": primary is not None and primary.name == group.name, "k": vote.k, "n": vote.n,
                     "applicable": vote.applicable, "violations": vote.violations, "flagged": vote.flagged})
    return rows


@dataclass(frozen=True)
class ScoringBasis:
    """Which definition of S a plan gets, and over which mutation operations (ORMR s V-A).

    ``name`` is ``seed002`` when the plan holds at least one operation of each of ORMR's six
    mutation functions (Table I), else ``applicable``.  For ``seed002``, ``operations`` lists the keys
    of those functions' operations in the plan, and ``h`` each function's H_n: its number of operations
    in the plan, applicable to a given image or not.  ``paper_counts`` is True when every H_n equals the
    paper's (12, 12, 1 preserving; 9, 2, 2 removing: 38 operations).  For ``applicable``, ``operations``
    lists all the plan's mutations and H_n / N count, per inference, only the operations that gave a
    distance (``C.weighted_score``).
    """

    name: str
    operations: tuple[str, ...]
    h: tuple[tuple[str, int], ...] = ()

    @property
    def paper_counts(self) -> bool:
        """True when the basis is ORMR's and counts the paper's operations per function."""
        return self.name == C.SCORING_SEED002 and dict(self.h) == C.SEED002_PAPER_OPERATIONS

    def h_of(self, functions: tuple[str, ...]) -> dict[str, int]:
        """H_n of the given functions (operations per function)."""
        return {fn: n for fn, n in self.h if fn in functions}

    def describe(self) -> str:
        """How S was computed, in one sentence for the reader."""
        if self.name != C.SCORING_SEED002:
            return (f"S by objrel's 'applicable' weights over {len(self.operations)} operations (H_n, N count "
                    f"only operations that gave a distance); the plan lacks some of ORMR's six functions")
        parts = ", ".join(f"{C.SEED002_FUNCTION_NAMES[fn]} {n}" for fn, n in self.h)
        paper = "as in the paper" if self.paper_counts else "the paper has 12, 12, 1, 9, 2, 2 = 38"
        return (f"S as ORMR s V-A over {len(self.operations)} operations: H_n = {parts} ({paper}); "
                f"N = 3 functions per type")

    def to_dict(self) -> dict:
        """The basis as a JSON-ready dict, with its description."""
        return {"name": self.name, "operations": list(self.operations), "h": dict(self.h),
                "paper_counts": self.paper_counts, "description": self.describe()}


def scoring_basis(plan: Plan) -> ScoringBasis:
    """The scoring definition of ``plan`` (see :class:`ScoringBasis`)."""
    functions = C.SEED002_PRESERVING + C.SEED002_REMOVING
    ops = [m for m in plan.mutations if m.operator in functions]
    counts = {fn: sum(m.operator == fn for m in ops) for fn in functions}
    if all(counts.values()):
        return ScoringBasis(C.SCORING_SEED002, tuple(m.key for m in ops), tuple(counts.items()))
    return ScoringBasis(C.SCORING_APPLICABLE, tuple(m.key for m in plan.mutations))


class Distances:
    """The distances a sample's mutants moved its prediction, by relation and operator.

    Given the run's ``plan``, ``relevancy`` computes S by the plan's :func:`scoring_basis`: ORMR's own
    definition when the plan holds its six functions, else objrel's ``applicable`` weights.  Without a
    plan it is always the ``applicable`` one.
    """

    def __init__(self, plan: Plan | None = None):
        self._by_relation: dict[str, dict[str, list[float]]] = {PRESERVING: defaultdict(list),
                                                                 REMOVING: defaultdict(list)}
        self.basis = scoring_basis(plan) if plan is not None else None

    def add(self, relation: str, operator: str, distance: float | None) -> None:
        """Keep ``distance`` (None: the mutant had none to give) under its relation and operator."""
        if distance is None:
            return
        if relation not in self._by_relation:
            raise ValueError(f"relation must be {PRESERVING} or {REMOVING}, got {relation!r}")
        self._by_relation[relation][operator].append(distance)

    def relevancy(self) -> C.Relevancy:
        """S_p and S_r of the distances kept, by the plan's scoring basis."""
        b = self.basis
        if b is not None and b.name == C.SCORING_SEED002:
            return C.seed002_relevancy(self._by_relation[PRESERVING], self._by_relation[REMOVING],
                                       b.h_of(C.SEED002_PRESERVING), b.h_of(C.SEED002_REMOVING), b.operations)
        rel = C.relevancy(self._by_relation[PRESERVING], self._by_relation[REMOVING])
        return C.Relevancy(rel.s_p, rel.s_r, C.SCORING_APPLICABLE, b.operations if b is not None else ())


def interleaved(plan: Plan) -> tuple[Mutation, ...]:
    """The plan's distinct mutations taken round-robin over its groups (first of each group, then the
    second, ...), so that every group gets evidence early; a mutation shared by groups appears once."""
    seen: dict[str, Mutation] = {}
    longest = max((len(g.mutations) for g in plan.groups), default=0)
    for i in range(longest):
        for g in plan.groups:
            if i < len(g.mutations):
                seen.setdefault(g.mutations[i].key, g.mutations[i])
    return tuple(seen.values())


class VoteSchedule:
    """Which mutations of one sample still need the model when only the k-of-n votes matter.

    A group is decided once ``violations >= k`` (flagged whatever the rest say) or
    ``violations + unevaluated < k`` (cannot be flagged any more).  ``next_wave`` gives, for every undecided
    group, the fewest of its unevaluated mutations that could decide it (``min(k - violations,
    unevaluated - (k - violations) + 1)``), so no mutation runs that the votes turn out not to need; a
    mutation shared by several groups counts for each.  ``n/a`` verdicts count as evaluated, not violated.
    """

    def __init__(self, plan: Plan):
        self.plan = plan
        self.order = interleaved(plan)
        self._rank = {m.key: i for i, m in enumerate(self.order)}

    @staticmethod
    def _state(group, verdicts: dict[str, str]) -> tuple[int, list[Mutation]]:
        violations = sum(verdicts.get(m.key) == C.VIOLATED for m in group.mutations)
        left = [m for m in group.mutations if m.key not in verdicts]
        return violations, left

    def decided(self, group, verdicts: dict[str, str]) -> bool:
        """True when ``group``'s vote can no longer change whatever its unevaluated mutations give."""
        violations, left = self._state(group, verdicts)
        return violations >= group.k or violations + len(left) < group.k

    def all_decided(self, verdicts: dict[str, str]) -> bool:
        """True when every group of the plan is decided."""
        return all(self.decided(g, verdicts) for g in self.plan.groups)

    def next_wave(self, verdicts: dict[str, str]) -> list[Mutation]:
        """The mutations to evaluate next (empty when every group is decided), in interleaved order."""
        chosen: dict[str, Mutation] = {}
        for g in self.plan.groups:
            violations, left = self._state(g, verdicts)
            if violations >= g.k or violations + len(left) < g.k:
                continue
            need = g.k - violations
            for m in left[: min(need, len(left) - need + 1)]:
                chosen.setdefault(m.key, m)
        return sorted(chosen.values(), key=lambda m: self._rank[m.key])
