"""Helpers for tests/test_loaders.py: tiny images, annotation files and hand-drawn masks.

Everything here is independent of objrel's own decoding: masks are drawn with
numpy slicing, uncompressed RLE is run-length encoded here in plain Python, and
files are written with PIL / json / string templates.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from PIL import Image

# Default test image: 10 wide, 8 tall (80 pixels).
W, H = 10, 8


# ----------------------------------------------------------------- images


def write_image(path: Path, array: np.ndarray | None = None, *, size=(W, H), color=(40, 80, 120), **save) -> Path:
    """Write an RGB image (``array`` or a solid ``color`` of ``size`` (w, h)); returns ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if array is None:
        array = np.zeros((size[1], size[0], 3), np.uint8)
        array[:] = color
    Image.fromarray(np.asarray(array, dtype=np.uint8)).save(path, **save)
    return path


def pattern(w: int = W, h: int = H) -> np.ndarray:
    """A deterministic RGB array where every pixel differs from its neighbours."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 20 + 5, y * 25 + 3, (x * 7 + y * 11) % 256], axis=2).astype(np.uint8)


# ----------------------------------------------------------------- masks


def rect_mask(*boxes, w: int = W, h: int = H) -> np.ndarray:
    """Union of integer xyxy rectangles (x2/y2 exclusive), drawn by slicing."""
    m = np.zeros((h, w), dtype=bool)
    for x1, y1, x2, y2 in boxes:
        m[y1:y2, x1:x2] = True
    return m


def rle_counts(mask: np.ndarray) -> list[int]:
    """COCO uncompressed RLE counts: runs over the column-major pixels, starting with zeros."""
    flat = np.asarray(mask, dtype=bool).flatten(order="F")
    counts, current, run = [], False, 0
    for v in flat:
        if bool(v) == current:
            run += 1
        else:
            counts.append(run)
            current, run = bool(v), 1
    counts.append(run)
    return counts


# ----------------------------------------------------------------- annotation files


def write_json(path: Path, obj) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def coco_image(iid, file_name, w: int = W, h: int = H) -> dict:
    return {"id": iid, "file_name": file_name, "width": w, "height": h}


def coco_ann(aid, image_id, category_id, bbox, segmentation=None, iscrowd=0) -> dict:
    ann = {"id": aid, "image_id": image_id, "category_id": category_id, "bbox": bbox, "iscrowd": iscrowd}
    if segmentation is not None:
        ann["segmentation"] = segmentation
    return ann


def voc_xml(filename: str | None, objects, size=(W, H)) -> str:
    """A VOC / ILSVRC XML document; ``objects`` is ``[(name, (xmin, ymin, xmax, ymax) or None), ...]``."""
    parts = ["<annotation>", "<folder>imgs</folder>"]
    if filename is not None:
        parts.append(f"<filename>{filename}</filename>")
    if size is not None:
        parts.append(f"<size><width>{size[0]}</width><height>{size[1]}</height><depth>3</depth></size>")
    for name, box in objects:
        parts.append(f"<object><name>{name}</name><difficult>0</difficult>")
        if box is not None:
            x1, y1, x2, y2 = box
            parts.append(f"<bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox>")
        parts.append("</object>")
    parts.append("</annotation>")
    return "\n".join(parts)


def write_text(path: Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------- engine view


CLASS_NAMES = tuple(f"class{i}" for i in range(1000))


def engine_prepare(sample, class_names=CLASS_NAMES):
    """Run the engine's per-sample preparation (decode + region checks) without a model or store.

    Returns the engine's ``_Prepared``: ``.skip`` is the ``BadSampleError`` that would
    make the sample a skipped row, or ``None`` with ``.image`` decoded.
    """
    from objrel.engine.classify import Engine

    stub = SimpleNamespace(model=SimpleNamespace(class_names=list(class_names)))
    return Engine._prepare(stub, sample)
