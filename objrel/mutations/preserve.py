"""Object-preserving operators (MR-2): keep the object, corrupt the background."""

from __future__ import annotations

import cv2
import numpy as np

from objrel.constants import DEFAULT_NOISE_VARIANCE
from objrel.mutations.colours import PALETTE_15, parse_colour
from objrel.mutations.pixels import (add_gaussian_noise, background_names, background_picture, blur_boundary,
                                     centre_box, copy_where, paint)
from objrel.mutations.registry import register

S002 = "ORMR Table I"


@register(
    "fill_background", "preserve", [{"colour": c} for c in PALETTE_15],
    "Fill everything but the target region with one colour.", "EMSE21 s4.3, s5.2", keeps_inside=True,
    fills="outside",
)
def fill_background(image, target, rng, colour="black"):
    """Paint everything outside the object's region with ``colour``."""
    return paint(image, ~target.region, parse_colour(colour))


@register(
    "gray_background_blur", "preserve", [{}],
    "PsvObj: gray background, then median-blur the object boundary.", S002,
)
def gray_background_blur(image, target, rng):
    """Paint the background gray and blur the object's boundary."""
    return blur_boundary(fill_background(image, target, rng, colour="gray"), target.region)


@register(
    "background_noise", "preserve", [{"variance": v} for v in (100.0, 400.0, 1600.0, 2500.0, 6400.0)],
    "Gaussian noise of `variance` (pixel units squared) on the background.", "DetReport s2.3, s4.3",
    keeps_inside=True,
)
def background_noise(image, target, rng, variance=DEFAULT_NOISE_VARIANCE):
    """Add Gaussian noise of ``variance`` to everything outside the object's region."""
    return add_gaussian_noise(image, ~target.region, float(variance), rng)


@register(
    "object_noise", "preserve", [{"ratio": 1.0, "variance": v} for v in (16.0, 64.0, 160.0)],
    "Low-intensity Gaussian noise on the central `ratio` of each object box, restricted to the object "
    "(object-preserving for small variances).", "DetReport s2.3, s4.3",
)
def object_noise(image, target, rng, ratio=1.0, variance=160.0):
    """Add Gaussian noise of ``variance`` to the object's pixels inside a centred share ``ratio`` of each box."""
    where = np.zeros_like(target.region)
    for box in target.boxes:
        x1, y1, x2, y2 = centre_box(box, float(ratio))
        where[max(0, y1):y2, max(0, x1):x2] = True
    return add_gaussian_noise(image, where & target.region, float(variance), rng)


@register(
    "move_to_background", "preserve", [{"background": b} for b in background_names()],
    "MvObjToImg: paste the object onto another background picture, then median-blur its boundary.", S002,
    needs_backgrounds=True,
)
def move_to_background(image, target, rng, background=""):
    """Copy the object onto a bundled background picture (``background``) and blur its boundary."""
    out = copy_where(background_picture(background, image.shape), image, target.region)
    return blur_boundary(out, target.region)


@register(
    "blend_to_background", "preserve", [{"background": b} for b in background_names()],
    "BldObjToImg: cv2.seamlessClone of the object onto another background picture.", S002,
    needs_backgrounds=True,
)
def blend_to_background(image, target, rng, background=""):
    """Blend the object into a bundled background picture with OpenCV's seamless cloning."""
    bg = background_picture(background, image.shape)
    mask = target.region.astype(np.uint8) * 255
    # seamlessClone rejects masks touching the border; keep a 1-pixel frame clear.
    mask[0, :] = mask[-1, :] = 0
    mask[:, 0] = mask[:, -1] = 0
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        out = bg.copy()
        return out
    x, y, w, h = cv2.boundingRect(mask)
    centre = (x + w // 2, y + h // 2)
    blended = cv2.seamlessClone(
        np.ascontiguousarray(image[:, :, ::-1]), np.ascontiguousarray(bg[:, :, ::-1]), mask, centre, cv2.NORMAL_CLONE
    )
    return np.ascontiguousarray(blended[:, :, ::-1])
