"""How fast a reviewer works: seconds per item and items per hour, from the times of their calls.

A reviewer's first call on each item is stamped (``Judgment.created_at``).  Sorted, the gaps between
consecutive calls are the time each item took, except where the reviewer stopped: a gap longer than
``BREAK_S`` is a pause (lunch, a meeting, the next day) and is left out, so a day with a break does not
read as a slow day.  ``seconds_per_item`` is the median of the kept gaps (one slow item does not move it);
``items_per_hour`` is the kept items over the kept time (what an hour of work yields).
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from objrel import access as A
from objrel.access import Actor
from objrel.store import Store

# A gap between two calls longer than this many seconds is a pause, not the time the second item took.
BREAK_S = 300.0
SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Pace:
    """One reviewer's pace: ``calls`` items called in all, ``timed`` of them with a gap from the call before
    under ``BREAK_S``; ``seconds_per_item`` (median gap) and ``items_per_hour`` are None with no timed item."""

    reviewer: str
    calls: int
    timed: int
    seconds_per_item: float | None
    items_per_hour: float | None

    def to_dict(self) -> dict:
        """The fields as a plain dict."""
        return {"reviewer": self.reviewer, "calls": self.calls, "timed": self.timed,
                "seconds_per_item": self.seconds_per_item, "items_per_hour": self.items_per_hour}


def pace(reviewer: str, times: Iterable[dt.datetime], break_s: float = BREAK_S) -> Pace:
    """The pace of ``reviewer`` from the times of their calls (any order; naive times are read as UTC)."""
    if not break_s > 0:
        raise ValueError(f"break_s must be a number of seconds > 0; got {break_s!r}")
    stamps = sorted(t if t.tzinfo is not None else t.replace(tzinfo=dt.timezone.utc) for t in times)
    gaps = [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:])]
    kept = [g for g in gaps if g <= break_s]
    if not kept:
        return Pace(reviewer, len(stamps), 0, None, None)
    total = sum(kept)
    per_hour = SECONDS_PER_HOUR * len(kept) / total if total > 0 else None
    return Pace(reviewer, len(stamps), len(kept), float(statistics.median(kept)), per_hour)


def my_pace(actor: Actor, store: Store, queues: Iterable[tuple[int, str]]) -> Pace:
    """The signed-in reviewer's own pace over their calls in ``queues`` ([(run id, relation), ...])."""
    from objrel.review.judgments import judgments

    if not actor.signed_in:
        raise ValueError("a pace belongs to a signed-in reviewer; nobody is signed in")
    times = [j.created_at for run_id, relation in dict.fromkeys(queues)
             for j in judgments(store, run_id, relation, reviewer=actor.name)]
    return pace(actor.name, times)


def team_pace(actor: Actor, store: Store, run_id: int, relation: str) -> list[Pace]:
    """Every reviewer's pace on one run and relation, by name: when each call was made, never what it was.
    For the people who oversee the review (adjudicators, admins: the gate's ``see-calls`` rule)."""
    from objrel.review.judgments import check_relation, check_run_id, judgments

    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.SEE_CALLS, f"the review pace of run {rid}, {relation}")
    by_reviewer: dict[str, list[dt.datetime]] = {}
    for j in judgments(store, rid, relation):
        by_reviewer.setdefault(j.reviewer, []).append(j.created_at)
    return [pace(name, times) for name, times in sorted(by_reviewer.items())]
