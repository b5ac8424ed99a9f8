"""Boxes that run past the image's border are clipped with a note; only a box wholly outside is refused.

Real COCO and VOC exports hold many boxes that overhang the border by a few pixels or more; torchvision clamps
them (``clamp_bounding_boxes``).  The note lands in the stored sample row (``notes``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from objrel.config import RunConfig
from objrel.data import load_manifest, load_voc
from objrel.data.region import BOX_TOLERANCE_PX
from objrel.engine.classify import Engine
from objrel.store import Store

from tests.fixtures.colour_model import factory

W, H = 48, 40


def red(path: Path) -> None:
    img = np.zeros((H, W, 3), np.uint8)
    img[:] = (230, 10, 10)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path)


def test_an_extra_box_of_the_tested_class_past_the_border_is_clipped_and_the_image_tested(tmp_path):
    root = tmp_path / "data"
    red(root / "a.png")
    red(root / "b.png")
    images = [{"id": 1, "file_name": "a.png", "width": W, "height": H},
              {"id": 2, "file_name": "b.png", "width": W, "height": H}]
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [5, 5, 20, 20], "iscrowd": 0},
            {"id": 2, "image_id": 1, "category_id": 1, "bbox": [30, 25, 40, 40], "iscrowd": 0},   # to (70, 65)
            {"id": 3, "image_id": 2, "category_id": 1, "bbox": [5, 5, 20, 20], "iscrowd": 0},
            {"id": 4, "image_id": 2, "category_id": 1, "bbox": [60, 5, 10, 10], "iscrowd": 0}]    # wholly outside
    ann = root / "ann.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "red"}]}))
    store = Store(tmp_path / "s.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3",
                    batch_size=2, lazy=False)
    report = Engine(store, cfg, model=factory()).execute()
    rows = {r["sample_id"]: r for r in store.samples(report.run_id)}
    a = rows["1"]
    assert a["status"] == "tested" and a["correct"] is True and a["dropped"] is None
    assert sorted(tuple(o["box"]) for o in a["objects"]) == [(5.0, 5.0, 25.0, 25.0), (30.0, 25.0, 48.0, 40.0)]
    assert a["area_ratio"] == pytest.approx((20 * 20 + 18 * 15) / (W * H))
    assert len(a["notes"]) == 1
    note = a["notes"][0]
    assert "annotation 2" in note and "(30.0, 25.0, 70.0, 65.0)" in note
    assert "clipped to (30.0, 25.0, 48.0, 40.0)" in note
    assert "25.0 px past the border of the 48x40 image" in note
    # A box with no pixel inside is still refused, as an invalid annotation of the tested class.
    b = rows["2"]
    assert b["status"] == "skipped" and b["skip_code"] == "box-outside-image"
    assert "lies entirely outside the 48x40 image" in b["skip_reason"]


def test_voc_boxes_past_the_border_are_clipped_with_a_note(tmp_path):
    red(tmp_path / "a.png")
    objects = "".join(f"<object><name>red</name><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax>"
                      f"<ymax>{y2}</ymax></bndbox></object>"
                      for x1, y1, x2, y2 in [(1, 1, 10, 10), (40, 30, 60, 41), (1, 1, 49, 40)])
    (tmp_path / "a.xml").write_text(f"<annotation><filename>a.png</filename><size><width>{W}</width>"
                                    f"<height>{H}</height></size>{objects}</annotation>")
    s = load_voc(tmp_path / "a.xml", tmp_path).samples[0]
    assert s.problem is None
    assert [o.box for o in s.objects] == [(0.0, 0.0, 10.0, 10.0), (39.0, 29.0, 48.0, 40.0), (0.0, 0.0, 48.0, 40.0)]
    assert len(s.notes) == 1 and "a.xml object 1" in s.notes[0] and "12.0 px past the border" in s.notes[0]


def test_manifest_boxes_past_the_border_are_clipped_when_the_size_is_declared(tmp_path):
    red(tmp_path / "a.png")
    entries = [{"path": "a.png", "id": "sized", "width": W, "height": H,
                "objects": [{"label": "red", "box": [-10, -4, 30, 30]}, {"label": "red", "box": [200, 0, 210, 9]}]},
               {"path": "a.png", "id": "unsized", "objects": [{"label": "red", "box": [-10, -4, 30, 30]}]}]
    (tmp_path / "m.json").write_text(json.dumps(entries))
    s = {x.sample_id: x for x in load_manifest(tmp_path / "m.json").samples}
    assert s["sized"].objects[0].box == (0.0, 0.0, 30.0, 30.0)
    assert s["sized"].objects[1].box == (200.0, 0.0, 210.0, 9.0)     # wholly outside: left to the engine to drop
    assert len(s["sized"].notes) == 1 and "a.png object 0" in s["sized"].notes[0]
    assert s["unsized"].objects[0].box == (-10.0, -4.0, 30.0, 30.0) and s["unsized"].notes == ()


def test_an_overhang_within_the_rounding_tolerance_is_clipped_silently(tmp_path):
    red(tmp_path / "a.png")
    entries = [{"path": "a.png", "width": W, "height": H,
                "objects": [{"label": "red", "box": [-BOX_TOLERANCE_PX, 0, W + BOX_TOLERANCE_PX, 9]}]}]
    (tmp_path / "m.json").write_text(json.dumps(entries))
    s = load_manifest(tmp_path / "m.json").samples[0]
    assert s.objects[0].box == (0.0, 0.0, float(W), 9.0) and s.notes == ()
