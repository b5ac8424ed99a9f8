"""Decode image files to RGB uint8 and keep paths inside the dataset root."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from objrel.constants import MAX_IMAGE_PIXELS
from objrel.errors import BadSampleError

Image.MAX_IMAGE_PIXELS = MAX_IMAGE_PIXELS


def resolve_inside(root: str | os.PathLike, relative: str) -> Path:
    """Return ``root/relative`` resolved, refusing anything that leaves ``root``.

    Symlinks are resolved before the check, so a link pointing outside the root
    is refused too.  Raises ``BadSampleError('path-escapes-root')``, or
    ``BadSampleError('bad-path')`` when the path cannot be resolved at all.
    Messages name the path as given and never the server's folders (a visitor of the app reads them).
    """
    root_path = Path(root).resolve()
    try:
        candidate = (root_path / relative).resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # symlink loop, NUL byte in the name
        raise BadSampleError(
            "bad-path", f"image path {relative!r} cannot be resolved: {type(exc).__name__}: "
                        f"{without_folder(str(exc), root_path)}", path=relative
        ) from exc
    if not candidate.is_relative_to(root_path):
        raise BadSampleError(
            "path-escapes-root",
            f"image path {relative!r} resolves outside the dataset root; expected a path inside the root",
            path=relative,
        )
    return candidate


def without_folder(text: str, folder: str | os.PathLike) -> str:
    """``text`` with the server path ``folder`` taken out: ``<folder>/a/b.png`` becomes ``a/b.png``."""
    f = str(folder).rstrip("/")
    return text.replace(f + "/", "").replace(f, ".") if f else text


def _to_rgb(img: Image.Image) -> np.ndarray:
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        # 16-bit or float grayscale: stretch the file's own range to 0..255.
        arr = np.asarray(img, dtype=np.float64)
        lo, hi = float(arr.min()), float(arr.max())
        scaled = np.zeros_like(arr) if hi <= lo else (arr - lo) * (255.0 / (hi - lo))
        gray = np.clip(np.rint(scaled), 0, 255).astype(np.uint8)
        return np.repeat(gray[:, :, None], 3, axis=2)
    if mode == "P":
        img = img.convert("RGBA")
        mode = "RGBA"
    if mode in ("RGBA", "LA", "PA") or (mode == "RGB" and "transparency" in img.info):
        # Transparent pixels are composited over white, as a viewer shows them.
        rgba = img.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        img = Image.alpha_composite(background, rgba)
    if img.mode != "RGB":
        img = img.convert("RGB")     # (converting an RGB image would only copy it)
    return np.ascontiguousarray(np.asarray(img, dtype=np.uint8))


# The EXIF tag that says how the stored pixels are rotated or mirrored (1: as stored).
EXIF_ORIENTATION = 0x0112


def _exif_orientation(img: Image.Image) -> int | None:
    """The image's EXIF orientation, or None when it has none (or the EXIF block cannot be read, which
    ``exif_transpose`` then handles as it always did)."""
    try:
        return img.getexif().get(EXIF_ORIENTATION)
    except Exception:  # noqa: BLE001 - a broken EXIF block: let exif_transpose decide
        return -1


# A complete JPEG stream ends with the End Of Image marker.
JPEG_END = b"\xff\xd9"


def _decode_plain_jpeg(raw: Image.Image, source, expected_size) -> np.ndarray | None:
    """The pixels of a plain JPEG (baseline or progressive, YCbCr or RGB, no rotation to apply, a complete
    stream), decoded by OpenCV; None for anything else, which PIL decodes.

    Both link libjpeg-turbo with the same defaults, so the pixels are the same bytes (tested); OpenCV's is
    30% faster and hands back the array itself where PIL's ``tobytes`` copies it twice more.  A stream
    without its End Of Image marker goes to PIL, which refuses a truncated file where OpenCV would fill the
    missing rows with grey."""
    if raw.format != "JPEG" or raw.mode != "RGB" or _exif_orientation(raw) not in (None, 1):
        return None
    if expected_size is not None and tuple(raw.size) != tuple(expected_size):
        return None
    import cv2

    if isinstance(source, io.BytesIO):
        data = np.frombuffer(source.getbuffer(), dtype=np.uint8)
    else:
        data = np.fromfile(source, dtype=np.uint8)
    if data.size < 2 or data[-2:].tobytes() != JPEG_END:
        return None
    pixels = cv2.imdecode(data, cv2.IMREAD_COLOR_RGB | cv2.IMREAD_IGNORE_ORIENTATION)
    if pixels is None or pixels.shape != (raw.height, raw.width, 3) or pixels.dtype != np.uint8:
        return None
    return pixels


# Bytes per decoded RGB pixel (uint8 x 3).
RGB_BYTES_PER_PIXEL = 3


@dataclass(frozen=True)
class ImageBytes:
    """An image file's bytes, read where the file lives (a Ray run's driver), decoded elsewhere (its actors).

    ``name`` is the file's base name: the decoder's messages name the file by it, as they do for a path.
    """

    data: bytes
    name: str


class _NamedBytes(io.BytesIO):
    """File bytes that PIL's messages name by the file they came from (``cannot identify image file 'a.jpg'``)."""

    def __init__(self, data: bytes, name: str):
        super().__init__(data)
        self._shown = name

    def __repr__(self) -> str:
        return repr(self._shown)


def _unreadable(exc: Exception, folder: Path | None) -> BadSampleError:
    text = str(exc) if folder is None else without_folder(str(exc), folder)
    return BadSampleError("corrupt-image", f"cannot decode image: {type(exc).__name__}: {text}")


def read_image_bytes(path: str | os.PathLike) -> ImageBytes:
    """The bytes of the image file ``path``, for ``load_rgb`` in another process or on another machine.

    A file that cannot be read raises the ``BadSampleError`` that ``load_rgb(path)`` would raise for it
    (``missing-file``, or ``corrupt-image`` naming the OS error), so the sample is skipped with the same reason.
    """
    p = Path(path)
    if not p.is_file():
        raise BadSampleError("missing-file", f"image file {p.name!r} does not exist")
    try:
        with open(os.fspath(p), "rb") as fh:   # as PIL opens it: an OS error reads the same
            return ImageBytes(fh.read(), p.name)
    except OSError as exc:
        raise _unreadable(exc, p.parent) from exc


def load_rgb(path: str | os.PathLike | ImageBytes, expected_size: tuple[int, int] | None = None,
             max_bytes: int | None = None) -> np.ndarray:
    """Decode ``path`` (an image file, or its ``ImageBytes`` read elsewhere) to an ``(H, W, 3)`` uint8 RGB array.

    Grayscale, palette, RGBA/LA (composited over white), 16-bit and float images are
    converted; EXIF orientation is applied.  When ``expected_size`` ``(width, height)``
    is given and only the un-rotated file matches it, the EXIF rotation is not applied
    (the annotation was made on the raw pixels).

    Errors name the file by its base name only and leave ``path`` unset: the caller knows the file's name
    relative to the dataset root (the engine sets ``sample.rel_path``), and no server folder reaches a message.

    ``max_bytes`` bounds the decoded RGB array: a larger image is refused from its header, before any
    pixel is decoded, with ``BadSampleError('image-too-large')`` naming its size and the budget.

    Raises ``BadSampleError`` with code ``missing-file``, ``corrupt-image``,
    ``image-too-large`` or ``size-mismatch``.
    """
    source: _NamedBytes | Path
    if isinstance(path, ImageBytes):
        source, folder = _NamedBytes(path.data, path.name), None
    else:
        p = Path(path)
        if not p.is_file():
            raise BadSampleError("missing-file", f"image file {p.name!r} does not exist")
        source, folder = p, p.parent
    try:
        with Image.open(source) as raw:
            # PIL only warns between MAX_IMAGE_PIXELS and twice that; refuse those too.
            if raw.width * raw.height > MAX_IMAGE_PIXELS:
                raise BadSampleError(
                    "corrupt-image",
                    f"image too large to decode safely: {raw.width}x{raw.height} pixels exceeds the "
                    f"limit of {MAX_IMAGE_PIXELS} pixels",
                )
            need = raw.width * raw.height * RGB_BYTES_PER_PIXEL
            if max_bytes is not None and need > max_bytes:
                raise BadSampleError(
                    "image-too-large",
                    f"image is {raw.width}x{raw.height} pixels ({need} bytes decoded as RGB), over the memory "
                    f"budget of {max_bytes} bytes per image; raise the run's memory budget "
                    f"($OBJREL_MEMORY_BUDGET) or shrink the image")
            quick = _decode_plain_jpeg(raw, source, expected_size)
            if quick is not None:
                return quick
            raw.load()
            # Most photos carry no rotation: skip exif_transpose then, which copies the whole image.
            upright = ImageOps.exif_transpose(raw) if _exif_orientation(raw) not in (None, 1) else raw
            chosen = upright
            if expected_size is not None and tuple(upright.size) != tuple(expected_size):
                if tuple(raw.size) == tuple(expected_size):
                    chosen = raw
                else:
                    raise BadSampleError(
                        "size-mismatch",
                        f"annotation says the image is {expected_size[0]}x{expected_size[1]} "
                        f"but the file decodes to {upright.size[0]}x{upright.size[1]}",
                    )
            return _to_rgb(chosen)
    except BadSampleError:
        raise
    except Image.DecompressionBombError as exc:
        text = str(exc) if folder is None else without_folder(str(exc), folder)
        raise BadSampleError("corrupt-image", f"image too large to decode safely: {text}") from exc
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise _unreadable(exc, folder) from exc
