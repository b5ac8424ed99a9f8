"""Comment threads on review items and gold items, on a real SQLite store.

Threads: any party writes; another reviewer's entries stay hidden until the review sample closes, while an
adjudicator who is no party reads the thread at once; resolve and reopen are entries of their own; the export
carries the thread as the exporter may read it.  Gold items: only an admin marks them; they sit in every
reviewer's queue with nothing that tells them apart; each reviewer's accuracy on them shows in calibration once
the sample closes, and on the admin's view at once.
"""

from __future__ import annotations

import pytest

from objrel import review as R
from objrel.access import SERVER
from objrel.errors import NotAllowed
from objrel.review import accounts
from objrel.review.calibration import calibration
from objrel.review.comments import set_resolved, thread, write_comment
from objrel.review.export import judgment_export, to_csv
from objrel.review.gold import gold_view, mark_gold, unmark_gold
from objrel.review.queue import open_queue, record_call
from objrel.review.roles import actor_of
from objrel.store import Store
from tests.review.test_review import make_run

REL = "MR-1"
DRAWN = [f"a{i:03d}" for i in range(6)]          # six flagged items: Cochran draws all of them


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)


def _team(store: Store, flagged=DRAWN) -> tuple[int, dict]:
    for name, roles in (("alice", [R.REVIEWER]), ("bob", [R.REVIEWER]), ("carol", [R.ADJUDICATOR]),
                        ("adam", [R.ADMIN]), ("olga", [R.RUN_OPERATOR])):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    rid = make_run(store, mr1=flagged)
    R.draw_review_sample(SERVER, store, rid, REL)
    return rid, {n: actor_of(store, n) for n in ("alice", "bob", "carol", "adam", "olga")}


def _judge(store, who, rid, calls: dict[str, str], items=DRAWN):
    for sid in items:
        record_call(who, store, rid, sid, REL, calls.get(sid, "tp"))


def test_a_thread_is_hidden_from_the_other_reviewer_until_the_sample_closes(store):
    rid, who = _team(store)
    write_comment(who["alice"], store, rid, REL, "a000", "alice-words: the mask misses the tail")
    write_comment(who["bob"], store, rid, REL, "a000", "bob-words: background leaks")
    # open sample: each reviewer reads only their own entries, and learns only that others exist
    seen_by_bob = thread(who["bob"], store, rid, REL, "a000")
    assert [e.body for e in seen_by_bob.entries] == ["bob-words: background leaks"] and seen_by_bob.withheld == 1
    assert [e.author for e in thread(who["alice"], store, rid, REL, "a000").entries] == ["alice"]
    # the adjudicator (no party) reads both at once, in the order written
    assert [e.author for e in thread(who["carol"], store, rid, REL, "a000").entries] == ["alice", "bob"]
    _judge(store, who["alice"], rid, {})
    assert thread(who["alice"], store, rid, REL, "a000").withheld == 1     # alice closed; the sample has not
    _judge(store, who["bob"], rid, {"a000": "fp"})
    assert R.sample_state(store, rid, REL).closed
    for name in ("alice", "bob"):
        shown = thread(who[name], store, rid, REL, "a000")
        assert [e.author for e in shown.entries] == ["alice", "bob"] and shown.withheld == 0


def test_writing_resolving_and_reading_go_through_the_gate(store):
    rid, who = _team(store)
    for nobody in (who["olga"],):
        with pytest.raises(NotAllowed):
            write_comment(nobody, store, rid, REL, "a000", "x")
        with pytest.raises(NotAllowed):
            thread(nobody, store, rid, REL, "a000")
    with pytest.raises(ValueError, match="non-empty"):
        write_comment(who["alice"], store, rid, REL, "a000", "   ")
    with pytest.raises(ValueError, match="not flagged"):
        write_comment(who["alice"], store, rid, REL, "zzz", "an item nobody reviews")
    with pytest.raises(ValueError, match="nothing to resolve"):
        set_resolved(who["carol"], store, rid, REL, "a000", True)


def test_resolve_and_reopen_are_kept_as_entries_of_the_thread(store):
    rid, who = _team(store)
    write_comment(who["alice"], store, rid, REL, "a001", "is the object fully gone?")
    write_comment(who["carol"], store, rid, REL, "a001", "yes, see the mutant")
    assert not thread(who["carol"], store, rid, REL, "a001").resolved
    assert set_resolved(who["carol"], store, rid, REL, "a001", True).state == "resolved"
    assert set_resolved(who["carol"], store, rid, REL, "a001", True).resolved          # no second entry
    reopened = set_resolved(who["carol"], store, rid, REL, "a001", False)
    assert reopened.state == "open"
    assert [e.kind for e in reopened.entries] == ["comment", "comment", "resolve", "reopen"]
    assert reopened.lines()[-1] == "carol reopened the thread"
    # alice, a party to the open sample, does not see carol's entries (nor that carol resolved it)
    mine = thread(who["alice"], store, rid, REL, "a001")
    assert [e.author for e in mine.entries] == ["alice"] and mine.withheld == 3 and not mine.resolved


def test_the_export_carries_the_thread_as_the_exporter_may_read_it(store):
    rid, who = _team(store)
    write_comment(who["alice"], store, rid, REL, "a002", "alice-thread-q1")
    write_comment(who["bob"], store, rid, REL, "a002", "bob-thread-k9")
    _judge(store, who["alice"], rid, {})
    open_rows = {r.item: r for r in judgment_export(who["alice"], store, rid, REL)}
    assert open_rows["a002"].comments == ("alice: alice-thread-q1",) and "bob-thread-k9" not in to_csv(
        list(open_rows.values()))
    _judge(store, who["bob"], rid, {})
    full = [r for r in judgment_export(SERVER, store, rid, REL) if r.item == "a002"]
    assert {r.comments for r in full} == {("alice: alice-thread-q1", "bob: bob-thread-k9")}
    assert {r.thread for r in full} == {"open"} and "bob-thread-k9" in to_csv(full)


def test_only_an_admin_marks_gold_and_it_joins_every_queue_unannounced(store):
    flagged = [f"g{i:03d}" for i in range(40)]      # Cochran draws 36 of 40: some flagged items are not drawn
    rid, who = _team(store, flagged)
    drawn = R.review_sample_info(store, rid, REL).sample_ids
    outside = sorted(set(flagged) - set(drawn))[0]
    for nobody in ("alice", "carol", "olga"):
        with pytest.raises(NotAllowed):
            mark_gold(who[nobody], store, rid, REL, outside, "fp")
    with pytest.raises(ValueError, match="known call"):
        mark_gold(who["adam"], store, rid, REL, outside, "maybe")
    before = open_queue(who["alice"], store, rid, REL)
    assert mark_gold(who["adam"], store, rid, REL, outside, "fp").call == "fp"
    queues = [open_queue(who[n], store, rid, REL) for n in ("alice", "bob")]
    assert queues[0].sample_ids == queues[1].sample_ids                   # the same places for everyone
    assert set(queues[0].sample_ids) == set(before.sample_ids) | {outside} and len(queues[0]) == len(before) + 1
    assert [s for s in queues[0].sample_ids if s != outside] == list(before.sample_ids)
    with pytest.raises(NotAllowed):
        gold_view(who["alice"], store, rid, REL)
    assert unmark_gold(who["adam"], store, rid, REL, outside)
    assert open_queue(who["alice"], store, rid, REL).sample_ids == before.sample_ids


def test_gold_accuracy_shows_in_calibration_after_close_and_to_the_admin_at_once(store):
    rid, who = _team(store)
    mark_gold(who["adam"], store, rid, REL, "a003", "fp")
    mark_gold(who["adam"], store, rid, REL, "a004", "tp")
    _judge(store, who["alice"], rid, {"a003": "fp"})                     # both gold items right
    early = gold_view(who["adam"], store, rid, REL)
    assert [(s.reviewer, s.called, s.correct) for s in early.scores] == [("alice", 2, 2)]
    assert {(g.sample_id, g.call) for g in early.items} == {("a003", "fp"), ("a004", "tp")}
    with pytest.raises(NotAllowed, match="not closed"):
        calibration(who["alice"], store, rid, REL)
    _judge(store, who["bob"], rid, {})                                     # a003 wrong, a004 right
    cal = calibration(who["bob"], store, rid, REL)
    assert {s.reviewer: (s.called, s.correct, s.accuracy) for s in cal.gold} == {"bob": (2, 1, 0.5),
                                                                               "alice": (2, 2, 1.0)}
    assert next(s for s in cal.gold if s.reviewer == "bob").text == "1 of 2 gold items right (50%)"
