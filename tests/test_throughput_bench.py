"""The throughput benchmark's limit candidates: every installed runtime is measured on the same batches,
ONNX Runtime with its own default session and objrel's."""

from __future__ import annotations

import numpy as np

from benchmarks.throughput import runtime_candidates
from objrel.constants import ONNXRUNTIME, OPENVINO
from objrel.models import load_classifier
from objrel.models.threads import configure_inference_threads


def test_every_installed_runtime_is_a_limit_candidate_on_the_same_batches():
    model = load_classifier("efficientnet-lite0")
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (120, 160, 3), dtype=np.uint8) for _ in range(5)]
    candidates, missing = runtime_candidates(model, images, 4, configure_inference_threads())
    assert missing == {}
    assert [c.label for c in candidates] == [f"{ONNXRUNTIME}, objrel's session",
                                             f"{ONNXRUNTIME}, ONNX Runtime's defaults", f"{OPENVINO}, objrel's session"]
    for c in candidates:
        assert [n for _, n in c.prepared] == [4, 1]
        assert c.prepared is candidates[0].prepared or np.array_equal(c.prepared[0][0], candidates[0].prepared[0][0])
        assert c.images_per_s() > 0
