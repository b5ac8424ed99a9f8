"""S of a run's tested inferences, stated with the set of mutation operations it was computed over.

S (ORMR s V-A) is a weighted average over a plan's operations, so a figure of S means something only
beside that set: the functions, each one's H_n, and where objrel's ingredients differ from the paper's.
``relevancy_over_run`` reads the stored S of every tested sample and ``describe`` prints it that way.
"""

from __future__ import annotations

from dataclasses import dataclass

from objrel.mutations import Plan
from objrel.relations import common as C
from objrel.relations.votes import scoring_basis
from objrel.store import Store


@dataclass(frozen=True)
class RunRelevancy:
    """S over one run.

    basis:       how S was computed and over which operations (``ScoringBasis.describe``);
    operations:  the number of mutation operations S averages over;
    paper_counts: True when the functions and H_n are ORMR's (38 operations);
    tested:      tested inferences; scored: those with an S (a lazy run stores none);
    mean_s:      mean S over the scored ones (None when none); low: how many have S <= 0.5 (ORMR s VII-B);
    notes:       where the ingredients differ from the paper's, one line per function (``seed002`` plan only).
    """

    basis: str
    operations: int
    paper_counts: bool
    tested: int
    scored: int
    mean_s: float | None
    low: int
    notes: tuple[str, ...] = ()

    def describe(self) -> str:
        """The figures in a few lines for the terminal."""
        lines = [self.basis]
        if self.scored:
            lines.append(f"S over {self.scored} of {self.tested} tested inferences: mean {self.mean_s:.3f}; "
                         f"{self.low} at most {C.SEED002_LOW_RELEVANCY:g} (low object relevancy, ORMR s VII-B)")
        else:
            lines.append(f"no S stored for the {self.tested} tested inferences (a lazy run skips the mutants S needs)")
        lines += [f"  {n}" for n in self.notes]
        return "\n".join(lines)


def relevancy_over_run(store: Store, run_id: int) -> RunRelevancy:
    """S of run ``run_id``'s tested samples with the operation set of its stored plan."""
    from objrel.mutations.seed002 import INGREDIENT_NOTES, SEED002

    run = store.get_run(run_id)
    basis = scoring_basis(Plan.from_dict(run.plan))
    rows = store.sample_states(run_id, status="tested")
    scores = [r["s"] for r in rows if r["s"] is not None]
    notes = ()
    if run.config.get("plan") == SEED002:
        notes = tuple(f"{fn}: {note}" for fn, note in INGREDIENT_NOTES.items())
    return RunRelevancy(basis.describe(), len(basis.operations), basis.paper_counts, len(rows), len(scores),
                        sum(scores) / len(scores) if scores else None,
                        sum(s <= C.SEED002_LOW_RELEVANCY for s in scores), notes)
