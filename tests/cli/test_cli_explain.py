"""``objrel explain-sample``: a review sample's LIME cached from the shell, seen by the pages as a job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from objrel.access import SERVER
from objrel.review import lime_ahead as L
from objrel.review.lime_pair import cached_pair
from objrel.review.sampling import draw_review_sample
from objrel.store import review_jobs

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
FEW = 4


def objrel(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "objrel", *map(str, args)], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


def test_explain_sample_caches_every_item_and_says_so(flagged_store):
    store, rid = flagged_store
    refused = objrel("explain-sample", "--run", rid, "--relation", "MR-2", "--samples", FEW, "--store", store.url)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (f"objrel: error: run {rid} has no MR-2 review sample drawn yet; "
                                      "draw it before explaining it")
    ids = draw_review_sample(SERVER, store, rid, "MR-2")
    res = objrel("explain-sample", "--run", rid, "--relation", "MR-2", "--samples", FEW, "--store", store.url)
    assert res.returncode == 0, res.stderr
    steps = sum(len(L.ahead_keys(store, rid, sid, "MR-2")) for sid in ids)
    assert res.stdout.strip() == f"run {rid} MR-2: LIME: {steps}/{steps} images explained (finished)"
    lines = [line for line in res.stderr.splitlines() if line.startswith(f"LIME run {rid} MR-2 ")]
    assert len(lines) == steps and lines[0].startswith(f"LIME run {rid} MR-2 1/{steps}: sample {ids[0]} source")
    status = L.lime_job_status(store, rid, "MR-2")
    assert (status.status, status.done, status.total) == ("finished", steps, steps)
    for sid in ids:
        keys = L.ahead_keys(store, rid, sid, "MR-2")
        assert cached_pair(store, rid, sid, keys[1], FEW) is not None
    # run again: a new job that finds everything cached
    again = objrel("explain-sample", "--run", rid, "--relation", "MR-2", "--samples", FEW, "--store", store.url)
    assert again.returncode == 0 and "(finished)" in again.stdout
    assert review_jobs.latest_job(store, L.LIME_KIND, rid, "MR-2")["id"] == 2


def test_a_live_job_is_not_doubled_from_the_shell(flagged_store):
    store, rid = flagged_store
    draw_review_sample(SERVER, store, rid, "MR-1")
    # a job another live process holds (this test's own process stands for it)
    row, new = review_jobs.claim_job(store, L.LIME_KIND, rid, "MR-1", lambda r: False, "dead")
    assert new
    from objrel.store.leases import this_host
    review_jobs.set_process(store, row["id"], os.getpid(), this_host())
    res = objrel("explain-sample", "--run", rid, "--relation", "MR-1", "--samples", FEW, "--store", store.url)
    assert res.returncode == 0 and res.stdout.strip() == f"run {rid} MR-1: LIME: starting (queued)"
    assert review_jobs.latest_job(store, L.LIME_KIND, rid, "MR-1")["id"] == row["id"]
