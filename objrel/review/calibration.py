"""Calibration: once a review sample closes, its reviewers see how they agreed, where not, and what was decided.

Review is blind until both reviewers have judged every drawn item (``agreement.sample_state``).  From then
on each of them may see the pair's agreement (kappa, Gwet's AC1, PABAK with the prevalence), every item they
called differently with both calls (verdict, reasons, note, validity) and the adjudication, or that it is not
adjudicated yet, all over the items of the drawn sample only (a flagged item outside the draw can still be
judged blind, so no call on it is shown).  Adjudicators and admins see the same for any closed sample.  The gate
(``objrel.access.SEE_CALIBRATION``) decides; a reviewer who did not close the sample is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from objrel import access as A
from objrel.access import Actor, Target
from objrel.errors import NotAllowed
from objrel.review.agreement import (Disagreement, SampleState, agreement, disagreements, sample_state,
                                     validity_agreement)
from objrel.review.coefficients import AgreementCoefficients, agreement_coefficients
from objrel.review.gold import GoldScore, gold_ids
from objrel.review.gold import scores as gold_scores
from objrel.review.judgments import check_relation, check_run_id
from objrel.store import Store


@dataclass(frozen=True)
class Calibration:
    """What the reviewers of a closed sample see: ``reviewer_a`` (the asking reviewer, when they are one of the
    pair) and ``reviewer_b``; ``verdicts``: agreement of their verdicts over the items both judged;
    ``validity``: agreement of their validity calls over the items both gave one; ``disagreements``: the
    items they called differently (verdict, fp reasons, or validity), in draw order, each with both calls and
    the adjudication (``Disagreement.resolution_text`` says "not adjudicated yet" when there is none)."""

    run_id: int
    relation: str
    reviewer_a: str
    reviewer_b: str
    state: SampleState
    verdicts: AgreementCoefficients
    validity: AgreementCoefficients
    disagreements: tuple[Disagreement, ...]
    gold: tuple[GoldScore, ...] = ()    # each of the pair's accuracy on the gold items (objrel.review.gold)

    @property
    def adjudicated(self) -> int:
        """How many disagreements an adjudicator decided."""
        return sum(d.resolved for d in self.disagreements)

    @property
    def open_disagreements(self) -> int:
        """How many disagreements still wait for an adjudicator."""
        return sum(not d.resolved for d in self.disagreements)


def _pair(actor: Actor, closers: tuple[str, ...], reviewers: tuple[str, str] | None) -> tuple[str, str]:
    if reviewers is not None:
        a, b = reviewers
        if actor.name == b:  # the asking reviewer first
            a, b = b, a
        return a, b
    if actor.name in closers:
        return actor.name, next(c for c in closers if c != actor.name)
    return closers[0], closers[1]


def calibration(actor: Actor, store: Store, run_id: int, relation: str, *,
                reviewers: tuple[str, str] | None = None) -> Calibration:
    """The calibration of the closed review sample of (``run_id``, ``relation``) for ``actor``.

    ``actor`` must be one of the reviewers who closed the sample (judged every drawn item) or hold the
    adjudicator or admin role; the pair is ``actor`` and the first other reviewer who closed it by name (for
    an adjudicator or admin, the first two), or ``reviewers`` (two who closed it; a reviewer must be one of
    them).  Raises NotAllowed while the sample is open: calibration shows the other reviewer's calls, so it
    waits until both reviewers have finished the sample."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    what = f"run {rid}, {relation}"
    A.authorize(actor, A.SEE_CALIBRATION, what)
    state = sample_state(store, rid, relation)
    if not state.closed:
        raise NotAllowed(actor.name, f"see the calibration of {what}", A.allowed_roles(A.SEE_CALIBRATION),
                         tuple(sorted(actor.roles)),
                         reason=(f"its review sample is not closed yet: calibration opens once {state.waiting_for}"
                                 if state.drawn else
                                 "no review sample has been drawn, so there is nothing to calibrate"))
    closers = state.closed_by
    pair = _pair(actor, closers, reviewers)
    party = actor.name in pair and actor.name in closers
    A.authorize(actor, A.SEE_CALIBRATION, Target(
        what, excluded=frozenset() if party or actor.holds(A.PAIR_ROLES) else frozenset({actor.name}),
        excluded_because="they are not one of the two reviewers who closed this sample"))
    if any(n not in closers for n in pair) or pair[0] == pair[1]:
        raise ValueError(f"calibration compares two reviewers who closed the sample ({', '.join(closers)}); "
                         f"got {pair[0]!r} and {pair[1]!r}")
    a, b = pair
    pairs = agreement(store, rid, relation, a, b).pairs
    return Calibration(run_id=rid, relation=relation, reviewer_a=a, reviewer_b=b, state=state,
                       verdicts=agreement_coefficients([p[1] for p in pairs], [p[2] for p in pairs]),
                       validity=validity_agreement(store, rid, relation, a, b),
                       disagreements=tuple(disagreements(store, rid, relation, a, b, include_validity=True)),
                       gold=gold_scores(store, rid, relation, (a, b)) if gold_ids(store, rid, relation) else ())
