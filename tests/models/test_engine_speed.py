"""What keeps a run near the bare network's speed without changing one stored number: the ONNX Runtime
session's threads spin only while a forward pass runs (left spinning, they would take the cores from the
per-image work that runs between passes); the preprocessing writes each image's normalised model input straight
into the batch, equal bit for bit to resizing in float32, then multiplying and adding in float32, and so does
the fill basis; the batch row kept for the fills is a plain copy."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from objrel.models import load_classifier
from objrel.models.preprocess import LITE_MEAN, LITE_STD, PaintedInput, Preprocess
from objrel.models.runtimes import _OnnxRuntimeSession, export_onnx
from objrel.models.threads import configure_inference_threads


def test_onnxruntime_threads_spin_within_a_pass_and_stop_when_it_returns():
    model = load_classifier("efficientnet-lite0")
    session = _OnnxRuntimeSession(export_onnx(model), configure_inference_threads())
    options = session.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    assert options.intra_op_num_threads == configure_inference_threads()


def test_the_kept_batch_row_is_a_copy_the_fill_basis_reads_as_the_row_itself():
    model = load_classifier("efficientnet-lite0", runtime="torch")
    rng = np.random.default_rng(4)
    image = rng.integers(0, 256, (180, 260, 3), dtype=np.uint8)
    x = model.prepare([image])
    kept = model.input_copy(x[0])
    assert isinstance(kept, np.ndarray) and kept.shape == (model.preprocess.size,) * 2 + (3,)
    assert np.array_equal(kept, x[0].permute(1, 2, 0).numpy())
    x[0].zero_()                        # a module that writes into its input does not reach the copy
    assert kept.any()
    region = np.zeros(image.shape[:2], bool)
    region[30:120, 50:200] = True
    a, b = model.fill_basis(image, region, kept), model.fill_basis(image, region)
    for name in ("outside", "inside", "coverage", "uncovered"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_a_batch_is_kept_in_one_copy_equal_to_its_rows_kept_one_by_one():
    """``input_copies`` (one transfer from a GPU) keeps the same values as ``input_copy`` row by row, in host
    arrays the module cannot reach."""
    model = load_classifier("efficientnet-lite0", runtime="torch")
    rng = np.random.default_rng(5)
    x = model.prepare([rng.integers(0, 256, (120 + 20 * i, 200, 3), dtype=np.uint8) for i in range(3)])
    kept = model.input_copies(x)
    assert len(kept) == 3
    for i, row in enumerate(kept):
        assert isinstance(row, np.ndarray) and row.flags.c_contiguous and row.dtype == np.float32
        assert np.array_equal(row, model.input_copy(x[i]))
    x.zero_()                           # a module that writes into its input does not reach the copies
    assert all(row.any() for row in kept)


def test_the_fill_basis_equals_its_definition_computed_with_broadcasting_bit_for_bit():
    pre = Preprocess(size=240, mean=LITE_MEAN, std=LITE_STD)
    rng = np.random.default_rng(6)
    image = rng.integers(0, 256, (333, 517, 3), dtype=np.uint8)
    region = np.zeros(image.shape[:2], bool)
    region[50:300, 100:400] = True
    scale, offset = pre.normalisation()
    resize = lambda a: cv2.resize(a.astype(np.float32), (240, 240), interpolation=cv2.INTER_AREA)  # noqa: E731
    object_part = resize(image * region[:, :, None]) * scale
    source = resize(image) * scale + offset
    basis = pre.fill_basis(image, region)
    assert np.array_equal(basis.outside, source - object_part)
    assert np.array_equal(basis.inside, object_part + offset)
    assert np.array_equal(basis.coverage[:, :, 0], np.clip(resize(region.view(np.uint8)), 0, 1))


def test_scale_offset_equals_numpy_broadcasting_on_any_layout():
    from objrel.models.preprocess import scale_offset

    rng = np.random.default_rng(7)
    scale = np.array([0.0171, 0.0175, 0.0174], np.float32)
    offset = np.array([-2.1179, -2.0357, -1.8044], np.float32)
    image = (rng.random((31, 17, 3)) * 255).astype(np.float32)
    for a in (image, np.asfortranarray(image), image[:, ::2]):
        want = (a * scale + offset).astype(np.float32)
        assert np.array_equal(scale_offset(a.copy(order="K"), scale, offset), want)
        assert np.array_equal(scale_offset(a, None, offset, out=np.empty_like(a)), a + offset)
        assert np.array_equal(scale_offset(a, scale, None, out=np.empty_like(a)), a * scale)


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
