"""objrel.review.my_work: a reviewer's queues, an adjudicator's open disagreements, nothing for a visitor."""

from __future__ import annotations

import dataclasses

import pytest

from objrel import review
from objrel.access import ANONYMOUS, SERVER
from objrel.review.my_work import DisputeWork, MyWork, QueueWork, my_work
from objrel.review.roles import actor_of


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


@pytest.fixture
def team(flagged_store):
    store, run_id = flagged_store
    for name, role in (("alice", review.REVIEWER), ("bob", review.REVIEWER), ("carol", review.ADJUDICATOR),
                       ("dan", review.REVIEWER)):
        review.create_reviewer(store, name, f"{name}-passphrase", roles=[role])
    ids = review.draw_review_sample(SERVER, store, run_id, "MR-2")
    alice, bob = actor_of(store, "alice"), actor_of(store, "bob")
    review.record_judgment(alice, store, run_id, ids[0], "MR-2", "tp")
    review.record_judgment(alice, store, run_id, ids[1], "MR-2", "fp", reasons=["multiple-objects"])
    review.record_judgment(bob, store, run_id, ids[0], "MR-2", "fp", reasons=["multiple-objects"])
    review.record_judgment(bob, store, run_id, ids[1], "MR-2", "fp", reasons=["multiple-objects"])
    return store, run_id, ids


def test_a_reviewer_gets_each_drawn_queue_with_judged_of_total_and_the_next_item(team):
    store, run_id, ids = team
    work = my_work(actor_of(store, "alice"), store)
    assert work.queues == (QueueWork(run_id, "flagged run", "MR-2", 2, len(ids), ids[2]),)   # MR-1 never drawn
    assert work.disputes == () and work.first_open_queue == work.queues[0]
    assert work.queues[0].link == f"review?run={run_id}&relation=MR-2&queue=sample&item={ids[2]}"
    assert review.review_sample_info(store, run_id, "MR-1") is None                       # listing drew nothing


def test_a_queue_fully_judged_is_done_and_not_open(team):
    store, run_id, ids = team
    dan = actor_of(store, "dan")
    for sid in ids:
        review.record_judgment(dan, store, run_id, sid, "MR-2", "tp")
    work = my_work(dan, store)
    assert work.queues[0].done and work.queues[0].next_item is None and work.first_open_queue is None


def test_an_adjudicator_gets_the_open_disagreements_per_run_and_relation(team):
    store, run_id, ids = team
    carol = actor_of(store, "carol")
    assert my_work(carol, store) == MyWork("carol", (), (DisputeWork(run_id, "flagged run", "MR-2", 1, 0),))
    review.adjudicate(carol, store, run_id, ids[0], "MR-2", "tp", ())
    work = my_work(carol, store)
    assert work.disputes == (DisputeWork(run_id, "flagged run", "MR-2", 0, 1),) and work.first_open_dispute is None
    assert work.disputes[0].link == f"agreement?run={run_id}&relation=MR-2"


def test_a_visitor_and_a_reviewer_see_nothing_secret(team):
    store, run_id, ids = team
    assert my_work(ANONYMOUS, store) == MyWork(None)
    # a reviewer's queue counts only their own calls; bob's are never in alice's numbers
    assert my_work(actor_of(store, "dan"), store).queues[0].judged == 0


def test_my_work_is_frozen(team):
    store, _, _ = team
    with pytest.raises(dataclasses.FrozenInstanceError):
        my_work(actor_of(store, "alice"), store).queues[0].judged = 0
