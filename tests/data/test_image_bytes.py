"""Image bytes read on one machine decode on another exactly as the file would: same pixels, same errors."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.data.bundled import DEMO_IMAGES
from objrel.data.images import ImageBytes, load_rgb, read_image_bytes
from objrel.errors import BadSampleError


def _outcome(source, **kw):
    try:
        return load_rgb(source, **kw)
    except BadSampleError as exc:
        return (exc.code, str(exc))


def _via_bytes(path, **kw):
    try:
        data = read_image_bytes(path)
    except BadSampleError as exc:
        return (exc.code, str(exc))
    assert isinstance(data, ImageBytes) and data.name == path.name  # the name only: no folder travels
    return _outcome(data, **kw)


def test_demo_photos_decode_the_same_from_bytes():
    for path in sorted(DEMO_IMAGES.glob("*.jpg"))[:3]:
        assert np.array_equal(_via_bytes(path), load_rgb(path))


@pytest.mark.parametrize("case", ["corrupt", "truncated", "missing", "folder", "size", "budget"])
def test_bad_files_fail_the_same_from_bytes(tmp_path, case):
    good = sorted(DEMO_IMAGES.glob("*.jpg"))[0]
    path = tmp_path / "photo.jpg"
    kw = {}
    if case == "corrupt":
        path.write_bytes(b"this is no image")
    elif case == "truncated":
        path.write_bytes(good.read_bytes()[:2000])
    elif case == "folder":
        path.mkdir()
    elif case in ("size", "budget"):
        path.write_bytes(good.read_bytes())
        kw = {"expected_size": (3, 3)} if case == "size" else {"max_bytes": 100}
    want = _outcome(path, **kw)
    got = _via_bytes(path, **kw)
    assert isinstance(want, tuple) and got == want
    assert str(tmp_path) not in want[1]  # no server folder in either message
