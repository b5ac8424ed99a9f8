"""MTCNN face detector with the weights that ship inside ``facenet-pytorch`` (offline).

``facenet-pytorch`` 2.6 declares pins this project cannot meet (torch<2.3, numpy<2) but works
with current torch and numpy: install it with ``pip install --no-deps facenet-pytorch``.
Its P/R/O-net weights (``facenet_pytorch/data/{p,r,o}net.pt``) are state dicts that load
with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import numpy as np

from objrel.errors import ConfigError
from objrel.models.detector import Detector
from objrel.data.detections import Detections
from objrel.models.threads import torch_threads

# Smallest face MTCNN looks for, in pixels; larger skips pyramid levels (faster, misses small faces).
MTCNN_MIN_FACE_SIZE = 20
# Per-stage (P-net, R-net, O-net) face-probability thresholds; facenet-pytorch's defaults.
MTCNN_STAGE_THRESHOLDS = (0.6, 0.7, 0.7)
# Pyramid scale step between levels.
MTCNN_FACTOR = 0.709
# Records below this final face probability are dropped (facenet-pytorch's examples use 0.9).
MTCNN_SCORE_THRESHOLD = 0.9
# Torch intra-op threads while MTCNN runs (restored after each call).  Its many small convolutions gain
# nothing from more threads: on 2 shared cores one thread took 0.17 s per demo photo, two took 0.44-0.56 s.
MTCNN_TORCH_THREADS = 1


class MTCNNDetector(Detector):
    """Faces with ``facenet_pytorch.MTCNN(keep_all=True)``; scores are O-net face probabilities in [0, 1]."""

    def __init__(self, label: str = "face", min_face_size: int = MTCNN_MIN_FACE_SIZE,
                 thresholds=MTCNN_STAGE_THRESHOLDS, factor: float = MTCNN_FACTOR,
                 score_threshold: float | None = MTCNN_SCORE_THRESHOLD, device: str = "cpu"):
        try:
            from facenet_pytorch import MTCNN
        except ImportError as exc:
            raise ConfigError(
                "the mtcnn detector needs facenet-pytorch, whose declared pins cannot be met here; install it "
                f"without them: pip install --no-deps facenet-pytorch ({exc})"
            ) from exc
        if min_face_size < 1:
            raise ValueError(f"min_face_size must be >= 1 pixel, got {min_face_size}")
        thresholds = [float(t) for t in thresholds]
        if len(thresholds) != 3 or not all(0.0 <= t <= 1.0 for t in thresholds):
            raise ValueError(f"thresholds must be three probabilities (P-, R-, O-net), got {thresholds}")
        self._mtcnn = MTCNN(keep_all=True, min_face_size=int(min_face_size), thresholds=thresholds,
                            factor=float(factor), post_process=False, device=device)
        super().__init__("mtcnn", [label], score_threshold,
                         {"family": "mtcnn", "weights": "facenet-pytorch bundled (pnet/rnet/onet.pt)",
                          "min_face_size": int(min_face_size), "thresholds": thresholds, "factor": float(factor)})

    def _detect(self, images) -> list[Detections]:
        out = []
        with torch_threads(MTCNN_TORCH_THREADS):
            found = [self._mtcnn.detect(np.ascontiguousarray(im)) for im in images]  # one size at a time
        for boxes, probs in found:
            if boxes is None:
                out.append(Detections())
                continue
            # facenet-pytorch returns object arrays under numpy 2; make them float
            b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
            p = np.asarray(probs, dtype=np.float64).reshape(-1)
            out.append(Detections.from_arrays(b, [self.labels[0]] * len(b), p))
        return out

