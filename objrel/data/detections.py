"""What a detector says about one image: boxes (xyxy pixels), labels and scores.

A *detection record* (ORMR s V-B) is one row of that output: a box, its label and
its confidence.  ``Detections`` holds every record of one image; it is a frozen value
that serialises to JSON for the store (detections are kept with boxes and scores, so verdicts
can be re-derived without the model).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from objrel.data.sample import Box


def _box(b, where: str) -> Box:
    try:
        x1, y1, x2, y2 = (float(v) for v in b)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: a box must be four numbers (x1, y1, x2, y2) in pixels, got {b!r}") from None
    if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
        raise ValueError(f"{where}: box {b!r} has non-finite coordinates")
    if x2 < x1 or y2 < y1:
        raise ValueError(f"{where}: box {b!r} is not xyxy: expected x1 <= x2 and y1 <= y2 (pixels)")
    return (x1, y1, x2, y2)


@dataclass(frozen=True)
class Detections:
    """The records of one image, in any order (``sorted()`` orders them by score).

    boxes:  ``(x1, y1, x2, y2)`` floats in pixels of the image the detector saw; x to the
            right, y down, x2/y2 exclusive edges (the box of pixels 0..9 is ``(0, 0, 10, 10)``).
    labels: one label name per box (``"face"``, ``"cat face"``, ``"person"``).
    scores: one confidence per box; its scale is the detector's own (a probability in
            [0, 1] for torchvision models and MTCNN, a stage or SVM margin for OpenCV's Haar
            cascades and HOG).
    """

    boxes: tuple[Box, ...] = ()
    labels: tuple[str, ...] = ()
    scores: tuple[float, ...] = ()

    def __post_init__(self):
        boxes = tuple(_box(b, f"detection {i}") for i, b in enumerate(self.boxes))
        labels = tuple(str(lab) for lab in self.labels)
        try:
            scores = tuple(float(s) for s in self.scores)
        except (TypeError, ValueError):
            raise ValueError(f"scores must be numbers, got {self.scores!r}") from None
        if not (len(boxes) == len(labels) == len(scores)):
            raise ValueError(f"detections need one label and one score per box; got {len(boxes)} boxes, "
                             f"{len(labels)} labels, {len(scores)} scores")
        if any(math.isnan(s) for s in scores):
            raise ValueError(f"scores must not be NaN, got {scores}")
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "scores", scores)

    @classmethod
    def from_arrays(cls, boxes, labels: Sequence, scores) -> "Detections":
        """From an ``(N, 4)`` xyxy array-like, N labels and N scores (any numeric dtype, object too)."""
        b = np.asarray(boxes if boxes is not None else [], dtype=np.float64).reshape(-1, 4)
        s = np.asarray(scores if scores is not None else [], dtype=np.float64).reshape(-1)
        return cls(tuple((x1, y1, x2, y2) for x1, y1, x2, y2 in b.tolist()), tuple(labels), tuple(s.tolist()))

    def __len__(self) -> int:
        return len(self.boxes)

    def box_array(self) -> np.ndarray:
        """``(N, 4)`` float64 xyxy array (``(0, 4)`` when empty)."""
        return np.asarray(self.boxes, dtype=np.float64).reshape(-1, 4)

    def sorted(self) -> "Detections":
        """Records by descending score; equal scores keep their order."""
        order = sorted(range(len(self)), key=lambda i: -self.scores[i])
        return self.take(order)

    def take(self, indices) -> "Detections":
        """The detections at ``indices``, in that order."""
        idx = list(indices)
        return Detections(tuple(self.boxes[i] for i in idx), tuple(self.labels[i] for i in idx),
                          tuple(self.scores[i] for i in idx))

    def above(self, threshold: float | None) -> "Detections":
        """Records with ``score >= threshold`` (all of them when ``threshold`` is None)."""
        if threshold is None:
            return self
        return self.take(i for i, s in enumerate(self.scores) if s >= threshold)

    def clipped(self, width: int, height: int) -> "Detections":
        """Boxes clipped to the ``width`` x ``height`` image; records left with no area are dropped."""
        keep, boxes = [], []
        for i, (x1, y1, x2, y2) in enumerate(self.boxes):
            c = (min(max(x1, 0.0), width), min(max(y1, 0.0), height), min(max(x2, 0.0), width),
                 min(max(y2, 0.0), height))
            if c[2] > c[0] and c[3] > c[1]:
                keep.append(i)
                boxes.append(c)
        return Detections(tuple(boxes), tuple(self.labels[i] for i in keep), tuple(self.scores[i] for i in keep))

    def concat(self, other: "Detections") -> "Detections":
        """These detections followed by ``other``'s."""
        return Detections(self.boxes + other.boxes, self.labels + other.labels, self.scores + other.scores)

    def to_dict(self) -> dict:
        """The detections as a JSON-ready dict of boxes, labels and scores."""
        return {"boxes": [list(b) for b in self.boxes], "labels": list(self.labels), "scores": list(self.scores)}

    @classmethod
    def from_dict(cls, d: dict) -> "Detections":
        """Detections from a ``to_dict`` dict (a missing key gives none)."""
        return cls(tuple(tuple(b) for b in d.get("boxes", [])), tuple(d.get("labels", [])),
                   tuple(d.get("scores", [])))
