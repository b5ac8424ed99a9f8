"""Detectors on the exported runtimes (ONNX Runtime, OpenVINO) against torch, and the detectors that stay on
their own runtime.

No pretrained torchvision detector is on this machine and nothing may be downloaded, so the network is an
untrained SSDlite320 (MobileNetV3) built with torch seed 0 for the labels face: its batch-norm statistics are
estimated on two demo photos (a freshly built network gives every anchor the same score, and ties make any
ordering comparison meaningless), and it keeps its 5 best boxes per image.  Its boxes are not faces, but they
differ by photo and by mutant, which is all an equality test needs.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from objrel.analysis.same_results import differences
from objrel.config import DetectionConfig
from objrel.constants import AUTO_RUNTIME, ONNXRUNTIME, OPENVINO, TORCH_RUNTIME
from objrel.data import load_rgb
from objrel.data.detector_regions import load_demo_faces
from objrel.engine.detect import DetectionEngine
from objrel.errors import ConfigError
from objrel.models import load_detector
from objrel.models.detector_runtimes import (BOX_TOLERANCE, SCORE_TOLERANCE, ExportedDetector, detections_difference,
                                             with_detector_runtime)
from objrel.models.runtimes import RuntimeUnavailable
from objrel.models.torchvision import torchvision_detector
from objrel.mutations import Mutation, Plan, VoteGroup
from objrel.store import Store
from objrel.store import detections as D

pytestmark = pytest.mark.slow

EXPORTED = (ONNXRUNTIME, OPENVINO)
ARCH = "ssdlite320_mobilenet_v3_large"
LABELS = ["__background__", "face"]
ERASE = Mutation.of("random_erase", ratio=0.5)
NOISE = Mutation.of("background_noise", variance=1600.0)
PLAN = Plan((VoteGroup("MR-1 erase", "MR-1", (ERASE,), 1), VoteGroup("MR-2 noise", "MR-2", (NOISE,), 1)))
FACE_PHOTOS = ("camera.jpg", "grace_hopper.jpg", "astronaut.jpg")


@pytest.fixture(scope="module")
def demo_images():
    return [load_rgb(s.image_path) for s in load_demo_faces().samples]


@pytest.fixture(scope="module")
def ssdlite(demo_images):
    """The seeded SSDlite320 described in the module docstring, on torch."""
    torch.manual_seed(0)
    det = torchvision_detector(ARCH, None, LABELS, score_threshold=None, detections_per_img=5)
    m = det.module
    for mod in m.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            mod.reset_running_stats()
            mod.momentum = None  # a plain average over the calibration batch
    m.train()
    with torch.no_grad():
        x, _ = m.transform([torch.from_numpy(im.copy()).permute(2, 0, 1).float().div(255) for im in demo_images[2:4]])
        m.head(list(m.backbone(x.tensors).values()))
    m.eval()
    return det


@pytest.mark.parametrize("runtime", EXPORTED)
def test_exported_detections_equal_torchs_on_the_demo_photos(ssdlite, demo_images, runtime):
    """Every demo photo (nine sizes from 192x320 to 600x512): the same number of records, the same labels,
    scores within SCORE_TOLERANCE and boxes within BOX_TOLERANCE px of torch's."""
    exported = with_detector_runtime(ssdlite, runtime)
    assert isinstance(exported, ExportedDetector) and exported.describe()["runtime"] == runtime
    want, got = ssdlite.detect(demo_images), exported.detect(demo_images)
    assert [len(d) for d in want] == [5] * len(demo_images)
    assert detections_difference(got, want) <= 1.0
    for g, w in zip(got, want):
        assert sorted(g.labels) == sorted(w.labels)
        assert np.abs(np.sort(g.scores) - np.sort(w.scores)).max() <= SCORE_TOLERANCE
    record = exported.describe()
    assert record["precision"] == "f32" and record["onnx_export"].startswith("det-")
    assert record["tolerance"] == {"score": SCORE_TOLERANCE, "box_px": BOX_TOLERANCE}


def run_rows(tmp_path, detector, runtime: str):
    store = Store(tmp_path / f"{runtime}.db")
    ds = load_demo_faces()
    ds = ds.__class__(ds.name, ds.format, ds.root, ds.annotation,
                      tuple(s for s in ds.samples if s.rel_path in FACE_PHOTOS), ds.categories)
    cfg = DetectionConfig(detector=f"torchvision:{ARCH}", labels=tuple(LABELS), runtime=runtime)
    engine = DetectionEngine(store, cfg, detector=with_detector_runtime(detector, runtime), dataset=ds, plan=PLAN)
    report = engine.execute()
    assert report.status == "finished"
    assert store.get_run(report.run_id).model_config["runtime"] == runtime
    units = sorted((u.__dict__ for u in D.units(store, report.run_id)), key=lambda u: u["unit_id"])
    verdicts = sorted((v.__dict__ for v in D.verdicts(store, report.run_id)),
                      key=lambda v: (v["image_id"], v["unit_key"], v["mutation_key"]))
    return units, verdicts


def tolerance(path: str) -> float:
    """Box corners within BOX_TOLERANCE px, every other float (scores, IoUs, distances) within SCORE_TOLERANCE."""
    return BOX_TOLERANCE if "box" in path else SCORE_TOLERANCE


def test_a_detection_run_stores_the_same_units_and_verdicts_on_every_runtime(tmp_path, ssdlite):
    """Three demo face photos, random erase (MR-1) and background noise (MR-2): torch's run and each exported
    runtime's store the same units and verdicts (record indices, labels, verdicts, outcomes exactly; scores,
    IoUs and distances within SCORE_TOLERANCE; boxes within BOX_TOLERANCE px)."""
    want_units, want_verdicts = run_rows(tmp_path, ssdlite, TORCH_RUNTIME)
    assert len(want_units) >= 3 and len(want_verdicts) >= 2 * len(FACE_PHOTOS)
    for runtime in EXPORTED:
        units, verdicts = run_rows(tmp_path, ssdlite, runtime)
        assert differences(units, want_units, tolerance, skip=()) == [], runtime
        assert differences(verdicts, want_verdicts, tolerance, skip=()) == [], runtime


def test_auto_picks_a_matching_runtime_once_and_records_what_it_measured(ssdlite):
    chosen = with_detector_runtime(ssdlite, AUTO_RUNTIME)
    record = chosen.describe()
    choice = record["runtime_choice"]
    assert record["runtime"] == choice["runtime"] and set(choice["images_per_s"]) == {TORCH_RUNTIME, *EXPORTED}
    assert choice["runtime"] == max(choice["images_per_s"], key=choice["images_per_s"].get)
    assert all(0 <= d <= 1.0 for d in choice["max_difference"].values())
    again = with_detector_runtime(ssdlite, AUTO_RUNTIME)  # read back from the model cache, not measured again
    assert again.describe()["runtime_choice"] == choice


def test_opencv_detectors_stay_on_opencv_and_an_exported_runtime_is_refused_in_one_line():
    haar = load_detector("haar:frontalface_default", runtime=AUTO_RUNTIME)
    record = haar.describe()
    assert record["runtime"] == "opencv" and "cannot export it" in record["runtime_reason"]
    with pytest.raises(RuntimeUnavailable) as err:
        load_detector("haar:frontalface_default", runtime=ONNXRUNTIME)
    line = str(err.value)
    assert "\n" not in line and "HaarCascadeDetector" in line and "--runtime auto or torch" in line
    assert load_detector("haar:frontalface_default+hog:people", runtime=AUTO_RUNTIME).describe()["runtime"] == "opencv"


def test_a_faster_rcnn_is_refused_naming_the_batch_padding():
    """Faster R-CNN pads a batch to its largest image, so its boxes depend on the batch: not exported."""
    torch.manual_seed(0)
    with pytest.raises(RuntimeUnavailable, match="pads a batch to its largest image") as err:
        load_detector("torchvision:fasterrcnn_mobilenet_v3_large_320_fpn", runtime=OPENVINO, class_names=LABELS)
    assert "\n" not in str(err.value) and f"--runtime {AUTO_RUNTIME} or {TORCH_RUNTIME}" in str(err.value)
    kept = load_detector("torchvision:fasterrcnn_mobilenet_v3_large_320_fpn", runtime=AUTO_RUNTIME, class_names=LABELS)
    assert kept.describe()["runtime"] == TORCH_RUNTIME and "pads a batch" in kept.describe()["runtime_reason"]


def test_a_detection_run_asking_for_an_exported_runtime_of_an_opencv_detector_is_refused(tmp_path):
    with pytest.raises(RuntimeUnavailable, match="cannot run on openvino"):
        DetectionEngine(Store(tmp_path / "x.db"), DetectionConfig(runtime=OPENVINO))
    engine = DetectionEngine(Store(tmp_path / "y.db"), DetectionConfig())
    assert DetectionConfig().runtime == AUTO_RUNTIME and engine.detector.describe()["runtime"] == "opencv"
    with pytest.raises(ConfigError, match="runtime must be one of"):
        DetectionConfig(runtime="tensorrt")
