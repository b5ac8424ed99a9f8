"""``Preprocess.resize_one`` shrinks a uint8 photo a band of rows at a time (``_area_in_bands``: each band
converted to float32 while it is still in the core's cache): the very numbers of converting the whole photo to
float32 and resizing it in one call, on the sizes photos come in."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

import objrel.models.preprocess as P
from objrel.models.preprocess import LITE_MEAN, LITE_STD, Preprocess, _area_in_bands

SIZES = [(480, 640), (427, 640), (375, 500), (400, 600), (512, 512), (600, 512), (1080, 1920), (333, 500),
         (448, 672), (225, 300), (224, 225), (900, 224)]


def whole(image: np.ndarray, size: int) -> np.ndarray:
    """The reference: the whole image converted to float32, then area-averaged by OpenCV in one call."""
    return cv2.resize(image.astype(np.float32), (size, size), interpolation=cv2.INTER_AREA)


@pytest.mark.parametrize("pre", [Preprocess(), Preprocess(size=240, mean=LITE_MEAN, std=LITE_STD)],
                         ids=["224", "lite-240"])
def test_a_photo_shrunk_band_by_band_equals_it_shrunk_whole_bit_for_bit(pre):
    rng = np.random.default_rng(7)
    sizes = [hw for hw in SIZES if min(hw) >= pre.size]      # shrunk on both axes (else not averaged cell by cell)
    sizes += [tuple(int(v) for v in rng.integers(pre.size, 1300, 2)) for _ in range(120)]
    banded = 0
    for h, w in sizes:
        image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        into = np.full((pre.size, pre.size, 3), -1.0, dtype=np.float32)
        got = pre.resize_one(image, out=into)
        assert got is into and np.array_equal(got, whole(image, pre.size)), (h, w)
        banded += _area_in_bands(image, (pre.size, pre.size), None) is not None
    assert banded >= len(sizes) // 2   # most sizes are split into bands (a height prime to the input's is not)


def test_bands_start_where_an_output_row_starts_on_a_whole_input_row_by_hand(monkeypatch):
    # 480 rows onto 224: gcd 32, so every 15 input rows make 7 output rows; bands of 4 x 15 = 60 rows (64 or
    # fewer), output rows 0-27, 28-55, ...: 8 bands
    calls = []
    real = cv2.resize

    def spy(src, dsize, **kw):
        calls.append((src.shape[0], dsize[1]))
        return real(src, dsize, **kw)

    image = np.random.default_rng(3).integers(0, 256, (480, 640, 3), dtype=np.uint8)
    monkeypatch.setattr(P.cv2, "resize", spy)
    _area_in_bands(image, (224, 224), None)
    assert calls == [(60, 28)] * 8
    # 417 rows onto 224: gcd 1, no output row but the first starts on a whole input row: not split
    assert math.gcd(417, 224) == 1
    assert _area_in_bands(np.zeros((417, 500, 3), np.uint8), (224, 224), None) is None


def test_an_image_enlarged_on_one_axis_is_resized_whole():
    # 200 rows onto 224 is an enlargement: the area resize is not cell by cell there, so no bands
    image = np.random.default_rng(5).integers(0, 256, (200, 900, 3), dtype=np.uint8)
    assert np.array_equal(Preprocess().resize_one(image), whole(image, 224))
