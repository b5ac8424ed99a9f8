"""Comment threads keep review blind: another party's words stay hidden while the sample is open, whatever other
roles the reader holds; a closer never reads others' entries on a flagged item outside the draw (which can still
be judged blind); gold marks and scores answer only to an admin the gate issued."""

from __future__ import annotations

import pytest

from objrel import review as R
from objrel.access import SERVER, Actor
from objrel.errors import NotAllowed
from objrel.review import accounts
from objrel.review.comments import thread, threads, write_comment
from objrel.review.gold import gold_view, mark_gold
from objrel.review.queue import record_call
from objrel.review.roles import actor_of
from tests.review.test_review import make_run

REL = "MR-1"
FLAGGED = [f"g{i:03d}" for i in range(40)]       # Cochran draws 36 of 40


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)


def _world(store):
    for name, roles in (("alice", [R.REVIEWER]), ("rita", [R.REVIEWER, R.ADJUDICATOR]), ("adam", [R.ADMIN])):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    rid = make_run(store, mr1=FLAGGED)
    drawn = R.draw_review_sample(SERVER, store, rid, REL)
    outside = sorted(set(FLAGGED) - set(drawn))[0]
    return rid, drawn, outside, {n: actor_of(store, n) for n in ("alice", "rita", "adam")}


def test_a_party_who_also_adjudicates_reads_no_other_entry_until_close(store):
    rid, drawn, outside, who = _world(store)
    write_comment(who["alice"], store, rid, REL, drawn[0], "alice-secret-call-fp")
    write_comment(who["alice"], store, rid, REL, outside, "alice-outside-note")
    for name in ("alice", "rita"):
        for sid in drawn:
            record_call(who[name], store, rid, sid, REL, "tp")
        if name == "alice":   # rita, a party with the adjudicator role, while the sample is open
            shown = thread(who["rita"], store, rid, REL, drawn[0])
            assert shown.entries == () and shown.withheld == 1
            assert threads(who["rita"], store, rid, REL) == {}
    assert R.sample_state(store, rid, REL).closed
    assert [e.body for e in thread(who["rita"], store, rid, REL, drawn[0]).entries] == ["alice-secret-call-fp"]
    # outside the draw an item can still be judged blind: a closer reads only their own entries there
    assert thread(who["rita"], store, rid, REL, outside).withheld == 1
    assert outside not in threads(who["rita"], store, rid, REL)


def test_gold_answers_only_to_an_issued_admin(store):
    rid, drawn, _, who = _world(store)
    forged = Actor("adam", frozenset({R.ADMIN}))          # named and given roles by a caller, not the store
    with pytest.raises(NotAllowed):
        mark_gold(forged, store, rid, REL, drawn[0], "tp")
    with pytest.raises(NotAllowed):
        gold_view(who["rita"], store, rid, REL)
    mark_gold(who["adam"], store, rid, REL, drawn[0], "tp")
    assert [g.sample_id for g in gold_view(who["adam"], store, rid, REL).items] == [drawn[0]]
