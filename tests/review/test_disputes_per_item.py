"""An adjudicator's open and decided disagreements, read once per item, are those of every pair of reviewers."""

from __future__ import annotations

import random
from itertools import combinations

import pytest
from sqlalchemy import event

from objrel import review
from objrel.review import my_work as M
from objrel.review.roles import actor_of
from tests.review.test_review import make_run

REVIEWERS = [f"rev{i}" for i in range(6)]
CALLS = [("tp", (), None), ("fp", ("multiple-objects",), None), ("fp", ("incomplete-removal",), None),
         ("fp", ("multiple-objects", "incomplete-removal"), None), ("uncertain", (), None),
         ("tp", (), "valid"), ("tp", (), "invalid"), ("tp", (), None)]   # the last three: alike but for validity


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


def pairwise(actor, store, runs) -> list[M.DisputeWork]:
    """The definition: the disagreements of every pair of reviewers but ``actor`` (``review.pair_view``)."""
    names = {r.id: r.name for r in runs}
    out = []
    for judged in review.judged_runs(store):
        for relation in judged.relations:
            open_ids, decided_ids = set(), set()
            if actor.name in judged.reviewers_of(relation) and not review.sample_state(
                    store, judged.run_id, relation).closed:
                continue     # a party to an open sample sees no other calls on it (pair_view refuses)
            reviewers = [n for n in judged.reviewers_of(relation) if n != actor.name]
            for a, b in combinations(reviewers, 2):
                for d in review.pair_view(actor, store, judged.run_id, relation, a, b).disagreements:
                    (decided_ids if d.resolved else open_ids).add(d.sample_id)
            open_ids -= decided_ids
            if open_ids or decided_ids:
                out.append(M.DisputeWork(judged.run_id, names.get(judged.run_id, judged.name), relation,
                                         len(open_ids), len(decided_ids)))
    return out


@pytest.fixture
def six_reviewers(store):
    """Two runs, both relations, six reviewers calling at random (some alike but for the note or the validity),
    ``eve`` an adjudicator and reviewer who judged some items herself, ``zed`` an adjudicator who judged none;
    some disagreements decided by zed."""
    rng = random.Random(39)
    for name in REVIEWERS:
        review.create_reviewer(store, name, f"{name}-passphrase")
    review.create_reviewer(store, "eve", "eve-passphrase", roles=[review.REVIEWER, review.ADJUDICATOR])
    review.create_reviewer(store, "zed", "zed-passphrase", roles=[review.ADJUDICATOR])
    items = [f"s{i:02d}" for i in range(14)]
    runs = [make_run(store, mr1=items[:9], mr2=items[4:], model=m) for m in ("m1", "m2")]
    zed = actor_of(store, "zed")
    for rid in runs:
        for relation, flagged in (("MR-1", items[:9]), ("MR-2", items[4:])):
            review.draw_review_sample(zed, store, rid, relation)      # disagreements are over the drawn items
            for sid in flagged:
                who = rng.sample(REVIEWERS, rng.randint(0, 4)) + (["eve"] if rng.random() < 0.3 else [])
                for name in who:
                    verdict, reasons, validity = rng.choice(CALLS[:5] if rng.random() < 0.5 else CALLS[5:])
                    note = rng.choice([None, "a note", "another note"])
                    review.record_judgment(actor_of(store, name), store, rid, sid, relation, verdict, reasons,
                                           note, validity=validity)
    for work in pairwise(zed, store, store.list_runs()):
        for judged in review.judged_runs(store):
            if judged.run_id != work.run_id or work.relation not in judged.relations:
                continue
            calls: dict[str, set] = {}
            for j in review.judgments(store, work.run_id, work.relation):
                calls.setdefault(j.sample_id, set()).add((j.verdict, j.reasons))
            for sid in sorted(s for s, c in calls.items() if len(c) > 1)[::2]:
                review.adjudicate(zed, store, work.run_id, sid, work.relation, "tp", ())
    return store


@pytest.mark.parametrize("who, listed", [("zed", 4), ("eve", 0)])
def test_disputes_read_per_item_equal_those_of_every_pair(six_reviewers, who, listed):
    """zed judged nothing and sees every run and relation; eve judged items of every open sample, so as a party
    she sees the disagreements of none of them."""
    store = six_reviewers
    actor = actor_of(store, who)
    runs = store.list_runs()
    expected = pairwise(actor, store, runs)
    assert len(expected) == listed and all(w.open for w in expected)
    assert not listed or any(w.decided for w in expected)
    assert M._disputes(actor, store, runs) == expected


def test_disputes_read_each_run_and_relation_once(six_reviewers):
    """The queries do not grow with the number of reviewers: a few per judged run and relation."""
    store = six_reviewers
    actor, runs = actor_of(store, "zed"), store.list_runs()
    statements = []
    listen = lambda *a: statements.append(a[2])  # noqa: E731
    event.listen(store.engine, "before_cursor_execute", listen)
    try:
        M._disputes(actor, store, runs)
    finally:
        event.remove(store.engine, "before_cursor_execute", listen)
    judged = sum(len(r.relations) for r in review.judged_runs(store))
    assert judged == 4
    assert len([s for s in statements if "FROM judgments" in s]) == 1 + judged     # judged_runs, then one each
    assert len(statements) == 2 + 3 * judged          # judged_runs' two; each one's draw, judgments, adjudications
