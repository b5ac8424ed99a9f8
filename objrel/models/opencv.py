"""Real detectors that work offline: OpenCV's Haar cascades and its HOG people detector.

Both need OpenCV 4 (``opencv-python-headless<5``): OpenCV 5 moved the cascade classifier
and the HOG descriptor out of its main package and ships no cascade files.
"""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from objrel.errors import ConfigError
from objrel.models.detector import Detector
from objrel.data.detections import Detections

# The runtime named in the model record of every OpenCV detector (it never runs on torch or an exported runtime).
OPENCV_RUNTIME = "opencv"
# Pyramid step of detectMultiScale: each level shrinks the image by this factor.  Smaller
# finds faces at more sizes (and more false hits) and is slower.
HAAR_SCALE_FACTOR = 1.1
# Raw hits that must overlap for a detection to be kept.  Lower gives more detections,
# false ones included; OpenCV's samples use 3 to 6.
HAAR_MIN_NEIGHBORS = 5
# The label each shipped cascade reports (file haarcascade_<name>.xml); a cascade not listed
# reports its name with spaces for underscores.
HAAR_LABELS = {
    "frontalface_default": "face", "frontalface_alt": "face", "frontalface_alt2": "face",
    "frontalface_alt_tree": "face", "profileface": "face",
    "frontalcatface": "cat face", "frontalcatface_extended": "cat face",
    "fullbody": "full body", "upperbody": "upper body", "lowerbody": "lower body",
    "eye": "eye", "eye_tree_eyeglasses": "eye", "lefteye_2splits": "eye", "righteye_2splits": "eye",
    "smile": "smile", "russian_plate_number": "licence plate", "license_plate_rus_16stages": "licence plate",
}

# HOG people detector: sliding-window stride and padding in pixels, pyramid scale step, and
# the SVM margin a window needs (0 = OpenCV's default; raise it for fewer, surer detections).
HOG_WIN_STRIDE = 8
HOG_PADDING = 8
HOG_SCALE = 1.05
HOG_HIT_THRESHOLD = 0.0
HOG_WINDOW = (64, 128)  # width, height of the default people detector's window


def _need(attr: str) -> None:
    if not hasattr(cv2, attr):
        raise ConfigError(
            f"this OpenCV build (cv2 {cv2.__version__}) has no cv2.{attr}: OpenCV 5 moved the Haar cascades and "
            f"the HOG detector out of its main package. Install OpenCV 4: pip install 'opencv-python-headless<5'"
        )


def haar_dir() -> Path | None:
    """Folder of the cascades OpenCV ships, or None when this build ships none."""
    data = getattr(getattr(cv2, "data", None), "haarcascades", None)
    return Path(data) if data and Path(data).is_dir() else None


def haar_cascades() -> list[str]:
    """Names of the shipped cascades (``frontalface_default``, ``frontalcatface``, ...), sorted."""
    d = haar_dir()
    if d is None:
        return []
    return sorted(p.name[len("haarcascade_"):-len(".xml")] for p in d.glob("haarcascade_*.xml"))


def cascade_path(cascade: str) -> Path:
    """A shipped cascade by name, or a path to a cascade XML file."""
    if cascade.endswith(".xml") or os.sep in cascade or "/" in cascade:
        p = Path(cascade).expanduser()
        if not p.is_file():
            raise ConfigError(f"cascade file {p} does not exist")
        return p
    d = haar_dir()
    p = d / f"haarcascade_{cascade}.xml" if d else None
    if p is None or not p.is_file():
        raise ConfigError(f"unknown Haar cascade {cascade!r}; this OpenCV ships {haar_cascades() or 'none'} "
                          f"(or give haar:/path/to/cascade.xml)")
    return p


def rect_detections(rects, scores, label: str) -> Detections:
    """OpenCV's ``(x, y, w, h)`` rectangles and their scores as ``Detections`` of one label (xyxy pixels)."""
    xywh = np.asarray(rects, dtype=np.float64).reshape(-1, 4)
    boxes = np.column_stack([xywh[:, 0], xywh[:, 1], xywh[:, 0] + xywh[:, 2], xywh[:, 1] + xywh[:, 3]])
    return Detections.from_arrays(boxes, [label] * len(xywh), np.asarray(scores, dtype=np.float64).reshape(-1))


class HaarCascadeDetector(Detector):
    """An OpenCV Haar cascade (Viola-Jones) run on the grayscale image.

    cascade:       a shipped cascade name (``frontalface_default``) or a cascade XML path.
    label:         the label of its detections (default from ``HAAR_LABELS``).
    scale_factor, min_neighbors, min_size: ``detectMultiScale`` settings; ``min_size`` is (w, h) pixels.
    Scores are the cascade's level weights (``detectMultiScale3(outputRejectLevels=True)``): the last
    stage's sum minus its threshold, higher for surer detections, not a probability.  With
    ``score_threshold=None`` (default) every grouped detection is kept.
    """

    runtime = OPENCV_RUNTIME

    def __init__(self, cascade: str = "frontalface_default", label: str | None = None,
                 scale_factor: float = HAAR_SCALE_FACTOR, min_neighbors: int = HAAR_MIN_NEIGHBORS,
                 min_size: tuple[int, int] | None = None, score_threshold: float | None = None):
        _need("CascadeClassifier")
        if scale_factor <= 1.0:
            raise ValueError(f"scale_factor must be > 1, got {scale_factor}")
        if min_neighbors < 0:
            raise ValueError(f"min_neighbors must be >= 0, got {min_neighbors}")
        path = cascade_path(cascade)
        stem = path.name[len("haarcascade_"):-len(".xml")] if path.name.startswith("haarcascade_") else path.stem
        label = label or HAAR_LABELS.get(stem, stem.replace("_", " "))
        self._cascade = cv2.CascadeClassifier(str(path))
        if self._cascade.empty():
            raise ConfigError(f"OpenCV could not load the cascade {path}")
        self.scale_factor, self.min_neighbors = float(scale_factor), int(min_neighbors)
        self.min_size = tuple(int(v) for v in min_size) if min_size else None
        super().__init__(f"haar:{cascade}", [label], score_threshold,
                         {"family": "opencv-haar", "cascade": str(path), "scale_factor": self.scale_factor,
                          "min_neighbors": self.min_neighbors, "min_size": self.min_size})

    def _detect(self, images) -> list[Detections]:
        out = []
        for im in images:
            gray = cv2.cvtColor(np.ascontiguousarray(im), cv2.COLOR_RGB2GRAY)
            kw = {"minSize": self.min_size} if self.min_size else {}
            rects, _levels, weights = self._cascade.detectMultiScale3(
                gray, scaleFactor=self.scale_factor, minNeighbors=self.min_neighbors, outputRejectLevels=True, **kw)
            out.append(rect_detections(rects, weights, self.labels[0]))
        return out


class HOGPeopleDetector(Detector):
    """OpenCV's HOG descriptor with its default linear-SVM people detector (Dalal-Triggs, 64x128 window).

    Scores are the SVM margins OpenCV returns (higher = surer).  Images smaller than the window give
    no detection.
    """

    runtime = OPENCV_RUNTIME

    def __init__(self, label: str = "person", win_stride: int = HOG_WIN_STRIDE, padding: int = HOG_PADDING,
                 scale: float = HOG_SCALE, hit_threshold: float = HOG_HIT_THRESHOLD,
                 score_threshold: float | None = None):
        _need("HOGDescriptor")
        if scale <= 1.0:
            raise ValueError(f"scale must be > 1, got {scale}")
        self._hog = cv2.HOGDescriptor()
        self._hog.setSVMDetector(cv2.HOGDescriptor_getDefaultPeopleDetector())
        self.win_stride, self.padding = int(win_stride), int(padding)
        self.scale, self.hit_threshold = float(scale), float(hit_threshold)
        super().__init__("hog:people", [label], score_threshold,
                         {"family": "opencv-hog", "win_stride": self.win_stride, "padding": self.padding,
                          "scale": self.scale, "hit_threshold": self.hit_threshold})

    def _detect(self, images) -> list[Detections]:
        out = []
        for im in images:
            h, w = im.shape[:2]
            if w < HOG_WINDOW[0] or h < HOG_WINDOW[1]:
                out.append(Detections())
                continue
            rects, weights = self._hog.detectMultiScale(
                np.ascontiguousarray(im), hitThreshold=self.hit_threshold, winStride=(self.win_stride,) * 2,
                padding=(self.padding,) * 2, scale=self.scale)
            out.append(rect_detections(rects, weights, self.labels[0]))
        return out
