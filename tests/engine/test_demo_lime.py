"""The demo build draws its classifier runs' review samples and starts their LIME in the background."""

from __future__ import annotations

import io
import time

import pytest

from objrel import review as R
from objrel.config import RunConfig
from objrel import demo
from objrel.review import lime_ahead as L

from tests.conftest import write_flagged_set


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@pytest.mark.subprocess
def test_demo_build_starts_lime_for_its_review_samples(tmp_path, monkeypatch):
    ann = write_flagged_set(tmp_path / "flagged", n_flagged=2, n_clean=1)
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3",
                    name="demo colour run")
    monkeypatch.setattr(demo, "DEMO_RUNS", (cfg,))
    monkeypatch.setattr(demo, "detection_demo_runs", lambda: ())
    monkeypatch.setattr(demo, "detection_demo_sweeps", lambda: ())
    log = io.StringIO()
    db = tmp_path / "demo.db"
    store = demo.build_demo_store(str(db), log=log)
    try:
        rid = store.list_runs()[0].id
        drawn = {rel: R.review_sample_info(store, rid, rel) for rel in ("MR-1", "MR-2")}
        assert all(d is not None and d.size == 2 for d in drawn.values())   # both relations flag both
        assert f"demo LIME: review samples of run {rid} MR-1, run {rid} MR-2 drawn" in log.getvalue()
        deadline = time.time() + 300
        while time.time() < deadline and not all(L.lime_job_status(store, rid, rel).finished
                                                 for rel in ("MR-1", "MR-2")):
            time.sleep(0.1)
        for rel in ("MR-1", "MR-2"):
            st = L.lime_job_status(store, rid, rel)
            assert st.status == "finished" and st.done == st.total > 0, (rel, st)
        # a second build leaves the explained samples alone
        again = io.StringIO()
        demo.build_demo_store(str(db), log=again)
        assert "demo LIME: the 2 review samples are explained already" in again.getvalue()
    finally:
        store.dispose()
