"""A real two-node Ray cluster on this machine (``ray start --head`` and ``ray start --address``, see
tests/fixtures/ray_cluster.py): a classifier run and a detection run on it store the rows a local run stores, and
the second node does work although the datasets' folder is empty there (as on another machine): its actors decode
the bytes the driver read and sent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import ray

from objrel.config import DetectionConfig, RunConfig
from objrel.data.bundled import DEMO_ANNOTATIONS, DEMO_IMAGES
from objrel.data.detector_regions import DEMO_FACES_ANNOTATIONS
from objrel.engine.classify import Engine
from objrel.engine.detect import DetectionEngine
from objrel.engine.ray_engine import ACTOR_THREADS, RayDetectionEngine, RayEngine
from objrel.engine.runs import engine_for
from objrel.models.threads import torch_threads
from objrel.store import Store

from tests.engine.test_detection_engine import stored_rows
from tests.engine.test_engine import rows
from tests.fixtures.ray_cluster import ray_cluster

pytestmark = [pytest.mark.ray, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
# Demo photos of the classifier run, two of them made unreadable on the driver (a missing and a corrupt file).
CLASSIFIER_SAMPLES = 6


@pytest.fixture(scope="module")
def driver_only(tmp_path_factory) -> Path:
    """A folder with files on the driver that the second node sees empty."""
    return tmp_path_factory.mktemp("driver-only")


@pytest.fixture(scope="module")
def cluster(driver_only):
    if ray.is_initialized():  # a module before this one may have left its local Ray connected
        ray.shutdown()
    with ray_cluster(pythonpath=str(ROOT), hidden_from_second=str(driver_only)) as c:
        yield c
    # every process of the cluster is gone (the fixture raises otherwise): no raylet or GCS of its dirs is left
    found = subprocess.run(["pgrep", "-f", str(Path(c.head_dir).parent)], capture_output=True, text=True, check=False)
    assert found.stdout == "", f"Ray processes outlived the cluster: {found.stdout}"


def node_ids(address: str) -> dict[str, str]:
    """The alive nodes of the cluster at ``address``: custom resource name -> node id."""
    ray.init(address=address, log_to_driver=False)
    try:
        nodes = [n for n in ray.nodes() if n["Alive"]]
    finally:
        ray.shutdown()
    return {r: n["NodeID"] for n in nodes for r in ("head_node", "second_node") if r in n["Resources"]}


def demo_copy(root: Path, annotations: Path = DEMO_ANNOTATIONS) -> Path:
    """A copy of the demo photos and ``annotations`` under ``root``; the copied annotation file's path."""
    shutil.copytree(DEMO_IMAGES, root / "images")
    path = root / annotations.name
    shutil.copy(annotations, path)
    return path


def broken_demo(root: Path) -> Path:
    """A copy of the demo set whose first sample's file is missing and whose second sample's file is not an image."""
    path = demo_copy(root)
    ann = json.loads(path.read_text())
    first, second = sorted(ann["images"], key=lambda r: str(r["id"]))[:2]
    (root / "images" / first["file_name"]).unlink()
    (root / "images" / second["file_name"]).write_bytes(b"not an image at all")
    return path


def test_two_nodes_join_and_the_second_cannot_see_the_drivers_folder(cluster, driver_only):
    nodes = node_ids(cluster.address)
    assert set(nodes) == {"head_node", "second_node"} and nodes["head_node"] != nodes["second_node"]
    (driver_only / "here.txt").write_text("on the driver")
    ray.init(address=cluster.address, log_to_driver=False)
    try:
        def listing(folder):
            return sorted(os.listdir(folder))

        on = {name: ray.get(ray.remote(listing).options(num_cpus=1, resources={name: 1}).remote(str(driver_only)))
              for name in ("head_node", "second_node")}
    finally:
        ray.shutdown()
        (driver_only / "here.txt").unlink()
    assert on == {"head_node": ["here.txt"], "second_node": []}


def test_classifier_run_on_the_cluster_equals_a_local_run(cluster, driver_only, tmp_path, monkeypatch):
    ann = broken_demo(driver_only / "demo")
    # torch: the cluster's plumbing is under test here (tests/models/test_runtimes.py compares the runtimes)
    cfg = RunConfig(model="efficientnet-lite0", dataset=str(ann), plan="colours3", lazy=False,
                    limit=CLASSIFIER_SAMPLES, engine="ray", workers=2, runtime="torch")
    local = Store(tmp_path / "local.db")
    reference = Engine(local, cfg.replace(engine="local"))
    # the actors run torch on ACTOR_THREADS threads: so does the reference run, or the sums inside a layer run in
    # another order and the probabilities differ in their last bits
    with torch_threads(ACTOR_THREADS):
        rl = reference.execute()
    on_cluster = Store(tmp_path / "cluster.db")
    monkeypatch.setenv("RAY_ADDRESS", cluster.address)  # $RAY_ADDRESS joins the cluster
    engine = engine_for(on_cluster, cfg)
    assert isinstance(engine, RayEngine)
    rr = engine.execute()
    assert rr.status == "finished" and rr.processed == CLASSIFIER_SAMPLES
    assert dict(rr.skipped) == dict(rl.skipped) == {"missing-file": 1, "corrupt-image": 1}
    assert (rr.tested, rr.untested, rr.forward_passes) == (rl.tested, rl.untested, rl.forward_passes)
    assert rows(on_cluster, rr.run_id) == rows(local, rl.run_id)
    # one actor per node (one CPU each): both nodes tested samples (the unreadable files went as their errors);
    # node 2 sees the dataset's folder empty, so its rows came from the bytes the driver sent
    nodes = node_ids(cluster.address)
    assert set(engine.node_samples) == {nodes["head_node"], nodes["second_node"]}
    assert sum(engine.node_samples.values()) == CLASSIFIER_SAMPLES
    local.dispose()
    on_cluster.dispose()


def test_detection_run_on_the_second_node_equals_a_local_run(cluster, driver_only, tmp_path):
    faces = demo_copy(driver_only / "faces", DEMO_FACES_ANNOTATIONS)  # the demo-faces set where node 2 sees nothing
    cfg = DetectionConfig(detector="haar:frontalface_default", dataset=str(faces), engine="ray", workers=1)
    local = Store(tmp_path / "local.db")
    rl = DetectionEngine(local, cfg.replace(engine="local")).execute()
    on_cluster = Store(tmp_path / "cluster.db")
    # the one actor asks for the second node's resource: the head node cannot run it
    engine = RayDetectionEngine(on_cluster, cfg, address=cluster.address, resources={"second_node": 1})
    rr = engine.execute()
    assert rr.status == "finished" and rr.processed == rl.processed == len(engine.samples)
    assert (rr.tested, rr.untested, dict(rr.skipped), rr.forward_passes) == \
           (rl.tested, rl.untested, dict(rl.skipped), rl.forward_passes)
    assert rl.tested > 0
    assert stored_rows(on_cluster, rr.run_id) == stored_rows(local, rl.run_id)
    # images whose annotation has a problem (no face) are skipped on the driver; every other went to node 2
    sent = sum(not s.problem for s in engine.samples)
    assert sent > 0 and dict(engine.node_samples) == {node_ids(cluster.address)["second_node"]: sent}
    local.dispose()
    on_cluster.dispose()
