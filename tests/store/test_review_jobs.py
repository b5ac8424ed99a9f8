"""The review_jobs rows on both backends: one live job per run and relation, even when many ask at once."""

from __future__ import annotations

import threading

import pytest

from objrel.store import Store, review_jobs

from tests.store.helpers import new_database

KIND = "lime"


def make_run(store: Store) -> int:
    return store.create_run(name="r", model="m", model_config={}, task="single", class_names=["a"], dataset="d",
                            dataset_config={}, plan={"mutations": []}, config={}, seed=1, n_total=1)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    pg = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    s = Store(new_database(request.param, tmp_path, pg))
    yield s
    s.dispose()


def test_one_claim_wins_when_many_ask_at_once(store):
    rid = make_run(store)
    results, errors = [], []

    def claim():
        try:
            other = Store(store.url)
            try:
                results.append(review_jobs.claim_job(other, KIND, rid, "MR-2", lambda row: False, "dead"))
            finally:
                other.dispose()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=claim) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sum(new for _, new in results) == 1
    assert {row["id"] for row, _ in results} == {1}


def test_progress_finish_cancel_and_a_dead_job_replaced(store):
    rid = make_run(store)
    row, new = review_jobs.claim_job(store, KIND, rid, "MR-1", lambda r: False, "dead")
    assert new and row["status"] == "queued" and (row["done"], row["total"]) == (0, 0)
    assert review_jobs.mark_running(store, row["id"], 123, "h", 5)
    assert review_jobs.set_progress(store, row["id"], 2)
    got = review_jobs.job(store, row["id"])
    assert (got["status"], got["done"], got["total"], got["pid"], got["host"]) == ("running", 2, 5, 123, "h")
    # seen dead: failed with the reason, and a new queued row takes its place
    again, new = review_jobs.claim_job(store, KIND, rid, "MR-1", lambda r: True, "it died\nat /srv/x")
    assert new and again["id"] != row["id"]
    old = review_jobs.job(store, row["id"])
    assert old["status"] == "failed" and old["error"] == "it died at /srv/x" and old["finished_at"] is not None
    assert not review_jobs.set_progress(store, row["id"], 3)          # the old process learns it lost the job
    assert review_jobs.cancel_job(store, KIND, rid, "MR-1")
    assert review_jobs.latest_job(store, KIND, rid, "MR-1")["status"] == "cancelled"
    assert not review_jobs.cancel_job(store, KIND, rid, "MR-1")
    with pytest.raises(ValueError, match="ends finished, failed or cancelled"):
        review_jobs.finish_job(store, again["id"], "running")
    with pytest.raises(ValueError, match="no run"):
        review_jobs.claim_job(store, KIND, 999, "MR-1", lambda r: False, "dead")
