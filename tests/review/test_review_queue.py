"""The reviewer's queue (objrel.review.queue): deep links, positions, the two queues and recording a call."""

from __future__ import annotations

import pytest

from objrel import review
from objrel.access import SERVER
from objrel.review.queue import (
    ALL_FLAGGED,
    DEFAULT_RELATION,
    REVIEW_SAMPLE,
    Queue,
    ReviewLink,
    is_new_link,
    link_params,
    open_queue,
    record_call,
    review_url,
)
from objrel.review.roles import actor_of


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    # scrypt at full cost takes ~0.5 s per account; the cost parameter is not what these tests check
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


def test_a_link_names_run_relation_queue_and_item():
    link = ReviewLink.parse({"run": "2", "relation": "MR-1", "queue": "all", "item": "s7"}, [1, 2, 3])
    assert link == ReviewLink(2, "MR-1", ALL_FLAGGED, "s7")


@pytest.mark.parametrize("params", [{}, {"run": "9", "relation": "MR-3", "queue": "x"}, {"run": "two", "item": ""},
                                    # a hostile visitor's links: digits int() refuses, or too many of them
                                    {"run": "\u00b2"}, {"run": "9" * 5000}, {"run": "\uff12"}, {"run": "-1"}])
def test_what_a_link_does_not_name_validly_falls_back(params):
    import dataclasses

    link = ReviewLink.parse(params, [1, 2, 3])
    assert dataclasses.replace(link, unknown_run=None) == ReviewLink(3, DEFAULT_RELATION, REVIEW_SAMPLE, None)
    # a run the link names that cannot be reviewed is kept, so the page can say so instead of opening run 3
    assert link.unknown_run == (params.get("run") or None)


def test_a_link_needs_a_run():
    with pytest.raises(ValueError, match="no run"):
        ReviewLink.parse({}, [])


def test_link_params_reopen_the_item():
    assert link_params(4, "MR-2", "s1") == {"run": "4", "relation": "MR-2", "item": "s1"}


def test_positions_start_at_the_first_open_item_and_stop_at_both_ends():
    q = Queue(("a", "b", "c", "d"), {"a": "tp", "b": "fp"}, n_flagged=10)
    assert q.start() == 2 and q.start("d") == 3 and q.start("zz") == 2
    assert Queue(("a",), {"a": "tp"}).start() == 0          # everything judged: the first item
    assert q.step(2, 1) == 3 and q.step(3, 1) == 3 and q.step(0, -1) == 0 and q.step(1, -5) == 0
    assert q.clamp(99) == 3 and q.at(99) == "d"
    assert q.is_first(0) and not q.is_first(1) and q.is_last(3) and q.is_last(7) and not q.is_last(2)
    assert q.judged_share == 0.5 and q.n_judged == 2 and len(q) == 4
    assert q.my_call("b") == "fp" and q.my_call("c") is None


def test_both_queues_of_a_run(flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "ann", "ann-passphrase")
    flagged = store.flagged_sample_ids(run_id, "MR-2")
    every = open_queue(actor_of(store, "ann"), store, run_id, "MR-2", ALL_FLAGGED)
    assert every.sample_ids == tuple(flagged) and every.n_flagged == len(flagged) == 6 and not every.mine
    drawn = open_queue(actor_of(store, "ann"), store, run_id, "MR-2", REVIEW_SAMPLE, flagged)
    assert set(drawn.sample_ids) <= set(flagged)
    assert drawn.sample_ids == tuple(review.draw_review_sample(SERVER, store, run_id, "MR-2"))
    with pytest.raises(ValueError, match="queue mode"):
        open_queue(actor_of(store, "ann"), store, run_id, "MR-2", "mine")


def test_record_call_keeps_reasons_only_with_a_false_positive(flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "ben", "ben-passphrase")
    first, second = store.flagged_sample_ids(run_id, "MR-1")[:2]
    record_call(actor_of(store, "ben"), store, run_id, first, "MR-1", "tp", reasons=["multiple-objects"], note="  ")
    record_call(actor_of(store, "ben"), store, run_id, second, "MR-1", "fp", reasons=["multiple-objects"],
                note="two cats")
    calls = {j.sample_id: j for j in review.judgments(store, run_id, "MR-1", reviewer="ben")}
    assert (calls[first].verdict, calls[first].reasons, calls[first].note) == ("tp", (), None)
    assert (calls[second].reasons, calls[second].note) == (("multiple-objects",), "two cats")
    queue = open_queue(actor_of(store, "ben"), store, run_id, "MR-1", ALL_FLAGGED)
    assert queue.mine == {first: "tp", second: "fp"} and queue.start() == 2


# ---------------------------------------------------------------- opening on something to review


def counts(table: dict):
    return lambda run_id, relation: table.get((run_id, relation), 0)


def test_a_link_without_run_opens_the_newest_run_with_flags():
    # run 3 (newest) has nothing flagged; run 2 has MR-1 flags only
    n = counts({(2, "MR-1"): 4, (1, "MR-2"): 1})
    assert ReviewLink.parse({}, [1, 2, 3], n) == ReviewLink(2, "MR-1", REVIEW_SAMPLE, None)
    # the relation a link names is kept: the newest run with flags under it
    assert ReviewLink.parse({"relation": "MR-2"}, [1, 2, 3], n).run_id == 1
    # a named run keeps its number; its relation is the one with flags
    assert ReviewLink.parse({"run": "2"}, [1, 2, 3], n) == ReviewLink(2, "MR-1", REVIEW_SAMPLE, None)
    # MR-2 first when both have flags
    assert ReviewLink.parse({}, [1, 2], counts({(2, "MR-1"): 1, (2, "MR-2"): 1})).relation == "MR-2"


def test_nothing_flagged_anywhere_falls_back_to_the_newest_run():
    assert ReviewLink.parse({}, [1, 2, 3], counts({})) == ReviewLink(3, DEFAULT_RELATION, REVIEW_SAMPLE, None)
    assert ReviewLink.parse({"run": "1", "relation": "MR-1"}, [1, 2], counts({(2, "MR-1"): 3})) \
        == ReviewLink(1, "MR-1", REVIEW_SAMPLE, None)


def test_only_a_link_the_page_did_not_write_is_followed():
    written = {"run": "1", "relation": "MR-2", "item": "a", "queue": "sample"}
    assert not is_new_link(written, written)
    assert not is_new_link({}, written)                       # a page switch clears the query: keep the choice
    assert is_new_link({**written, "item": "b"}, written)
    assert is_new_link(written, None)


def test_the_end_of_the_queue():
    q = Queue(("a", "b", "c"), {"a": "tp", "c": "fp"})
    assert q.n_open == 1 and not q.done and q.next_open(2) == 1 and q.next_open(0) == 1
    done = Queue(("a", "b"), {"a": "tp", "b": "tp"})
    assert done.done and done.next_open(0) is None
    assert not Queue(()).done


def test_review_url_encodes_the_item():
    assert review_url(3, "MR-1", "a b&c/1") == "review?run=3&relation=MR-1&item=a+b%26c%2F1&queue=all"


def test_item_card_shows_the_item_or_says_why_not(flagged_store, tmp_path):
    from objrel.review.items import item_card
    from objrel.store import Store

    store, run_id = flagged_store
    sid = store.flagged_sample_ids(run_id, "MR-2")[0]
    card = item_card(store, run_id, sid, "MR-2")
    assert card.rel_path == f"f{sid}.png" and card.problem is None and card.correct is True
    assert card.source.image.shape[:2] == (40, 48)           # smaller than CARD_SIDE: kept as it is
    assert [p.relation for p in card.mutants] == ["MR-2"] * 3
    bare = Store(tmp_path / "bare.db")
    try:
        rid = bare.create_run(name="r", model="m", model_config={}, task="single", class_names=["a"], dataset="d",
                              dataset_config={"root": str(tmp_path / "nowhere")}, plan={"groups": []}, config={},
                              seed=0, n_total=1)
        bare.write_sample(rid, {"sample_id": "s1", "rel_path": "s1.png", "status": "tested", "correct": False},
                          [], [], [])
        missing = item_card(bare, rid, "s1", "MR-1")
        assert missing.source is None and "does not exist" in missing.problem
        assert (missing.rel_path, missing.correct) == ("s1.png", False)
    finally:
        bare.dispose()


def test_a_queue_keeps_the_reviewers_own_reasons_and_note(flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    alice = actor_of(store, "alice")
    ids = review.draw_review_sample(SERVER, store, run_id, "MR-2")
    record_call(alice, store, run_id, ids[0], "MR-2", "fp", ["other"], " the patch is a second object ")
    for mode in (REVIEW_SAMPLE, ALL_FLAGGED):
        q = open_queue(alice, store, run_id, "MR-2", mode)
        assert q.my_saved(ids[0]) == (("other",), "the patch is a second object")
        assert q.my_saved(ids[1]) == ((), "")
