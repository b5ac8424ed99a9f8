"""Uploads: hostile zips are refused before anything lands; good datasets and weights register."""

from __future__ import annotations

import io
import json
import stat
import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from objrel.data import load_dataset
from objrel.data import uploads as U
from objrel.models.torchvision import check_weights_file


def png_bytes(colour=(200, 10, 10), size=(32, 24)) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(np.full((size[1], size[0], 3), colour, np.uint8)).save(buf, "PNG")
    return buf.getvalue()


def make_zip(members: dict[str, bytes], symlinks: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        for name, target in (symlinks or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return buf.getvalue()


def manifest(*paths) -> bytes:
    return json.dumps({"images": [{"path": p, "objects": [{"label": "red", "box": [2, 2, 20, 20]}]}
                                  for p in paths]}).encode()


def coco(*files) -> bytes:
    return json.dumps({
        "images": [{"id": i + 1, "file_name": f, "width": 32, "height": 24} for i, f in enumerate(files)],
        "annotations": [{"id": i + 1, "image_id": i + 1, "category_id": 1, "bbox": [2, 2, 18, 18], "area": 324,
                         "iscrowd": 0, "segmentation": [[2, 2, 20, 2, 20, 20, 2, 20]]} for i in range(len(files))],
        "categories": [{"id": 1, "name": "red"}],
    }).encode()


def assert_nothing_left(root):
    assert not root.exists() or list(root.iterdir()) == [], f"a refused upload left {list(root.iterdir())}"


def test_manifest_dataset_registers_and_lists(tmp_path):
    root = tmp_path / "uploads"
    up = U.add_dataset(root, "cats", manifest("a.png", "sub/b.png"),
                       make_zip({"a.png": png_bytes(), "sub/b.png": png_bytes(), "__MACOSX/._a.png": b"junk"}))
    assert (up.kind, up.n_files, up.n_samples) == ("manifest", 2, 2)
    assert (up.images / "sub" / "b.png").is_file() and up.annotation.is_file()
    assert [u.name for u in U.list_uploads(root)] == ["cats"]
    assert U.list_uploads(root)[0].images == up.images.resolve()
    with pytest.raises(U.UploadError, match="already exists"):
        U.add_dataset(root, "cats", manifest("a.png"), make_zip({"a.png": png_bytes()}))


def test_coco_dataset_registers(tmp_path):
    up = U.add_dataset(tmp_path, "reds", coco("x.png"), make_zip({"x.png": png_bytes()}))
    assert (up.kind, up.n_samples) == ("coco", 1)
    # the annotation file carries the upload's name, so a run on it names its dataset "reds"
    assert up.annotation.name == "reds.json" and load_dataset(up.annotation, up.images).name == "reds"


@pytest.mark.parametrize("members, symlinks, message", [
    ({"../evil.png": b"x"}, None, "climbs out"),
    ({"ok/../../evil.png": b"x"}, None, "climbs out"),
    ({"/etc/evil.png": b"x"}, None, "absolute path"),
    ({"C:/evil.png": b"x"}, None, "absolute path"),
    ({"a.png": png_bytes()}, {"link.png": "/etc/passwd"}, "symbolic link"),
    ({"run.sh": b"#!/bin/sh"}, None, "not an image"),
    ({"a.png": b"not a png at all"}, None, "does not decode"),
    ({}, None, "no image files"),
])
def test_hostile_or_bad_zips_are_refused_and_leave_nothing(tmp_path, members, symlinks, message):
    root = tmp_path / "uploads"
    with pytest.raises(U.UploadError, match=message):
        U.add_dataset(root, "bad", manifest("a.png"), make_zip(members, symlinks))
    assert_nothing_left(root)
    assert not (tmp_path / "evil.png").exists()


def test_zip_bomb_by_declared_size_is_refused_before_unpacking(tmp_path, monkeypatch):
    monkeypatch.setattr(U, "MAX_UNPACKED_BYTES", 10_000)
    bomb = make_zip({"a.png": png_bytes(), "b.png": b"\0" * 50_000})  # compresses to ~100 bytes
    assert len(bomb) < 10_000
    with pytest.raises(U.UploadError, match="members declare 50,... bytes unpacked; at most 10,000"):
        U.add_dataset(tmp_path / "up", "bomb", manifest("a.png"), bomb)
    assert_nothing_left(tmp_path / "up")


def test_member_that_lies_about_its_size_is_stopped_while_unpacking(tmp_path, monkeypatch):
    monkeypatch.setattr(U, "MAX_UNPACKED_BYTES", 10_000)
    data = bytearray(make_zip({"b.png": b"\0" * 50_000}))
    # Rewrite the declared uncompressed size (central directory) to 100 bytes; the stream still inflates to 50 kB.
    cd = data.rfind(b"PK\x01\x02")
    data[cd + 24: cd + 28] = (100).to_bytes(4, "little")
    lh = data.find(b"PK\x03\x04")
    data[lh + 22: lh + 26] = (100).to_bytes(4, "little")
    with pytest.raises((U.UploadError, zipfile.BadZipFile)):
        U.unpack_images(bytes(data), tmp_path / "t")
    written = sum(f.stat().st_size for f in (tmp_path / "t").rglob("*") if f.is_file())
    assert written <= 10_000 + U.COPY_CHUNK


def test_too_many_files_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(U, "MAX_ZIP_MEMBERS", 3)
    z = make_zip({f"{i}.png": png_bytes() for i in range(4)})
    with pytest.raises(U.UploadError, match="holds 4 entries; at most 3"):
        U.add_dataset(tmp_path / "up", "many", manifest("0.png"), z)
    assert_nothing_left(tmp_path / "up")


def test_size_limits_name_and_annotation_checks(tmp_path, monkeypatch):
    z = make_zip({"a.png": png_bytes()})
    for bad in ("../x", "a/b", "", ".hidden", "x" * 65):
        with pytest.raises(U.UploadError, match="upload name"):
            U.add_dataset(tmp_path, bad, manifest("a.png"), z)
    with pytest.raises(U.UploadError, match="neither COCO"):
        U.add_dataset(tmp_path, "n", b'{"foo": 1}', z)
    with pytest.raises(U.UploadError, match="not valid JSON: expected UTF-8"):
        U.add_dataset(tmp_path, "n", b"\xff{", z)
    monkeypatch.setattr(U, "MAX_ANNOTATION_BYTES", 10)
    with pytest.raises(U.UploadError, match="at most"):
        U.add_dataset(tmp_path, "n", manifest("a.png"), z)
    assert not (tmp_path / "n").exists()


def _state_dict_bytes(module) -> bytes:
    buf = io.BytesIO()
    torch.save(module.state_dict(), buf)
    return buf.getvalue()


def test_weights_upload_loads_safely_and_must_fit(tmp_path):
    import torchvision.models as tvm

    good = U.add_weights(tmp_path, "rn", "resnet18", _state_dict_bytes(tvm.resnet18(weights=None)),
                         check_weights_file)
    assert good.weights.is_file() and good.architecture == "resnet18"
    assert [(u.name, u.kind, u.architecture) for u in U.list_uploads(tmp_path)] == [("rn", "weights", "resnet18")]
    with pytest.raises(U.UploadError, match="does not fit"):
        U.add_weights(tmp_path, "small", "resnet18", _state_dict_bytes(tvm.resnet18(weights=None, num_classes=3)),
                      check_weights_file)
    buf = io.BytesIO()
    torch.save(tvm.resnet18(weights=None), buf)  # a pickled module, not a state dict
    with pytest.raises(U.UploadError, match="refused"):
        U.add_weights(tmp_path, "pickled", "resnet18", buf.getvalue(), check_weights_file)
    with pytest.raises(U.UploadError, match="architecture must be one of"):
        U.add_weights(tmp_path, "x", "py:evil", b"123", check_weights_file)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rn"]


def test_uploads_stream_to_disk_in_chunks_and_stop_at_the_limit(tmp_path):
    """F6: an upload is copied to disk chunk by chunk from its file object (no second copy in memory), and an
    endless one is cut off one chunk past the limit, leaving nothing behind."""
    import io

    class Endless(io.RawIOBase):
        def __init__(self):
            self.served = 0

        def readable(self):
            return True

        def readinto(self, b):
            b[:] = b"\0" * len(b)
            self.served += len(b)
            return len(b)

    src = Endless()
    limit = 3 * U.COPY_CHUNK
    with pytest.raises(U.UploadError, match="is over 3 MiB"):
        U.spool(io.BufferedReader(src), tmp_path / "x.bin", "images zip", limit)
    assert src.served <= limit + 2 * U.COPY_CHUNK
    # a real zip as a file object lands as the same dataset as its bytes would
    z = make_zip({"a.png": png_bytes()})
    up = U.add_dataset(tmp_path / "up", "fromfile", io.BytesIO(manifest("a.png")), io.BytesIO(z))
    assert up.n_files == 1 and up.n_samples == 1 and not (up.folder / U.SPOOLED_ZIP).exists()


def test_zip_bombs_under_the_total_limit_and_damaged_members_are_refused_in_one_line(tmp_path):
    """A member that unpacks to 100x its compressed size (a bomb that stays under the total limit) is refused
    from the zip's directory; a member whose bytes do not match its CRC is an UploadError, not a traceback."""
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.png", png_bytes())
        zf.writestr("flat.png", b"\0" * (8 * U.MIB))            # 8 MiB of zeros: ~8 KiB compressed
    with pytest.raises(U.UploadError, match=r"'flat.png' unpacks to 8 MiB .* more than 100x"):
        U.add_dataset(tmp_path / "up", "bomb", manifest("a.png"), buf.getvalue())
    plain = io.BytesIO()
    with zipfile.ZipFile(plain, "w", zipfile.ZIP_STORED) as zf:   # stored: a.png's bytes are in the zip as they are
        zf.writestr("a.png", png_bytes())
        zf.writestr("b.png", png_bytes())
    stored = bytearray(plain.getvalue())
    at = stored.find(b"IDAT")
    assert at > 0
    stored[at + 8] ^= 0xFF
    with pytest.raises(U.UploadError, match=r"zip member 'a.png' is damaged: Bad CRC-32"):
        U.add_dataset(tmp_path / "up", "lies", manifest("a.png", "b.png"), bytes(stored))
    assert not (tmp_path / "up" / "bomb").exists() and not (tmp_path / "up" / "lies").exists()
