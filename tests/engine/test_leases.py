"""Runs own their process (F11, F12): a lease with a heartbeat in the store.  A second process may not
resume a run a live process holds; a process whose run was deleted under it stops and never writes into
the run that took its place."""

from __future__ import annotations

import datetime as dt
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import insert, update

from objrel.engine import jobs
from objrel.engine.runs import resume
from objrel.errors import RunHeld, RunLeaseLost
from objrel.review.roles import actor_of
from objrel.store import Store, leases
from objrel.store import schema as S
from objrel.store.store import now

from tests.engine.test_jobs_retest import account, fast_scrypt, wait_for  # noqa: F401  (autouse fixture)
from tests.engine.test_trust import H, W, ann, red_image, write_coco
from tests.store.helpers import run_row

ROOT = Path(__file__).resolve().parents[2]
START = """
import sys
from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.store import Store
cfg = RunConfig(model="py:tests.engine.kill_models:slow", dataset=sys.argv[2], plan="colours3", batch_size=2)
Engine(Store(sys.argv[1]), cfg).execute()
"""
N_IMAGES = 16


def images(root: Path, n: int = N_IMAGES) -> Path:
    for i in range(1, n + 1):
        red_image(root / f"{i}.png")
    return write_coco(root, [{"id": i, "file_name": f"{i}.png", "width": W, "height": H} for i in range(1, n + 1)],
                      [ann(i, i, 1, [5, 5, 20, 20]) for i in range(1, n + 1)])


def start(db: Path, data: Path) -> subprocess.Popen:
    """A slow run (about half a second per batch) in its own process, run 1 of ``db``."""
    return subprocess.Popen([sys.executable, "-c", START, str(db), str(data)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def cli(*argv: str) -> subprocess.CompletedProcess:
    code = "import sys; from objrel.cli.main import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)


def under_way(store: Store, run_id: int = 1) -> bool:
    try:
        run = store.get_run(run_id)
    except KeyError:
        return False
    return run.status == "running" and run.n_done >= 2


@pytest.mark.subprocess
def test_a_second_resume_of_a_running_run_is_refused_naming_its_holder(tmp_path):
    db, data = tmp_path / "s.db", images(tmp_path / "data")
    first = start(db, data)
    try:
        store = Store(db)
        assert wait_for(lambda: under_way(store), timeout=120), first.stderr.read() if first.poll() else "no progress"
        second = cli("run", "--resume", "1", "--store", str(db))            # F11: objrel run --resume N while N runs
        assert second.returncode == 2, second
        errors = [line for line in second.stderr.splitlines() if line.startswith("objrel: error:")]
        assert len(errors) == 1 and second.stderr.strip().endswith(errors[0]) and "Traceback" not in second.stderr
        lines = errors
        assert f"held by process {first.pid} on {socket.gethostname()}" in lines[0] and "last beat" in lines[0]
        with pytest.raises(RunHeld, match=f"process {first.pid}"):             # the library entry point
            resume(1, store)
        with pytest.raises(RunHeld, match=f"process {first.pid}"):             # the app's background runs
            jobs.start_run(actor_of(store, account(store)), str(db), resume=1)
        assert first.wait(timeout=180) == 0, first.stderr.read()
    finally:
        if first.poll() is None:
            first.kill()
    run = store.get_run(1)
    assert (run.status, run.n_done, len(store.samples(1))) == ("finished", N_IMAGES, N_IMAGES)
    assert leases.holder(store, 1) is None                                      # released when it finished


@pytest.mark.subprocess
def test_a_process_whose_run_was_deleted_stops_and_never_writes_into_the_run_that_took_its_id(tmp_path):
    db, data = tmp_path / "s.db", images(tmp_path / "data")
    first = start(db, data)
    try:
        store = Store(db)
        assert wait_for(lambda: under_way(store), timeout=120), "no progress"
        store.delete_run(1)
        with store.engine.begin() as c:   # a new run takes id 1 (what SQLite did before ids were kept unique)
            c.execute(insert(S.runs).values(id=1, **run_row(name="someone else's run", status="pending", n_done=0,
                                                               n_tested=0)))
        err = first.communicate(timeout=120)[1]
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode != 0 and "RunLeaseLost" in err and "no longer this process's" in err
    other = store.get_run(1)
    assert (other.name, other.status, other.n_done, other.pid) == ("someone else's run", "pending", 0, None)
    assert store.samples(1) == [] and store.attempts(1) == {} and other.passes_done is None


def backdate(store: Store, run_id: int, seconds: float, **values) -> None:
    with store.engine.begin() as c:
        c.execute(update(S.runs).where(S.runs.c.id == run_id).values(
            heartbeat_at=now() - dt.timedelta(seconds=seconds), **values))


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_lease_is_taken_once_and_over_only_when_stale_or_dead(tmp_path, backend, request):
    url = str(tmp_path / "s.db") if backend == "sqlite" else request.getfixturevalue("pg_url")
    store = Store(url)
    rid = store.create_run(**{k: v for k, v in run_row().items() if k in (
        "name", "model", "model_config", "task", "class_names", "dataset", "dataset_config", "plan", "config",
        "seed", "n_total")})
    token = leases.acquire(store, rid)
    assert store.lease(rid) == token
    with pytest.raises(RunHeld, match=f"process {os.getpid()} on {socket.gethostname()}, last beat 0 s ago"):
        leases.acquire(Store(url), rid)                                        # a second holder, while it beats
    assert leases.renew(store, rid, token)

    backdate(store, rid, leases.LEASE_STALE_S - 5, lease_host="elsewhere", pid=1)
    with pytest.raises(RunHeld, match="on elsewhere"):                          # another host, still fresh
        leases.acquire(Store(url), rid)
    backdate(store, rid, leases.LEASE_STALE_S + 5)                             # stale: taken over
    other = Store(url)
    taken = leases.acquire(other, rid)
    assert not leases.renew(store, rid, token)                                 # the old holder lost it ...
    with pytest.raises(RunLeaseLost):                                          # ... and writes nothing more
        store.write_sample(rid, {"sample_id": "x", "rel_path": "x.png", "status": "tested"}, [], [], [])
    with pytest.raises(RunLeaseLost):
        store.record_attempts(rid, ["x"])
    assert other.samples(rid) == [] and other.attempts(rid) == {}

    backdate(other, rid, 0, lease_host=socket.gethostname(), pid=dead_pid())   # a dead process of this host
    third = Store(url)
    assert leases.acquire(third, rid) not in (token, taken)
    assert leases.release(third, rid, third.lease(rid), status="finished")
    assert leases.holder(third, rid) is None and third.get_run(rid).status == "finished"
