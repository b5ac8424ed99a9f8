"""The detector adapter protocol and the callable and combined adapters (loading by name: ``objrel.models.zoo``).

Protocol: ``detect(images) -> list[Detections]``, where
``images`` is a list of ``(H, W, 3)`` uint8 RGB arrays (sizes may differ) and each
``Detections`` holds xyxy pixel boxes, label names and scores for one image.  Every
adapter clips boxes to its image, drops records below its ``score_threshold`` and returns
the records by descending score.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from objrel.constants import DETECTION_TASK, TORCH_RUNTIME
from objrel.data.detections import Detections
from objrel.models.inputs import check_rgb_batch

# The runtime named in the model record of a detector that is the user's own Python function.
PYTHON_RUNTIME = "python"


class Detector:
    """Base adapter.  Subclasses implement ``_detect(images) -> list`` of ``Detections`` (or of anything
    ``as_detections`` accepts).

    name:            display name, stored with the run.
    labels:          every label the detector can report, or ``None`` for an open vocabulary (a callable
                     that did not declare its labels); ground-truth objects of other labels are ignored.
    score_threshold: records with ``score < score_threshold`` are dropped; ``None`` keeps them all.
    """

    task = DETECTION_TASK
    # What runs the detector (``objrel.models.detector_runtimes``): torch, opencv, the user's Python, or an
    # exported runtime; what ``auto`` measured when it chose (a ``RuntimeChoice``), or why it kept this one.
    # All three go into the run's model record.
    runtime = TORCH_RUNTIME
    runtime_choice = None
    runtime_reason: str | None = None

    def __init__(self, name: str, labels: Sequence[str] | None, score_threshold: float | None = None,
                 config: dict | None = None):
        if score_threshold is not None and not np.isfinite(float(score_threshold)):
            raise ValueError(f"score_threshold must be a finite number or None, got {score_threshold!r}")
        self.name = name
        self.labels = tuple(str(lab) for lab in labels) if labels is not None else None
        self.score_threshold = None if score_threshold is None else float(score_threshold)
        self.config = dict(config or {})

    @property
    def class_names(self) -> list[str]:
        """The detector's labels as a list (empty when it has none)."""
        return list(self.labels or ())

    def detect(self, images) -> list[Detections]:
        """Detections of each image (list of ``(H, W, 3)`` uint8 RGB), clipped, thresholded, by score."""
        if len(images) == 0:
            return []
        check_rgb_batch(images, "detect")
        raw = list(self._detect(images))
        if len(raw) != len(images):
            raise ValueError(f"detector {self.name} returned {len(raw)} results for {len(images)} images; "
                             f"expected one Detections per image")
        out = []
        for im, r in zip(images, raw):
            d = as_detections(r, self.labels, where=f"detector {self.name}")
            out.append(d.clipped(im.shape[1], im.shape[0]).above(self.score_threshold).sorted())
        return out

    def _detect(self, images) -> list:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:
        """The detector's name, task, labels, threshold, configuration and runtime, as a dict."""
        out = {"name": self.name, "task": self.task, "labels": self.class_names,
               "score_threshold": self.score_threshold, **self.config, "runtime": self.runtime}
        if self.runtime_choice is not None:
            out["runtime_choice"] = self.runtime_choice.to_dict()
        if self.runtime_reason is not None:
            out["runtime_reason"] = self.runtime_reason
        return out


def as_detections(result, labels: Sequence[str] | None = None, where: str = "detector") -> Detections:
    """Coerce one image's output to ``Detections``.

    Accepts a ``Detections``; a dict with ``boxes`` (N x 4 xyxy pixels), ``labels`` and ``scores``;
    or a ``(boxes, labels, scores)`` tuple.  Integer labels index ``labels`` (the detector's label list).
    """
    if isinstance(result, Detections):
        return result
    if isinstance(result, dict):
        missing = [k for k in ("boxes", "labels", "scores") if k not in result]
        if missing:
            raise ValueError(f"{where}: a result dict needs 'boxes', 'labels' and 'scores'; missing {missing}")
        boxes, labs, scores = result["boxes"], result["labels"], result["scores"]
    elif isinstance(result, (tuple, list)) and len(result) == 3:
        boxes, labs, scores = result
    else:
        raise ValueError(f"{where}: expected Detections, a dict or a (boxes, labels, scores) tuple per image, "
                         f"got {type(result).__name__}")
    names = []
    for lab in list(np.asarray(labs, dtype=object).reshape(-1)):
        if isinstance(lab, (int, np.integer)) and not isinstance(lab, bool):
            if labels is None or not 0 <= int(lab) < len(labels):
                raise ValueError(f"{where}: integer label {int(lab)} needs the detector's label list to name it "
                                 f"(labels={None if labels is None else list(labels)})")
            names.append(labels[int(lab)])
        else:
            names.append(str(lab))
    return Detections.from_arrays(boxes, names, scores)


class CallableDetector(Detector):
    """Any function ``fn(list of (H, W, 3) uint8 RGB) -> list`` with one result per image: a ``Detections``,
    a dict ``{"boxes", "labels", "scores"}`` or a ``(boxes, labels, scores)`` tuple; boxes xyxy in pixels.
    It runs as the user's Python (runtime ``python``): objrel cannot export what the function does.

    labels: the label names the function can report (integer labels index this list); ``None`` accepts
            any label name and leaves the vocabulary open.
    """

    def __init__(self, fn: Callable, labels: Sequence[str] | None = None, score_threshold: float | None = None,
                 name: str | None = None):
        super().__init__(name or getattr(fn, "__name__", "callable"), labels, score_threshold,
                         {"callable": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"})
        self.fn = fn

    def _detect(self, images) -> list:
        return self.fn(images)


class CombinedDetector(Detector):
    """Several detectors run on the same images; their records are concatenated (each keeps its own
    score threshold).  The demo combines OpenCV's frontal-face and cat-face cascades this way."""

    def __init__(self, detectors: Sequence[Detector], name: str | None = None):
        if not detectors:
            raise ValueError("a combined detector needs at least one detector")
        labels: list[str] | None = []
        for d in detectors:
            if d.labels is None:
                labels = None
                break
            labels += [lab for lab in d.labels if lab not in labels]
        super().__init__(name or "+".join(d.name for d in detectors), labels, None,
                         {"parts": [d.describe() for d in detectors]})
        self.parts = list(detectors)

    @property
    def runtime(self) -> str:
        """The parts' runtimes, each once, joined by ``+`` (``opencv``, ``opencv+torch``)."""
        return "+".join(dict.fromkeys(d.runtime for d in self.parts))

    def _detect(self, images) -> list:
        out = [Detections() for _ in images]
        for d in self.parts:
            out = [a.concat(b) for a, b in zip(out, d.detect(images))]
        return out

