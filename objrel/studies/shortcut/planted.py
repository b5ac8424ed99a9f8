"""``PlantedDetector``: a rule-based stand-in detector whose background reliance is known by construction.

**This is not a trained detector.**  It stands in for one in the detection arm of
``objrel bench shortcut`` because the benchmark needs detections whose reliance on the
background is known scene by scene, and a detector small enough to train on two CPU
cores in seconds would localise too poorly to be tested at all.  Its rule is written
down here, so one can check that what the counterfactual ground truth
(``groundtruth.detection_ground_truth``) finds is what was planted.

It reads planted-shortcut scenes with flat-colour backgrounds
(``SyntheticConfig(backgrounds="colours")``: background type ``t`` is a flat field of
``FLAT_COLOURS[t]``) and reports at most one record per image:

1. **background colour**: the per-channel median of the image's outermost ``BORDER_PX``
   pixel rings;
2. **localisation** (object pixels, never the class): after a 3 x 3 median blur, the
   pixels whose largest channel difference from the background colour exceeds
   ``FOREGROUND_DIFF``, closed with a 3 x 3 kernel; the largest outer contour (at least
   ``MIN_AREA_SHARE`` of the image) is the object, its bounding box the record's box;
3. **class**, by the object's *extent* (the largest distance from the filled contour's
   centroid to its outline, as a share of the image side):

   * extent >= ``CONTEXT_EXTENT`` (a large object): the class whose shape
     (``scenes.SHAPES``) matches the outline best (``cv2.matchShapes`` on Hu moments,
     against each class's unrotated reference outline): it looks at the object;
   * extent < ``CONTEXT_EXTENT`` (a small object): the class whose flat colour
     ``FLAT_COLOURS[c]`` is nearest to the background colour: **the planted shortcut**;
     it never looks at the object beyond finding it.

So a detection of a small object relies on the background by construction (paste the
same object on another class's background and its label changes) and a detection of
a large one does not (unless the new background also changes what the localiser finds,
which the counterfactual ground truth measures rather than assumes).  The extent is
shape-independent to within about 20% (a disc's is its radius ``r``, a square's or a
triangle's about ``1.15 r``), so the split does not follow the class.

The score is a softmax of the chosen branch's evidence (the colour distances, or the
shape distances), so it lies in (0, 1); the detector keeps every record
(``score_threshold=None``).

``py:objrel.studies.shortcut.planted:planted_k<K>`` (``K`` = 2..8 classes) names the
detector for ``load_detector``, so a stored run can be re-created by name.
"""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from objrel.models.detector import Detector
from objrel.data.detections import Detections
from objrel.studies.shortcut.scenes import FLAT_COLOURS, MAX_CLASSES, SHAPES, shape_mask

# Width of the border ring whose median colour is the background colour, pixels.
BORDER_PX = 2
# A pixel is foreground when some channel differs from the background colour by more than this
# (after a 3 x 3 median blur).  Flat backgrounds carry +/- 8 levels of noise (scenes.FLAT_NOISE); a
# lower threshold finds more of the object's dark texture pixels and more of a noisy background.
FOREGROUND_DIFF = 30
# The object's contour must cover at least this share of the image, or nothing is reported.
MIN_AREA_SHARE = 0.01
# Objects whose extent (largest centroid-to-outline distance / image side) is below this are named by
# the background colour.  Single-label scenes draw half-extents r in 0.22-0.32 of the side
# (scenes.SINGLE_SCALE) and an outline's extent is about 1.0-1.2 r, so roughly half fall below.
CONTEXT_EXTENT = 0.29
# Softmax temperatures of the two branches' scores: squared colour distance, Hu-moment distance.
COLOUR_TEMPERATURE = 500.0
SHAPE_TEMPERATURE = 0.05
# Side of the image the reference outlines are rendered on (half-extent 0.35 of it, unrotated).
REFERENCE_SIZE = 128
SPEC_PREFIX = "py:objrel.studies.shortcut.planted:planted_k"
_FACTORY = re.compile(r"planted_k(\d+)$")
# Branch names in ``PlantedDetector.explain``.
CONTEXT, OBJECT = "context", "object"


def _largest_contour(mask: np.ndarray) -> np.ndarray | None:
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not contours:
        return None
    return max(contours, key=cv2.contourArea)


def _reference_outlines(n_classes: int) -> list[np.ndarray]:
    s = REFERENCE_SIZE
    return [_largest_contour(shape_mask(SHAPES[c], s, s / 2, s / 2, 0.35 * s, 0.0)) for c in range(n_classes)]


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


class PlantedDetector(Detector):
    """The rule-based stand-in of the module docstring, for scenes of ``n_classes`` classes.

    context_extent: objects with a smaller extent (share of the image side) are named by the
    background colour; 0 makes a detector that always looks at the object, 1 one that never does.
    """

    def __init__(self, n_classes: int, context_extent: float = CONTEXT_EXTENT, name: str | None = None):
        if not 2 <= int(n_classes) <= MAX_CLASSES:
            raise ValueError(f"n_classes must be in 2..{MAX_CLASSES}, got {n_classes}")
        if not 0.0 <= float(context_extent) <= 1.0:
            raise ValueError(f"context_extent must be a share of the image side in [0, 1], got {context_extent}")
        self.n_classes = int(n_classes)
        self.context_extent = float(context_extent)
        super().__init__(name or f"planted-detector (K={self.n_classes})", SHAPES[: self.n_classes], None,
                         {"rule": "small objects named by the background colour, large ones by their outline",
                          "context_extent": self.context_extent, "foreground_diff": FOREGROUND_DIFF,
                          "spec": f"{SPEC_PREFIX}{self.n_classes}"})
        self._palette = np.asarray(FLAT_COLOURS[: self.n_classes], dtype=np.float64)
        self._outlines = _reference_outlines(self.n_classes)

    def explain(self, image: np.ndarray) -> dict | None:
        """What the rule sees on one ``(H, W, 3)`` uint8 RGB image: ``None`` when nothing is found, else
        ``{"box", "extent", "branch" ("context" or "object"), "label" (index), "score", "background"}``."""
        h, w = image.shape[:2]
        ring = np.concatenate([image[:BORDER_PX].reshape(-1, 3), image[-BORDER_PX:].reshape(-1, 3),
                               image[:, :BORDER_PX].reshape(-1, 3), image[:, -BORDER_PX:].reshape(-1, 3)])
        bg = np.median(ring.astype(np.float64), axis=0)
        blurred = cv2.medianBlur(np.ascontiguousarray(image), 3).astype(np.float64)
        fg = (np.abs(blurred - bg[None, None, :]).max(axis=2) > FOREGROUND_DIFF).astype(np.uint8)
        fg = cv2.morphologyEx(fg, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
        contour = _largest_contour(fg)
        if contour is None or cv2.contourArea(contour) < MIN_AREA_SHARE * h * w:
            return None
        x, y, bw, bh = cv2.boundingRect(contour)
        m = cv2.moments(contour)
        cx, cy = m["m10"] / m["m00"], m["m01"] / m["m00"]
        pts = contour.reshape(-1, 2).astype(np.float64) + 0.5
        extent = float(np.hypot(pts[:, 0] - cx, pts[:, 1] - cy).max() / max(h, w))
        if extent < self.context_extent:
            d = ((self._palette - bg[None, :]) ** 2).sum(axis=1)
            probs, branch = _softmax(-d / COLOUR_TEMPERATURE), CONTEXT
        else:
            d = np.asarray([cv2.matchShapes(contour, ref, cv2.CONTOURS_MATCH_I1, 0.0) for ref in self._outlines])
            probs, branch = _softmax(-d / SHAPE_TEMPERATURE), OBJECT
        label = int(np.argmax(probs))
        return {"box": (float(x), float(y), float(x + bw), float(y + bh)), "extent": extent, "branch": branch,
                "label": label, "score": float(probs[label]), "background": tuple(float(v) for v in bg)}

    def _detect(self, images) -> list:
        out = []
        for im in images:
            e = self.explain(np.asarray(im))
            out.append(Detections() if e is None else
                       Detections((e["box"],), (self.labels[e["label"]],), (e["score"],)))
        return out


def planted_reliance(detector: PlantedDetector, annotation) -> dict[str, bool]:
    """By construction: ``{image id: the rule names the image's object from the background}`` (the context
    branch) on every image of a written split; images where it finds nothing are False.  The benchmark
    reports how often this agrees with the counterfactual ground truth, which never reads the rule."""
    from objrel.studies.shortcut.scenes import read_split

    root = Path(annotation).parent
    out = {}
    for rec in read_split(annotation)["images"]:
        e = detector.explain(np.asarray(Image.open(root / rec["file_name"]).convert("RGB")))
        out[str(rec["id"])] = e is not None and e["branch"] == CONTEXT
    return out


def spec(n_classes: int) -> str:
    """The ``load_detector`` name of the planted detector for ``n_classes`` classes."""
    return f"{SPEC_PREFIX}{int(n_classes)}"


def __getattr__(name: str):
    """``planted_k<K>``: a factory of the K-class detector (what ``py:...:planted_k<K>`` specs import)."""
    m = _FACTORY.match(name)
    if m and 2 <= int(m.group(1)) <= MAX_CLASSES:
        k = int(m.group(1))
        return lambda: PlantedDetector(k)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
