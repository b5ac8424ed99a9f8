"""Review writes that do not grow with the store: the item lock, the flagged check, the closing reviewers; a busy
store answers StoreBusy; writers of one SQLite store take turns."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest
from sqlalchemy import event, insert

from objrel import review as R
from objrel.errors import StoreBusy
from objrel.review.roles import actor_of
from objrel.store import Store
from objrel.store import reviews
from objrel.store import schema as S
from objrel.store import store as store_module
from objrel.store import transactions
from tests.store.helpers import new_database

RELATION = "MR-2"


def _run(store: Store, n: int) -> int:
    """A finished run of ``n`` samples, each flagged by MR-2 (MR-1 holds), with the rows a tested sample has in
    the child tables the foreign keys point from (samples, verdicts, votes)."""
    rid = store.create_run(name=f"run of {n}", model="m", model_config={}, task="single", class_names=["a", "b"],
                           dataset="d", dataset_config={"root": "/"}, plan={"groups": []}, config={}, seed=0,
                           n_total=n)
    ids = [f"s{i:05d}" for i in range(n)]
    with store.engine.begin() as c:
        c.execute(insert(S.samples), [{"run_id": rid, "sample_id": s, "rel_path": f"{s}.png", "status": "tested",
                                       "correct": True} for s in ids])
        c.execute(insert(S.verdicts), [{"run_id": rid, "sample_id": s, "mutation_key": f"m{k}", "operator": "fill",
                                        "relation": rel, "verdict": "violated" if rel == RELATION else "holds"}
                                       for s in ids for k, rel in enumerate(("MR-1", "MR-2"))])
        c.execute(insert(S.votes), [{"run_id": rid, "sample_id": s, "group_name": f"{rel} 3 colours",
                                     "relation": rel, "is_primary": True, "k": 2, "n": 3, "applicable": 3,
                                     "violations": 3 if rel == RELATION else 0, "flagged": rel == RELATION}
                                    for s in ids for rel in ("MR-1", "MR-2")])
    store.update_run(rid, status="finished", n_done=n, n_tested=n)
    return rid


def _vm_steps(store: Store, work) -> int:
    """The SQLite virtual-machine instructions ``work(connection)`` runs inside one transaction (rolled back)."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    with store.engine.connect() as c:
        raw = c.connection.driver_connection
        raw.set_progress_handler(count, 1)
        try:
            with c.begin() as t:
                work(c)
                t.rollback()
        finally:
            raw.set_progress_handler(None, 1)
    return steps[0]


def test_the_sqlite_item_lock_costs_the_same_on_a_run_of_any_size(store):
    """The lock is a write to the run row: one that names a key of the row (``SET id = id``) makes SQLite check
    every child row of the run for its foreign key, so the cost followed the run's size."""
    small, big = _run(store, 3), _run(store, 1500)
    lock = [_vm_steps(store, lambda c, rid=rid: reviews._lock_item(c, rid, "s00001", RELATION)) for rid in (small, big)]
    assert lock[0] == lock[1]
    assert [_vm_steps(store, lambda c, rid=rid: transactions.lock_run(c, rid)) for rid in (small, big)] == lock
    # what the measure would have shown for a write that names the key
    from sqlalchemy import update

    key_write = [_vm_steps(store, lambda c, rid=rid: c.execute(update(S.runs).where(S.runs.c.id == rid)
                                                                   .values(id=S.runs.c.id))) for rid in (small, big)]
    assert key_write[1] > key_write[0] + 1500


def _statements(store: Store, work) -> list[tuple[str, tuple]]:
    """The SQL statements (with their parameters) that ``work(connection)`` sends, in a rolled-back transaction."""
    seen = []

    def grab(conn, cursor, statement, parameters, context, executemany):
        seen.append((statement, tuple(parameters)))

    event.listen(store.engine, "before_cursor_execute", grab)
    try:
        with store.engine.connect() as c, c.begin() as t:
            work(c)
            t.rollback()
    finally:
        event.remove(store.engine, "before_cursor_execute", grab)
    return seen


def _plan(store: Store, statement: str, parameters: tuple) -> str:
    with store.engine.connect() as c:
        return " | ".join(r[3] for r in c.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters))


def _unique_index(store: Store, table: str, columns: tuple[str, ...]) -> str:
    """The name SQLite gave the unique index of ``table`` on exactly ``columns`` (a UniqueConstraint's index
    is named ``sqlite_autoindex_<table>_<n>``)."""
    con = store.engine.raw_connection()
    try:
        for _, name, unique, *_ in con.execute(f"PRAGMA index_list('{table}')").fetchall():
            cols = tuple(r[2] for r in con.execute(f"PRAGMA index_info('{name}')").fetchall())
            if unique and cols == columns:
                return name
    finally:
        con.close()
    raise AssertionError(f"no unique index of {table} on {columns}")


def test_the_flagged_check_finds_the_sample_through_the_unique_vote_index(store):
    rid = _run(store, 50)
    seen = [s for s in _statements(store, lambda c: reviews._require_flagged(c, rid, "s00042", RELATION))
            if "FROM votes" in s[0]]
    assert len(seen) == 1
    plan = _plan(store, *seen[0])
    uq_vote = _unique_index(store, "votes", ("run_id", "sample_id", "group_name"))
    assert f"USING INDEX {uq_vote} (run_id=? AND sample_id=?)" in plan and "ix_votes_flagged" not in plan, plan
    with pytest.raises(ValueError, match="not flagged by the primary MR-1 vote"):
        with store.engine.connect() as c:
            reviews._require_flagged(c, rid, "s00042", "MR-1")
    assert reviews.is_flagged(store, rid, "s00042", RELATION)
    assert not reviews.is_flagged(store, rid, "s00042", "MR-1") and not reviews.is_flagged(store, rid, "x", RELATION)


def test_the_closing_reviewers_are_counted_from_the_drawn_items_judgments(store):
    """``_closers`` is one aggregate over the drawn items' judgments, each item's found through uq_judgment; it
    names exactly the reviewers who judged every drawn item, whatever else they judged."""
    rid = _run(store, 400)
    for name in ("alice", "bob", "carol", "dave"):
        R.create_reviewer(store, name, f"{name}-passphrase")
    drawn = R.draw_review_sample(actor_of(store, "alice"), store, rid, RELATION)
    outside = sorted(set(store.flagged_sample_ids(rid, RELATION)) - set(drawn))
    assert len(drawn) < 400 and outside
    calls = {"alice": drawn, "bob": drawn[:-1] + outside[:1], "carol": drawn + outside[:5], "dave": outside[:10]}
    now = reviews.now()
    with store.engine.begin() as c:
        c.execute(insert(S.judgments), [{"run_id": rid, "sample_id": sid, "relation": RELATION, "reviewer": who,
                                         "verdict": "tp", "reasons": [], "created_at": now, "updated_at": now}
                                        for who, sids in calls.items() for sid in sids])
    assert reviews.closing_reviewers(store, rid, RELATION) == ["alice", "carol"]
    assert reviews.closing_reviewers(store, rid, "MR-1") == []                         # nothing drawn there
    seen = [s for s in _statements(store, lambda c: reviews._closers(c, rid, RELATION)) if "FROM judgments" in s[0]]
    assert len(seen) == 1
    uq_judgment = _unique_index(store, "judgments", ("run_id", "sample_id", "relation", "reviewer"))
    plan = _plan(store, *seen[0])
    assert f"{uq_judgment} (run_id=? AND sample_id=? AND relation=?)" in plan, plan


def test_the_closing_reviewers_on_postgresql(tmp_path, pg_url):
    store = Store(new_database("postgresql", tmp_path, pg_url))
    try:
        rid = _run(store, 30)
        for name in ("alice", "bob"):
            R.create_reviewer(store, name, f"{name}-passphrase")
        drawn = R.draw_review_sample(actor_of(store, "alice"), store, rid, RELATION)
        for sid in drawn:
            R.record_judgment(actor_of(store, "alice"), store, rid, sid, RELATION, "tp")
        for sid in drawn[:-1]:
            R.record_judgment(actor_of(store, "bob"), store, rid, sid, RELATION, "tp")
        assert reviews.closing_reviewers(store, rid, RELATION) == ["alice"]
        R.record_judgment(actor_of(store, "bob"), store, rid, drawn[-1], RELATION, "fp", ["multiple-objects"])
        assert reviews.closing_reviewers(store, rid, RELATION) == ["alice", "bob"]
        assert R.sample_state(store, rid, RELATION).closed
        # bob's next change comes after the sample closed
        R.record_judgment(actor_of(store, "bob"), store, rid, drawn[0], RELATION, "uncertain")
        versions = reviews.judgment_versions(store, rid, drawn[0], RELATION, "bob")
        assert [v["after_close"] for v in versions] == [False, True]
    finally:
        store.dispose()


# ---------------------------------------------------------------- a busy store


def turn_is_free(store: Store) -> bool:
    """Whether no process or thread holds the store's writer turn now: the OS lock on the queue file beside the
    database is taken without waiting (and given back at once)."""
    import fcntl
    import os

    fd = os.open(store.engine.url.database + transactions.WRITER_QUEUE_SUFFIX, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)                 # closing the file gives the lock back
    return True


@pytest.fixture
def short_busy_timeout(monkeypatch):
    """Stores opened in the test wait 0.3 s for SQLite's lock and for their turn among writers."""
    monkeypatch.setattr(store_module, "SQLITE_BUSY_TIMEOUT_MS", 300)
    monkeypatch.setattr(transactions, "SQLITE_BUSY_TIMEOUT_MS", 300)


def test_a_judgment_on_a_locked_sqlite_store_raises_store_busy(tmp_path, short_busy_timeout):
    store = Store(tmp_path / "busy.db")
    rid = _run(store, 3)
    R.create_reviewer(store, "alice", "alice-passphrase")
    alice = actor_of(store, "alice")
    holder = sqlite3.connect(store.engine.url.database, timeout=30)
    holder.execute("BEGIN IMMEDIATE")             # another program holds the write lock
    try:
        with pytest.raises(StoreBusy, match="the store is busy .*nothing was saved, try again"):
            R.record_judgment(alice, store, rid, "s00001", RELATION, "tp")
    finally:
        holder.rollback()
        holder.close()
    assert R.judgments(store, rid) == []
    assert R.record_judgment(alice, store, rid, "s00001", RELATION, "tp").verdict == "tp"    # pressed again


def test_writers_of_one_sqlite_store_take_turns(tmp_path, short_busy_timeout):
    """A write waits for the one before it to end (a queue on an OS lock beside the database), gets StoreBusy
    when its turn does not come within the busy timeout, and the turn it gave up on is not left taken."""
    store = Store(tmp_path / "turns.db")
    rid = _run(store, 3)
    inside, leave, order = threading.Event(), threading.Event(), []

    def long_write(c):
        transactions.touch_run(c, rid)
        inside.set()
        leave.wait(10)
        order.append("first")

    first = threading.Thread(target=transactions.write, args=(store, long_write))
    first.start()
    assert inside.wait(10)
    with pytest.raises(StoreBusy, match="other writers held the store's lock"):
        transactions.write(store, lambda c: order.append("timed out"))
    threading.Timer(0.1, leave.set).start()
    second = Store(tmp_path / "turns.db")          # another process's store object: the same queue
    transactions.write(second, lambda c: order.append("second"))
    first.join(10)
    assert order == ["first", "second"]
    assert turn_is_free(store)                      # the turn the timed-out write gave up on is not left taken
    assert transactions.write(store, lambda c: transactions.touch_run(c, rid)) is True
    # a write inside a write of the same thread takes no second turn (it would wait for itself)
    assert transactions.write(store, lambda c: transactions.write(store, lambda c2: "nested")) == "nested"


# Seconds the forked child lives (it is ended sooner): far longer than it takes to start.
CHILD_LIFE_S = 60


@pytest.mark.subprocess
def test_a_child_forked_during_a_write_does_not_keep_its_turn(tmp_path, short_busy_timeout):
    """A process forked while a write holds its turn inherits the lock's file; it closes its copy at once, so
    the turn ends with the parent's write and not with the child."""
    import multiprocessing as mp

    store = Store(tmp_path / "fork.db")
    rid = _run(store, 3)
    children = []

    def fork_inside(c):
        transactions.touch_run(c, rid)
        child = mp.get_context("fork").Process(target=time.sleep, args=(CHILD_LIFE_S,))
        child.start()
        children.append(child)

    transactions.write(store, fork_inside)
    try:
        # the child lets go of its copy as it starts, long before it ends: the turn is free while it lives
        while not turn_is_free(store) and children[0].is_alive():
            time.sleep(0.01)
        assert children[0].is_alive() and turn_is_free(store)
        transactions.write(Store(tmp_path / "fork.db"), lambda c: transactions.touch_run(c, rid))
    finally:
        children[0].terminate()
        children[0].join(10)


def test_no_free_pooled_connection_is_a_busy_store(store, monkeypatch):
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    def exhausted():
        raise PoolTimeout("QueuePool limit of size 8 overflow 40 reached, connection timed out, timeout 30.00")

    monkeypatch.setattr(store.engine, "begin", exhausted)
    with pytest.raises(StoreBusy, match="no free connection to the store"):
        transactions.write(store, lambda c: None)


def test_the_pool_holds_a_connection_for_each_of_many_sessions(store):
    from objrel.constants import STORE_POOL_KEPT, STORE_POOL_SIZE

    assert store.engine.pool.size() == STORE_POOL_KEPT
    assert store.engine.pool._max_overflow == STORE_POOL_SIZE - STORE_POOL_KEPT
    held = [store.engine.connect() for _ in range(STORE_POOL_SIZE)]     # the old pool's limit was 5 + 10
    try:
        assert store.engine.pool.checkedout() == STORE_POOL_SIZE
    finally:
        for c in held:
            c.close()
