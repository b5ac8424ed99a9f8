"""The Ray engines: the same plan on a local Ray (2 actors) gives the local engines' rows, and resumes like them;
the actors decode image bytes the driver read, never its paths."""

from __future__ import annotations

import dataclasses

import pytest

ray = pytest.importorskip("ray")

from objrel.config import DetectionConfig  # noqa: E402
from objrel.engine.classify import Engine  # noqa: E402
from objrel.engine.ray_engine import RayEngine  # noqa: E402
from objrel.engine.runs import engine_for  # noqa: E402
from objrel.store import Store  # noqa: E402

from tests.engine.test_engine import config, rows  # noqa: E402
from tests.fixtures.colour_model import factory  # noqa: E402

pytestmark = pytest.mark.ray


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


def _scenes(root):
    """Four detection scenes, a corrupt one and one whose file is missing."""
    from tests.fixtures.detection_support import TWO_RED_ONE_BLUE, write_scenes

    scenes = [dict(TWO_RED_ONE_BLUE, name=f"s{i}.png") for i in range(4)]
    ann = write_scenes(root, scenes + [dict(TWO_RED_ONE_BLUE, name="broken.png"),
                                       dict(TWO_RED_ONE_BLUE, name="gone.png")])
    (root / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n but no more")
    (root / "gone.png").unlink()
    return ann


def test_actors_decode_the_bytes_the_driver_read_not_its_paths(tmp_path, colour_set):
    """The samples reach an actor without a path and the folder is gone by then: the rows are the local
    engine's, the unreadable files (corrupt, missing) skipped with the same reason."""
    import shutil

    from objrel.engine.ray_engine import _actor_engine, _sent, _test_batch

    cfg = config(colour_set, plan="colours3", batch_size=4, test_all=True)
    local = Engine(None, cfg, model=factory())
    want = local.test_samples(local.samples)
    batch = [_sent(s) for s in local.samples]
    shutil.move(colour_set, tmp_path / "moved")  # nothing is left at the driver's paths
    assert all(s.image_path == "" for s, _ in batch)
    actor = _actor_engine("classification", cfg.to_dict(), local.plan.to_dict(), factory(), None, 2**30)
    got, passes = _test_batch(actor, batch)
    strip = lambda rs: [({k: v for k, v in r[0].items() if k != "elapsed_ms"}, *r[1:]) for r in rs]  # noqa: E731
    assert strip(got) == strip(want)
    skipped = {r[0]["skip_code"]: r[0]["skip_reason"] for r in got if r[0]["status"] == "skipped"}
    assert skipped["missing-file"] == "missing.png: image file 'missing.png' does not exist"
    assert skipped["corrupt-image"].startswith("corrupt.png: cannot decode image: UnidentifiedImageError: "
                                               "cannot identify image file 'corrupt.png'")
    assert passes > 0


def test_detection_actor_decodes_bytes_and_rows_equal_the_local_engine(tmp_path):
    import shutil

    from objrel.engine.detect import DetectionEngine
    from objrel.engine.ray_engine import _actor_engine, _sent, _test_batch
    from tests.fixtures.detection_support import ColourDetector

    ann = _scenes(tmp_path / "scenes")
    cfg = DetectionConfig(detector="colour", dataset=str(ann), plan="colours3", batch_size=2)
    local = DetectionEngine(None, cfg, detector=ColourDetector())
    want = local.test_samples(local.samples)
    batch = [_sent(s) for s in local.samples]
    shutil.move(tmp_path / "scenes", tmp_path / "moved")
    actor = _actor_engine("detection", cfg.to_dict(), local.plan.to_dict(), ColourDetector(), local.class_names,
                          2**30)
    got, _ = _test_batch(actor, batch)
    strip = lambda rs: [dataclasses.replace(r, sample={k: v for k, v in r.sample.items() if k != "elapsed_ms"})  # noqa: E731
                        for r in rs]
    assert strip(got) == strip(want)
    assert sorted(r.sample.get("skip_code") or "" for r in got) == ["", "", "", "", "corrupt-image", "missing-file"]


def test_detection_run_on_ray_equals_the_local_run(tmp_path, local_ray):
    from objrel.engine.detect import DetectionEngine
    from objrel.engine.ray_engine import RayDetectionEngine
    from tests.engine.test_detection_engine import stored_rows
    from tests.fixtures.detection_support import ColourDetector

    ann = _scenes(tmp_path / "scenes")
    cfg = DetectionConfig(detector="colour", dataset=str(ann), plan="colours3", batch_size=2)
    local = Store(tmp_path / "local.db")
    rl = DetectionEngine(local, cfg, detector=ColourDetector()).execute()
    distributed = Store(tmp_path / "ray.db")
    engine = engine_for(distributed, cfg.replace(engine="ray", workers=2), ColourDetector())
    assert isinstance(engine, RayDetectionEngine)
    rr = engine.execute()
    assert rr.status == "finished" and dict(rr.skipped) == dict(rl.skipped) == {"corrupt-image": 1,
                                                                                "missing-file": 1}
    assert (rr.processed, rr.tested, rr.untested, rr.forward_passes) == \
           (rl.processed, rl.tested, rl.untested, rl.forward_passes)
    assert stored_rows(distributed, rr.run_id) == stored_rows(local, rl.run_id)
    local.dispose()
    distributed.dispose()


def test_detection_config_takes_an_engine_and_workers_and_the_web_app_refuses_ray(tmp_path):
    from objrel.engine.run_form import check_web_config
    from objrel.errors import ConfigError

    cfg = DetectionConfig.from_dict({"engine": "ray", "workers": 3})
    assert (cfg.engine, cfg.workers) == ("ray", 3)
    assert DetectionConfig().engine == "local"
    with pytest.raises(ConfigError, match=r"engine must be one of \('local', 'ray'\), got 'spark'"):
        DetectionConfig(engine="spark")
    with pytest.raises(ConfigError, match="workers must be >= 1"):
        DetectionConfig(workers=0)
    store = Store(tmp_path / "web.db")
    with pytest.raises(ConfigError, match="runs on this machine only .engine local.; got engine='ray'"):
        check_web_config(store, DetectionConfig(detector="haar:frontalface_default", engine="ray"))
    store.dispose()


def test_detect_command_runs_on_ray(tmp_path, local_ray, capsys):
    from objrel.cli.main import main

    db = tmp_path / "det.db"
    assert main(["detect", "--dataset", "demo-faces", "--limit", "3", "--engine", "ray", "--workers", "1",
                 "--quiet", "--store", str(db)]) == 0
    store = Store(db)
    (run,) = store.list_runs()
    assert (run.config["engine"], run.config["workers"], run.status) == ("ray", 1, "finished")
    assert len(store.samples(run.id)) == 3
    store.dispose()


def test_auto_is_decided_on_the_driver_and_the_actors_load_that_runtime(tmp_path):
    """The driver's model is the one the run's record names; actors get its runtime, never ``auto`` (each node
    would measure and might choose another)."""
    from objrel.config import RunConfig

    store = Store(tmp_path / "s.db")
    engine = RayEngine(store, RunConfig(dataset="demo", limit=2, engine="ray", runtime="auto"))
    sent = engine._actor_config()
    assert engine.model.runtime in ("torch", "onnxruntime", "openvino")
    assert sent["runtime"] == engine.model.runtime != "auto"
    assert RunConfig.from_dict(sent).replace(engine="local").runtime == engine.model.runtime
    store.dispose()
