"""The review sample: which flagged inferences get reviewed, in which order (EMSE21 s5.1.2).

``draw_review_sample`` draws ``cochran_sample_size(N)`` of the N inferences the primary vote
flagged for one relation of one run (95% confidence, 5% margin, p = 0.5) and stores the draw,
so every reviewer sees the same items in the same order, each judged by ``k`` reviewers (2 by default;
``objrel.review.teams`` assigns them).  ``review_queue`` is that order as one reviewer sees it: with their own
calls only, never another reviewer's, and, when the draw is assigned, only the items assigned to them.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from objrel import access as A
from objrel.access import Actor
from objrel.review.accounts import check_name
from objrel.review.judgments import check_relation, check_run_id, judgments
from objrel.store import Store
from objrel.store import reviews as review_rows

# Cochran's formula defaults (EMSE21 s5.1.2): 95% confidence, +-5% margin, p = 0.5 (the
# most conservative proportion: it gives the largest sample).
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MARGIN = 0.05
DEFAULT_PROPORTION = 0.5
# Seed of the review draw when none is given; the draw is stored, so the seed only matters once.
DEFAULT_REVIEW_SEED = 0
# Slack below an integer that still rounds down: N = 1 gives n = 1.0000000000000002, which must stay 1.
_CEIL_SLACK = 1e-9


@dataclass(frozen=True)
class SampleDraw:
    """The stored review sample of one run and relation: ``sample_ids`` in draw order, drawn
    with ``seed`` from ``population`` flagged inferences; ``k`` reviewers judge each item."""

    run_id: int
    relation: str
    seed: int
    population: int
    sample_ids: tuple[str, ...]
    k: int = review_rows.CLOSING_REVIEWERS

    @property
    def size(self) -> int:
        """How many samples were drawn."""
        return len(self.sample_ids)

    def to_dict(self) -> dict:
        """The review sample as a JSON-ready dict."""
        d = asdict(self)
        d["sample_ids"] = list(self.sample_ids)
        return d


@dataclass(frozen=True)
class QueueItem:
    """One drawn item as one reviewer sees it: only their own call, never another reviewer's."""

    sample_id: str
    position: int
    judged_by_me: bool
    my_verdict: str | None
    my_reasons: tuple[str, ...] = ()
    my_note: str | None = None
    my_validity: str | None = None

    def to_dict(self) -> dict:
        """The item as a JSON-ready dict."""
        d = asdict(self)
        d["my_reasons"] = list(self.my_reasons)
        return d


def cochran_sample_size(population: int, confidence: float = DEFAULT_CONFIDENCE, margin: float = DEFAULT_MARGIN,
                        p: float = DEFAULT_PROPORTION) -> int:
    """Cochran's (1963) sample size for a proportion, with the finite population correction.

    n0 = z^2 p (1 - p) / e^2 with z = Phi^-1(1 - (1 - confidence) / 2); n = n0 / (1 + (n0 - 1) / N),
    rounded up (never above N); 0 for an empty population.  Defaults (95%, e = 0.05, p = 0.5)
    give n0 = 384.15, e.g. N = 1,000 -> 278, N = 10,000 -> 370.
    """
    if isinstance(population, bool) or not isinstance(population, int) or population < 0:
        raise ValueError(f"population must be a non-negative integer; got {population!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1; got {confidence!r}")
    if not 0 < margin < 1:
        raise ValueError(f"margin must lie strictly between 0 and 1; got {margin!r}")
    if not 0 < p < 1:
        raise ValueError(f"p must lie strictly between 0 and 1; got {p!r}")
    if population == 0:
        return 0
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - confidence) / 2))
    n0 = z * z * p * (1 - p) / (margin * margin)
    n = n0 / (1 + (n0 - 1) / population)
    return min(population, max(1, math.ceil(n - _CEIL_SLACK)))


def _draw(run_id: int, relation: str, stored: dict) -> SampleDraw:
    return SampleDraw(run_id=run_id, relation=relation, seed=stored["seed"], population=stored["population"],
                      sample_ids=tuple(stored["sample_ids"]), k=int(stored.get("k", review_rows.CLOSING_REVIEWERS)))


def check_k(k: object) -> int:
    """``k`` (reviewers per drawn item) as an int; ValueError unless it is an integer of at least
    ``review_rows.MIN_REVIEWERS_PER_ITEM`` (bool is not)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < review_rows.MIN_REVIEWERS_PER_ITEM:
        raise ValueError(f"reviewers per item (k) must be an integer of at least "
                         f"{review_rows.MIN_REVIEWERS_PER_ITEM}; got {k!r}")
    return int(k)


def review_sample_info(store: Store, run_id: int, relation: str) -> SampleDraw | None:
    """The stored draw (seed, population N, ids in order), or None when none was drawn yet."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    stored = review_rows.review_sample(store, rid, relation)
    return _draw(rid, relation, stored) if stored is not None else None


def _seed_mismatch(draw: SampleDraw, seed: int) -> ValueError:
    return ValueError(f"run {draw.run_id} already has a {draw.relation} review sample drawn with seed {draw.seed} "
                      f"({draw.size} of {draw.population}); asked for seed {seed}. Pass redraw=True to replace it "
                      "(judgments stay; items outside the new draw leave the queue)")


def draw_review_sample(actor: Actor, store: Store, run_id: int, relation: str, seed: int = DEFAULT_REVIEW_SEED,
                       redraw: bool = False, explain_ahead: bool = False,
                       k: int = review_rows.CLOSING_REVIEWERS) -> list[str]:
    """The review sample of a run's flagged inferences for ``relation``, drawn once and stored.

    The first call draws ``cochran_sample_size(N)`` of the N flagged sample ids (sorted, then
    ``numpy.random.default_rng(seed).choice(N, n, replace=False)``) and stores them with their
    positions; later calls return the stored draw in the same order, even when the flagged set
    has changed since (the stored ``population`` says what N was).  Concurrent first calls are
    serialised, so all of them get the one stored draw.  A seed other than the stored one raises
    ValueError unless ``redraw=True``, which replaces the draw.  ``k`` (at least 2) is how many reviewers
    judge each item of a new draw; a stored draw keeps its own (``objrel.review.teams.set_reviewers_per_item``).

    ``actor`` must hold a reviewing role (reviewer, adjudicator, admin) to draw; only an admin may redraw
    (NotAllowed otherwise): replacing a draw changes every reviewer's queue.

    ``explain_ahead`` (the app passes True): once a sample of a classifier run is drawn here, its LIME
    starts in a background process (``objrel.review.lime_ahead.start_lime_job``); a stored draw returned
    as it is starts nothing.
    """
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    A.authorize(actor, A.REDRAW_SAMPLE if redraw else A.DRAW_SAMPLE, f"run {rid}, {relation}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    k = check_k(k)
    if not redraw:
        stored = review_sample_info(store, rid, relation)
        if stored is not None:
            if stored.seed != seed:
                raise _seed_mismatch(stored, seed)
            return list(stored.sample_ids)

    def pick(population: list[str]) -> list[str]:
        import numpy as np

        n = cochran_sample_size(len(population))
        picks = np.random.default_rng(seed).choice(len(population), size=n, replace=False) if n else []
        return [population[int(i)] for i in picks]

    draw = _draw(rid, relation, review_rows.store_review_sample(store, rid, relation, seed, pick, replace=redraw,
                                                                k=k))
    if draw.seed != seed:  # a concurrent caller drew first, with another seed
        raise _seed_mismatch(draw, seed)
    if explain_ahead and draw.sample_ids:
        from objrel.review.lime_ahead import explainable_run, start_lime_job

        if explainable_run(store, rid):
            start_lime_job(actor, store, rid, relation)
    return list(draw.sample_ids)


def review_queue(actor: Actor, store: Store, run_id: int, relation: str,
                 explain_ahead: bool = False, draw: bool = True) -> list[QueueItem]:
    """The drawn items in draw order, each with ``actor``'s own call (if any).

    Blind by construction: only ``actor``'s judgments are read.  When the draw is assigned to teams
    (``objrel.review.teams``) and ``actor`` is on one, only the items assigned to them; someone on no team (an
    adjudicator looking through) sees every drawn item, and the gate refuses their call.  When nothing was drawn yet
    the sample is drawn with ``DEFAULT_REVIEW_SEED`` (and stored) first, which needs a reviewing role;
    ``explain_ahead`` then starts its LIME in the background (``draw_review_sample``).  ``draw=False``
    (someone who only looks) draws nothing: ValueError when no sample was drawn yet.
    """
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    who = check_name(actor.name, "reviewer name")
    stored = review_sample_info(store, rid, relation)
    if stored is None and not draw:
        raise ValueError(f"no {relation} review sample of run {rid} has been drawn yet; the first reviewer to open "
                         "it draws it")
    ids = list(stored.sample_ids) if stored else draw_review_sample(actor, store, rid, relation, DEFAULT_REVIEW_SEED,
                                                                explain_ahead=explain_ahead)
    mine_to_judge = assigned_to(store, rid, relation, who)
    if mine_to_judge:
        ids = [sid for sid in ids if sid in mine_to_judge]
    mine = {j.sample_id: j for j in judgments(store, rid, relation, reviewer=who)}
    out = []
    for pos, sid in enumerate(ids):
        j = mine.get(sid)
        out.append(QueueItem(sample_id=sid, position=pos, judged_by_me=j is not None,
                             my_verdict=j.verdict if j else None, my_reasons=j.reasons if j else (),
                             my_note=j.note if j else None, my_validity=j.validity if j else None))
    return out


def assigned_to(store: Store, run_id: int, relation: str, reviewer: str) -> frozenset[str]:
    """The drawn items of (``run_id``, ``relation``) assigned to ``reviewer``; empty when the draw is open to
    every reviewer or they are on no item's team."""
    return frozenset(sid for sid, team in review_rows.assignments(store, run_id, relation).items()
                     if reviewer in team)
