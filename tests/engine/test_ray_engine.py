"""The Ray engine: the same plan on local Ray Data (2 actors) gives the local engine's rows, and resumes like it."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

from objrel.engine.classify import Engine  # noqa: E402
from objrel.engine.ray_engine import RayEngine  # noqa: E402
from objrel.engine.runs import engine_for  # noqa: E402
from objrel.store import Store  # noqa: E402

from tests.engine.test_engine import config, rows  # noqa: E402
from tests.fixtures.colour_model import factory  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs) for the module: starting Ray costs several seconds."""
    started = not ray.is_initialized()
    if started:
        from objrel.engine.ray_engine import ray_started

        ray_started(num_cpus=2)
    yield
    if started:
        ray.shutdown()


@pytest.mark.parametrize("lazy", [False, True])
def test_ray_rows_equal_the_local_engine_rows(tmp_path, colour_set, local_ray, lazy):
    cfg = config(colour_set, plan="colours3", batch_size=3, test_all=True, lazy=lazy)
    local = Store(tmp_path / "local.db")
    rl = Engine(local, cfg, model=factory()).execute()
    distributed = Store(tmp_path / "ray.db")
    engine = engine_for(distributed, cfg.replace(engine="ray"))  # the colour model is built in each actor
    assert isinstance(engine, RayEngine)
    rr = engine.execute()
    assert rr.status == "finished"
    assert (rr.processed, rr.tested, rr.untested, dict(rr.skipped)) == \
           (rl.processed, rl.tested, rl.untested, dict(rl.skipped))
    assert rr.forward_passes == rl.forward_passes
    assert rows(distributed, rr.run_id) == rows(local, rl.run_id)
    local.dispose()
    distributed.dispose()


def test_ray_run_resumes_without_duplicates(tmp_path, colour_set, local_ray):
    cfg = config(colour_set, plan="colours3", batch_size=2, engine="ray")
    store = Store(tmp_path / "ray.db")
    first = RayEngine(store, cfg, model=factory(), workers=2).execute(stop_after=3)
    assert first.status == "pending" and first.processed == 3
    second = RayEngine(store, cfg, model=factory(), workers=2).execute(run_id=first.run_id)
    assert second.status == "finished" and second.processed == 7
    ids = [s["sample_id"] for s in store.samples(first.run_id)]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 10
    clean = Store(tmp_path / "clean.db")
    rc = Engine(clean, cfg.replace(engine="local"), model=factory()).execute()
    assert rows(store, first.run_id) == rows(clean, rc.run_id)
    store.dispose()
    clean.dispose()
