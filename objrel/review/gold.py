"""Gold items: items an admin marked with a known call, mixed unannounced into every reviewer's queue.

An admin marks a flagged item of a run and relation gold with its known call (``MARK_GOLD``).  Every reviewer's
review-sample queue then holds the gold items too, at positions fixed by the item's id (``mix_gold``), with
nothing on the page saying which they are; a reviewer calls them like any other item.  Each reviewer's accuracy
on them (their calls that equal the known call, over the gold items they called) is shown:

* to the reviewer and their partner in calibration, once the sample closes (``objrel.review.calibration``);
* to an admin at once (``gold_scores``, the gate's ``SEE_GOLD`` on ``blind_target``), with the known calls.

Nothing here tells a reviewer which items are gold or what their known call is.  No Streamlit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from objrel import access as A
from objrel.access import Actor
from objrel.review.judgments import (VERDICTS, blind_target, check_relation, check_run_id, check_sample_id,
                                     judgments)
from objrel.store import Store
from objrel.store import comments as rows
from objrel.store.reviews import is_flagged


@dataclass(frozen=True)
class GoldItem:
    """One gold item: its sample id, the known call (one of ``VERDICTS``) and the admin who set it."""

    sample_id: str
    call: str
    marked_by: str


@dataclass(frozen=True)
class GoldScore:
    """One reviewer's calls on the gold items of a run and relation: ``called`` gold items they judged,
    ``correct`` of those equal to the known call."""

    reviewer: str
    called: int
    correct: int
    total: int          # gold items of the run and relation

    @property
    def accuracy(self) -> float | None:
        """``correct / called`` in [0, 1]; None before the reviewer called any gold item."""
        return self.correct / self.called if self.called else None

    @property
    def text(self) -> str:
        """The score in words: ``2 of 3 gold items right (67%)``, or that none was called yet."""
        if not self.called:
            return f"no gold item called yet ({self.total} in the queue)"
        return f"{self.correct} of {self.called} gold items right ({self.accuracy:.0%})"


def mix_gold(sample_ids: Sequence[str], gold_ids: Iterable[str]) -> tuple[str, ...]:
    """``sample_ids`` (the draw, in order) with each gold id not already in it put in at a position fixed by a
    hash of the id, so every reviewer meets the gold items at the same places and reloads keep the order."""
    out = list(sample_ids)
    have = set(out)
    for gid in sorted(set(gold_ids) - have):
        slot = int.from_bytes(hashlib.blake2b(gid.encode(), digest_size=8).digest(), "big") % (len(out) + 1)
        out.insert(slot, gid)
    return tuple(out)


def gold_ids(store: Store, run_id: int, relation: str) -> tuple[str, ...]:
    """The ids of the gold items of a run and relation (no known call: what a queue needs to mix them in)."""
    return tuple(rows.gold(store, check_run_id(run_id), check_relation(relation)))


def _what(run_id: int, relation: str) -> str:
    return f"the gold items of run {run_id} ({relation})"


def mark_gold(actor: Actor, store: Store, run_id: int, relation: str, sample_id: str, call: str) -> GoldItem:
    """Mark the item gold with the known ``call`` (one of ``VERDICTS``; marking again replaces it).  NotAllowed
    for anyone but an admin; ValueError for an unknown call or an item not flagged by the run's primary vote."""
    rid, relation, sid = check_run_id(run_id), check_relation(relation), check_sample_id(sample_id)
    A.authorize(actor, A.MARK_GOLD, _what(rid, relation))
    if call not in VERDICTS:
        raise ValueError(f"a gold item's known call is one of {', '.join(VERDICTS)}; got {call!r}")
    if not is_flagged(store, rid, sid, relation):
        raise ValueError(f"sample {sid!r} of run {rid} is not flagged by the primary {relation} vote; only items a "
                         "reviewer can be asked to judge can be gold")
    row = rows.set_gold(store, run_id=rid, relation=relation, sample_id=sid, call=call, marked_by=actor.name)
    return GoldItem(row["sample_id"], row["call"], row["marked_by"])


def unmark_gold(actor: Actor, store: Store, run_id: int, relation: str, sample_id: str) -> bool:
    """Take the item out of the gold items; True when it was one.  NotAllowed for anyone but an admin."""
    rid, relation, sid = check_run_id(run_id), check_relation(relation), check_sample_id(sample_id)
    A.authorize(actor, A.MARK_GOLD, _what(rid, relation))
    return rows.drop_gold(store, run_id=rid, relation=relation, sample_id=sid)


def scores(store: Store, run_id: int, relation: str, reviewers: Iterable[str] | None = None) -> tuple[GoldScore, ...]:
    """Each reviewer's score on the gold items (every reviewer who called one, or ``reviewers``), by name.
    No gate: callers that show it (calibration, ``gold_scores``) ask the gate first."""
    known = rows.gold(store, run_id, relation)
    called: dict[str, list[bool]] = {}
    for j in judgments(store, run_id, relation):
        if j.sample_id in known:
            called.setdefault(j.reviewer, []).append(j.verdict == known[j.sample_id]["call"])
    names = sorted(called) if reviewers is None else list(reviewers)
    return tuple(GoldScore(n, len(called.get(n, ())), sum(called.get(n, ())), len(known)) for n in names)


@dataclass(frozen=True)
class GoldView:
    """What an admin sees of a run and relation's gold items: the items with their known calls and every
    reviewer's score."""

    items: tuple[GoldItem, ...]
    scores: tuple[GoldScore, ...]


def gold_view(actor: Actor, store: Store, run_id: int, relation: str) -> GoldView:
    """The gold items and every reviewer's accuracy on them, for an admin (``SEE_GOLD``; a party to the open
    sample is refused, as for any view of reviewers' calls)."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.SEE_GOLD, blind_target(store, rid, relation, _what(rid, relation)))
    known = rows.gold(store, rid, relation)
    return GoldView(tuple(GoldItem(sid, r["call"], r["marked_by"]) for sid, r in known.items()),
                    scores(store, rid, relation))
