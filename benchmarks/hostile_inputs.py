"""Builders of hostile inputs for benchmarks/hostile.py: images, annotation files, zips, weights files.

Everything is made from nothing on disk (no download) and stays small on disk, however large it claims to be:
the big images are 1-bit PNGs of zeros (a 100-megapixel one is about 12 KB), the weights bomb is a DEFLATE
stream of zeros built by repeating one fully flushed block.  Only numpy, Pillow and the standard library here;
nothing of objrel, so a builder can never be "fixed" by the code it tests.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import stat
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
from PIL import Image

MIB = 2**20
GIB = 2**30
# Side of the good sample images, in pixels (the colour model reads every pixel: small keeps it fast).
GOOD_SIDE = 64
# The good samples' classes: the colour-model fixture's class names (tests/fixtures/colour_model.py).
CATEGORIES = [{"id": 1, "name": "red"}, {"id": 2, "name": "green"}, {"id": 3, "name": "blue"}]
COLOURS = {"red": (230, 20, 20), "green": (20, 230, 20), "blue": (20, 20, 230)}
# The box of the object in every good and most hostile images: xywh.
OBJECT_XYWH = [16, 16, 32, 32]


# ---------------------------------------------------------------- images

def good_png(path: Path, colour: str = "red", side: int = GOOD_SIDE) -> Path:
    """A ``side`` x ``side`` dark PNG with a ``colour`` square at ``OBJECT_XYWH``."""
    a = np.full((side, side, 3), 40, np.uint8)
    x, y, w, h = OBJECT_XYWH
    a[y:y + h, x:x + w] = COLOURS[colour]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(a).save(path)
    return path


def png_bytes(colour: str = "red", side: int = GOOD_SIDE) -> bytes:
    buf = io.BytesIO()
    a = np.full((side, side, 3), 40, np.uint8)
    x, y, w, h = OBJECT_XYWH
    a[y:y + h, x:x + w] = COLOURS[colour]
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def blank_png_bytes(width: int, height: int) -> bytes:
    """A complete, valid 1-bit grayscale PNG of ``width`` x ``height`` black pixels, compressed as it is
    streamed (a 100-megapixel one takes about 12 KB and a second)."""
    row = b"\x00" * (1 + (width + 7) // 8)       # filter byte + packed bits
    comp = zlib.compressobj(9)
    rows_per_chunk = max(1, (8 * MIB) // len(row))
    parts, left = [], height
    block = row * rows_per_chunk
    while left > 0:
        n = min(left, rows_per_chunk)
        parts.append(comp.compress(block if n == rows_per_chunk else row * n))
        left -= n
    parts.append(comp.flush())
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", b"".join(parts)) + _chunk(b"IEND", b"")


def save_variant(path: Path, variant: str) -> Path:
    """A ``GOOD_SIDE`` image with a red object in an awkward but legal encoding."""
    a = np.full((GOOD_SIDE, GOOD_SIDE, 3), 40, np.uint8)
    x, y, w, h = OBJECT_XYWH
    a[y:y + h, x:x + w] = COLOURS["red"]
    im = Image.fromarray(a)
    if variant == "16bit":
        Image.fromarray((a[:, :, 0].astype(np.uint16) * 257)).save(path)          # mode I;16
    elif variant == "palette":
        p = im.convert("P", palette=Image.Palette.ADAPTIVE, colors=4)
        p.info["transparency"] = 0
        p.save(path, transparency=0)
    elif variant == "cmyk":
        im.convert("CMYK").save(path, format="JPEG", quality=95)
    elif variant == "rgba":
        rgba = np.dstack([a, np.full(a.shape[:2], 128, np.uint8)])
        Image.fromarray(rgba, "RGBA").save(path)
    elif variant == "exif-huge":
        exif = Image.Exif()
        exif[0x0112] = 65535                                   # orientation: not one of 1..8
        exif[0x010E] = "A" * 60_000                            # ImageDescription: most of an APP1 segment
        im.save(path, format="JPEG", exif=exif.tobytes())
    elif variant == "exif-rotated":
        exif = Image.Exif()
        exif[0x0112] = 6                                       # rotate 90 degrees
        im.save(path, format="JPEG", exif=exif.tobytes())
    else:
        raise ValueError(f"unknown variant {variant!r}")
    return path


def truncated_png(path: Path) -> Path:
    data = png_bytes(side=256)
    path.write_bytes(data[: len(data) // 2])
    return path


def corrupt_jpeg(path: Path) -> Path:
    buf = io.BytesIO()
    Image.fromarray(np.zeros((64, 64, 3), np.uint8)).save(buf, format="JPEG")
    data = bytearray(buf.getvalue())
    rng = np.random.default_rng(7)
    data[200:] = rng.integers(0, 256, len(data) - 200, dtype=np.uint8).tobytes()   # keep SOI and headers
    path.write_bytes(bytes(data))
    return path


def zip_as_image(path: Path) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", "not an image")
    path.write_bytes(buf.getvalue())
    return path


HTML_PAGE = b"<!DOCTYPE html><html><body><script>alert(1)</script><img src=x onerror=alert(2)></body></html>"


# ---------------------------------------------------------------- annotation files

def coco(images: list[dict], annotations: list[dict], categories=None) -> dict:
    return {"images": images, "annotations": annotations, "categories": categories or CATEGORIES}


def coco_image(iid, file_name: str, width=GOOD_SIDE, height=GOOD_SIDE) -> dict:
    return {"id": iid, "file_name": file_name, "width": width, "height": height}


def coco_ann(aid: int, iid, category_id: int = 1, bbox=None, segmentation=None) -> dict:
    a = {"id": aid, "image_id": iid, "category_id": category_id, "bbox": bbox or list(OBJECT_XYWH),
         "iscrowd": 0}
    if segmentation is not None:
        a["segmentation"] = segmentation
    return a


def nested_json(depth: int, leaf: str = "0") -> str:
    """``[[[ ... ]]]`` nested ``depth`` deep: 2 bytes per level (200,000 levels make 400 KB)."""
    return "[" * depth + leaf + "]" * depth


def write_json(path: Path, data) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def compressed_rle_zero_runs(n_chars: int, height: int, width: int) -> str:
    """A valid compressed COCO RLE of ``n_chars`` characters: ``n_chars - 3`` empty runs (the character
    '0'), then runs that draw a band of ``width`` pixels in the middle of the image (column-major order)."""
    def enc(counts: list[int]) -> str:
        # pycocotools' rleToString: counts after the second are stored as differences to two back.
        out = []
        for i, c in enumerate(counts):
            x = c - counts[i - 2] if i > 2 else c
            more = True
            while more:
                ch = x & 0x1F
                x >>= 5
                more = (ch & 0x10 and x != -1) or (not ch & 0x10 and x != 0)
                if more:
                    ch |= 0x20
                out.append(chr(ch + 48))
        return "".join(out)

    total = height * width
    head = [0] * (n_chars - 16 - (n_chars % 2))     # an even number of empty runs: the parity is kept
    band = width * (height // 4)
    tail = [total // 2 - band // 2, band, total - (total // 2 - band // 2) - band]
    # empty runs after the second are deltas of 0 to the run two back: each is the one character '0'.
    text = enc(head + tail)
    return text


# ---------------------------------------------------------------- zips

def zip_bytes(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data, compress_type=compression)
    return buf.getvalue()


def zip_with_symlink(link_name: str, target: str, others: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in others.items():
            z.writestr(name, data)
        info = zipfile.ZipInfo(link_name, date_time=(2020, 1, 1, 0, 0, 0))
        info.create_system = 3
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, target)
    return buf.getvalue()


def zeros_deflate(total: int, block: int = 64 * MIB) -> tuple[bytes, int]:
    """A raw DEFLATE stream that expands to ``total`` zero bytes (``total`` a multiple of ``block``), and
    the CRC-32 of those bytes.  One block is compressed and fully flushed (the dictionary is reset, so
    every block compresses to the same bytes), then repeated: a 4 GiB stream costs one 64 MiB compression."""
    assert total % block == 0
    zeros = bytes(block)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    one = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()    # an empty final block
    crc, n = 0, total // block
    for _ in range(n):
        crc = zlib.crc32(zeros, crc)
    return one * n + end, crc & 0xFFFFFFFF


def zip_with_raw_member(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A zip written by hand: ``(name, raw DEFLATE data, declared uncompressed size, crc, method)`` per
    member, zip64 extra fields where a size exceeds 32 bits.  Lets a member declare what it likes."""
    out = io.BytesIO()
    central = []
    for name, data, size, crc, method in members:
        offset = out.tell()
        fname = name.encode()
        big = size >= 0xFFFFFFFF or len(data) >= 0xFFFFFFFF
        extra = struct.pack("<HHQQ", 1, 16, size, len(data)) if big else b""
        csize32, usize32 = (0xFFFFFFFF, 0xFFFFFFFF) if big else (len(data), size)
        out.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 45 if big else 20, 0, method, 0, 0x21, crc, csize32,
                              usize32, len(fname), len(extra)) + fname + extra)
        out.write(data)
        cextra = struct.pack("<HHQQQ", 1, 24, size, len(data), offset) if big else b""
        central.append(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45 if big else 20, 45 if big else 20, 0,
                                   method, 0, 0x21, crc, csize32, usize32, len(fname), len(cextra), 0, 0, 0,
                                   0o644 << 16, 0xFFFFFFFF if big else offset) + fname + cextra)
    cd_offset = out.tell()
    cd = b"".join(central)
    out.write(cd)
    n = len(members)
    # zip64 end records, then the classic one (the zip64 ones are harmless for small archives).
    z64_at = out.tell()
    out.write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(cd), cd_offset))
    out.write(struct.pack("<IIQI", 0x07064B50, 0, z64_at, 1))
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, n, n, len(cd), min(cd_offset, 0xFFFFFFFF), 0))
    return out.getvalue()


# ---------------------------------------------------------------- pickles and weights

class ShellOnLoad:
    """Unpickles by calling ``os.system(command)``: what a malicious weights file does."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def evil_pickle(command: str) -> bytes:
    return pickle.dumps({"fc.weight": ShellOnLoad(command)}, protocol=2)


def patch_torch_zip(template: bytes, *, pickle_bytes: bytes | None = None, numel_from: int | None = None,
                    numel_to: int | None = None, storage: tuple[bytes, int, int] | None = None) -> bytes:
    """Rewrite a ``torch.save`` zip: replace its ``data.pkl`` (or patch the BININT1 ``numel_from`` in it to a
    4-byte ``numel_to``), and/or give its ``data/0`` storage as (raw DEFLATE bytes, declared size, crc)."""
    src = zipfile.ZipFile(io.BytesIO(template))
    members = []
    for info in src.infolist():
        data = src.read(info)
        if info.filename.endswith("/data.pkl"):
            if pickle_bytes is not None:
                data = pickle_bytes
            if numel_from is not None:
                data = data.replace(b"K" + bytes([numel_from]), b"J" + struct.pack("<i", numel_to))
        if info.filename.endswith("/data/0") and storage is not None:
            raw, size, crc = storage
            members.append((info.filename, raw, size, crc, zipfile.ZIP_DEFLATED))
            continue
        c = zlib.compressobj(6, zlib.DEFLATED, -15)
        members.append((info.filename, c.compress(data) + c.flush(), len(data), zlib.crc32(data) & 0xFFFFFFFF,
                        zipfile.ZIP_DEFLATED))
    return zip_with_raw_member(members)


# ---------------------------------------------------------------- XML

def voc_xml(filename: str, name: str = "red", box=(17, 17, 48, 48), width=GOOD_SIDE, height=GOOD_SIDE,
            doctype: str = "") -> str:
    x1, y1, x2, y2 = box
    return (f"<?xml version='1.0'?>{doctype}<annotation><filename>{filename}</filename><size><width>{width}</width>"
            f"<height>{height}</height><depth>3</depth></size><object><name>{name}</name><bndbox><xmin>{x1}</xmin>"
            f"<ymin>{y1}</ymin><xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object></annotation>")


BILLION_LAUGHS = ("<!DOCTYPE lolz [<!ENTITY lol \"lol\">"
                  + "".join(f"<!ENTITY lol{i} \"{('&lol' + (str(i - 1) if i > 1 else '') + ';') * 10}\">"
                            for i in range(1, 10))
                  + "]>")
XXE = "<!DOCTYPE annotation [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>"


def sqlite_foreign(path: Path) -> Path:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, card TEXT)")
    con.executemany("INSERT INTO customers (name, card) VALUES (?, ?)", [("ann", "4111"), ("bob", "5500")])
    con.commit()
    con.close()
    return path
