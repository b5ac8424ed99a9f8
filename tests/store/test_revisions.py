"""The store's schema under Alembic: a store made at the first revision, with rows in it, is upgraded by
``objrel store upgrade`` (its rows kept, its schema then that of a new store) on SQLite and PostgreSQL;
stores from before Alembic are brought under it; a store from a newer objrel is refused in one line."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text

from objrel.cli.main import ERROR_EXIT, main
from objrel.errors import StoreTooNew
from objrel.store import Store, revisions
from objrel.store import schema as S
from objrel.store.detections import units
from objrel.store.reviews import adjudications, judgment_rows, review_sample
from tests.store.helpers import described, new_database, store_at_first_revision

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture
def database(request, tmp_path):
    """A new empty database of the parametrised backend."""
    if request.param == "postgresql":
        return new_database("postgresql", tmp_path, request.getfixturevalue("pg_url"))
    return new_database("sqlite", tmp_path)


def cli(*argv: str) -> subprocess.CompletedProcess:
    """The real ``objrel`` command in its own process."""
    code = "import sys; from objrel.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.subprocess
@pytest.mark.parametrize("database", BACKENDS, indirect=True)
def test_a_store_made_at_the_first_revision_is_upgraded_with_its_rows(database, tmp_path, request):
    url = store_at_first_revision(database)
    assert "0001" in cli("store", "version", "--store", url).stdout

    done = cli("store", "upgrade", "--store", url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and f"upgraded from revision 0001 to {revisions.head()}" in lines[0]
    again = cli("store", "upgrade", "--store", url)
    assert again.returncode == 0 and "nothing to do" in again.stdout

    store = Store(url)
    runs = store.list_runs()
    assert [(r.id, r.name, r.task) for r in runs] == [(1, "old run", "single"),
                                                      (2, "old detection run", "detection")]
    assert [(s["sample_id"], s["s"], s["dropped"], s["notes"]) for s in store.samples(1)] == [
        ("a", 0.375, None, None), ("b", 0.375, None, None)]
    assert store.flagged_sample_ids(1, "MR-1") == ["a"]
    assert [v["verdict"] for v in store.verdicts(1)] == ["violated", "holds"]
    calls = judgment_rows(store, 1, "MR-1")
    assert [(j["sample_id"], j["reviewer"], j["verdict"], j["note"]) for j in calls] == [
        ("a", "carol", "tp", "clearly the object")]
    assert adjudications(store, 1, "MR-1")["a"]["adjudicator"] == "carol"
    assert review_sample(store, 1, "MR-1")["population"] == 1
    # revision 0002 moved the schema-1 detection unit into the detection tables
    assert [s["sample_id"] for s in store.samples(2)] == ["1"]
    assert [(u.unit_id, u.kind, u.t_source) for u in units(store, 2)] == [("1/r0", "record", 1)]
    assert runs[0].passes_done is None and runs[0].lease_host is None
    # the upgraded store works: a new run gets the next id, a lazy verdict fits
    rid = store.create_run(name="new", model="m", model_config={}, task="single", class_names=["red"],
                           dataset="d", dataset_config={}, plan={}, config={}, seed=1, n_total=1)
    assert rid == 3
    assert store.write_sample(rid, {"sample_id": "x", "rel_path": "x.png", "status": "tested"}, [],
                              [{"sample_id": "x", "mutation_key": "k", "operator": "erase", "relation": "MR-1",
                                "verdict": "not evaluated"}], [])
    store.dispose()

    fresh_url = new_database(request.node.callspec.params["database"], tmp_path,
                             request.getfixturevalue("pg_url") if "postgresql" in url else None)
    Store(fresh_url).dispose()
    assert described(url) == described(fresh_url)


@pytest.mark.parametrize("database", BACKENDS, indirect=True)
def test_every_revision_from_an_empty_database_gives_the_schema_of_a_new_store(database, tmp_path, request):
    eng = create_engine(database)
    for rev in ("0001", "0002", "0003", "0004", "0005", revisions.head()):
        assert revisions.upgrade(eng, rev).after == rev
    eng.dispose()
    fresh_url = new_database(request.node.callspec.params["database"], tmp_path,
                             request.getfixturevalue("pg_url") if "postgresql" in database else None)
    Store(fresh_url).dispose()
    assert described(database) == described(fresh_url)


@pytest.mark.parametrize("legacy", [1, 2, 3])
def test_a_store_made_before_alembic_is_stamped_and_upgraded_on_opening(tmp_path, legacy):
    """What objrels before Alembic left: the tables of their schema and its number in objrel_meta, no
    alembic_version table."""
    url = store_at_first_revision(new_database("sqlite", tmp_path))
    eng = create_engine(url)
    revisions.upgrade(eng, revisions.LEGACY_REVISIONS[legacy])
    with eng.begin() as c:
        c.execute(text("DROP TABLE alembic_version"))
        assert c.execute(select(S.meta.c.value).where(S.meta.c.key == "schema_version")).scalar() == str(legacy)
    eng.dispose()
    assert revisions.version(Store(url, create=False).engine).revision is None

    store = Store(url)
    state = revisions.version(store.engine)
    assert (state.revision, state.schema_version) == (revisions.head(), S.SCHEMA_VERSION)
    assert [r.id for r in store.list_runs()] == [1, 2] and len(store.samples(1)) == 2
    store.dispose()
    fresh = new_database("sqlite", tmp_path)
    Store(fresh).dispose()
    assert described(url) == described(fresh)


@pytest.mark.subprocess
@pytest.mark.parametrize("database", BACKENDS, indirect=True)
def test_a_store_from_a_newer_objrel_is_refused_in_one_line(database):
    Store(database).dispose()
    eng = create_engine(database)
    with eng.begin() as c:
        c.execute(text("UPDATE alembic_version SET version_num = '0099'"))
    eng.dispose()
    for argv in (["runs"], ["store", "upgrade"], ["store", "version"]):
        out = cli(*argv, "--store", database)
        assert out.returncode == ERROR_EXIT, out
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert "revision '0099'" in lines[0] and "newer objrel" in lines[0] and revisions.head() in lines[0]
    with pytest.raises(StoreTooNew, match="newer objrel"):
        Store(database)
    eng = create_engine(database)
    with eng.connect() as c:   # left as it was
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == "0099"
    eng.dispose()


def test_store_version_and_upgrade_say_what_they_did_in_one_line(tmp_path, capsys):
    db = tmp_path / "new.db"
    assert main(["store", "upgrade", "--store", str(db)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"created the objrel schema at revision {revisions.head()}")
    assert main(["store", "version", "--store", str(db)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"at revision {revisions.head()}, this objrel's head")


def test_opening_a_store_waits_for_another_writer_before_switching_it_to_wal(tmp_path):
    """SQLite refuses a journal-mode change at once while another connection writes (no busy handler):
    the second of two processes opening an old store met that, as "database is locked", while the first
    still held its upgrade.  Opening now waits for the writer and then puts the file in WAL."""
    path = tmp_path / "held.db"
    Store(path).engine.dispose()
    raw = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    raw.execute("PRAGMA journal_mode=DELETE")
    raw.execute("BEGIN IMMEDIATE")
    raw.execute("INSERT INTO objrel_meta (key, value) VALUES ('held', 'by another writer')")
    release = threading.Timer(0.6, lambda: raw.execute("COMMIT"))
    release.start()
    t0 = time.monotonic()
    store = Store(path)
    waited = time.monotonic() - t0
    release.join()
    assert waited >= 0.5, f"opened after {waited:.2f} s, before the writer let go"
    with store.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("SELECT value FROM objrel_meta WHERE key='held'").scalar() == "by another writer"
    store.dispose()
    raw.close()


@pytest.mark.subprocess
def test_two_processes_opening_an_old_store_upgrade_it_once(tmp_path):
    url = store_at_first_revision(new_database("sqlite", tmp_path))
    code = f"from objrel.store import Store; print(len(Store({url!r}).list_runs()))"
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o[0].strip() for o in outs] == ["2", "2"]
    store = Store(url)
    assert len(store.samples(1)) == 2 and revisions.version(store.engine).current
