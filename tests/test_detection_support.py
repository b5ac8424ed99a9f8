"""Hand-written detectors and tiny scenes for the detection tests (no tests here).

``ColourDetector`` reports every 8-connected component of saturated red or blue pixels whose
pixel count fills at least ``min_density`` of its bounding box; its score is the component's
pixel count / 1000.  It looks at the object only, so its behaviour under a mutation can be
worked out by hand.  A *gate* makes it depend on the context instead: it reports nothing unless
the gate accepts the whole image (the median gray level, the noise in the background), which is
how the tests plant background-driven detectors.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from objrel.models.detector import CallableDetector, Detector

from objrel.models.detections import Detections

RED = (220, 20, 20)
BLUE = (20, 20, 220)
LABELS = ("red", "blue")


def colour_mask(img: np.ndarray, label: str) -> np.ndarray:
    """Saturated red (R > 200, G < 50, B < 50) or blue (B > 200, R < 50, G < 50) pixels."""
    r, g, b = (img[:, :, i].astype(int) for i in range(3))
    if label == "red":
        return (r > 200) & (g < 50) & (b < 50)
    return (b > 200) & (r < 50) & (g < 50)


def components(mask: np.ndarray, min_density: float) -> list[tuple[tuple[int, int, int, int], int]]:
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    out = []
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if area >= min_density * w * h:
            out.append(((x, y, x + w, y + h), area))
    return out


class ColourDetector(Detector):
    def __init__(self, min_density: float = 0.5, gate=None, name: str = "colour-components"):
        super().__init__(name, LABELS, None, {"min_density": min_density})
        self.min_density = min_density
        self.gate = gate

    def _detect(self, images):
        out = []
        for im in images:
            if self.gate is not None and not self.gate(im):
                out.append(Detections())
                continue
            boxes, labels, scores = [], [], []
            for label in LABELS:
                for box, area in components(colour_mask(im, label), self.min_density):
                    boxes.append(box)
                    labels.append(label)
                    scores.append(area / 1000.0)
            out.append(Detections.from_arrays(boxes, labels, scores))
        return out


def median_gray(im: np.ndarray) -> float:
    return float(np.median(im.mean(axis=2)))


def bright_context_detector() -> ColourDetector:
    """Finds the squares only when the image's median gray level is at least 150."""
    return ColourDetector(gate=lambda im: median_gray(im) >= 150, name="needs-bright-context")


def dark_context_detector() -> ColourDetector:
    """Finds the squares only when the image's median gray level is below 150."""
    return ColourDetector(gate=lambda im: median_gray(im) < 150, name="needs-dark-context")


def background_std(im: np.ndarray) -> float:
    """Standard deviation of every channel value of the pixels that are neither red nor blue."""
    bg = ~(colour_mask(im, "red") | colour_mask(im, "blue"))
    return float(im[bg].astype(np.float64).std())


def quiet_context_detector(max_std: float = 30.0) -> ColourDetector:
    """Finds the squares only while the background's channel values vary by less than ``max_std``."""
    return ColourDetector(gate=lambda im: background_std(im) < max_std, name="needs-quiet-background")


def stuck_detector() -> CallableDetector:
    """Always reports a red box at (4, 4, 20, 20) with score 0.9, whatever the image shows."""
    return CallableDetector(lambda images: [([(4, 4, 20, 20)], ["red"], [0.9]) for _ in images],
                            labels=LABELS, name="stuck")


def write_scenes(root: Path, scenes: list[dict], categories=("red", "blue", "green")) -> Path:
    """A COCO file over painted scenes.  Each scene: ``name``, ``size`` (w, h), ``background`` gray level,
    ``objects``: ``[(label, (x1, y1, x2, y2)), ...]`` painted (red / blue) and annotated, ``annotate``
    (default True)."""
    root.mkdir(parents=True, exist_ok=True)
    colours = {"red": RED, "blue": BLUE, "green": (20, 220, 20)}
    images, anns = [], []
    for i, sc in enumerate(scenes, start=1):
        w, h = sc.get("size", (64, 48))
        img = np.full((h, w, 3), sc.get("background", 128), np.uint8)
        for label, (x1, y1, x2, y2) in sc["objects"]:
            img[y1:y2, x1:x2] = colours[label]
        Image.fromarray(img).save(root / sc["name"])
        images.append({"id": i, "file_name": sc["name"], "width": w, "height": h})
        if sc.get("annotate", True):
            for label, (x1, y1, x2, y2) in sc["objects"]:
                anns.append({"id": len(anns) + 1, "image_id": i, "category_id": categories.index(label) + 1,
                             "bbox": [x1, y1, x2 - x1, y2 - y1]})
    coco = {"images": images, "annotations": anns,
            "categories": [{"id": k + 1, "name": c} for k, c in enumerate(categories)]}
    path = root / "annotations.json"
    path.write_text(json.dumps(coco))
    return path


# Scene of test_detection_engine: two red squares (objects 0 and 1 share a label) and a blue one, on gray.
A, B, C = (4, 4, 20, 20), (30, 4, 50, 24), (8, 26, 26, 44)
TWO_RED_ONE_BLUE = {"name": "two_red.png", "objects": [("red", A), ("red", B), ("blue", C)]}
