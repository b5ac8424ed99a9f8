"""LIME ahead of the reviewers: a background process per review sample, with the real demo model.

The run is EfficientNet-Lite0 on the bundled demo photos with the 3-colour plan; its MR-2 review sample is
stored with two items, and LIME runs with a handful of samples, so a job explains 2 x (source + 2 or 3
mutants).
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from objrel import access as A
from objrel import review as R
from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.errors import NotAllowed
from objrel.review import lime_ahead as L
from objrel.review.lime_pair import cached_pair
from objrel.review.roles import actor_of
from objrel.store import Store, review_jobs
from objrel.store import reviews as review_rows
from objrel.store.leases import pid_alive

RELATION = "MR-2"
ITEMS = 2
FEW = 8           # LIME samples per image: enough to fit, quick on a busy machine
JOB_TIMEOUT_S = 600.0


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """A store with a finished EfficientNet-Lite0 run on the demo photos (3 colours) and a reviewer."""
    db = tmp_path_factory.mktemp("lime") / "store.db"
    store = Store(db)
    report = Engine(store, RunConfig(model="efficientnet-lite0", dataset="demo", plan="colours3",
                                     name="lime ahead")).execute()
    R.accounts.create_reviewer(store, "rita", "rita-passphrase", roles=(A.REVIEWER,))
    store.dispose()
    return str(db), report.run_id


@pytest.fixture
def sample(demo_run, tmp_path):
    """A copy of the store whose MR-2 review sample holds the first ``ITEMS`` flagged inferences."""
    import shutil

    db = tmp_path / "copy.db"
    shutil.copy(demo_run[0], db)
    store = Store(db)
    rid = demo_run[1]
    flagged = store.flagged_sample_ids(rid, RELATION)
    assert len(flagged) >= ITEMS, f"the demo run should flag at least {ITEMS} MR-2 inferences, got {flagged}"
    review_rows.store_review_sample(store, rid, RELATION, 0, lambda population: population[:ITEMS], replace=False)
    yield store, rid
    store.dispose()


def rita(store):
    return actor_of(store, "rita")


def job_row(store, rid):
    return review_jobs.latest_job(store, L.LIME_KIND, rid, RELATION)


def watch_until_finished(store, rid, timeout=JOB_TIMEOUT_S) -> list[str]:
    """The statuses seen (each once, in order) until the job no longer runs."""
    seen: list[str] = []
    deadline = time.time() + timeout
    while time.time() < deadline:
        st = L.lime_job_status(store, rid, RELATION)
        if not seen or seen[-1] != st.status:
            seen.append(st.status)
        if st.finished:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"the LIME job did not finish within {timeout:.0f} s; statuses seen {seen}")


def children() -> list[str]:
    """This process's child pids (a zombie stays one until it is reaped)."""
    me = os.getpid()
    with open(f"/proc/{me}/task/{me}/children") as fh:
        return fh.read().split()


def total_steps(store, rid) -> int:
    return sum(len(L.ahead_keys(store, rid, sid, RELATION))
               for sid in review_rows.review_sample(store, rid, RELATION)["sample_ids"])


def wait_for(pred, timeout=JOB_TIMEOUT_S, step=0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


@pytest.mark.slow
def test_job_explains_the_sample_in_the_background_once(sample):
    store, rid = sample
    ids = review_rows.review_sample(store, rid, RELATION)["sample_ids"]
    keys = L.ahead_keys(store, rid, ids[0], RELATION)
    # the source, then the MR-2 colour fills the run evaluated (a lazy run stops at k = 2 violations)
    assert keys[0] == "source" and 3 <= len(keys) <= 4 and all(k.startswith("fill_background") for k in keys[1:])
    steps = total_steps(store, rid)
    assert cached_pair(store, rid, ids[0], keys[1], FEW) is None        # nothing computed yet, nothing computed here
    assert L.lime_job_status(store, rid, RELATION) is None

    first = L.start_lime_job(rita(store), store, rid, RELATION, num_samples=FEW)
    assert first.status == "queued" and not first.finished
    again = L.start_lime_job(rita(store), store.url, rid, RELATION, num_samples=FEW)   # by URL, while it runs
    assert again.status in ("queued", "running")
    rows = review_jobs.latest_job(store, L.LIME_KIND, rid, RELATION)
    assert rows["id"] == 1, "a second start while the first job lives must not make another job"
    pid = rows["pid"]
    assert pid and pid != os.getpid()

    seen = watch_until_finished(store, rid)
    assert seen[-1] == "finished", seen
    assert "running" in seen and seen.index("running") < seen.index("finished"), seen
    done = L.lime_job_status(store, rid, RELATION)
    assert done.done == done.total == steps and done.error is None and done.share == 1.0
    assert job_row(store, rid)["id"] == 1
    # every image of every item is cached, and the page reads each pair without a model
    for sid in ids:
        for key in L.ahead_keys(store, rid, sid, RELATION)[1:]:
            pair = cached_pair(store, rid, sid, key, FEW)
            assert pair is not None and [p.key for p in pair] == ["source", key]
            assert pair[0].image.dtype.name == "uint8" and max(pair[0].image.shape[:2]) <= 320
    # the process was reaped: no zombie left behind in this (long-lived) process
    assert wait_for(lambda: str(pid) not in children(), timeout=30), f"process {pid} was not reaped"


@pytest.mark.slow
def test_a_killed_job_reads_failed_and_starts_again(sample):
    store, rid = sample
    L.start_lime_job(rita(store), store, rid, RELATION, num_samples=FEW)
    assert wait_for(lambda: L.lime_job_status(store, rid, RELATION).status == "running")
    pid = job_row(store, rid)["pid"]
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not pid_alive(pid), timeout=30)
    dead = L.lime_job_status(store, rid, RELATION)
    assert dead.status == "failed" and dead.finished and dead.error == L.DIED_ERROR
    assert "/" not in dead.error

    restarted = L.start_lime_job(rita(store), store, rid, RELATION, num_samples=FEW)
    assert restarted.status == "queued"
    assert job_row(store, rid)["id"] == 2
    assert review_jobs.job(store, 1)["status"] == "failed"       # the dead one is kept, marked failed
    assert watch_until_finished(store, rid)[-1] == "finished"
    final = L.lime_job_status(store, rid, RELATION)
    assert final.done == final.total == total_steps(store, rid)


@pytest.mark.slow
def test_drawing_a_sample_starts_its_lime_when_asked(demo_run, tmp_path):
    import shutil

    db = tmp_path / "draw.db"
    shutil.copy(demo_run[0], db)
    store = Store(db)
    try:
        rid = demo_run[1]
        R.draw_review_sample(rita(store), store, rid, RELATION)
        assert L.lime_job_status(store, rid, RELATION) is None          # the default starts nothing
        R.draw_review_sample(A.SERVER, store, rid, RELATION, redraw=True, explain_ahead=True)   # redraw: admins
        st = L.lime_job_status(store, rid, RELATION)
        assert st is not None and st.status in ("queued", "running")
        # the next call returns the stored draw and starts no second job; then stop the one that runs
        R.draw_review_sample(rita(store), store, rid, RELATION, explain_ahead=True)
        assert job_row(store, rid)["id"] == 1
        pid = job_row(store, rid)["pid"]
        assert L.cancel_lime_job(rita(store), store, rid, RELATION)
        assert wait_for(lambda: not pid_alive(pid), timeout=120)
        assert L.lime_job_status(store, rid, RELATION).status == "cancelled"
    finally:
        store.dispose()


def test_visitors_may_not_start_lime_and_detection_runs_are_refused(tmp_path):
    store = Store(tmp_path / "s.db")
    try:
        with pytest.raises(NotAllowed):
            L.start_lime_job(A.ANONYMOUS, store, 1, RELATION)
        with pytest.raises(NotAllowed):
            L.cancel_lime_job(A.ANONYMOUS, store, 1, RELATION)
        assert L.ensure_lime_job(A.ANONYMOUS, store, 1, RELATION) is None
        assert L.lime_job_status(store, 1, RELATION) is None
        with pytest.raises(ValueError, match="num_samples"):
            L.start_lime_job(A.SERVER, store, 1, RELATION, num_samples=1)
    finally:
        store.dispose()


def test_job_errors_are_one_line_without_paths():
    err = FileNotFoundError("no image at /srv/data/secret/photos/cat.jpg\nsecond line")
    line = L.one_line_error(err)
    assert line == "FileNotFoundError: no image at cat.jpg second line"
