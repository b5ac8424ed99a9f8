"""F9: run ids are never reused, so nothing keyed by a run id (the app's image caches, links) can show a
deleted run's rows for a new run."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from objrel.store import Store, revisions
from tests.store.helpers import new_database, run_row, store_at_first_revision

RUN_ARGS = ("name", "model", "model_config", "task", "class_names", "dataset", "dataset_config", "plan", "config",
            "seed", "n_total")


def new_run(store: Store) -> int:
    return store.create_run(**{k: v for k, v in run_row().items() if k in RUN_ARGS})


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_the_id_of_a_deleted_newest_run_is_not_given_again(tmp_path, backend, request):
    url = new_database(backend, tmp_path, request.getfixturevalue("pg_url") if backend == "postgresql" else None)
    store = Store(url)
    assert [new_run(store), new_run(store)] == [1, 2]
    store.delete_run(2)
    assert new_run(store) == 3
    store.dispose()
    reopened = Store(url)                      # the high-water mark is in the store, not in the process
    reopened.delete_run(3)
    assert new_run(reopened) == 4


def test_an_upgraded_sqlite_store_stops_reusing_ids_and_keeps_its_runs(tmp_path):
    url = store_at_first_revision(new_database("sqlite", tmp_path))   # runs 1 and 2, ids as SQLite gave them
    store = Store(url)
    assert [r.id for r in store.list_runs()] == [1, 2] and len(store.samples(1)) == 2
    store.delete_run(2)
    assert new_run(store) == 3
    eng = create_engine(url)
    with eng.connect() as c:
        assert "AUTOINCREMENT" in c.execute(text("SELECT sql FROM sqlite_master WHERE name = 'runs'")).scalar()
    eng.dispose()
    assert revisions.version(store.engine).current
