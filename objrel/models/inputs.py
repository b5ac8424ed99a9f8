"""The input both adapter protocols take: a list of ``(H, W, 3)`` uint8 RGB arrays (sizes may differ)."""

from __future__ import annotations

import numpy as np


def check_rgb_batch(images, method: str) -> None:
    """Raise ``ValueError`` naming ``method`` (``predict``, ``detect``) unless every image is ``(H, W, 3)`` uint8."""
    for im in images:
        if not (isinstance(im, np.ndarray) and im.dtype == np.uint8 and im.ndim == 3 and im.shape[2] == 3):
            got = f"{im.shape} {im.dtype}" if isinstance(im, np.ndarray) else type(im).__name__
            raise ValueError(f"{method} expects (H, W, 3) uint8 RGB arrays, got {got}")
