"""Blindness holds for a reviewer who also adjudicates before she has judged anything: while the sample is open
she reads no other call (she could read bob's call and then make hers; found in a hostile read)."""

from __future__ import annotations

import pytest

from objrel import review as R
from objrel.access import SERVER
from objrel.errors import NotAllowed
from objrel.review import accounts
from objrel.review.roles import actor_of
from objrel.store import Store

from tests.review.test_review import ids, make_run

REL = "MR-1"


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    monkeypatch.setattr(accounts, "SCRYPT_N", 2**10)
    return Store(tmp_path / "blind.db")


def test_a_reviewer_who_adjudicates_reads_no_call_before_she_judges(store):
    R.create_reviewer(store, "bob", "bob-passphrase")
    R.create_reviewer(store, "alice", "alice-passphrase", roles=[R.REVIEWER, R.ADJUDICATOR])
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    rid = make_run(store, mr1=ids("s", 10))
    drawn = R.draw_review_sample(SERVER, store, rid, REL)
    bob, alice = actor_of(store, "bob"), actor_of(store, "alice")
    R.record_judgment(bob, store, rid, drawn[0], REL, "fp", ["other"], "bob-note")
    with pytest.raises(NotAllowed, match="still open"):
        R.judgment_history(alice, store, rid, drawn[0], REL, "bob")
    with pytest.raises(NotAllowed, match="still open"):
        R.pair_view(alice, store, rid, REL, "bob", "carol")
    # an adjudicator who may not judge reads the calls as before
    assert [v.verdict for v in R.judgment_history(actor_of(store, "carol"), store, rid, drawn[0], REL, "bob")] == ["fp"]
    # once the sample closes (bob and alice judged every drawn item), alice reads bob's calls
    for sid in drawn:
        R.record_judgment(bob, store, rid, sid, REL, "fp", ["other"], "bob-note")
        R.record_judgment(alice, store, rid, sid, REL, "tp")
    assert R.sample_state(store, rid, REL).closed
    assert [v.verdict for v in R.judgment_history(alice, store, rid, drawn[0], REL, "bob")][-1] == "fp"
