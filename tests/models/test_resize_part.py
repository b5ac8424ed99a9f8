"""``Preprocess.resize_part``: resizing only the pixels near a box of an image that is black outside it
gives the very numbers of resizing the whole image (the fill basis relies on it: a run's fills are mixed
from it), on every kind of image the preprocessing meets."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.models.preprocess import LITE_MEAN, LITE_STD, Preprocess, _cells_reached

PREPROCESSINGS = [Preprocess(), Preprocess(resize="shorter-crop"), Preprocess(size=240, mean=LITE_MEAN, std=LITE_STD)]


def test_the_cells_a_box_reaches_start_on_a_whole_pixel_by_hand():
    # 600 pixels onto 224 cells: a cell is 600/224 = 2.678... pixels; cell k starts on a whole pixel when k is a
    # multiple of 224 / gcd(600, 224) = 28 (k = 56 starts at pixel 150).  Pixels 174..407: pixel 174 lies in
    # cell 64 (171.4..174.1), whose nearest whole-pixel start at or before it is cell 56; pixel 407 lies in
    # cell 151 (404.5..407.1) and cell 152 (407.1..409.8), which ends before pixel 410.
    assert _cells_reached(174, 408, 600, 224) == (56, 153, 150, 410)
    # 448 onto 224 (2 pixels a cell): every cell starts on a whole pixel
    assert _cells_reached(11, 20, 448, 224) == (5, 10, 10, 20)
    # 417 onto 224: gcd 1, only cell 0 starts on a whole pixel; the last cell ends at the last pixel
    assert _cells_reached(300, 417, 417, 224) == (0, 224, 0, 417)


def cases(rng, count):
    sizes = [(448, 672), (417, 370), (300, 451), (224, 224), (600, 512), (100, 150), (37, 500), (224, 900)]
    for _ in range(count):
        h, w = sizes[rng.integers(len(sizes))] if rng.random() < 0.4 else tuple(rng.integers(20, 900, 2))
        y0 = int(rng.integers(0, h))
        x0 = int(rng.integers(0, w))
        yield h, w, (y0, int(rng.integers(y0 + 1, h + 1)), x0, int(rng.integers(x0 + 1, w + 1)))


@pytest.mark.parametrize("pre", PREPROCESSINGS, ids=["stretch", "shorter-crop", "lite-240"])
def test_a_part_resized_near_its_box_equals_the_whole_image_resized_bit_for_bit(pre):
    rng = np.random.default_rng(11)
    for h, w, (y0, y1, x0, x1) in cases(rng, 150):
        image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        mask = np.zeros((h, w), np.uint8)
        mask[y0:y1, x0:x1] = rng.integers(0, 2, (y1 - y0, x1 - x0), dtype=np.uint8)
        for pixels, by in ((image, mask), (mask, None)):
            whole = pixels * mask[:, :, None] if by is not None else pixels
            want = pre.resize_one(whole)
            part, (a, b, c, d) = pre.resize_part(pixels, (y0, y1, x0, x1), by)
            got = np.zeros_like(want)
            got[a:b, c:d] = part
            assert np.array_equal(got, want), (h, w, (y0, y1, x0, x1), pixels.ndim)


def test_a_small_object_is_resized_from_its_own_neighbourhood_only():
    pre = Preprocess()
    image = np.zeros((400, 600, 3), np.uint8)
    image[19:307, 174:408] = 200
    part, box = pre.resize_part(image, (19, 307, 174, 408))
    assert box == (0, 172, 56, 153) and part.shape == (172, 97, 3)      # of the 224 x 224 input
    assert part.max() == 200


def test_the_fill_basis_of_an_empty_region_is_the_source_with_nothing_covered():
    pre = Preprocess()
    image = np.full((300, 400, 3), 90, np.uint8)
    basis = pre.fill_basis(image, np.zeros((300, 400), bool))
    assert not basis.coverage.any() and (basis.uncovered == 1).all()
    assert np.array_equal(basis.outside, pre(np.stack([image]))[0].permute(1, 2, 0).numpy())
