"""Agreement between reviewers, the decided calls, and precision (EMSE21 s5.1.2, Tables 1-3).

``agreement`` computes Cohen's kappa (Landis & Koch bands) over the items two reviewers both
judged; ``disagreements`` lists the items that need discussion.  An item is decided when an
adjudicator recorded a verdict for it (``adjudicate``), or, without one, when at least two
reviewers judged it and all of them agree on the verdict and, for ``fp``, on the reasons.  The
agreed items are *computed on read*, never stored, so a reviewer who changes a call later can
never leave a stale consensus behind; an adjudication always wins.  ``precision_table`` counts
the decided calls of the drawn items per run.  Aggregates of two reviewers' calls (``consensus``,
``precision_table``) count only closed review samples, so review stays blind until then.

Blindness follows the draw.  Every view of two reviewers' calls (``agreement``, ``validity_agreement``,
``disagreements``, ``pair_view``, ``pair_kappas`` and calibration built on them) is over the items of the drawn
review sample only: a flagged item outside the draw can still be judged, so showing its calls would tell a
reviewer the other's call before her own.  And a party to a sample (anyone who judged one of its items) never
sees another reviewer's calls on it while it is open, whatever other roles she holds (``blind_target``).
"""

from __future__ import annotations

import datetime as dt
import math
import numbers
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from objrel.intervals import wilson_interval
from objrel import access as A
from objrel.access import Actor, Target
from objrel.review.accounts import check_name
from objrel.review.coefficients import (KAPPA_CI_LEVEL, KAPPA_SE_COHEN1960, KAPPA_SE_FLEISS,  # noqa: F401 (re-exported)
                                        KAPPA_SE_METHODS, LANDIS_KOCH_BANDS, POOR_BAND, UNDEFINED_BAND,
                                        AgreementCoefficients, Kappa, agreement_coefficients, cohen_kappa,
                                        landis_koch_band)
from objrel.review.judgments import (INVALID, PARTY_OF_OPEN_SAMPLE, VALIDITY, Judgment,  # noqa: F401
                                     blind_target, check_call, check_relation, check_run_id, check_sample_id,
                                     check_validity, closed_sample, iso, judgments)
from objrel.review.many_raters import ALPHA_BOOTSTRAP_SEED, DEFAULT_CONFIDENCE, ManyRaterAgreement, many_rater_agreement
from objrel.review.sampling import review_sample_info
from objrel.store import Store
from objrel.store import reviews as review_rows
from objrel.store.detections import is_detection_run
from objrel.store.kept import NoDelta, add_counts, kept

if TYPE_CHECKING:  # pandas is imported lazily: the review workers do not need it
    import pandas as pd

# Judgments needed before an unadjudicated item can count as agreed.
MIN_CONSENSUS_REVIEWERS = 2
# What a disagreement without an adjudication says.
NOT_ADJUDICATED = "not adjudicated yet"
# Kinds of disagreement.
VERDICT_DISAGREEMENT, REASONS_DISAGREEMENT, VALIDITY_DISAGREEMENT = "verdict", "reasons", "validity"


@dataclass(frozen=True)
class Agreement:
    """Agreement of two reviewers on one run and relation.

    n_a / n_b: items each judged; n_both: items both judged (kappa's n); pairs: (sample_id,
    verdict_a, verdict_b) of those items, by sample id; kappa: None when n_both == 0.
    """

    run_id: int
    relation: str
    reviewer_a: str
    reviewer_b: str
    n_a: int
    n_b: int
    n_both: int
    pairs: tuple[tuple[str, str, str], ...]
    kappa: Kappa | None

    def to_dict(self) -> dict:
        """The agreement as a JSON-ready dict, its pairs and kappa included."""
        d = asdict(self)
        d["pairs"] = [list(p) for p in self.pairs]
        d["kappa"] = self.kappa.to_dict() if self.kappa else None
        return d

    def calls_frame(self) -> pd.DataFrame:
        """One row per item both reviewers judged: their calls and whether they agree."""
        import pandas as pd

        return pd.DataFrame([{"sample": s, self.reviewer_a: a, self.reviewer_b: b, "agree": a == b}
                             for s, a, b in self.pairs],
                            columns=["sample", self.reviewer_a, self.reviewer_b, "agree"])


@dataclass(frozen=True)
class Consensus:
    """The decided call of one item.

    source: ``adjudicated`` (a row of the consensus table; ``adjudicator`` says who) or
    ``agreed`` (computed on read: every reviewer who judged it made the same call).  validity: the
    decided call on the mutant: the adjudicator's, or the reviewers' when all of them gave the same one;
    None otherwise.
    """

    run_id: int
    sample_id: str
    relation: str
    verdict: str
    reasons: tuple[str, ...]
    note: str | None
    source: str
    adjudicator: str | None
    reviewers: tuple[str, ...]
    decided_at: dt.datetime | None
    validity: str | None = None

    def to_dict(self) -> dict:
        """The consensus as a JSON-ready dict."""
        d = asdict(self)
        d["reasons"], d["reviewers"] = list(self.reasons), list(self.reviewers)
        d["decided_at"] = iso(self.decided_at)
        return d


@dataclass(frozen=True)
class Disagreement:
    """An item two reviewers called differently: ``kind`` is ``verdict`` or ``reasons``
    (both said fp, for different reasons), or, when asked for, ``validity`` (same verdict and reasons, different
    validity calls on the mutant).  ``resolved_*`` is the adjudication, if any."""

    sample_id: str
    position: int | None
    kind: str
    verdict_a: str
    reasons_a: tuple[str, ...]
    note_a: str | None
    verdict_b: str
    reasons_b: tuple[str, ...]
    note_b: str | None
    resolved_verdict: str | None
    resolved_reasons: tuple[str, ...]
    resolved_note: str | None
    resolved_by: str | None
    validity_a: str | None = None
    validity_b: str | None = None
    resolved_validity: str | None = None
    resolved_at: dt.datetime | None = None

    @property
    def resolved(self) -> bool:
        """True when an adjudicator decided the disagreement."""
        return self.resolved_verdict is not None

    @property
    def resolution_text(self) -> str:
        """The adjudication in words, or ``NOT_ADJUDICATED``."""
        if not self.resolved:
            return NOT_ADJUDICATED
        reasons = f" ({', '.join(self.resolved_reasons)})" if self.resolved_reasons else ""
        return f"{self.resolved_verdict}{reasons} by {self.resolved_by}"

    def to_dict(self) -> dict:
        """The disagreement as a JSON-ready dict, with whether it is resolved."""
        d = asdict(self)
        for k in ("reasons_a", "reasons_b", "resolved_reasons"):
            d[k] = list(d[k])
        d["resolved"] = self.resolved
        d["resolved_at"] = iso(self.resolved_at)
        return d


def _two_reviewers(reviewer_a: str, reviewer_b: str) -> tuple[str, str]:
    a, b = check_name(reviewer_a), check_name(reviewer_b)
    if a == b:
        raise ValueError(f"agreement needs two different reviewers; got {a!r} twice")
    return a, b


def drawn_items(store: Store, run_id: int, relation: str) -> tuple[str, ...]:
    """The items of the drawn review sample of (``run_id``, ``relation``), in draw order; none before a draw."""
    draw = review_sample_info(store, run_id, relation)
    return tuple(draw.sample_ids) if draw else ()


def _drawn_calls(store: Store, run_id: int, relation: str, reviewer: str) -> dict[str, Judgment]:
    """``reviewer``'s calls on the drawn items only, by sample id."""
    drawn = set(drawn_items(store, run_id, relation))
    return {j.sample_id: j for j in judgments(store, run_id, relation, reviewer=reviewer) if j.sample_id in drawn}


def agreement(store: Store, run_id: int, relation: str, reviewer_a: str, reviewer_b: str) -> Agreement:
    """Cohen's kappa of two reviewers' verdicts over the drawn items both judged (never an item outside the
    review sample, which may still be judged blind); ``kappa`` is None when they have no such item in common,
    and n_a / n_b count their calls on drawn items."""
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    a, b = _two_reviewers(reviewer_a, reviewer_b)
    ja = {sid: j.verdict for sid, j in _drawn_calls(store, rid, relation, a).items()}
    jb = {sid: j.verdict for sid, j in _drawn_calls(store, rid, relation, b).items()}
    both = sorted(ja.keys() & jb.keys())
    pairs = tuple((s, ja[s], jb[s]) for s in both)
    kappa = cohen_kappa([p[1] for p in pairs], [p[2] for p in pairs]) if pairs else None
    return Agreement(run_id=rid, relation=relation, reviewer_a=a, reviewer_b=b, n_a=len(ja), n_b=len(jb),
                     n_both=len(both), pairs=pairs, kappa=kappa)


def validity_agreement(store: Store, run_id: int, relation: str, reviewer_a: str,
                       reviewer_b: str) -> AgreementCoefficients:
    """Kappa, AC1 and PABAK of two reviewers' validity calls (``VALIDITY``) over the drawn items both gave one
    (like ``agreement``); n = 0, every coefficient undefined, when none."""
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    a, b = _two_reviewers(reviewer_a, reviewer_b)
    va = {s: j.validity for s, j in _drawn_calls(store, rid, relation, a).items() if j.validity is not None}
    vb = {s: j.validity for s, j in _drawn_calls(store, rid, relation, b).items() if j.validity is not None}
    both = sorted(va.keys() & vb.keys())
    return agreement_coefficients([va[s] for s in both], [vb[s] for s in both], categories=VALIDITY)


# ---------------------------------------------------------------- consensus


def disagreements(store: Store, run_id: int, relation: str, reviewer_a: str, reviewer_b: str, *,
                  include_validity: bool = False) -> list[Disagreement]:
    """Items both reviewers judged with different verdicts (``kind='verdict'``) or, both calling
    them fp, different reasons (``kind='reasons'``); with ``include_validity`` also items they called alike
    but whose mutant both judged, differently (``kind='validity'``; these are not adjudicated: the verdict
    is agreed).  Resolved ones carry the adjudication.
    Only items of the drawn review sample, in draw order (an item outside the draw may still be judged blind)."""
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    a, b = _two_reviewers(reviewer_a, reviewer_b)
    ja, jb = _drawn_calls(store, rid, relation, a), _drawn_calls(store, rid, relation, b)
    adj = review_rows.adjudications(store, rid, relation)
    pos = {sid: i for i, sid in enumerate(drawn_items(store, rid, relation))}
    out = []
    for sid in sorted(ja.keys() & jb.keys(), key=lambda s: (pos[s], s)):
        x, y = ja[sid], jb[sid]
        if x.verdict != y.verdict:
            kind = VERDICT_DISAGREEMENT
        elif x.reasons != y.reasons:
            kind = REASONS_DISAGREEMENT
        elif include_validity and None not in (x.validity, y.validity) and x.validity != y.validity:
            kind = VALIDITY_DISAGREEMENT
        else:
            continue
        r = adj.get(sid)
        out.append(Disagreement(sample_id=sid, position=pos.get(sid), kind=kind,
                                verdict_a=x.verdict, reasons_a=x.reasons, note_a=x.note,
                                verdict_b=y.verdict, reasons_b=y.reasons, note_b=y.note,
                                resolved_verdict=r["verdict"] if r else None,
                                resolved_reasons=tuple(r["reasons"] or ()) if r else (),
                                resolved_note=r["note"] if r else None,
                                resolved_by=r["adjudicator"] if r else None,
                                validity_a=x.validity, validity_b=y.validity,
                                resolved_validity=r.get("validity") if r else None,
                                resolved_at=r["created_at"] if r else None))
    return out


@dataclass(frozen=True)
class SampleState:
    """Whether a run's review sample for one relation is closed.  Open to every reviewer (no ``team``): once
    ``k`` reviewers (``CLOSING_REVIEWERS`` by default) have each judged every drawn item (``closed_by`` names
    those who have).  Assigned (``team``: everyone with items assigned): once every team member has judged every
    item assigned to them (``closed_by`` names those who have).  Until then review stays blind."""

    run_id: int
    relation: str
    drawn: int
    closed_by: tuple[str, ...]
    k: int = review_rows.CLOSING_REVIEWERS
    team: tuple[str, ...] = ()

    @property
    def closed(self) -> bool:
        """True when all k reviewers of every drawn item have judged it."""
        if self.team:
            return self.drawn > 0 and set(self.team) <= set(self.closed_by)
        return closed_sample(self.drawn, len(self.closed_by), self.k)

    @property
    def waiting_for(self) -> str:
        """What closes the sample, in words, with how far it has got (empty once closed)."""
        if self.closed:
            return ""
        if not self.drawn:
            return "a review sample is drawn and judged"
        if self.team:
            done = len(set(self.team) & set(self.closed_by))
            return (f"each of the {len(self.team)} assigned reviewers has judged every item assigned to them "
                    f"({done} of {len(self.team)} have)")
        return (f"{self.k} reviewers have each judged all {self.drawn} drawn items ({len(self.closed_by)} of "
                f"{self.k} have)")


def sample_state(store: Store, run_id: int, relation: str) -> SampleState:
    """The review sample's state (no calls in it: anyone may ask)."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    state = review_rows.sample_closure(store, rid, relation)
    return SampleState(rid, relation, state["drawn"], tuple(state["closed_by"]), state["k"], state["team"])


@dataclass(frozen=True)
class PairView:
    """What the Agreement page shows of two reviewers: their calls, kappa and disagreements, and the
    sample's state.  Only adjudicators and admins get one (``pair_view``)."""

    agreement: Agreement
    disagreements: tuple[Disagreement, ...]
    state: SampleState


def pair_view(actor: Actor, store: Store, run_id: int, relation: str, reviewer_a: str, reviewer_b: str) -> PairView:
    """Two reviewers' calls, kappa details and disagreements over the drawn items, for ``actor`` (the
    signed-in account), who must hold the adjudicator or admin role and must not be a party to the sample
    while it is open (``blind_target``): a reviewer never sees another reviewer's calls here.
    Raises NotAllowed otherwise."""
    A.authorize(actor, A.SEE_CALLS, blind_target(store, run_id, relation,
                                                 f"the calls of {reviewer_a} and {reviewer_b}"))
    return PairView(agreement(store, run_id, relation, reviewer_a, reviewer_b),
                    tuple(disagreements(store, run_id, relation, reviewer_a, reviewer_b)),
                    sample_state(store, run_id, relation))


@dataclass(frozen=True)
class TeamDisagreement:
    """A drawn item whose reviewers (two or more of its k) did not all make the same call (verdict, and for fp
    the reasons): it has no consensus, so the adjudicator decides it.  ``calls``: every call on it, by
    reviewer; ``decided``: the adjudication, or None while it waits."""

    sample_id: str
    position: int
    calls: tuple[Judgment, ...]
    decided: Consensus | None

    @property
    def kind(self) -> str:
        """``verdict`` when the verdicts differ, else ``reasons`` (all fp, for different reasons)."""
        return VERDICT_DISAGREEMENT if len({j.verdict for j in self.calls}) > 1 else REASONS_DISAGREEMENT

    @property
    def resolved(self) -> bool:
        """True when an adjudicator decided the item."""
        return self.decided is not None

    def to_dict(self) -> dict:
        """The item as a JSON-ready dict: its calls, kind and decision."""
        return {"sample_id": self.sample_id, "position": self.position, "kind": self.kind,
                "calls": [j.to_dict() for j in self.calls], "resolved": self.resolved,
                "decided": self.decided.to_dict() if self.decided else None}


def team_disagreements(store: Store, run_id: int, relation: str) -> list[TeamDisagreement]:
    """Every drawn item, in draw order, whose calls are not all alike (any disagreement among its k reviewers,
    not only within a pair), with the adjudication if any.  Reads calls: callers pass the gate first
    (``team_view``)."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    order = {sid: i for i, sid in enumerate(drawn_items(store, rid, relation))}
    by_item: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments(store, rid, relation):
        if j.sample_id in order:
            by_item[j.sample_id].append(j)
    adj = review_rows.adjudications(store, rid, relation)
    return [TeamDisagreement(sid, order[sid], tuple(calls), _adjudicated(adj[sid]) if sid in adj else None)
            for sid, calls in sorted(by_item.items(), key=lambda kv: order[kv[0]])
            if len(calls) >= MIN_CONSENSUS_REVIEWERS and _agreed(rid, relation, calls) is None]


@dataclass(frozen=True)
class TeamView:
    """What an adjudicator sees of a whole review team: the sample's state and every item without consensus."""

    state: SampleState
    disagreements: tuple[TeamDisagreement, ...]

    @property
    def open(self) -> int:
        """Items still waiting for the adjudicator."""
        return sum(not d.resolved for d in self.disagreements)


def team_view(actor: Actor, store: Store, run_id: int, relation: str) -> TeamView:
    """Every item of the drawn review sample whose k reviewers did not all agree, for ``actor``, who must hold
    the adjudicator or admin role and not be a party to the sample while it is open (``blind_target``;
    NotAllowed otherwise)."""
    A.authorize(actor, A.SEE_CALLS, blind_target(store, run_id, relation, f"the calls on run {run_id}, {relation}"))
    return TeamView(sample_state(store, run_id, relation), tuple(team_disagreements(store, run_id, relation)))


def _adjudicated(row: dict) -> Consensus:
    return Consensus(run_id=int(row["run_id"]), sample_id=row["sample_id"], relation=row["relation"],
                     verdict=row["verdict"], reasons=tuple(row["reasons"] or ()), note=row["note"],
                     source="adjudicated", adjudicator=row["adjudicator"], reviewers=(), decided_at=row["created_at"],
                     validity=row.get("validity"))


def adjudicate(actor: Actor, store: Store, run_id: int, sample_id: str, relation: str, verdict: str,
               reasons: Iterable[str], note: str | None = None, validity: str | None = None) -> Consensus:
    """Record (or replace) the decided call of a flagged item; it overrides the reviewers' calls.

    Same checks as ``record_judgment``; ``actor`` must hold the adjudicator or admin role and must not have
    judged the item (NotAllowed otherwise).  Only a disagreement is adjudicated: an item that fewer than two
    reviewers judged, or that its reviewers agreed on, is refused (ValueError).  A second call
    replaces verdict, reasons, note, validity and adjudicator, and sets ``created_at`` to the new decision time.
    ``validity`` is the decided call on the mutant (one of ``VALIDITY``, or None: not decided); ``invalid``
    takes the item out of the precision's denominator.
    """
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    sample_id = check_sample_id(sample_id)
    verdict, reasons, note = check_call(verdict, reasons, note)
    validity = check_validity(validity)
    item_calls = judgments(store, rid, relation, sample_id=sample_id)     # this item's calls only
    parties = frozenset(j.reviewer for j in item_calls)
    A.authorize(actor, A.ADJUDICATE, Target(f"{relation} item {sample_id!r} of run {rid}", excluded=parties,
                                            excluded_because="they judged this item, so they are a party to it"))
    who = check_name(actor.name, "adjudicator name")
    if not item_calls and not review_rows.is_flagged(store, rid, sample_id, relation):
        raise ValueError(f"sample {sample_id!r} of run {rid} is not flagged by the primary {relation} vote; "
                         "only flagged inferences are reviewed")
    if len(item_calls) < MIN_CONSENSUS_REVIEWERS or _agreed(rid, relation, item_calls) is not None:
        raise ValueError(f"{relation} item {sample_id!r} of run {rid} is not a disagreement: "
                         f"{len(item_calls)} reviewer call(s), "
                         f"{'in agreement' if len(item_calls) >= MIN_CONSENSUS_REVIEWERS else 'too few to disagree'}; "
                         "only items two reviewers judged differently are adjudicated")
    return _adjudicated(review_rows.save_adjudication(store, run_id=rid, sample_id=sample_id, relation=relation,
                                                      verdict=verdict, reasons=reasons, note=note,
                                                      adjudicator=who, validity=validity))


def _agreed(run_id: int, relation: str, calls: list[Judgment]) -> Consensus | None:
    """The computed consensus of one item's judgments, or None (too few, or they differ)."""
    if len(calls) < MIN_CONSENSUS_REVIEWERS:
        return None
    first = calls[0]
    if any(j.verdict != first.verdict or j.reasons != first.reasons for j in calls[1:]):
        return None
    notes = [f"{j.reviewer}: {j.note}" for j in calls if j.note]
    validities = {j.validity for j in calls}
    return Consensus(run_id=run_id, sample_id=first.sample_id, relation=relation, verdict=first.verdict,
                     reasons=first.reasons, note=" | ".join(notes) or None, source="agreed", adjudicator=None,
                     reviewers=tuple(j.reviewer for j in calls), decided_at=max(j.updated_at for j in calls),
                     validity=validities.pop() if len(validities) == 1 else None)


def _decided(store: Store, run_id: int, relation: str) -> list[Consensus]:
    """Every decided item of a run and relation, by sample id, whether or not the sample is closed (for
    ``consensus`` and ``_precision_row``, which check that first)."""
    by_item: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments(store, run_id, relation):
        by_item[j.sample_id].append(j)
    out = {sid: _adjudicated(r) for sid, r in review_rows.adjudications(store, run_id, relation).items()}
    for sid, calls in by_item.items():
        if sid not in out:
            agreed = _agreed(run_id, relation, calls)
            if agreed is not None:
                out[sid] = agreed
    return [out[s] for s in sorted(out)]


def consensus(store: Store, run_id: int, relation: str) -> list[Consensus]:
    """Every decided item of a run and relation, by sample id; none while its review sample is open.

    An adjudication (the consensus table) wins; otherwise an item is decided when at least
    ``MIN_CONSENSUS_REVIEWERS`` reviewers judged it and all of them made the same call
    (verdict, and for fp the same reasons).  The agreed items are computed on read, not stored.
    Whether two reviewers agree says what the other one called, so nothing is decided until the
    review sample is closed (``sample_state``; never when nothing was drawn): before that a reviewer
    watching this list change after each own call would read the other's hidden calls.
    """
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    if not sample_state(store, rid, relation).closed:
        return []
    return _decided(store, rid, relation)


# ---------------------------------------------------------------- precision (EMSE21 Tables 1-3)

PRECISION_COLUMNS = (
    "run", "model", "dataset", "task", "relation",
    "flagged",                # Total: inferences the primary vote flagged
    "sample size",            # items drawn for review (Cochran); 0 when nothing was drawn
    "reviewed",               # items of the sample with a consensus (uncertain included), invalid mutants not
    "invalid mutants",        # decided items whose mutant was decided invalid: counted apart, not in precision
    "true positive", "true positive %",
    "false positive", "false positive %",
    "multiple objects",       # fp items with this reason (shared ones included, as in Table 1)
    "incomplete removal",
    "multiple & incomplete",  # fp items with both reasons: Table 1's number in parentheses
    "other",
    "fp without reason",
    "uncertain",
    "unresolved",             # judged by two or more reviewers who disagree, not adjudicated yet
    "pending",                # not enough judgments yet, or the sample is still open (not counted yet)
)
# Columns of the Total row that are not sums of the run rows.
_NOT_SUMMED = ("run", "model", "dataset", "task", "relation", "true positive %", "false positive %")


def _pct(k: int, n: int) -> float:
    return round(100.0 * k / n, 1) if n else math.nan


@kept(merge=add_counts)
def flagged_count(store: Store, run_id: int, relation: str, rows: tuple[int, int] | None = None) -> int:
    """How many inferences of ``run_id`` the primary ``relation`` vote flags (kept per state of the run).  A
    detection run's votes name units, not the sample rows ``rows`` counts, so it is counted whole."""
    if rows is not None and is_detection_run(store.get_run(run_id)):
        raise NoDelta(f"run {run_id} is a detection run: its flagged units are counted over the whole run")
    return store.flagged_count(run_id, relation, rows)


def _precision_row(store: Store, run_id: int, relation: str) -> dict:
    try:
        rec = store.get_run(run_id)
    except KeyError:
        raise ValueError(f"no run {run_id} in the store") from None
    draw = review_sample_info(store, run_id, relation)
    n_flagged = flagged_count(store, run_id, relation)
    universe = set(draw.sample_ids) if draw else set(store.flagged_sample_ids(run_id, relation))
    decided: dict[str, Consensus] = {}
    judged: dict[str, int] = defaultdict(int)
    # Blind until closed: an open sample's calls count nowhere (every item pending), so no number here moves
    # with one reviewer's call before both reviewers have closed the sample.
    if sample_state(store, run_id, relation).closed:
        decided = {x.sample_id: x for x in _decided(store, run_id, relation) if x.sample_id in universe}
        for j in judgments(store, run_id, relation):
            if j.sample_id in universe:
                judged[j.sample_id] += 1
    open_items = universe - decided.keys()
    unresolved = sum(1 for s in open_items if judged[s] >= MIN_CONSENSUS_REVIEWERS)
    # An invalid mutant tests nothing: the item is decided but leaves the precision's denominator.
    invalid = {s for s, x in decided.items() if x.validity == INVALID}
    decided = {s: x for s, x in decided.items() if s not in invalid}
    fps = [x for x in decided.values() if x.verdict == "fp"]
    has = lambda reason: sum(1 for x in fps if reason in x.reasons)  # noqa: E731
    tp = sum(1 for x in decided.values() if x.verdict == "tp")
    n = len(decided)
    return {
        "run": run_id, "model": rec.model, "dataset": rec.dataset, "task": rec.task, "relation": relation,
        "flagged": n_flagged, "sample size": draw.size if draw else 0, "reviewed": n,
        "invalid mutants": len(invalid),
        "true positive": tp, "true positive %": _pct(tp, n),
        "false positive": len(fps), "false positive %": _pct(len(fps), n),
        "multiple objects": has("multiple-objects"), "incomplete removal": has("incomplete-removal"),
        "multiple & incomplete": sum(1 for x in fps if {"multiple-objects", "incomplete-removal"} <= set(x.reasons)),
        "other": has("other"), "fp without reason": sum(1 for x in fps if not x.reasons),
        "uncertain": sum(1 for x in decided.values() if x.verdict == "uncertain"),
        "unresolved": unresolved, "pending": len(open_items) - unresolved,
    }


def precision_table(store: Store, run_ids: int | Iterable[int], relation: str) -> pd.DataFrame:
    """EMSE21 Tables 1-3 from consensus only: one row per run, plus a ``Total`` row for several.

    Counts are over the drawn review sample: the random draw is what makes the precision an
    unbiased estimate.  Only a closed sample (``sample_state``) counts: until both reviewers have
    judged every drawn item its items are all ``pending`` and nothing else moves, whatever either
    reviewer calls, so no one can read the other reviewer's hidden calls from this table (nor from
    the report built on it).  Without a draw nothing can close: every flagged item is pending.  Percentages (0-100, one
    decimal) divide by ``reviewed``, the decided items including uncertain ones, which equals the
    sample size once every drawn item is decided (the paper's denominator); NaN when nothing
    is decided.  An item whose decided validity is ``invalid`` (both reviewers said so, or the adjudicator
    did) tested nothing: it counts in ``invalid mutants`` and not in ``reviewed`` nor any precision, so
    sample size = reviewed + invalid mutants + unresolved + pending.  Columns: ``PRECISION_COLUMNS``.
    """
    import pandas as pd

    relation = check_relation(relation)
    ids = [run_ids] if isinstance(run_ids, numbers.Integral) else list(run_ids)
    rows = [_precision_row(store, check_run_id(r), relation) for r in ids]
    if len(rows) > 1:
        total = {k: sum(r[k] for r in rows) for k in PRECISION_COLUMNS if k not in _NOT_SUMMED}
        total.update(run=None, model="Total", dataset="", task="", relation=relation,
                     **{"true positive %": _pct(total["true positive"], total["reviewed"]),
                        "false positive %": _pct(total["false positive"], total["reviewed"])})
        rows.append(total)
    return pd.DataFrame(rows, columns=list(PRECISION_COLUMNS))


# ---------------------------------------------------------------- the Agreement page's compact precision view

# What a reviewer reads first of ``precision_table`` (it fits the page at 1,400 px); the full table
# (``PRECISION_COLUMNS``: reasons, uncertain, unresolved, pending) stays one click away.
PRECISION_SUMMARY_COLUMNS = ("run", "model", "relation", "flagged", "drawn", "decided", "TP", "FP", "precision",
                             "95% CI", "kappa")


def _interval_text(k: int, n: int) -> str:
    ci = wilson_interval(int(k), int(n))
    return "-" if ci is None else f"[{100 * ci[0]:.1f}%, {100 * ci[1]:.1f}%]"


def precision_summary(table: pd.DataFrame, kappas: dict[int, float | None] | None = None) -> pd.DataFrame:
    """``precision_table``'s rows in ``PRECISION_SUMMARY_COLUMNS``: flagged, drawn and decided items, true and
    false positives, the precision (true positive %, over the decided items as in the full table) with its
    95% Wilson interval (``objrel.intervals``), and each run's Cohen's kappa from ``kappas`` (run id -> kappa,
    ``pair_kappas``); without ``kappas`` the kappa column is left out."""
    import pandas as pd

    out = pd.DataFrame({
        "run": table["run"], "model": table["model"], "relation": table["relation"], "flagged": table["flagged"],
        "drawn": table["sample size"], "decided": table["reviewed"], "TP": table["true positive"],
        "FP": table["false positive"], "precision": table["true positive %"],
        "95% CI": [_interval_text(k, n) for k, n in zip(table["true positive"], table["reviewed"])],
    })
    if kappas is not None:
        out["kappa"] = [kappas.get(int(r)) if pd.notna(r) else None for r in table["run"]]
    return out[[c for c in PRECISION_SUMMARY_COLUMNS if c in out.columns]]


def pair_kappas(actor: Actor, store: Store, runs: Iterable, relation: str) -> dict[int, float | None] | None:
    """Cohen's kappa of each judged run (``judged_runs``) for ``relation``, between its first two reviewers by
    name (the pair the Agreement page opens with), over the drawn items, for an ``actor`` who may see reviewer
    pairs (adjudicators and admins); None for anyone else: review stays blind.  A run with fewer than two
    reviewers is left out, and so is a run whose open sample ``actor`` is a party to (``blind_target``)."""
    if not A.permits(actor, A.SEE_CALLS):
        return None
    A.authorize(actor, A.SEE_CALLS, "kappa of each judged run")
    out: dict[int, float | None] = {}
    for run in runs:
        names = run.reviewers_of(relation)
        if actor.name in names and not sample_state(store, run.run_id, relation).closed:
            continue
        if len(names) >= MIN_CONSENSUS_REVIEWERS:
            k = agreement(store, run.run_id, relation, names[0], names[1]).kappa
            out[run.run_id] = None if k is None else k.kappa
    return out


# ---------------------------------------------------------------- agreement of every reviewer (k raters)


@dataclass(frozen=True)
class RaterTable:
    """Every reviewer's verdict on the drawn items of (``run_id``, ``relation``): ``calls[i][r]`` is reviewer
    ``reviewers[r]``'s call on ``items[i]`` (draw order), None where they have not judged it.  ``reviewers``:
    everyone with a call on a drawn item, by name."""

    run_id: int
    relation: str
    items: tuple[str, ...]
    reviewers: tuple[str, ...]
    calls: tuple[tuple[str | None, ...], ...]


@dataclass(frozen=True)
class ManyRaterView:
    """What the Agreement page shows of every reviewer of a sample together: the items x reviewers table, its
    k-rater agreement (``objrel.review.many_raters``) and the sample's state.  Only adjudicators and admins get
    one (``many_rater_view``)."""

    table: RaterTable
    agreement: ManyRaterAgreement
    state: SampleState


def rater_table(store: Store, run_id: int, relation: str) -> RaterTable:
    """The items x reviewers table of verdicts over the drawn review sample only (an item outside the draw may
    still be judged blind).  No gate: callers that show it check it (``many_rater_view``)."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    items = drawn_items(store, rid, relation)
    drawn = set(items)
    by_item: dict[str, dict[str, str]] = defaultdict(dict)
    for j in judgments(store, rid, relation):
        if j.sample_id in drawn:
            by_item[j.sample_id][j.reviewer] = j.verdict
    reviewers = tuple(sorted({name for calls in by_item.values() for name in calls}))
    return RaterTable(rid, relation, items, reviewers,
                      tuple(tuple(by_item[s].get(r) for r in reviewers) for s in items))


def many_rater_view(actor: Actor, store: Store, run_id: int, relation: str, *,
                    confidence: float = DEFAULT_CONFIDENCE, seed: int = ALPHA_BOOTSTRAP_SEED) -> ManyRaterView:
    """Fleiss' kappa and Krippendorff's alpha of every reviewer's verdicts on the drawn items of (``run_id``,
    ``relation``), per verdict, and the pairwise kappa, AC1 and PABAK, for ``actor``, who must hold the
    adjudicator or admin role and must not be a party to the sample while it is open (``blind_target``), like
    ``pair_view``.  ``seed`` starts alpha's bootstrap.  Raises NotAllowed otherwise."""
    A.authorize(actor, A.SEE_CALLS, blind_target(store, run_id, relation, "the calls of every reviewer"))
    table = rater_table(store, run_id, relation)
    return ManyRaterView(table, many_rater_agreement(table.calls, table.reviewers, confidence=confidence,
                                                     seed=seed),
                         sample_state(store, run_id, relation))
