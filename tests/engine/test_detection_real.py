"""Real detectors on the bundled photos: OpenCV's Haar cascades and HOG, MTCNN; torchvision plumbing.

The face boxes are the hand-drawn ones of assets/demo/faces.json; the detectors and their weights
ship with opencv-python-headless (4.x) and facenet-pytorch.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from objrel.data import load_rgb
from objrel.config import DetectionConfig
from objrel.engine.detect import DetectionEngine
from objrel.data.detector_regions import load_demo_faces
from objrel.models import load_detector
from objrel.models.torchvision import detection_architectures
from objrel.errors import ConfigError
from objrel.mutations import Mutation, Plan, VoteGroup
from objrel.store import detections as D

pytestmark = pytest.mark.slow

# one mutation per relation: erase the centre-out half of the face box; noise of std 40 on the background
ERASE = Mutation.of("random_erase", ratio=0.5)
NOISE = Mutation.of("background_noise", variance=1600.0)
PLAN = Plan((VoteGroup("MR-1 erase", "MR-1", (ERASE,), 1), VoteGroup("MR-2 noise", "MR-2", (NOISE,), 1)))


def faces(*names):
    ds = load_demo_faces()
    return ds.__class__(ds.name, ds.format, ds.root, ds.annotation,
                        tuple(s for s in ds.samples if s.rel_path in names), ds.categories)


def run_on(store, detector_name, *images):
    """Run the detector over the named demo photos; returns the engine, the report, the images' rows by image
    id, the units by unit id and the verdicts by (unit id, mutation key)."""
    engine = DetectionEngine(store, DetectionConfig(detector=detector_name), dataset=faces(*images), plan=PLAN)
    report = engine.execute()
    verdicts = {(v.unit_id, v.mutation_key): v for v in D.verdicts(store, report.run_id)}
    units = {u.unit_id: u for u in D.units(store, report.run_id)}
    return engine, report, {s["sample_id"]: s for s in store.samples(report.run_id)}, units, verdicts


def test_opencv_face_detector_loses_an_erased_face_and_keeps_it_under_background_noise(store):
    """Astronaut photo (sample 8), face box (177, 72, 272, 170): the frontal-face cascade finds it (IoU ~0.86
    >= 0.3).  Erasing the centre-out half of the box removes the detection (MR-1 holds); Gaussian noise of
    variance 1600 on everything else leaves it (MR-2 holds)."""
    engine, report, rows, units, v = run_on(store, "haar:frontalface_default", "astronaut.jpg")
    assert list(rows) == ["8"] and list(units) == ["8/r0"] and units["8/r0"].t_source == 1
    assert D.source_detections(store, report.run_id, "8")["labels"] == ["face"] and units["8/r0"].iou_source > 0.8
    erased = v[("8/r0", ERASE.key)]
    assert (erased.verdict, erased.outcome) == ("holds", "removed")
    assert erased.record_index is None               # no face box overlaps the erased face any more
    noisy = v[("8/r0", NOISE.key)]
    assert (noisy.verdict, noisy.outcome) == ("holds", "kept") and noisy.iou_mutant > 0.8
    assert engine.detector.describe()["family"] == "opencv-haar"


def test_combined_cascades_and_a_missed_face(store):
    """Face + cat-face cascades together: Grace Hopper's face is found; the cameraman's profile-ish face and
    Chelsea's cat face (cut by the frame) are missed: units o0 with T 0, MR-1 n/a, MR-2 checked."""
    _, _, rows, units, v = run_on(store, "haar:frontalface_default+haar:frontalcatface", "grace_hopper.jpg",
                                  "camera.jpg", "chelsea.jpg")
    assert sorted(rows) == ["1", "3", "4"] and sorted(units) == ["1/o0", "3/o0", "4/r0"]
    assert units["1/o0"].label == "cat face" and units["4/r0"].t_source == 1
    assert v[("3/o0", ERASE.key)].verdict == "n/a"
    assert (v[("3/o0", NOISE.key)].outcome, v[("1/o0", NOISE.key)].outcome) == ("still missed", "still missed")
    assert (v[("4/r0", ERASE.key)].outcome, v[("4/r0", NOISE.key)].outcome) == ("removed", "kept")


def test_mtcnn_finds_the_faces_and_is_object_relevant(store):
    """MTCNN with facenet-pytorch's bundled weights finds both faces, the cameraman's too; erasing loses each,
    background noise keeps each.  Chelsea has only a cat face: skipped (not a label MTCNN reports)."""
    _, report, rows, units, v = run_on(store, "mtcnn", "grace_hopper.jpg", "camera.jpg", "chelsea.jpg")
    assert sorted(rows) == ["1", "3", "4"] and rows["1"]["skip_code"] == "unknown-label"
    assert sorted(units) == ["3/r0", "4/r0"]
    for u in ("3/r0", "4/r0"):
        assert units[u].iou_source > 0.5 and units[u].record_score > 0.99
        assert (v[(u, ERASE.key)].outcome, v[(u, NOISE.key)].outcome) == ("removed", "kept")


def test_hog_people_detector():
    hog = load_detector("hog:people")
    blank = np.full((200, 120, 3), 128, np.uint8)
    tiny = np.zeros((60, 40, 3), np.uint8)                 # smaller than the 64x128 window
    rocket = load_rgb(load_demo_faces().root + "/rocket.jpg")
    out = hog.detect([blank, tiny, rocket])
    assert len(out[0]) == 0 and len(out[1]) == 0
    # a false "person" on the launch tower: plausible for HOG, and every box lies inside the 480x427 photo
    assert len(out[2]) >= 1 and set(out[2].labels) == {"person"}
    assert all(0 <= x1 < x2 <= 480 and 0 <= y1 < y2 <= 427 for x1, y1, x2, y2 in out[2].boxes)
    assert hog.detect([rocket])[0] == out[2]               # deterministic


def test_torchvision_detector_from_a_local_state_dict(tmp_path):
    """No download: an untrained SSDlite with 3 classes, its weights saved and loaded back through the safe
    loader, gives the same detections; labels come from the class names, background never reported."""
    names = ["__background__", "face", "cat face"]
    assert {"fasterrcnn_resnet50_fpn", "retinanet_resnet50_fpn", "ssd300_vgg16", "fcos_resnet50_fpn"} <= set(
        detection_architectures())
    torch.manual_seed(0)
    a = load_detector("torchvision:ssdlite320_mobilenet_v3_large", class_names=names, score_threshold=0.0)
    path = tmp_path / "ssdlite.pt"
    torch.save(a.module.state_dict(), path)
    b = load_detector("torchvision:ssdlite320_mobilenet_v3_large", weights=str(path), class_names=names,
                      score_threshold=0.0)
    img = np.random.default_rng(0).integers(0, 256, (60, 80, 3), dtype=np.uint8)
    da, db = a.detect([img])[0], b.detect([img])[0]
    assert len(da) > 0 and da == db
    assert set(da.labels) <= {"face", "cat face"}
    assert list(da.scores) == sorted(da.scores, reverse=True)
    assert all(0 <= x1 < x2 <= 80 and 0 <= y1 < y2 <= 60 for x1, y1, x2, y2 in da.boxes)
    cut = float(np.median(da.scores))
    b.score_threshold = cut
    assert min(b.detect([img])[0].scores) >= cut
    with pytest.raises(ConfigError, match="does not fit"):
        load_detector("torchvision:ssdlite320_mobilenet_v3_large", weights=str(path), class_names=names[:2])
    with pytest.raises(ConfigError, match="unknown torchvision detection model"):
        load_detector("torchvision:resnet18")
