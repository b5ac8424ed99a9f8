"""Review teams: k reviewers per drawn item, assigned by an admin or spread evenly, blind for all k until all k
close, every item without consensus at the adjudicator, and each person's queue and progress."""

from __future__ import annotations

from collections import Counter

import pytest

from objrel import review
from objrel.access import SERVER
from objrel.errors import NotAllowed
from objrel.review.agreement import team_view
from objrel.review import my_work as M
from objrel.review import teams as T
from objrel.review.roles import actor_of
from objrel.store import reviews as review_rows
from objrel.store import schema as S
from tests.review.test_review import make_run

RELATION = "MR-2"
TEAM = ("ann", "ben", "cat", "dan")       # the pool: four reviewers
K = 3
ITEMS = [f"s{i:02d}" for i in range(8)]   # Cochran draws all eight of eight flagged items
# The calls of each item's team, by rank in the team (sorted names): alike, a 2-1 verdict split, or all fp with
# different reasons.  Item i gets CALLS[i % len(CALLS)].
ALIKE = (("tp", ()), ("tp", ()), ("tp", ()))
SPLIT = (("tp", ()), ("fp", ("other",)), ("tp", ()))
REASONS = (("fp", ("multiple-objects",)), ("fp", ("multiple-objects",)), ("fp", ("incomplete-removal",)))
CALLS = (ALIKE, SPLIT, REASONS, ALIKE)


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


@pytest.fixture
def team_run(store):
    """Four reviewers, an adjudicator (carol) and an admin; a run whose eight MR-2 items are drawn with k = 3."""
    for name in TEAM:
        review.create_reviewer(store, name, f"{name}-passphrase")
    review.create_reviewer(store, "carol", "carol-passphrase", roles=[review.ADJUDICATOR])
    review.create_reviewer(store, "root", "root-passphrase", roles=[review.ADMIN])
    rid = make_run(store, mr2=ITEMS)
    assert sorted(review.draw_review_sample(actor_of(store, "root"), store, rid, RELATION, k=K)) == ITEMS
    return store, rid


def call_of(sid: str, name: str, team: tuple[str, ...]) -> tuple[str, tuple[str, ...], str | None]:
    verdict, reasons = CALLS[ITEMS.index(sid) % len(CALLS)][team.index(name)]
    return verdict, reasons, "why" if "other" in reasons else None


def test_four_reviewers_at_k3_stay_blind_until_all_three_close_and_every_split_item_reaches_the_adjudicator(
        team_run):
    store, rid = team_run
    root, carol = actor_of(store, "root"), actor_of(store, "carol")
    teams = T.spread_reviewers(root, store, rid, RELATION, TEAM)
    assert set(teams) == set(ITEMS) and all(len(t) == K for t in teams.values())
    assert Counter(n for t in teams.values() for n in t) == {"ann": 6, "ben": 6, "cat": 6, "dan": 6}  # 8 x 3 / 4

    # every reviewer's queue holds only their items; they judge them one by one, and the calls stay blind
    order = [(sid, name) for rank in range(K) for sid in ITEMS for name in [teams[sid][rank]]]
    for n, (sid, name) in enumerate(order):
        who = actor_of(store, name)
        queue = review.review_queue(who, store, rid, RELATION)
        assert {q.sample_id for q in queue} == {s for s, t in teams.items() if name in t}
        verdict, reasons, note = call_of(sid, name, teams[sid])
        review.record_judgment(who, store, rid, sid, RELATION, verdict, reasons, note)
        state = review.sample_state(store, rid, RELATION)
        last = n == len(order) - 1
        assert state.closed is last, (n, state)
        if last:
            break
        # open: each reviewer sees only their own calls, and nothing decided moves
        assert review.consensus(store, rid, RELATION) == []
        assert review.precision_table(store, rid, RELATION).loc[0, "pending"] == len(ITEMS)
        for other in TEAM:
            if other != name:
                with pytest.raises(NotAllowed):
                    review.judgment_history(who, store, rid, sid, RELATION, other)
        with pytest.raises(NotAllowed):
            team_view(who, store, rid, RELATION)
        with pytest.raises(NotAllowed, match="not closed yet"):    # calibration shows the others' calls
            review.calibration(who, store, rid, RELATION)
        mine = [q for q in review.review_queue(who, store, rid, RELATION) if q.judged_by_me]
        assert all(review_rows.judgment_rows(store, rid, RELATION, name, sample_id=q.sample_id)[0]["verdict"]
                   == q.my_verdict for q in mine)
    # two of three calls on every item were in long before it closed: k = 2 would have closed then, k = 3 did not
    assert review.sample_state(store, rid, RELATION).closed_by == TEAM

    # closed: every item whose three calls are not all alike reaches the adjudicator, the rest are agreed
    drawn = review.review_sample_info(store, rid, RELATION).sample_ids
    split = [s for s in drawn if CALLS[ITEMS.index(s) % len(CALLS)] is not ALIKE]     # in draw order
    view = team_view(carol, store, rid, RELATION)
    assert [d.sample_id for d in view.disagreements] == split
    assert all(len(d.calls) == K for d in view.disagreements)
    assert {d.sample_id: d.kind for d in view.disagreements} == {
        s: "verdict" if CALLS[ITEMS.index(s) % len(CALLS)] is SPLIT else "reasons" for s in split}
    assert [(d.open, d.decided) for d in M.my_work(carol, store).disputes] == [(len(split), 0)]
    assert {c.sample_id for c in review.consensus(store, rid, RELATION)} == set(ITEMS) - set(split)
    for sid in split:
        review.adjudicate(carol, store, rid, sid, RELATION, "tp", ())
    assert team_view(carol, store, rid, RELATION).open == 0
    table = review.precision_table(store, rid, RELATION)
    assert (table.loc[0, "reviewed"], table.loc[0, "true positive"], table.loc[0, "pending"]) == (8, 8, 0)
    # and now each reviewer sees, in calibration, the calls of the others on the items they shared
    cal = review.calibration(actor_of(store, "ann"), store, rid, RELATION)
    shared = {s for s, t in teams.items() if {"ann", cal.reviewer_b} <= set(t)}
    assert cal.reviewer_a == "ann" and cal.verdicts.n == len(shared) > 0


def test_only_an_items_team_judges_it_and_a_queue_lists_only_the_reviewers_items(team_run):
    store, rid = team_run
    root = actor_of(store, "root")
    plan = {sid: ("ann", "ben", "cat") if i % 2 else ("ben", "cat", "dan") for i, sid in enumerate(ITEMS)}
    assert T.assign_reviewers(root, store, rid, RELATION, plan) == {s: tuple(sorted(t)) for s, t in plan.items()}
    ann = actor_of(store, "ann")
    drawn = review.review_sample_info(store, rid, RELATION).sample_ids
    assert [q.sample_id for q in review.review_queue(ann, store, rid, RELATION)] == \
        [s for s in drawn if s in ITEMS[1::2]]                      # hers only, in draw order
    with pytest.raises(NotAllowed, match="assigned to other reviewers"):
        review.record_judgment(ann, store, rid, ITEMS[0], RELATION, "tp")
    review.record_judgment(ann, store, rid, ITEMS[1], RELATION, "tp")
    # ann judged ITEMS[1]: a plan that takes her off it is refused, and nothing is written
    with pytest.raises(ValueError, match="already judged"):
        T.assign_reviewers(root, store, rid, RELATION, {ITEMS[1]: ("ben", "cat", "dan")})
    with pytest.raises(ValueError, match="exactly 3 different reviewers"):
        T.assign_reviewers(root, store, rid, RELATION, {ITEMS[3]: ("ann", "ben")})
    with pytest.raises(ValueError, match="reviewer role"):
        T.assign_reviewers(root, store, rid, RELATION, {ITEMS[3]: ("ann", "ben", "carol")})
    assert T.teams(store, rid, RELATION) == {s: tuple(sorted(t)) for s, t in plan.items()}
    # one item's team changed alone; the others keep theirs
    T.assign_reviewers(root, store, rid, RELATION, {ITEMS[3]: ("ann", "ben", "dan")})
    assert T.teams(store, rid, RELATION)[ITEMS[3]] == ("ann", "ben", "dan")
    assert T.teams(store, rid, RELATION)[ITEMS[5]] == ("ann", "ben", "cat")


def test_only_an_admin_assigns_reviewers_or_sees_the_workload(team_run):
    store, rid = team_run
    for name in ("ann", "carol"):
        who = actor_of(store, name)
        with pytest.raises(NotAllowed):
            T.spread_reviewers(who, store, rid, RELATION, TEAM)
        with pytest.raises(NotAllowed):
            T.set_reviewers_per_item(who, store, rid, RELATION, 4)
        with pytest.raises(NotAllowed):
            T.workload(who, store)
    assert T.teams(store, rid, RELATION) == {}


def test_the_workload_shows_each_reviewers_items_and_progress_and_my_work_their_own_queue(team_run):
    store, rid = team_run
    root = actor_of(store, "root")
    teams = T.spread_reviewers(root, store, rid, RELATION, TEAM)
    mine = [s for s in ITEMS if "dan" in teams[s]]
    dan = actor_of(store, "dan")
    for sid in mine[:2]:
        review.record_judgment(dan, store, rid, sid, RELATION, "tp")
    rows = {w.reviewer: w for w in T.workload(root, store)}
    assert set(rows) == set(TEAM)
    assert (rows["dan"].items, rows["dan"].judged, rows["dan"].assigned, rows["dan"].k) == (6, 2, True, K)
    assert rows["ann"].judged == 0 and not rows["ann"].done
    queue = next(q for q in M.my_work(dan, store).queues if q.run_id == rid and q.relation == RELATION)
    assert (queue.judged, queue.total, queue.next_item) == (2, 6, mine[2])


def test_an_open_draw_with_k3_closes_only_when_three_reviewers_judged_every_item(team_run):
    store, rid = team_run
    for n, name in enumerate(TEAM[:K]):
        for sid in ITEMS:
            review.record_judgment(actor_of(store, name), store, rid, sid, RELATION, "tp")
        state = review.sample_state(store, rid, RELATION)
        assert (state.k, state.team, state.closed) == (K, (), n == K - 1)
    assert review_rows.judgment_versions(store, rid, ITEMS[0], RELATION, "ann")[-1]["after_close"] is False
    review.record_judgment(actor_of(store, "ann"), store, rid, ITEMS[0], RELATION, "uncertain")
    assert review_rows.judgment_versions(store, rid, ITEMS[0], RELATION, "ann")[-1]["after_close"] is True


def test_a_draw_without_k_has_two_reviewers_per_item_as_before_teams(store):
    for name in ("alice", "bob"):
        review.create_reviewer(store, name, f"{name}-passphrase")
    rid = make_run(store, mr2=ITEMS)
    review.draw_review_sample(SERVER, store, rid, RELATION)
    assert review.review_sample_info(store, rid, RELATION).k == review_rows.CLOSING_REVIEWERS == 2
    for name in ("alice", "bob"):
        for sid in ITEMS:
            review.record_judgment(actor_of(store, name), store, rid, sid, RELATION, "tp")
    assert review.sample_state(store, rid, RELATION).closed
    with pytest.raises(ValueError, match="at least 2"):
        review.draw_review_sample(SERVER, store, rid, "MR-1", k=1)
    # a draw stored before revision 0009 has no k (null): it is read as 2, and stays closed
    with store.engine.begin() as c:
        c.execute(S.review_samples.update().values(k=None))
    assert review.review_sample_info(store, rid, RELATION).k == 2
    assert review.sample_state(store, rid, RELATION).closed


@pytest.mark.parametrize("n_items, pool, k", [(8, 4, 3), (7, 3, 2), (10, 5, 5), (1, 2, 2), (13, 6, 4)])
def test_the_even_spread_gives_every_item_k_different_reviewers_and_each_reviewer_an_equal_share(n_items, pool, k):
    names = [f"r{i}" for i in range(pool)]
    plan = T.spread_plan([f"i{j}" for j in range(n_items)], names, k)
    assert all(len(set(t)) == k for t in plan.values())
    load = Counter(n for t in plan.values() for n in t)
    shares = [load[n] for n in names]
    assert max(shares) - min(shares) <= 1 and sum(shares) == n_items * k


def test_the_spread_keeps_whoever_already_judged_an_item_on_its_team():
    plan = T.spread_plan(["a", "b", "c"], ["p", "q", "r", "s"], 2, {"b": {"s"}, "c": {"p", "q"}})
    assert "s" in plan["b"] and plan["c"] == ("p", "q")
    with pytest.raises(ValueError, match="cannot give each item 3"):
        T.spread_plan(["a"], ["p", "q"], 3)


def test_k_is_fixed_once_assigned_and_a_redraw_drops_the_teams_with_the_old_items(team_run):
    store, rid = team_run
    root = actor_of(store, "root")
    T.spread_reviewers(root, store, rid, RELATION, TEAM)
    with pytest.raises(ValueError, match="changes only with a redraw"):
        T.set_reviewers_per_item(root, store, rid, RELATION, 2)
    review.draw_review_sample(root, store, rid, RELATION, seed=7, redraw=True, k=2)
    assert T.teams(store, rid, RELATION) == {}
    assert review.review_sample_info(store, rid, RELATION).k == 2
    assert T.set_reviewers_per_item(root, store, rid, RELATION, 4) == 4
    assert review.sample_state(store, rid, RELATION).k == 4
