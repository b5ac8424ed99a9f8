"""What both workers derive from the verdicts of one tested sample (or detection unit): the vote rows of
the plan's groups, and the relevancy score S_p / S_r / S from the distances its mutants moved."""

from __future__ import annotations

from collections import defaultdict

from objrel.mutations import Plan
from objrel.relations import classify as R

# The relations whose distances feed S_p (object preserved) and S_r (object removed).
PRESERVING, REMOVING = "MR-2", "MR-1"


def vote_rows(plan: Plan, sample_id: str, verdict_by_key: dict[str, str]) -> list[dict]:
    """One ``votes`` row per vote group of ``plan``; ``verdict_by_key`` maps each mutation key to its verdict."""
    rows = []
    for group in plan.groups:
        vote = R.vote(group.name, group.relation, [verdict_by_key[m.key] for m in group.mutations], group.k)
        primary = plan.primary(group.relation)
        rows.append({"sample_id": sample_id, "group_name": group.name, "relation": group.relation,
                     "is_primary": primary is not None and primary.name == group.name, "k": vote.k, "n": vote.n,
                     "applicable": vote.applicable, "violations": vote.violations, "flagged": vote.flagged})
    return rows


class Distances:
    """The distances a sample's mutants moved its prediction, by relation and operator."""

    def __init__(self):
        self._by_relation: dict[str, dict[str, list[float]]] = {PRESERVING: defaultdict(list),
                                                                 REMOVING: defaultdict(list)}

    def add(self, relation: str, operator: str, distance: float | None) -> None:
        """Keep ``distance`` (None: the mutant had none to give) under its relation and operator."""
        if distance is None:
            return
        if relation not in self._by_relation:
            raise ValueError(f"relation must be {PRESERVING} or {REMOVING}, got {relation!r}")
        self._by_relation[relation][operator].append(distance)

    def relevancy(self) -> R.Relevancy:
        return R.relevancy(self._by_relation[PRESERVING], self._by_relation[REMOVING])
