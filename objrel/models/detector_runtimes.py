"""What runs a detector: its own runtime (torch, OpenCV, the user's Python), or a torchvision detection network
exported once to ONNX and run by ONNX Runtime or OpenVINO (f32 forced).

Exported: a plain ``TorchvisionDetector`` on the CPU whose network resizes every image to one fixed size
(SSD300, SSDlite320: ``transform.fixed_size``).  The whole network is exported, resize, anchors, box decoding
and non-maximum suppression included, for one image of any height and width per call (the ONNX input's H and
W are dynamic).  Faster R-CNN, RetinaNet and FCOS resize each image to its own size and pad a batch to its
largest image, so torch's boxes for an image depend on the other images of its batch; a one-image graph cannot
give torch's answers there, and they stay on torch.  MTCNN (three networks with Python between them), the
OpenCV detectors, Python callables and combined detectors stay on their own runtime too.

``with_detector_runtime(detector, runtime)`` applies a ``--runtime`` choice: an exported runtime is checked
against torch when built (``ExportedDetector._check_against``) and refused in one line if it differs; for a
detector that cannot be exported an explicit runtime is refused in one line naming why and the runtime that
works, and ``auto`` keeps its own runtime and records why.  ``auto`` on an exportable detector takes the
fastest runtime whose detections match torch's, timed once per network and thread count on this machine and
remembered in the model cache (``choose_detector_runtime``).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from objrel.constants import AUTO_RUNTIME, ONNXRUNTIME, OPENVINO, RUNTIMES, TORCH_RUNTIME
from objrel.errors import ConfigError
from objrel.data.detections import Detections
from objrel.models.detector import Detector
from objrel.models.runtimes import (EXPORTED_RUNTIMES, ONNX_OPSET, RuntimeChoice, RuntimeUnavailable,
                                    _OnnxRuntimeSession, _OpenVinoSession, _require, export_graph, fastest_matching,
                                    first_line, network_key, remembered_choice,
                                    runtime_version)
from objrel.models.threads import configure_inference_threads
from objrel.models.torchvision import TorchvisionDetector

# Largest differences in score and in box corners (pixels of the input image) between a runtime's records and
# torch's for the two to count as the same detections.  Looser than a classifier's ``MATCH_TOLERANCE``: ONNX's
# Resize and torch's interpolate round differently when a photo is scaled to the network's input, which moves
# scores by up to ~4e-5 and boxes by ~0.02 px on the demo photos (~3e-6 on photos already at the input size);
# a broken export differs by whole boxes.
SCORE_TOLERANCE = 1e-4
BOX_TOLERANCE = 5e-2
# The seeded random images an exported detector is checked and ``auto`` is timed on: (height, width) each,
# of different sizes and aspect ratios so the dynamic input is exercised.
CHECK_SIZES = ((240, 320), (300, 200))
CHECK_SEED = 0
# ``auto``'s measurement: one warm-up pass over the check images, then this many timed passes per runtime.
CHOICE_TIMED_PASSES = 2


def _plain_reason(detector: Detector) -> str | None:
    """Why ``detector`` cannot be exported, or None when it can."""
    if type(detector) is not TorchvisionDetector:
        if isinstance(detector, TorchvisionDetector):
            return f"it is {type(detector).__name__}, whose Python may do more than its network"
        return f"it is {type(detector).__name__}, not a torchvision detection network"
    if not str(detector.device).startswith("cpu"):
        return f"it runs on {detector.device}, not the CPU"
    if getattr(getattr(detector.module, "transform", None), "fixed_size", None) is None:
        return ("it resizes each image to its own size and pads a batch to its largest image, so its boxes depend "
                "on the batch and a one-image exported graph would differ from torch")
    return None


class _Graph(torch.nn.Module):
    """One ``(3, H, W)`` image in [0, 1] in, the network's boxes, labels and scores out."""

    def __init__(self, module: torch.nn.Module):
        super().__init__()
        self.module = module

    def forward(self, image):
        out = self.module([image])[0]
        return out["boxes"], out["labels"], out["scores"]


def detector_export_key(detector: TorchvisionDetector) -> str:
    """The cache name of ``detector``'s exported graph: a hash of its architecture, every weight and buffer,
    the opset and torch's version."""
    return "det-" + network_key(detector.module, f"opset={ONNX_OPSET} torch={torch.__version__}", tag="detector ")


def export_detector_onnx(detector: TorchvisionDetector) -> Path:
    """``detector``'s network as an ONNX file in the model cache (one image of any size per call), exported
    on first use (``export_graph``).  Raises ``RuntimeUnavailable`` naming why when it cannot be."""
    graph = _Graph(detector.module)

    def build() -> tuple[torch.nn.Module, torch.Tensor]:
        return graph.eval(), torch.zeros(3, *CHECK_SIZES[0], dtype=torch.float32)

    options = {"input_names": ["image"], "output_names": ["boxes", "labels", "scores"],
               "dynamic_axes": {"image": {1: "height", 2: "width"}, "boxes": {0: "records"},
                                "labels": {0: "records"}, "scores": {0: "records"}}}
    path = export_graph(detector_export_key(detector), f"detector {detector.name}", build, options,
                        {"detector": detector.name})
    detector.module.eval()  # the exporter restores the wrapper's mode on its children
    return path


class _OnnxRuntimeDetection(_OnnxRuntimeSession):
    def __call__(self, x: np.ndarray) -> list[np.ndarray]:
        return self.session.run(None, {self.input: x})


class _OpenVinoDetection(_OpenVinoSession):
    def __call__(self, x: np.ndarray) -> list[np.ndarray]:
        self.request.infer({0: x})
        return [np.array(self.request.get_output_tensor(i).data, copy=True) for i in range(3)]


_SESSIONS = {ONNXRUNTIME: _OnnxRuntimeDetection, OPENVINO: _OpenVinoDetection}


def _as_input(image: np.ndarray) -> torch.Tensor:
    """A ``(H, W, 3)`` uint8 image as the ``(3, H, W)`` float tensor in [0, 1] torchvision's detectors take."""
    return torch.from_numpy(np.ascontiguousarray(image)).permute(2, 0, 1).float().div(255.0)


def _check_images() -> list[np.ndarray]:
    rng = np.random.default_rng(CHECK_SEED)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in CHECK_SIZES]


def detections_difference(got: list[Detections], want: list[Detections], threshold: float | None = None) -> float:
    """The largest difference between two detectors' records on the same images, in units of the tolerances:
    the worse of score difference / ``SCORE_TOLERANCE`` and box corner difference / ``BOX_TOLERANCE`` (1 or
    less: the same detections); infinite when the records differ in number or labels.  Each record is matched
    to the other side's nearest box of its label, so two records whose scores tie may come in either order.
    Records scoring within ``SCORE_TOLERANCE`` of ``threshold`` may be on either side of it and are left out."""
    worst = 0.0
    for g, w in zip(got, want, strict=True):
        if len(g) != len(w) and threshold is not None:
            g, w = g.above(threshold + SCORE_TOLERANCE), w.above(threshold + SCORE_TOLERANCE)
        if len(g) != len(w) or sorted(g.labels) != sorted(w.labels):
            return math.inf
        if not len(g):
            continue
        gb, wb = g.box_array(), w.box_array()
        free = set(range(len(w)))
        for i in range(len(g)):
            options = [j for j in free if w.labels[j] == g.labels[i]]
            j = min(options, key=lambda j: float(np.abs(gb[i] - wb[j]).max()))
            free.discard(j)
            worst = max(worst, abs(g.scores[i] - w.scores[j]) / SCORE_TOLERANCE,
                        float(np.abs(gb[i] - wb[j]).max()) / BOX_TOLERANCE)
    return worst


class ExportedDetector(TorchvisionDetector):
    """A ``TorchvisionDetector`` whose network runs exported in ONNX Runtime or OpenVINO, one image per call.

    Built by ``with_detector_runtime``; checked against torch when built.  The session opens at the first
    call with the thread count ``configure_inference_threads`` settled on; it is not pickled."""

    def __init__(self, detector: TorchvisionDetector, runtime: str, choice: RuntimeChoice | None = None):
        if runtime not in EXPORTED_RUNTIMES:
            raise ValueError(f"runtime must be one of {tuple(EXPORTED_RUNTIMES)}, got {runtime!r}")
        _require(runtime)
        super().__init__(detector.module, detector.labels, detector.name, detector.score_threshold, "cpu",
                         detector.config)
        self.runtime = runtime
        self.runtime_choice = choice
        self.onnx_path = export_detector_onnx(detector)
        self.export_key = self.onnx_path.stem
        self._session = None
        self.max_difference = self._check_against(detector)

    def _check_against(self, detector: TorchvisionDetector) -> float:
        """The largest difference (``detections_difference``, in units of the tolerances) between this runtime's
        records and torch's on the seeded check images; raises ``RuntimeUnavailable`` above 1."""
        images = _check_images()
        try:
            got = self.detect(images)
        except Exception as exc:  # the runtime refused the graph: one line, and the runtime that works
            first = first_line(exc)
            raise RuntimeUnavailable(f"detector {detector.name} exported to ONNX cannot run on {self.runtime} "
                                     f"({type(exc).__name__}: {first}); run it with --runtime {TORCH_RUNTIME}") from exc
        difference = detections_difference(got, detector.detect(images), self.score_threshold)
        if not difference <= 1.0:
            raise RuntimeUnavailable(f"detector {detector.name} exported to ONNX gives other detections on "
                                     f"{self.runtime} ({difference:.1f} times the tolerance of {SCORE_TOLERANCE:.0e} "
                                     f"in score and {BOX_TOLERANCE} px in box); run it with --runtime {TORCH_RUNTIME}")
        return difference

    def _open(self):
        if self._session is None:
            self._session = _SESSIONS[self.runtime](self.onnx_path, configure_inference_threads())
        return self._session

    def _detect(self, images) -> list[Detections]:
        session = self._open()
        out = []
        for im in images:
            boxes, labels, scores = session(np.ascontiguousarray(_as_input(im).numpy(), dtype=np.float32))
            labels = np.asarray(labels).astype(int).reshape(-1)
            bad = [int(i) for i in labels if not 0 <= i < len(self.labels)]
            if bad:
                raise ValueError(f"model {self.name} returned label indices {bad} outside its "
                                 f"{len(self.labels)} class names")
            out.append(Detections.from_arrays(np.asarray(boxes, np.float32).reshape(-1, 4),
                                              [self.labels[i] for i in labels], np.asarray(scores, np.float32)))
        return out

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_session"] = None
        return state

    def describe(self) -> dict:
        """The torch detector's description plus the runtime's version, precision, export and tolerances."""
        return {**super().describe(), "runtime_version": runtime_version(self.runtime), "precision": "f32",
                "onnx_export": self.export_key, "difference_from_torch": self.max_difference,
                "tolerance": {"score": SCORE_TOLERANCE, "box_px": BOX_TOLERANCE}}


def _timed(detector: Detector, images: list) -> float:
    """images/s of ``detector.detect`` over ``images`` after one warm-up pass."""
    detector.detect(images)
    start = time.perf_counter()
    for _ in range(CHOICE_TIMED_PASSES):
        detector.detect(images)
    return CHOICE_TIMED_PASSES * len(images) / (time.perf_counter() - start)


def choose_detector_runtime(detector: TorchvisionDetector) -> RuntimeChoice:
    """The fastest installed runtime whose detections match torch's for ``detector`` here, measured once per
    (network, thread count) and then read back from the model cache.  Matching is checked when each
    ``ExportedDetector`` is built (scores and boxes, ``SCORE_TOLERANCE`` / ``BOX_TOLERANCE``)."""
    threads = configure_inference_threads()

    def measure() -> RuntimeChoice:
        images = _check_images()

        def candidate(runtime: str) -> tuple[float, Callable[[], float]]:
            exported = ExportedDetector(detector, runtime)
            return exported.max_difference, lambda: _timed(exported, images)

        return fastest_matching(threads, _timed(detector, images), candidate, math.inf, digits=1)

    return remembered_choice(detector_export_key(detector), threads, measure)


def with_detector_runtime(detector: Detector, runtime: str) -> Detector:
    """``detector`` run by ``runtime`` (one of ``RUNTIMES``).

    ``torch`` returns the detector itself, on its own runtime (OpenCV's detectors stay OpenCV's);
    ``onnxruntime`` / ``openvino`` an ``ExportedDetector``, or ``RuntimeUnavailable`` in one line naming why
    and the runtime that works; ``auto`` the fastest matching runtime of an exportable detector, else the
    detector itself with the reason in ``runtime_reason``.  ``describe()`` names the runtime that runs it."""
    if runtime not in RUNTIMES:
        raise ConfigError(f"runtime must be one of {RUNTIMES}, got {runtime!r}")
    if isinstance(detector, ExportedDetector):
        if runtime in (AUTO_RUNTIME, detector.runtime):
            return detector
        raise ConfigError(f"detector {detector.name} already runs on {detector.runtime}; load it again for {runtime}")
    if runtime == TORCH_RUNTIME:
        return detector
    why = _plain_reason(detector)
    if why is not None:
        if runtime == AUTO_RUNTIME:
            detector.runtime_reason = f"runs on {detector.runtime}: objrel cannot export it ({why})"
            return detector
        raise RuntimeUnavailable(f"detector {detector.name} cannot run on {runtime}: {why}; run it with --runtime "
                                 f"{AUTO_RUNTIME} or {TORCH_RUNTIME} (it runs on {detector.runtime})")
    if runtime == AUTO_RUNTIME:
        choice = choose_detector_runtime(detector)
        if choice.runtime == TORCH_RUNTIME:
            detector.runtime_choice = choice
            return detector
        return ExportedDetector(detector, choice.runtime, choice)
    return ExportedDetector(detector, runtime)
