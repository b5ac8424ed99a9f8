"""A reviewer's pace, from hand-computed call times."""

from __future__ import annotations

import datetime as dt

import pytest

from objrel import access as A
from objrel import review
from objrel.errors import NotAllowed
from objrel.review.roles import actor_of
from objrel.review.throughput import BREAK_S, my_pace, pace, team_pace

T0 = dt.datetime(2026, 3, 2, 9, 0, 0, tzinfo=dt.timezone.utc)


def at(*seconds: float) -> list[dt.datetime]:
    return [T0 + dt.timedelta(seconds=s) for s in seconds]


def test_pace_is_the_median_gap_and_the_calls_over_the_working_time():
    # gaps 10, 20, 30, 40 s: median 25 s; 4 items in 100 s of work -> 144 an hour
    p = pace("alice", at(0, 10, 30, 60, 100))
    assert (p.calls, p.timed) == (5, 4)
    assert p.seconds_per_item == 25.0
    assert p.items_per_hour == pytest.approx(3600 * 4 / 100)


def test_a_break_is_left_out_and_the_order_of_the_calls_does_not_matter():
    # gaps 12, 6, an hour's break, 9: the break is no item's time -> median of 12, 6, 9 = 9; 3 items in 27 s
    p = pace("bob", at(3618 + 9, 0, 12, 18, 3618))
    assert (p.calls, p.timed) == (5, 3)
    assert p.seconds_per_item == 9.0
    assert p.items_per_hour == pytest.approx(3600 * 3 / 27)
    # a gap of exactly the break length still counts as work
    assert pace("bob", at(0, BREAK_S)).timed == 1


def test_no_pace_from_one_call_or_only_breaks_and_naive_times_are_utc():
    assert pace("carl", at(0)) == pace("carl", at(0)).__class__("carl", 1, 0, None, None)
    assert pace("carl", at(0, 4000, 9000)).seconds_per_item is None
    naive = [t.replace(tzinfo=None) for t in at(0, 30)]
    assert pace("carl", naive).seconds_per_item == 30.0
    with pytest.raises(ValueError, match="break_s must be a number of seconds > 0"):
        pace("carl", at(0, 1), break_s=0)


def test_my_pace_and_the_teams_read_only_call_times(flagged_store):
    store, run_id = flagged_store
    for name in ("alice", "bob"):
        review.create_reviewer(store, name, f"{name}-passphrase")
    review.create_reviewer(store, "carol", "carol-passphrase", roles=(review.ADJUDICATOR,))
    for sid in ("1", "2", "3"):
        review.record_judgment(actor_of(store, "alice"), store, run_id, sid, "MR-2", "tp")
    review.record_judgment(actor_of(store, "bob"), store, run_id, "1", "MR-2", "fp")
    mine = my_pace(actor_of(store, "alice"), store, [(run_id, "MR-2"), (run_id, "MR-2")])
    assert (mine.reviewer, mine.calls, mine.timed) == ("alice", 3, 2)      # a queue named twice counts once
    team = team_pace(actor_of(store, "carol"), store, run_id, "MR-2")
    assert [(p.reviewer, p.calls) for p in team] == [("alice", 3), ("bob", 1)]
    with pytest.raises(NotAllowed):
        team_pace(actor_of(store, "bob"), store, run_id, "MR-2")     # a reviewer does not see the others' pace
    with pytest.raises(ValueError, match="signed-in"):
        my_pace(A.ANONYMOUS, store, [(run_id, "MR-2")])
