"""Weights archives are checked from the zip's directory before torch.load allocates anything (F7).

The hostile archive is a real ``torch.save`` file whose tensor record is swapped for a DEFLATE stream that
unpacks to ``BOMB_BYTES`` zero bytes: a few MiB on disk.  Loading runs in a child process that reports its
own peak memory.
"""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
import torch

from objrel.errors import UnsafeWeightsError
from objrel.models.safe_load import MAX_WEIGHTS_EXPANSION, load_state_dict

ROOT = Path(__file__).resolve().parents[2]
MIB = 2**20
# What the hostile tensor record unpacks to (under 4 GiB, so the archive needs no zip64 fields).
BOMB_BYTES = 3 * 2**30
# Peak memory the child may reach while refusing it: torch itself takes a few hundred MB.
MAX_CHILD_RSS_BYTES = 1536 * MIB


def zero_deflate(n_mib: int) -> tuple[bytes, int]:
    """A raw DEFLATE stream of ``n_mib`` MiB of zero bytes and the CRC-32 of those bytes.

    After a full flush the compressor starts afresh, so one compressed MiB repeats verbatim."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(MIB)) + c.flush(zlib.Z_FULL_FLUSH)
    stream = block * n_mib + c.flush()
    crc, chunk = 0, bytes(64 * MIB)
    for _ in range(n_mib // 64):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(bytes((n_mib % 64) * MIB), crc)
    return stream, crc


def bomb_archive(path: Path, unpacked: int = BOMB_BYTES) -> Path:
    """A torch.save archive of ``{"w": zeros(4)}`` whose tensor record is DEFLATEd and unpacks to ``unpacked``
    bytes (its directory says so, as a real bomb's would)."""
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(4)}, buf)
    stream, crc = zero_deflate(unpacked // MIB)
    src = zipfile.ZipFile(buf)
    out = io.BytesIO()
    target = next(i.filename for i in src.infolist() if i.filename.endswith("/data/0"))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, stream if info.filename == target else src.read(info))
    raw = bytearray(out.getvalue())
    # Mark the record DEFLATEd with its true unpacked size and CRC, in its local and its central header.
    local = zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo(target).header_offset
    struct.pack_into("<H", raw, local + 8, zipfile.ZIP_DEFLATED)
    struct.pack_into("<I", raw, local + 14, crc)
    struct.pack_into("<I", raw, local + 22, unpacked)
    central = struct.unpack_from("<I", raw, raw.rfind(b"PK\x05\x06") + 16)[0]   # the directory's start
    while raw[central + 46: central + 46 + len(target)] != target.encode():
        assert raw[central:central + 4] == b"PK\x01\x02", "record not found in the central directory"
        n, x, c = struct.unpack_from("<HHH", raw, central + 28)
        central += 46 + n + x + c
    struct.pack_into("<H", raw, central + 10, zipfile.ZIP_DEFLATED)
    struct.pack_into("<I", raw, central + 16, crc)
    struct.pack_into("<I", raw, central + 24, unpacked)
    path.write_bytes(bytes(raw))
    return path


CHILD = """
import json, sys
from objrel.models.safe_load import load_state_dict
try:
    load_state_dict(sys.argv[1])
    outcome = "loaded"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {exc}"
# VmHWM: this process's own peak (getrusage's ru_maxrss would carry the forking parent's peak across exec)
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"outcome": outcome, "rss": hwm * 1024}))
"""


def test_the_bomb_archive_is_what_it_claims(tmp_path):
    """The fixture itself: a few MiB on disk whose directory declares BOMB_BYTES, readable by zipfile."""
    p = bomb_archive(tmp_path / "bomb.pt", 64 * MIB)          # small enough to unpack here
    assert p.stat().st_size < MIB
    with zipfile.ZipFile(p) as zf:
        info = next(i for i in zf.infolist() if i.filename.endswith("/data/0"))
        assert info.compress_type == zipfile.ZIP_DEFLATED and info.file_size == 64 * MIB
        assert zf.read(info) == bytes(64 * MIB)                 # CRC checked by zipfile


@pytest.mark.subprocess
def test_a_deflate_bomb_weights_file_is_refused_before_torch_allocates_it(tmp_path):
    bomb = bomb_archive(tmp_path / "bomb.pt")
    assert bomb.stat().st_size < 8 * MIB
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    res = subprocess.run([sys.executable, "-c", CHILD, str(bomb)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["rss"] < MAX_CHILD_RSS_BYTES, f"peak memory {report['rss'] / MIB:.0f} MiB while refusing"
    assert report["outcome"].startswith("UnsafeWeightsError: ") and "\n" not in report["outcome"]
    assert f"at most {MAX_WEIGHTS_EXPANSION}x" in report["outcome"] and "declares" in report["outcome"]


def test_real_state_dicts_still_load_in_both_torch_formats(tmp_path):
    state = {"a": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(4)}
    torch.save(state, tmp_path / "zip.pt")
    torch.save(state, tmp_path / "legacy.pt", _use_new_zipfile_serialization=False)
    for name in ("zip.pt", "legacy.pt"):
        loaded = load_state_dict(tmp_path / name)
        assert set(loaded) == {"a", "b"} and torch.equal(loaded["a"], state["a"])


def test_a_truncated_archive_is_refused_in_one_line(tmp_path):
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(4)}, buf)
    p = tmp_path / "cut.pt"
    p.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(UnsafeWeightsError) as exc:
        load_state_dict(p)
    assert "\n" not in str(exc.value)


def test_an_uploaded_bomb_is_refused_without_server_paths(tmp_path):
    from objrel.data import uploads as U
    from objrel.models.torchvision import check_weights_file

    data = bomb_archive(tmp_path / "bomb.pt").read_bytes()
    with pytest.raises(U.UploadError) as exc:
        U.add_weights(tmp_path / "up", "bomb", "resnet18", data, check_weights_file)
    assert "declares" in str(exc.value) and str(tmp_path) not in str(exc.value)
    assert [p.name for p in (tmp_path / "up").iterdir()] == []
