"""Object-corrupting operators (MR-1)."""

from __future__ import annotations

import cv2
import numpy as np

from objrel.constants import DEFAULT_ERASE_RATIO, INPAINT_MAX_SIDE, INPAINT_RADIUS
from objrel.mutations.colours import NINE_COLOURS, PALETTE_15, parse_colour
from objrel.mutations.pixels import blur_boundary, centre_box, copy_where, paint
from objrel.mutations.registry import NotApplicable, register

S000 = "EMSE21 s4.3, s5.2"
S002 = "ORMR Table I"


@register(
    "fill_object", "corrupt", [{"colour": c} for c in PALETTE_15],
    "Fill the target region with one colour.", S000, keeps_outside=True, fills="inside",
)
def fill_object(image, target, rng, colour="black"):
    """Paint the object's region with ``colour``."""
    return paint(image, target.region, parse_colour(colour))


@register(
    "fill_object_blur", "corrupt", [{"colour": c} for c in NINE_COLOURS],
    "RmvObjByRGB: fill the object with a colour, then median-blur its boundary.", S002,
)
def fill_object_blur(image, target, rng, colour="black"):
    """Paint the object's region with ``colour`` and blur its boundary."""
    return blur_boundary(fill_object(image, target, rng, colour=colour), target.region)


_INPAINT = {"ns": cv2.INPAINT_NS, "telea": cv2.INPAINT_TELEA}


@register(
    "inpaint", "corrupt", [{"method": "ns"}, {"method": "telea"}],
    "RmvObjByTool: OpenCV inpainting (Navier-Stokes or Telea) of the object.", S002, keeps_outside=True,
)
def inpaint(image, target, rng, method="telea"):
    """Fill the object's region from its surroundings with OpenCV inpainting (``telea`` or ``ns``)."""
    if method not in _INPAINT:
        raise ValueError(f"inpaint method must be one of {sorted(_INPAINT)}, got {method!r}")
    h, w = target.region.shape
    scale = min(1.0, INPAINT_MAX_SIDE / max(h, w))
    mask = target.region.astype(np.uint8) * 255
    if scale < 1.0:
        # Inpaint a downscaled copy (cost grows with the region's area) and take
        # only the region's pixels back at full size.
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        small = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
        small_mask = cv2.resize(mask, size, interpolation=cv2.INTER_NEAREST)
        small_mask = cv2.dilate(small_mask, np.ones((3, 3), np.uint8))
        filled = cv2.resize(cv2.inpaint(small, small_mask, INPAINT_RADIUS, _INPAINT[method]), (w, h),
                            interpolation=cv2.INTER_LINEAR)
    else:
        filled = cv2.inpaint(image, mask, INPAINT_RADIUS, _INPAINT[method])
    return copy_where(image.copy(), filled, target.region)


@register(
    "margin_fill", "corrupt", [{"stat": "mean"}, {"stat": "median"}],
    "RmvObjByMM: fill the object with the mean or median of the margin between its mask and its box "
    "(only where a mask exists).", S002, keeps_outside=True,
)
def margin_fill(image, target, rng, stat="mean"):
    """Fill the object's mask with the mean or median colour of its box outside the mask."""
    if stat not in ("mean", "median"):
        raise ValueError(f"stat must be 'mean' or 'median', got {stat!r}")
    if not target.masked:
        raise NotApplicable("margin_fill needs a mask: with box-only annotations there is no margin")
    in_boxes = np.zeros_like(target.region)
    for x1, y1, x2, y2 in target.boxes:
        in_boxes[y1:y2, x1:x2] = True
    margin = in_boxes & ~target.region
    if not margin.any():
        raise NotApplicable("the mask fills its box: no margin pixels to take a colour from")
    pixels = image[margin].astype(np.float64)
    value = pixels.mean(axis=0) if stat == "mean" else np.median(pixels, axis=0)
    return paint(image, target.region, tuple(int(v) for v in np.clip(np.rint(value), 0, 255)))


@register(
    "random_erase", "corrupt", [{"ratio": r} for r in (0.1, 0.3, 0.5, 0.7, 0.9)],
    "Random erase: uniform random pixels over the central part of each object box covering `ratio` of "
    "its area (centre out).", "DetReport s2.3",
)
def random_erase(image, target, rng, ratio=DEFAULT_ERASE_RATIO):
    """Replace a centred share ``ratio`` of each object box with random pixels."""
    out = image.copy()
    h, w = target.region.shape
    for box in target.boxes:
        x1, y1, x2, y2 = centre_box(box, float(ratio))
        x1, y1, x2, y2 = max(0, x1), max(0, y1), min(w, x2), min(h, y2)
        if x2 > x1 and y2 > y1:
            out[y1:y2, x1:x2] = rng.integers(0, 256, size=(y2 - y1, x2 - x1, 3), dtype=np.uint8)
    return out
