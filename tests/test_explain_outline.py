"""The target outline over a LIME overlay: a 2-pixel line exactly along the region's contour."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.explain import (BOUNDARY_RGB, POSITIVE_RGB, TARGET_OUTLINE_RGB, Explanation, overlay, region_outline,
                            resized)


def square_case():
    """A 20 x 24 grey image, two superpixels (left and right half), a 10 x 10 region at rows/cols 5..14."""
    image = np.full((20, 24, 3), 100, np.uint8)
    segments = np.zeros((20, 24), np.int32)
    segments[:, 12:] = 1
    region = np.zeros((20, 24), bool)
    region[5:15, 5:15] = True
    exp = Explanation(label=0, segments=segments, weights={0: 0.5, 1: -0.2}, settings="test")
    return image, exp, region


def expected_line() -> np.ndarray:
    """By hand: the ring one pixel outside the square (rows/cols 4 and 15) and the ring one pixel inside it
    (rows/cols 5 and 14)."""
    line = np.zeros((20, 24), bool)
    line[4:16, 4:16] = True
    line[6:14, 6:14] = False
    return line


def test_outline_lies_exactly_on_the_region_boundary():
    image, exp, region = square_case()
    line = region_outline(region)
    assert np.array_equal(line, expected_line())
    out = overlay(image, exp, outline=region)
    coloured = np.all(out == TARGET_OUTLINE_RGB, axis=-1)
    assert np.array_equal(coloured, expected_line())
    # away from the line the overlay is what it is without an outline
    plain = overlay(image, exp)
    assert np.array_equal(out[~coloured], plain[~coloured])
    assert not np.all(plain == TARGET_OUTLINE_RGB, axis=-1).any()
    # the outline colour stands apart from the overlay's own colours
    assert TARGET_OUTLINE_RGB not in (POSITIVE_RGB, BOUNDARY_RGB)


def test_outline_of_a_region_on_the_image_edge_and_of_nothing():
    region = np.zeros((10, 10), bool)
    region[:, :4] = True                       # touches the top, bottom and left edges
    line = region_outline(region)
    assert np.array_equal(np.argwhere(line.any(axis=0)).ravel(), [3, 4])   # only along the inner edge
    assert line[:, 3].all() and line[:, 4].all()
    assert not region_outline(np.zeros((10, 10), bool)).any()
    assert not region_outline(np.ones((10, 10), bool)).any()
    with pytest.raises(ValueError, match="bool region"):
        region_outline(region.astype(np.uint8))


def test_an_explanation_resampled_to_a_thumbnail_keeps_its_weights():
    _, exp, _ = square_case()
    small = resized(exp, (10, 12))
    assert small.segments.shape == (10, 12) and small.weights == exp.weights and small.label == exp.label
    assert (small.segments[:, :6] == 0).all() and (small.segments[:, 6:] == 1).all()
