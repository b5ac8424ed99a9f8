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


def second_run(store) -> int:
    """A second run of the same model and data in the store, its MR-2 review sample one item: a second job."""
    report = Engine(store, RunConfig(model="efficientnet-lite0", dataset="demo", plan="colours3",
                                     name="lime ahead, again")).execute()
    review_rows.store_review_sample(store, report.run_id, RELATION, 0, lambda population: population[:1],
                                    replace=False)
    return report.run_id


@pytest.mark.slow
def test_the_queue_runs_at_most_the_cap_of_processes_and_drains_in_order(sample, monkeypatch):
    store, rid = sample
    runs = [rid, second_run(store)]
    monkeypatch.setenv(L.PROCESSES_ENV, "1")
    first = L.start_lime_job(rita(store), store, runs[0], RELATION, num_samples=FEW)
    second = L.start_lime_job(rita(store), store, runs[1], RELATION, num_samples=FEW)
    assert not first.waiting and second.waiting and "waiting for a free LIME process" in second.text()
    most = 0
    deadline = time.time() + JOB_TIMEOUT_S
    while time.time() < deadline:
        most = max(most, len(L.live_processes(store)))
        states = [L.lime_job_status(store, r, RELATION) for r in runs]
        if all(s.finished for s in states):
            break
        time.sleep(0.05)
    assert [s.status for s in states] == ["finished", "finished"], states
    assert most == 1, f"{most} LIME processes ran at once under a cap of 1"
    # the one process did both: the second job was taken by the process of the first
    rows = [review_jobs.latest_job(store, L.LIME_KIND, r, RELATION) for r in runs]
    assert rows[0]["pid"] == rows[1]["pid"]


def test_the_cap_is_read_from_its_variable_or_refused_in_one_line(monkeypatch):
    monkeypatch.delenv(L.PROCESSES_ENV, raising=False)
    assert L.max_processes() == L.DEFAULT_PROCESSES == 1
    monkeypatch.setenv(L.PROCESSES_ENV, "3")
    assert L.max_processes() == 3
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(L.PROCESSES_ENV, bad)
        with pytest.raises(ValueError, match=rf"^{L.PROCESSES_ENV} must be a whole number of processes >= 1"):
            L.max_processes()


SERVER_STAND_IN = """
import sys, time
from objrel.review import lime_ahead as L
from objrel.review.roles import actor_of
from objrel.store import Store
store = Store(sys.argv[1])
L.ensure_lime_job(actor_of(store, "rita"), store, int(sys.argv[2]), sys.argv[3], num_samples=int(sys.argv[4]))
print("started", flush=True)
time.sleep(600)
"""


@pytest.mark.subprocess
@pytest.mark.slow
def test_a_job_the_app_started_ends_with_the_app_and_waits_to_be_taken_again(sample, monkeypatch):
    """The app's LIME process ends once its server is gone (here a stand-in process that starts a job as the
    Review page does, then is killed); the job goes back to the queue, and the next reviewer's visit gives it
    a process again, which finishes it."""
    import subprocess
    import sys

    store, rid = sample
    monkeypatch.setenv(L.AHEAD_ENV, "1")          # the app explains ahead (the tests' default is off)
    server = subprocess.Popen([sys.executable, "-c", SERVER_STAND_IN, store.url, str(rid), RELATION, str(FEW)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, L.AHEAD_ENV: "1"})
    try:
        assert server.stdout.readline().strip() == "started"
        assert wait_for(lambda: L.lime_job_status(store, rid, RELATION).status == "running")
        child = job_row(store, rid)["pid"]
        assert pid_alive(child)
    finally:
        server.kill()
        server.wait()
    assert wait_for(lambda: not pid_alive(child), timeout=30), "the LIME process outlived the server"
    st = L.lime_job_status(store, rid, RELATION)
    assert st.status == "queued" and st.waiting and not st.finished, st
    assert job_row(store, rid)["id"] == 1                         # the same job, not a failed one and a new one
    again = L.ensure_lime_job(rita(store), store, rid, RELATION, num_samples=FEW, tied=False)
    assert not again.waiting
    assert watch_until_finished(store, rid)[-1] == "finished"
    assert job_row(store, rid)["id"] == 1


def test_only_a_reviewer_at_work_starts_lime_from_the_page(sample):
    """Someone who may not explain (a visitor) only reads the job's state: nothing starts."""
    store, rid = sample
    assert L.ensure_lime_job(A.ANONYMOUS, store, rid, RELATION) is None
    assert L.lime_job_status(store, rid, RELATION) is None
