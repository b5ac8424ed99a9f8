"""Plain JPEGs are decoded by OpenCV (faster) and must give PIL's pixels exactly; anything else, and any
stream that is not complete, still goes through PIL with its checks."""

from __future__ import annotations

import io

import cv2
import numpy as np
import pytest
from PIL import Image

from objrel.data.images import ImageBytes, load_rgb
from objrel.errors import BadSampleError


def pil_pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as im:
        return np.asarray(im.convert("RGB"))


def photo_like(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = (rng.random((30, 40, 3)) * 255).astype(np.uint8)
    smooth = cv2.resize(small, (311, 237), interpolation=cv2.INTER_CUBIC)
    return np.clip(smooth.astype(int) + rng.integers(-20, 21, smooth.shape), 0, 255).astype(np.uint8)


def encodings():
    """(name, bytes): baseline at three qualities and three chroma subsamplings (PIL), progressive (OpenCV)."""
    image = photo_like(1)
    for quality in (30, 75, 95):
        for sub in (0, 1, 2):   # 4:4:4, 4:2:2, 4:2:0
            buf = io.BytesIO()
            Image.fromarray(image).save(buf, "JPEG", quality=quality, subsampling=sub)
            yield f"baseline-q{quality}-s{sub}", buf.getvalue()
    for factor in (cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420):
        ok, enc = cv2.imencode(".jpg", image[:, :, ::-1], [cv2.IMWRITE_JPEG_PROGRESSIVE, 1,
                                                          cv2.IMWRITE_JPEG_SAMPLING_FACTOR, factor])
        assert ok
        yield f"progressive-{factor:x}", enc.tobytes()


@pytest.mark.parametrize("name,data", list(encodings()), ids=lambda v: v if isinstance(v, str) else "")
def test_a_plain_jpeg_decodes_to_pils_pixels(name, data, tmp_path):
    want = pil_pixels(data)
    path = tmp_path / f"{name}.jpg"
    path.write_bytes(data)
    for source in (path, ImageBytes(data, path.name)):
        got = load_rgb(source)
        assert got.dtype == np.uint8 and got.flags.c_contiguous
        assert np.array_equal(got, want)


def test_a_truncated_jpeg_is_still_refused(tmp_path):
    data = dict(encodings())["baseline-q75-s2"]
    path = tmp_path / "cut.jpg"
    path.write_bytes(data[: len(data) * 2 // 3])      # OpenCV alone would fill the missing rows with grey
    with pytest.raises(BadSampleError) as err:
        load_rgb(path)
    assert err.value.code == "corrupt-image"


def test_a_rotated_or_grey_jpeg_goes_through_pil(tmp_path):
    image = photo_like(2)
    exif = Image.Exif()
    exif[0x0112] = 6                                    # rotate 90 degrees clockwise to view
    path = tmp_path / "rotated.jpg"
    Image.fromarray(image).save(path, "JPEG", exif=exif)
    got = load_rgb(path)
    assert got.shape == (image.shape[1], image.shape[0], 3)
    grey = tmp_path / "grey.jpg"
    Image.fromarray(image[:, :, 0]).save(grey, "JPEG")
    g = load_rgb(grey)
    assert g.shape == image.shape and np.array_equal(g[:, :, 0], g[:, :, 2])
