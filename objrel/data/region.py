"""Target regions: boolean masks built from boxes, polygons and RLE.

The target region of a sample is the union of its objects' masks, or of their
boxes where an object has no mask (EMSE21 s4.2).  Masks are ``(H, W)`` bool.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from pycocotools import mask as mask_utils

from objrel.errors import BadSampleError
from objrel.data.sample import Box, Sample, TargetObject

# A box that overlaps the image but runs past its border is clipped to it (as torchvision's
# clamp_bounding_boxes does; COCO and VOC exports hold many).  An overhang of up to this many pixels is
# annotation rounding and clipped silently; a larger one is clipped with a note on the sample.  Only a box
# with no pixel inside the image is refused.
BOX_TOLERANCE_PX = 2.0
# Polygon coordinates may reach this many image widths/heights from the origin (either sign); further out
# is refused before pycocotools rasterises it (about 6e8 crashes it, about 2e8 makes it allocate 23 GB).
POLYGON_FAR_FACTOR = 2.0
# Characters one run length of a compressed RLE string may span (5 bits each): 12 hold any 60-bit value, more
# than any image has pixels; a longer run is refused (unbounded runs made the check quadratic in the string).
MAX_RLE_RUN_CHARS = 12


def _rounded(box) -> tuple:
    return tuple(round(float(v), 1) for v in box)


def clip_box(box: Box, width: int, height: int) -> Box:
    """The xyxy box clipped to the ``width`` x ``height`` image, as floats.

    Raises ``BadSampleError('bad-box')`` for non-finite or empty boxes and
    ``BadSampleError('box-outside-image')`` for a box with no pixel inside the image.
    """
    x1, y1, x2, y2 = (float(v) for v in box)
    if not all(np.isfinite([x1, y1, x2, y2])):
        raise BadSampleError("bad-box", f"box {box} has non-finite coordinates")
    if x2 <= x1 or y2 <= y1:
        raise BadSampleError("bad-box", f"box {box} is empty; expected x1 < x2 and y1 < y2 (xyxy pixels)")
    clipped = (max(x1, 0.0), max(y1, 0.0), min(x2, float(width)), min(y2, float(height)))
    if clipped[2] <= clipped[0] or clipped[3] <= clipped[1]:
        raise BadSampleError(
            "box-outside-image",
            f"box {_rounded((x1, y1, x2, y2))} lies entirely outside the {width}x{height} image; expected it "
            f"to overlap 0 <= x < {width}, 0 <= y < {height}",
        )
    return clipped


def box_overhang(box: Box, width: int, height: int) -> float:
    """How many pixels the box runs past the image's border at most (0 when it lies inside)."""
    x1, y1, x2, y2 = (float(v) for v in box)
    return max(0.0, -x1, -y1, x2 - width, y2 - height)


def check_box(box: Box, width: int, height: int) -> tuple[int, int, int, int]:
    """Validate an xyxy box against the image and return it clipped to integer pixels (``clip_box``)."""
    x1, y1, x2, y2 = clip_box(box, width, height)
    ix1, iy1 = max(0, int(np.floor(x1))), max(0, int(np.floor(y1)))
    ix2, iy2 = min(width, int(np.ceil(x2))), min(height, int(np.ceil(y2)))
    if ix2 <= ix1 or iy2 <= iy1:
        raise BadSampleError("box-outside-image", f"box {box} covers no pixel of the {width}x{height} image")
    return ix1, iy1, ix2, iy2


def clip_objects(objects, width, height, names=None) -> tuple[tuple, tuple[str, ...]]:
    """The objects with boxes that run past the border clipped to the ``width`` x ``height`` image, and one
    note per box clipped by more than ``BOX_TOLERANCE_PX`` (``Sample.notes``).

    ``names``: how the notes name each object (default ``object <n>``).  Objects whose box is invalid or lies
    entirely outside are returned unchanged: the engine drops them with their reason.  Without a declared
    size (``width`` or ``height`` not a positive int) nothing changes.
    """
    if not (isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0):
        return tuple(objects), ()
    out, notes = [], []
    for n, obj in enumerate(objects):
        try:
            clipped = clip_box(obj.box, width, height)
        except BadSampleError:
            out.append(obj)
            continue
        if clipped != tuple(float(v) for v in obj.box):
            over = box_overhang(obj.box, width, height)
            if over > BOX_TOLERANCE_PX:
                name = names[n] if names is not None else f"object {n}"
                notes.append(f"{name} ({obj.category!r}): box {_rounded(obj.box)} runs {over:.1f} px past the "
                             f"border of the {width}x{height} image; clipped to {_rounded(clipped)}")
            obj = replace(obj, box=clipped)
        out.append(obj)
    return tuple(out), tuple(notes)


def box_mask(box: Box, width: int, height: int, padding: int = 0) -> np.ndarray:
    """An ``(H, W)`` bool mask of ``box`` grown by ``padding`` pixels on each side, cut at the image border."""
    x1, y1, x2, y2 = check_box(box, width, height)
    m = np.zeros((height, width), dtype=bool)
    m[max(0, y1 - padding) : min(height, y2 + padding), max(0, x1 - padding) : min(width, x2 + padding)] = True
    return m


def _compressed_counts(raw: bytes, total: int) -> np.ndarray:
    """Run lengths of a compressed COCO RLE string (pycocotools' ``rleFrString``), checked to cover ``total``
    (H*W) pixels.

    pycocotools decodes a string whose runs do not cover H*W pixels without an error, filling the rest from
    uninitialised memory, so the runs are checked here first.  The decoding is vectorised and linear in the
    string's length: a run may span at most ``MAX_RLE_RUN_CHARS`` characters and no run may exceed
    ``total``, so no number grows with the string.  Returns the run lengths as int64; raises
    ``BadSampleError('bad-rle')`` on a malformed string.
    """
    codes = np.frombuffer(raw, dtype=np.uint8).astype(np.int64) - 48
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    bad = np.flatnonzero((codes < 0) | (codes >= 64))
    if bad.size:
        raise BadSampleError(
            "bad-rle", f"compressed RLE string has character {chr(raw[bad[0]])!r} at {bad[0]}; expected "
                       f"characters '0'..'o'")
    last = (codes & 0x20) == 0           # a character without the continuation bit ends its run
    if not last[-1]:
        raise BadSampleError("bad-rle", "compressed RLE string ends in the middle of a run length")
    ends = np.flatnonzero(last)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > MAX_RLE_RUN_CHARS:
        n = int(np.argmax(lengths))
        raise BadSampleError(
            "bad-rle", f"compressed RLE run {n} spans {int(lengths[n])} characters; at most {MAX_RLE_RUN_CHARS} "
                       f"encode any run length of an image")
    # Position of each character within its run: its 5 bits go to bit 5 * position.
    position = np.arange(codes.size) - np.repeat(starts, lengths)
    x = np.add.reduceat((codes & 0x1F) << (5 * position), starts)
    negative = (codes[ends] & 0x10) != 0  # the last character's sign bit extends the run's value
    x[negative] -= np.left_shift(1, 5 * lengths[negative])
    if np.abs(x).max() > total:
        n = int(np.argmax(np.abs(x)))
        raise BadSampleError("bad-rle", f"compressed RLE run {n} has the value {int(x[n])}; expected at most "
                                        f"{total} (H*W) in size")
    # From the fourth run on, each value is stored relative to the run two before it.
    counts = x.copy()
    counts[1::2] = np.cumsum(x[1::2])
    counts[2::2] = np.cumsum(x[2::2])
    if counts.size and counts.min() < 0:
        n = int(np.argmax(counts < 0))
        raise BadSampleError("bad-rle", f"compressed RLE string has a negative run length ({int(counts[n])}) at "
                                        f"run {n}")
    return counts


def check_polygons(segmentation: list, width: int, height: int) -> list[list[float]]:
    """The usable polygons of a COCO polygon list, each checked to be finite and near the image.

    Polygons with fewer than 3 points are ignored.  Raises ``BadSampleError('bad-polygon')`` for a polygon
    that is not a list of numbers, has a non-finite coordinate or one further than ``POLYGON_FAR_FACTOR``
    times the image size from the origin, and ``BadSampleError('empty-region')`` when no polygon is left.
    Runs before pycocotools sees the coordinates: far-out values crash or exhaust it.
    """
    polys = []
    x_lim, y_lim = POLYGON_FAR_FACTOR * max(width, 1), POLYGON_FAR_FACTOR * max(height, 1)
    for n, poly in enumerate(segmentation):
        if not isinstance(poly, (list, tuple)):
            raise BadSampleError("bad-polygon", f"polygon {n} is a {type(poly).__name__}, expected a list of numbers")
        if len(poly) < 6 or len(poly) % 2:
            continue
        try:
            arr = np.asarray(poly, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise BadSampleError("bad-polygon", f"polygon {n} is not a list of numbers: {exc}") from exc
        if arr.ndim != 1 or not np.isfinite(arr).all():
            raise BadSampleError("bad-polygon", f"polygon {n} has non-finite coordinates; expected finite pixels")
        xs, ys = np.abs(arr[0::2]), np.abs(arr[1::2])
        if xs.max() > x_lim or ys.max() > y_lim:
            raise BadSampleError(
                "bad-polygon",
                f"polygon {n} reaches ({xs.max():.3g}, {ys.max():.3g}); expected |x| <= {x_lim:g} and "
                f"|y| <= {y_lim:g} ({POLYGON_FAR_FACTOR:g}x the {width}x{height} image)")
        polys.append(arr.tolist())
    if not polys:
        raise BadSampleError("empty-region", "polygon segmentation has no polygon with at least 3 points")
    return polys


def segmentation_mask(segmentation, width: int, height: int) -> np.ndarray:
    """Decode a COCO polygon list, uncompressed RLE or compressed RLE to a bool mask."""
    try:
        if isinstance(segmentation, list):
            polys = check_polygons(segmentation, width, height)
            rles = mask_utils.frPyObjects(polys, height, width)
            rle = mask_utils.merge(rles)
        elif isinstance(segmentation, dict) and "counts" in segmentation and "size" in segmentation:
            h, w = (int(v) for v in segmentation["size"])
            if (h, w) != (height, width):
                raise BadSampleError(
                    "bad-rle", f"RLE size {h}x{w} (HxW) does not match the image {height}x{width}"
                )
            counts = segmentation["counts"]
            if isinstance(counts, list):
                if sum(int(c) for c in counts) != h * w or any(int(c) < 0 for c in counts):
                    raise BadSampleError(
                        "bad-rle", f"uncompressed RLE counts sum to {sum(counts)}, expected {h * w} (H*W)"
                    )
                rle = mask_utils.frPyObjects(segmentation, h, w)
            else:
                raw = counts.encode() if isinstance(counts, str) else counts
                if not isinstance(raw, bytes):
                    raise BadSampleError(
                        "bad-rle", f"RLE counts of type {type(counts).__name__} is neither a list nor a string"
                    )
                total = int(_compressed_counts(raw, h * w).sum())
                if total != h * w:
                    raise BadSampleError(
                        "bad-rle", f"compressed RLE counts sum to {total}, expected {h * w} (H*W)"
                    )
                rle = {"size": [h, w], "counts": raw}
        else:
            raise BadSampleError(
                "bad-segmentation",
                f"segmentation of type {type(segmentation).__name__} is neither a polygon list nor an RLE dict",
            )
        m = mask_utils.decode(rle)
    except BadSampleError:
        raise
    except Exception as exc:  # pycocotools raises bare Exceptions/ValueErrors on broken input
        raise BadSampleError("bad-rle", f"cannot decode segmentation: {type(exc).__name__}: {exc}") from exc
    if m.ndim == 3:
        m = m.any(axis=2)
    if m.shape != (height, width):
        raise BadSampleError("bad-rle", f"decoded mask has shape {m.shape}, expected {(height, width)}")
    return m.astype(bool)


def object_mask(obj: TargetObject, width: int, height: int, padding: int = 0) -> np.ndarray:
    """The object's mask, or its (padded) box when it has no segmentation."""
    if obj.segmentation is None:
        return box_mask(obj.box, width, height, padding)
    check_box(obj.box, width, height)
    return segmentation_mask(obj.segmentation, width, height)


def check_object(obj: TargetObject, width: int, height: int) -> np.ndarray:
    """Raise ``BadSampleError`` unless the object's box and mask are valid and cover at least one pixel; return
    the mask (``object_mask``), for a caller that needs it next."""
    mask = object_mask(obj, width, height)
    if not mask.any():
        raise BadSampleError("empty-region", "the object's mask covers no pixel")
    return mask


def target_region(objects, width: int, height: int, padding: int = 0, masks=None) -> np.ndarray:
    """Union of the objects' regions as an ``(H, W)`` bool mask.

    ``masks``: the objects' ``object_mask``s (unpadded), in their order, when the caller decoded them already.
    Raises ``BadSampleError('empty-region')`` when there is no object or the union
    covers no pixel.
    """
    if not objects:
        raise BadSampleError("empty-region", "sample has no annotated target object")
    if masks is not None and (padding or len(masks) != len(objects)):
        raise ValueError(f"target_region takes one unpadded mask per object: {len(objects)} objects, "
                         f"{len(masks)} masks, padding {padding}")
    region = np.zeros((height, width), dtype=bool)
    for n, obj in enumerate(objects):
        region |= object_mask(obj, width, height, padding) if masks is None else masks[n]
    if not region.any():
        raise BadSampleError("empty-region", "the target region covers no pixel (empty mask)")
    return region


def union_box(objects, width: int, height: int) -> tuple[int, int, int, int]:
    """Smallest integer xyxy box containing every object's box, clipped to the image."""
    boxes = [check_box(o.box, width, height) for o in objects]
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def area_ratio(region: np.ndarray) -> float:
    """Share of image pixels in the target region, in [0, 1] (EMSE21 s6.2)."""
    return np.count_nonzero(region) / region.size if region.size else float("nan")


def encode_region(region: np.ndarray) -> dict:
    """Compressed COCO RLE of a bool mask, JSON-serialisable (counts as str)."""
    rle = mask_utils.encode(np.asfortranarray(region.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}


def decode_region(rle: dict) -> np.ndarray:
    """The bool mask of a COCO run-length encoding whose counts are stored as text."""
    return mask_utils.decode({"size": rle["size"], "counts": rle["counts"].encode("ascii")}).astype(bool)


def sample_region(sample: Sample, width: int, height: int, padding: int = 0) -> np.ndarray:
    """The union of the sample's object regions as an ``(H, W)`` bool mask (``target_region``)."""
    return target_region(sample.objects, width, height, padding)
