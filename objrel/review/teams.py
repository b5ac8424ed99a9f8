"""Review teams: k reviewers per drawn item, who they are, and how far each has got.

A drawn review sample (``objrel.review.sampling``) is judged by ``k`` reviewers per item (2 by default, as
before teams).  Without assignments every reviewer may judge every drawn item and the sample closes once k of
them have judged all of it.  An admin may instead give each item its team of k: by hand
(``assign_reviewers``) or spread evenly over a pool (``spread_reviewers``: each reviewer gets the same number
of items, give or take one).  Then only an item's team judges it, each reviewer's queue holds only their items,
and the sample closes once every team member has judged every item assigned to them.  Review stays blind for
all k until then (``objrel.review.judgments.blind_target``).

``workload`` is the admin's view: for every drawn sample, each reviewer's items and how many they judged, never
what they called.  Every action passes the gate (``ASSIGN_REVIEWERS``, ``SEE_WORKLOAD``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from objrel import access as A
from objrel.access import Actor
from objrel.review.accounts import check_name
from objrel.review.judgments import RELATIONS, check_relation, check_run_id, may_still_judge
from objrel.review.sampling import check_k, review_sample_info
from objrel.store import Store
from objrel.store import reviews as review_rows


@dataclass(frozen=True)
class Workload:
    """One reviewer's share of one drawn review sample: ``items`` they are to judge (every drawn item when the
    sample is open to everyone), ``judged`` of those, and whether the sample is ``assigned`` to teams."""

    run_id: int
    run_name: str
    relation: str
    k: int
    reviewer: str
    items: int
    judged: int
    assigned: bool

    @property
    def done(self) -> bool:
        """True when the reviewer judged every item they are to judge."""
        return self.items > 0 and self.judged >= self.items

    @property
    def share(self) -> float:
        """How far the reviewer has got, in [0, 1]."""
        return min(1.0, self.judged / self.items) if self.items else 0.0


def _what(run_id: int, relation: str) -> str:
    return f"the {relation} review sample of run {run_id}"


def set_reviewers_per_item(actor: Actor, store: Store, run_id: int, relation: str, k: int) -> int:
    """Set how many reviewers judge each item of the stored draw (at least 2); returns k.  Only an admin
    (``ASSIGN_REVIEWERS``; NotAllowed otherwise).  ValueError when nothing is drawn or the draw is assigned to
    teams (a team's size is its k: redraw to change it)."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.ASSIGN_REVIEWERS, _what(rid, relation))
    return review_rows.set_draw_k(store, rid, relation, check_k(k))


def assign_reviewers(actor: Actor, store: Store, run_id: int, relation: str,
                     plan: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, ...]]:
    """Give the drawn items of ``plan`` (sample id -> reviewer names) those reviewers; returns every drawn item's
    team.  An admin only (``ASSIGN_REVIEWERS``).  A draw open to everyone is assigned whole; an assigned one may
    change some items.  Every named account must hold the reviewer role, and every drawn item ends with exactly
    k reviewers, none of whom adjudicated it, and keeps any reviewer who already judged it (ValueError
    otherwise, nothing written)."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.ASSIGN_REVIEWERS, _what(rid, relation))
    clean = {str(sid): tuple(check_name(n, "reviewer name") for n in names) for sid, names in plan.items()}
    _require_reviewer_role(store, {n for names in clean.values() for n in names})
    adjudicated = review_rows.adjudications(store, rid, relation)
    for sid, names in clean.items():
        decider = adjudicated.get(sid, {}).get("adjudicator")
        if decider in names:
            raise ValueError(f"{decider!r} adjudicated {sid!r}, so they cannot be on its team")
    return review_rows.save_assignments(store, rid, relation, clean, assigned_by=actor.name)


def _require_reviewer_role(store: Store, names: set[str]) -> None:
    reviewers = may_still_judge(store)
    missing = sorted(names - reviewers)
    if missing:
        raise ValueError(f"only accounts with the reviewer role judge items; {', '.join(map(repr, missing))} "
                         f"{'has' if len(missing) == 1 else 'have'} no such role")


def spread_plan(items: Sequence[str], pool: Sequence[str], k: int,
                fixed: Mapping[str, Iterable[str]] | None = None) -> dict[str, tuple[str, ...]]:
    """An even spread of ``items`` (in draw order) over ``pool``: each item gets ``k`` different reviewers, the
    ones with the fewest items so far (ties go round the pool, so consecutive items rotate), after those of
    ``fixed`` (item -> reviewers who must stay on it, e.g. because they judged it).  Without ``fixed`` every
    reviewer gets ``len(items) * k // len(pool)`` items or one more.  ValueError when the pool holds fewer than
    k different names or a fixed team is larger than k."""
    names = sorted(set(pool))
    if len(names) < k:
        raise ValueError(f"a pool of {len(names)} reviewer(s) cannot give each item {k} different reviewers")
    load: Counter[str] = Counter({n: 0 for n in names})
    out: dict[str, tuple[str, ...]] = {}
    for i, sid in enumerate(items):
        team = sorted(set((fixed or {}).get(sid, ())))
        if len(team) > k:
            raise ValueError(f"{sid!r} was judged by {len(team)} reviewers ({', '.join(team)}), more than k = {k}")
        rest = sorted((n for n in names if n not in team), key=lambda n: (load[n], (names.index(n) - i) % len(names)))
        team = sorted([*team, *rest[:k - len(team)]])
        for n in team:
            load[n] += 1
        out[sid] = tuple(team)
    return out


def spread_reviewers(actor: Actor, store: Store, run_id: int, relation: str,
                     pool: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Assign the whole drawn sample evenly over ``pool`` (``spread_plan``, each item's k reviewers); whoever
    already judged an item stays on its team.  An admin only; the same checks as ``assign_reviewers``."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.ASSIGN_REVIEWERS, _what(rid, relation))
    draw = review_sample_info(store, rid, relation)
    if draw is None:
        raise ValueError(f"no {relation} review sample of run {rid} has been drawn: draw it before assigning "
                         "reviewers")
    names = [check_name(n, "reviewer name") for n in pool]
    judged: dict[str, set[str]] = {}
    for row in review_rows.judgment_rows(store, rid, relation):
        judged.setdefault(row["sample_id"], set()).add(row["reviewer"])
    plan = spread_plan(draw.sample_ids, names, draw.k,
                       {sid: judged[sid] for sid in draw.sample_ids if sid in judged})
    return assign_reviewers(actor, store, rid, relation, plan)


def teams(store: Store, run_id: int, relation: str) -> dict[str, tuple[str, ...]]:
    """Each drawn item's team (sample id -> reviewers); empty when the draw is open to every reviewer.  Who
    judges what is no call: anyone may ask."""
    return review_rows.assignments(store, check_run_id(run_id), check_relation(relation))


def _sample_workload(store: Store, run_id: int, run_name: str, relation: str) -> list[Workload]:
    draw = review_sample_info(store, run_id, relation)
    if draw is None:
        return []
    drawn = set(draw.sample_ids)
    done: Counter[str] = Counter(r["reviewer"] for r in review_rows.judgment_rows(store, run_id, relation)
                                 if r["sample_id"] in drawn)
    assigned = review_rows.assignments(store, run_id, relation)
    if not assigned:
        return [Workload(run_id, run_name, relation, draw.k, who, draw.size, n, False)
                for who, n in sorted(done.items())]
    items: Counter[str] = Counter(n for team in assigned.values() for n in team)
    mine: Counter[str] = Counter()
    for row in review_rows.judgment_rows(store, run_id, relation):
        if row["reviewer"] in assigned.get(row["sample_id"], ()):
            mine[row["reviewer"]] += 1
    return [Workload(run_id, run_name, relation, draw.k, who, items[who], mine[who], True) for who in sorted(items)]


def workload(actor: Actor, store: Store) -> tuple[Workload, ...]:
    """Every reviewer's share of every drawn review sample, runs oldest first: their items and how many they
    judged (an open sample lists those who judged at least one of its items).  An admin only (``SEE_WORKLOAD``;
    NotAllowed otherwise); no call is read out, only counts."""
    A.authorize(actor, A.SEE_WORKLOAD, "every reviewer's review queues")
    out: list[Workload] = []
    for run in store.list_runs():
        for relation in RELATIONS:
            out.extend(_sample_workload(store, int(run.id), run.name, relation))
    return tuple(out)
