"""Hostile inputs meet bounded parsing: every check is linear in the input and ends in one line.

Compressed RLE strings, deeply nested JSON and XML, and the paths a skip reason names.  Each hostile file is
built in ``tmp_path`` by the test itself.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from objrel.data.region import segmentation_mask
from objrel.errors import BadSampleError

# Generous time bound for a check that must be linear (today's code needs well under 0.2 s).
FAST_S = 2.0
# Characters of the hostile RLE string (F10: 1.25 MB took 42.6 s before the check was made linear).
HOSTILE_RLE_CHARS = 1_250_000


# =====================================================================================
# F10: compressed RLE
# =====================================================================================


@pytest.mark.parametrize("counts", [
    "Q" * HOSTILE_RLE_CHARS + "0",             # one run that never ends: its value grew with every character
    "o" * HOSTILE_RLE_CHARS,                   # a string that ends inside a run
    "1" * HOSTILE_RLE_CHARS,                   # a million short runs that cover far more than the image
    ("1" + "Q" * 11 + "0") * (HOSTILE_RLE_CHARS // 13),   # long but legal-length runs of absurd values
], ids=["endless-run", "unterminated", "many-runs", "huge-values"])
def test_a_hostile_compressed_rle_string_is_refused_in_linear_time(counts):
    t0 = time.perf_counter()
    with pytest.raises(BadSampleError) as exc:
        segmentation_mask({"size": [1000, 1000], "counts": counts}, 1000, 1000)
    took = time.perf_counter() - t0
    assert took < FAST_S, f"refusing a {len(counts)}-character RLE string took {took:.1f} s"
    assert exc.value.code == "bad-rle"
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 300


def _runs(mask: np.ndarray) -> list[int]:
    """Run lengths of ``mask`` in column-major order, starting with background (COCO's convention)."""
    flat = mask.flatten(order="F").astype(np.int8)
    edges = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate(([0], edges, [flat.size]))
    runs = np.diff(bounds).tolist()
    return ([0] + runs) if flat[0] else runs


def test_valid_compressed_rles_still_decode_equal_to_pycocotools():
    from objrel.data.region import _compressed_counts

    rng = np.random.default_rng(7)
    masks = []
    for n in range(120):
        h, w = (int(v) for v in rng.integers(1, 90, 2))
        if n % 3 == 0:
            m = np.zeros((h, w), np.uint8)
            m[h // 4: h // 2 + 1, w // 3:] = 1
        else:
            m = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        masks.append(m)
    big = np.zeros((3000, 2000), np.uint8)     # long runs need several characters each
    big[5:2990, 7:1999] = 1
    masks += [big, np.ones((40, 30), np.uint8)]
    for m in masks:
        h, w = m.shape
        rle = mask_utils.encode(np.asfortranarray(m))
        assert _compressed_counts(rle["counts"], h * w).tolist() == _runs(m)
        seg = {"size": [h, w], "counts": rle["counts"].decode("ascii")}
        np.testing.assert_array_equal(segmentation_mask(seg, w, h), mask_utils.decode(rle).astype(bool))
