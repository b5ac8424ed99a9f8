"""What keeps a run near the bare network's speed without changing one stored number: the ONNX Runtime
session does not busy-wait between forward passes (its idle threads would take the cores from the per-image
work that runs between them), and the preprocessing writes each image's normalised model input straight
into the batch, equal bit for bit to resizing in float32, then multiplying and adding in float32."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from objrel.models import load_classifier
from objrel.models.preprocess import LITE_MEAN, LITE_STD, PaintedInput, Preprocess
from objrel.models.runtimes import _OnnxRuntimeSession, export_onnx
from objrel.models.threads import configure_inference_threads


def test_onnxruntime_threads_sleep_between_forward_passes():
    model = load_classifier("efficientnet-lite0")
    session = _OnnxRuntimeSession(export_onnx(model), configure_inference_threads())
    options = session.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads == configure_inference_threads()


def reference(pre: Preprocess, image: np.ndarray) -> np.ndarray:
    """``(3, size, size)``: the float32 resize (and crop) of ``image``, times the scale, plus the offset."""
    h, w = image.shape[:2]
    interp, size, corner = pre._interpolation(h, w)
    out = cv2.resize(image.astype(np.float32), size, interpolation=interp)
    if corner is not None:
        out = out[corner[0] : corner[0] + pre.size, corner[1] : corner[1] + pre.size]
    scale, offset = pre.normalisation()
    return ((out * scale).astype(np.float32) + offset).astype(np.float32).transpose(2, 0, 1)


@pytest.mark.parametrize("pre", [Preprocess(), Preprocess(resize="shorter-crop"),
                                 Preprocess(size=240, mean=LITE_MEAN, std=LITE_STD)],
                         ids=["stretch", "shorter-crop", "lite-240"])
def test_the_batch_equals_resize_then_multiply_then_add_bit_for_bit(pre):
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, shape, dtype=np.uint8)
              for shape in [(300, 451, 3), (600, 512, 3), (100, 150, 3), (pre.size, pre.size, 3), (37, 500, 3)]]
    x = pre(images)
    assert x.shape == (len(images), 3, pre.size, pre.size) and x.dtype.is_floating_point
    for row, image in zip(x.numpy(), images):
        assert np.array_equal(row, reference(pre, image))
    region = np.zeros(images[0].shape[:2], bool)
    region[40:200, 60:300] = True
    basis = pre.fill_basis(images[0], region)
    painted = PaintedInput(basis, "inside", (255, 128, 0))
    mixed = pre([painted, images[1]]).numpy()   # a photo beside a painted input is normalised all the same
    assert np.array_equal(mixed[1], reference(pre, images[1]))
    assert np.array_equal(mixed[0], painted.into(np.empty((pre.size, pre.size, 3), np.float32)).transpose(2, 0, 1))
