"""The box limits hold for every annotation format: an image over MAX_BOXES_PER_IMAGE is a skipped sample with
its reason (a manifest entry, a VOC file), and a manifest over MAX_BOXES_TOTAL is refused whole."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from objrel.data import box_limits
from objrel.data.manifest import load_manifest
from objrel.data.voc import load_voc
from objrel.errors import AnnotationError


def _image(folder, name):
    Image.new("RGB", (32, 32), "white").save(folder / name)


def test_a_manifest_entry_over_the_per_image_limit_is_skipped_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(box_limits, "MAX_BOXES_PER_IMAGE", 3)
    _image(tmp_path, "a.png")
    _image(tmp_path, "b.png")
    box = {"label": "cat", "box": [1, 1, 10, 10]}
    (tmp_path / "m.json").write_text(json.dumps([{"path": "a.png", "objects": [box] * 4},
                                                 {"path": "b.png", "objects": [box] * 3}]))
    by_id = {s.sample_id: s for s in load_manifest(tmp_path / "m.json").samples}
    assert by_id["a.png"].problem == (box_limits.TOO_MANY_BOXES,
                                      "the image has 4 annotations; at most 3 per image are tested")
    assert by_id["b.png"].problem is None and len(by_id["b.png"].objects) == 3


def test_a_manifest_over_the_total_limit_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(box_limits, "MAX_BOXES_TOTAL", 5)
    _image(tmp_path, "a.png")
    box = {"label": "cat", "box": [1, 1, 10, 10]}
    (tmp_path / "m.json").write_text(json.dumps([{"path": "a.png", "objects": [box] * 3}] * 2))
    with pytest.raises(AnnotationError, match="m.json holds 6 annotations; at most 5"):
        load_manifest(tmp_path / "m.json")


def test_a_voc_file_over_the_per_image_limit_is_skipped_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(box_limits, "MAX_BOXES_PER_IMAGE", 2)
    (tmp_path / "JPEGImages").mkdir()
    (tmp_path / "Annotations").mkdir()
    _image(tmp_path / "JPEGImages", "a.jpg")
    obj = "<object><name>cat</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>9</xmax><ymax>9</ymax></bndbox></object>"
    (tmp_path / "Annotations" / "a.xml").write_text(
        f"<annotation><filename>a.jpg</filename><size><width>32</width><height>32</height></size>{obj * 3}"
        "</annotation>")
    [sample] = load_voc(tmp_path / "Annotations", tmp_path / "JPEGImages").samples
    assert sample.problem == (box_limits.TOO_MANY_BOXES, "the image has 3 annotations; at most 2 per image are tested")
