"""Store: URL resolution, SQLite WAL, concurrent writers, run bookkeeping."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import pytest

from objrel.store import Store, resolve_url


def test_url_resolution_order(monkeypatch, tmp_path):
    monkeypatch.delenv("OBJREL_STORE", raising=False)
    assert resolve_url(None) == "sqlite:///objrel.db"
    monkeypatch.setenv("OBJREL_STORE", "postgresql://u@h/db")
    assert resolve_url(None) == "postgresql://u@h/db"
    assert resolve_url(tmp_path / "x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    assert resolve_url("sqlite:///explicit.db") == "sqlite:///explicit.db"


def test_sqlite_file_is_in_wal_mode(tmp_path):
    Store(tmp_path / "w.db").list_runs()
    con = sqlite3.connect(tmp_path / "w.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _run(store: Store, name="r") -> int:
    return store.create_run(name=name, model="m", model_config={}, task="single", class_names=["a"], dataset="d",
                            dataset_config={"root": "/"}, plan={"groups": []}, config={}, seed=1, n_total=500)


def _writer(path: str, run_id: int, start: int, count: int) -> None:
    s = Store(path)
    for i in range(start, start + count):
        s.write_sample(run_id, {"sample_id": f"s{i}", "rel_path": f"{i}.png", "status": "skipped",
                                "skip_code": "x", "skip_reason": "y"}, [], [], [])


@pytest.mark.subprocess
def test_concurrent_writer_processes_lose_no_row(tmp_path):
    path = str(tmp_path / "c.db")
    run_id = _run(Store(path))
    procs = [mp.get_context("spawn").Process(target=_writer, args=(path, run_id, k * 100, 100)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    s = Store(path)
    assert len(s.samples(run_id)) == 400
    rec = s.get_run(run_id)
    assert (rec.n_done, rec.n_skipped) == (400, 400)  # counters incremented atomically with the rows


def test_unknown_run_and_bad_status_messages(tmp_path):
    s = Store(tmp_path / "m.db")
    with pytest.raises(KeyError, match="no run 42"):
        s.get_run(42)
    rid = _run(s)
    with pytest.raises(ValueError, match="status must be one of"):
        s.update_run(rid, status="exploded")
    s.update_run(rid, status="finished")
    assert s.get_run(rid).status == "finished"
    assert s.skip_counts(rid) == {}


# ---------------------------------------------------------------- PostgreSQL through a URL





def test_same_engine_runs_on_postgresql(pg_url, colour_set, colour_model, tmp_path):
    """The identical run on a real PostgreSQL server and on SQLite stores identical rows."""
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    from tests.engine.test_engine import rows

    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="all", seed=4)
    pg = Store(pg_url)
    assert pg.engine.dialect.name == "postgresql"
    rp = Engine(pg, cfg, model=colour_model).execute()
    lite = Store(tmp_path / "same.db")
    rl = Engine(lite, cfg, model=colour_model).execute()
    assert rows(pg, rp.run_id) == rows(lite, rl.run_id)
    # resume on PostgreSQL too: a second execute has nothing to add and duplicates nothing
    again = Engine(pg, cfg, model=colour_model).execute(run_id=rp.run_id)
    assert again.processed == 0 and len(pg.samples(rp.run_id)) == 10


def _pg_writer(url: str, run_id: int, start: int, count: int) -> None:
    _writer(url, run_id, start, count)


@pytest.mark.subprocess
def test_concurrent_writers_on_postgresql(pg_url):
    run_id = _run(Store(pg_url), name="pg-concurrent")
    procs = [mp.get_context("spawn").Process(target=_pg_writer, args=(pg_url, run_id, k * 50, 50)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    s = Store(pg_url)
    assert len(s.samples(run_id)) == 150 and s.get_run(run_id).n_done == 150


# ---------------------------------------------------------------- a chunk in one transaction


def _tested(i: int) -> tuple:
    pred = {"sample_id": f"t{i}", "mutation_key": "source", "prediction": {"task": "single"}, "seed": None}
    verdict = {"sample_id": f"t{i}", "relation": "MR-1", "mutation_key": "fill_object(colour=black)",
               "operator": "fill_object", "verdict": "holds"}
    vote = {"sample_id": f"t{i}", "group_name": "MR-1 colours3", "relation": "MR-1", "is_primary": True, "k": 2,
            "n": 3, "applicable": 3, "violations": 0, "flagged": False}
    return ({"sample_id": f"t{i}", "rel_path": f"{i}.png", "status": "tested"}, [pred], [verdict], [vote])


def _skipped(i: int) -> tuple:
    return ({"sample_id": f"s{i}", "rel_path": f"{i}.png", "status": "skipped", "skip_code": "corrupt-image",
             "skip_reason": "cannot decode"}, [], [], [])


def test_a_chunk_of_samples_lands_in_one_transaction_with_its_counters(tmp_path):
    s = Store(tmp_path / "w.db")
    rid = _run(s)
    # rows of different shapes in one chunk (a skipped row sets columns a tested one leaves out)
    assert s.write_samples(rid, [_tested(1), _skipped(2), _tested(3)]) == [True, True, True]
    rec = s.get_run(rid)
    assert (rec.n_done, rec.n_tested, rec.n_skipped) == (3, 2, 1)
    rows = {r["sample_id"]: r for r in s.samples(rid)}
    assert rows["s2"]["skip_code"] == "corrupt-image" and rows["t1"]["skip_code"] is None
    assert set(s.predictions(rid, "t3")) == {"source"}
    assert [v["sample_id"] for v in s.verdicts(rid)] == ["t1", "t3"]
    assert {v["sample_id"] for v in s.votes(rid)} == {"t1", "t3"}
    assert s.write_samples(rid, []) == []


def test_a_chunk_holding_a_stored_sample_writes_the_others_once(tmp_path):
    s = Store(tmp_path / "d.db")
    rid = _run(s)
    assert s.write_samples(rid, [_tested(1)]) == [True]
    assert s.write_samples(rid, [_tested(0), _tested(1), _skipped(2)]) == [True, False, True]
    rec = s.get_run(rid)
    assert (rec.n_done, rec.n_tested, rec.n_skipped) == (3, 2, 1)
    assert sorted(r["sample_id"] for r in s.samples(rid)) == ["s2", "t0", "t1"]
    assert len(s.verdicts(rid)) == 2 and len(s.votes(rid)) == 2


def test_a_chunk_of_mixed_shapes_is_one_insert_and_a_refused_row_raises_after_the_good_ones(tmp_path):
    from sqlalchemy import event
    from sqlalchemy.exc import IntegrityError

    s = Store(tmp_path / "m.db")
    rid = _run(s)
    inserts = []
    event.listen(s.engine, "before_cursor_execute",
                 lambda conn, cur, statement, *a: inserts.append(statement.split("(")[0].strip())
                 if statement.lstrip().upper().startswith("INSERT INTO SAMPLES") else None)
    assert s.write_samples(rid, [_skipped(1), _tested(2), _skipped(3), _tested(4)]) == [True] * 4
    assert len(inserts) == 1                       # skipped and tested rows in one statement
    bad = _tested(6)
    del bad[2][0]["operator"]                      # a verdict row the schema refuses (NOT NULL)
    with pytest.raises(IntegrityError):
        s.write_samples(rid, [_tested(5), bad, _skipped(7)])
    # the chunk was rolled back, then written one by one up to the refused sample: nothing twice
    assert sorted(r["sample_id"] for r in s.samples(rid)) == ["s1", "s3", "t2", "t4", "t5"]
    rec = s.get_run(rid)
    assert (rec.n_done, rec.n_tested, rec.n_skipped) == (5, 3, 2)
