"""Hostile inputs meet bounded parsing: every check is linear in the input and ends in one line.

Compressed RLE strings, deeply nested JSON and XML, and the paths a skip reason names.  Each hostile file is
built in ``tmp_path`` by the test itself.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from pycocotools import mask as mask_utils

from objrel.data.region import segmentation_mask
from objrel.constants import MAX_IMAGE_PIXELS, MAX_NESTING_DEPTH
from objrel.errors import AnnotationError, BadSampleError, InputFileError

# Characters of the hostile RLE strings: enough that a decoder whose numbers grow with the string (one run
# that never ends) would take minutes.
HOSTILE_RLE_CHARS = 1_250_000


# =====================================================================================
# F10: compressed RLE
# =====================================================================================


@pytest.mark.parametrize("counts,refused_by", [
    ("Q" * HOSTILE_RLE_CHARS + "0", "run 0 spans 1250001 characters; at most"),   # one run that never ends
    ("o" * HOSTILE_RLE_CHARS, "ends in the middle of a run length"),           # a string that ends inside a run
    ("1" * HOSTILE_RLE_CHARS, "counts sum to"),         # a million short runs that cover far more than the image
    (("1" + "Q" * 11 + "0") * (HOSTILE_RLE_CHARS // 13), "has the value"),   # legal-length runs of absurd values
], ids=["endless-run", "unterminated", "many-runs", "huge-values"])
def test_a_hostile_compressed_rle_string_is_refused_by_its_bounds_before_pycocotools(counts, refused_by,
                                                                                      monkeypatch):
    """Each string is refused by one of the checks that keep the decoding linear (a run spans at most a few
    characters, no value exceeds H*W, the runs cover H*W) and pycocotools never sees it."""
    from objrel.data import region

    def boom(*a, **k):
        raise AssertionError("pycocotools was given a hostile RLE string")

    for name in ("frPyObjects", "decode"):
        monkeypatch.setattr(region.mask_utils, name, boom)
    with pytest.raises(BadSampleError) as exc:
        segmentation_mask({"size": [1000, 1000], "counts": counts}, 1000, 1000)
    assert exc.value.code == "bad-rle" and refused_by in exc.value.reason
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 300


def _runs(mask: np.ndarray) -> list[int]:
    """Run lengths of ``mask`` in column-major order, starting with background (COCO's convention)."""
    flat = mask.flatten(order="F").astype(np.int8)
    edges = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate(([0], edges, [flat.size]))
    runs = np.diff(bounds).tolist()
    return ([0] + runs) if flat[0] else runs


def test_valid_compressed_rles_still_decode_equal_to_pycocotools():
    from objrel.data.region import _compressed_counts

    rng = np.random.default_rng(7)
    masks = []
    for n in range(120):
        h, w = (int(v) for v in rng.integers(1, 90, 2))
        if n % 3 == 0:
            m = np.zeros((h, w), np.uint8)
            m[h // 4: h // 2 + 1, w // 3:] = 1
        else:
            m = (rng.random((h, w)) < rng.random()).astype(np.uint8)
        masks.append(m)
    big = np.zeros((3000, 2000), np.uint8)     # long runs need several characters each
    big[5:2990, 7:1999] = 1
    masks += [big, np.ones((40, 30), np.uint8)]
    for m in masks:
        h, w = m.shape
        rle = mask_utils.encode(np.asfortranarray(m))
        assert _compressed_counts(rle["counts"], h * w).tolist() == _runs(m)
        seg = {"size": [h, w], "counts": rle["counts"].decode("ascii")}
        np.testing.assert_array_equal(segmentation_mask(seg, w, h), mask_utils.decode(rle).astype(bool))


# =====================================================================================
# F18 / F17: nesting depth and size limits of every JSON and XML file objrel reads
# =====================================================================================

ROOT = Path(__file__).resolve().parents[2]
# Levels of the hostile nesting: 200,000 open + 200,000 close brackets make a 400 KB file.
HOSTILE_LEVELS = 200_000
DEEP = "[" * HOSTILE_LEVELS + "]" * HOSTILE_LEVELS


def red_png(path: Path, w: int = 48, h: int = 40) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    img = np.zeros((h, w, 3), np.uint8)
    img[:] = (230, 10, 10)
    Image.fromarray(img).save(path)
    return path


def deep_coco(folder: Path) -> Path:
    """A COCO file whose one annotation's segmentation is nested HOSTILE_LEVELS deep."""
    red_png(folder / "a.png")
    head = json.dumps({"images": [{"id": 1, "file_name": "a.png", "width": 48, "height": 40}],
                       "categories": [{"id": 1, "name": "red"}]})[:-1]
    text = head + ', "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 9, 9], ' \
                  '"segmentation": ' + DEEP + "}]}"
    p = folder / "deep_coco.json"
    p.write_text(text)
    return p


def deep_manifest(folder: Path) -> Path:
    red_png(folder / "a.png")
    p = folder / "deep_manifest.json"
    p.write_text('{"images": [{"path": "a.png", "objects": [{"label": "red", "box": [1, 1, 9, 9], "extra": '
                 + DEEP + "}]}]}")
    return p


def objrel_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "objrel", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def assert_one_line_refusal(res: subprocess.CompletedProcess, *fragments: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert "Traceback" not in res.stderr and "RecursionError" not in res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("objrel: error: "), res.stderr[-2000:]
    for f in fragments:
        assert f in lines[0]


@pytest.mark.subprocess
@pytest.mark.parametrize("make", [deep_coco, deep_manifest], ids=["coco", "manifest"])
def test_objrel_run_refuses_a_deeply_nested_annotation_file_in_one_line(make, tmp_path):
    ann = make(tmp_path / "data")
    assert ann.stat().st_size >= 400_000
    res = objrel_cli("run", "--model", "py:tests.fixtures.colour_model:factory", "--dataset", str(ann),
                     "--store", str(tmp_path / "s.db"), "--quiet", cwd=tmp_path)
    assert_one_line_refusal(res, ann.name, f"more than {MAX_NESTING_DEPTH} levels deep")


@pytest.mark.parametrize("make,loader", [(deep_coco, "coco"), (deep_manifest, "manifest"), (deep_coco, "auto")])
def test_the_loaders_refuse_deep_json_with_one_annotation_error(make, loader, tmp_path):
    from objrel.data import load_coco, load_dataset, load_manifest

    ann = make(tmp_path)
    call = {"coco": lambda: load_coco(ann, tmp_path), "manifest": lambda: load_manifest(ann),
            "auto": lambda: load_dataset(str(ann))}[loader]
    with pytest.raises(AnnotationError) as exc:
        call()
    assert f"more than {MAX_NESTING_DEPTH} levels deep" in str(exc.value) and "\n" not in str(exc.value)


def test_nesting_at_the_limit_is_read_and_one_level_more_is_refused(tmp_path):
    from objrel.data.bounded import parse_json

    ok = "[" * MAX_NESTING_DEPTH + "]" * MAX_NESTING_DEPTH
    assert parse_json(ok.encode(), "x", 10_000) is not None
    # Brackets inside strings (escaped quotes included) do not count.
    assert parse_json(json.dumps({"a": "[[[[\\\"{{{{" * 100, "b": [[1]]}).encode(), "x", 10_000)["b"] == [[1]]
    with pytest.raises(InputFileError, match="levels deep"):
        parse_json(("[" + ok + "]").encode(), "x", 10_000)


def test_an_annotation_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    from objrel.data import coco, load_coco

    ann = deep_coco(tmp_path)
    monkeypatch.setattr(coco, "MAX_ANNOTATION_FILE_BYTES", 1000)
    with pytest.raises(AnnotationError, match=r"at most 1000 bytes is read"):
        load_coco(ann, tmp_path)


def voc_file(folder: Path, body: str, name: str = "a") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    red_png(folder / f"{name}.png")
    p = folder / f"{name}.xml"
    p.write_text(body)
    return p


def test_a_deep_or_entity_laden_voc_file_is_a_skipped_sample_and_the_others_load(tmp_path):
    from objrel.data import load_voc

    good = ("<annotation><filename>ok.png</filename><size><width>48</width><height>40</height></size>"
            "<object><name>red</name><bndbox><xmin>2</xmin><ymin>2</ymin><xmax>20</xmax><ymax>20</ymax></bndbox>"
            "</object></annotation>")
    voc_file(tmp_path, good, "ok")
    voc_file(tmp_path, "<annotation><filename>deep.png</filename>" + "<a>" * HOSTILE_LEVELS + "</a>"
             * HOSTILE_LEVELS + "</annotation>", "deep")
    laughs = ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;">]>'
              "<annotation><filename>&lol2;.png</filename></annotation>")
    voc_file(tmp_path, laughs, "laughs")
    ds = load_voc(tmp_path, tmp_path)
    s = {x.sample_id: x for x in ds.samples}
    assert s["ok"].problem is None and len(s["ok"].objects) == 1
    assert s["deep"].problem[0] == "bad-annotation"
    assert f"more than {MAX_NESTING_DEPTH} levels deep" in s["deep"].problem[1]
    assert s["laughs"].problem[0] == "bad-annotation" and "entities" in s["laughs"].problem[1]


@pytest.mark.subprocess
def test_objrel_run_on_a_deep_voc_folder_skips_that_file_and_tests_the_rest(tmp_path):
    good = ("<annotation><filename>ok.png</filename><size><width>48</width><height>40</height></size>"
            "<object><name>red</name><bndbox><xmin>2</xmin><ymin>2</ymin><xmax>20</xmax><ymax>20</ymax></bndbox>"
            "</object></annotation>")
    data = tmp_path / "voc"
    voc_file(data, good, "ok")
    voc_file(data, "<annotation>" + "<a>" * HOSTILE_LEVELS + "</a>" * HOSTILE_LEVELS + "</annotation>", "deep")
    res = objrel_cli("run", "--model", "py:tests.fixtures.colour_model:factory", "--dataset", str(data),
                     "--store", str(tmp_path / "s.db"), "--quiet", cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    from objrel.store import Store

    rows = {r["sample_id"]: r for r in Store(tmp_path / "s.db").samples(1)}
    assert rows["ok"]["status"] == "tested"
    assert rows["deep"]["status"] == "skipped" and "levels deep" in rows["deep"]["skip_reason"]


def deep_results(tmp_path: Path) -> Path:
    p = tmp_path / "results.json"
    p.write_text('{"napvd": ' + DEEP + "}")
    return p


def test_the_inspect_result_loader_refuses_deep_json_with_one_value_error(tmp_path):
    from objrel.studies.deepinspect import InspectResult

    p = deep_results(tmp_path)
    for source in (p.read_bytes(), str(p), p.read_text()):     # an upload, a path, the text itself
        with pytest.raises(ValueError) as exc:
            InspectResult.load(source)
        assert "levels deep" in str(exc.value) and "\n" not in str(exc.value)
        assert not isinstance(exc.value, RecursionError)
    with pytest.raises(ValueError, match="not an inspect result"):
        InspectResult.load(b'{"format_version": 1}')


def test_the_shortcut_results_loader_refuses_deep_json_with_one_value_error(tmp_path):
    from objrel.studies.shortcut.results import load_results

    with pytest.raises(ValueError) as exc:
        load_results(deep_results(tmp_path))
    assert "levels deep" in str(exc.value) and "\n" not in str(exc.value)


def test_an_uploaded_deep_annotation_file_is_refused_in_one_line(tmp_path):
    from objrel.data import uploads as U

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        png = io.BytesIO()
        Image.new("RGB", (8, 8), (200, 0, 0)).save(png, format="PNG")
        zf.writestr("a.png", png.getvalue())
    with pytest.raises(U.UploadError) as exc:
        U.add_dataset(tmp_path / "up", "deep", deep_manifest(tmp_path).read_bytes(), buf.getvalue())
    assert "levels deep" in str(exc.value) and "\n" not in str(exc.value)


# =====================================================================================
# F7: image bombs in a dataset upload, against the one pixel limit runs use too
# =====================================================================================


def flat_png(width: int, height: int) -> bytes:
    """A 1-bit grayscale PNG of ``width`` x ``height`` black pixels, written by hand: a few KB on disk."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = (b"\x00" + bytes((width + 7) // 8)) * height
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def upload_zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def manifest_bytes(*paths: str) -> bytes:
    return json.dumps([{"path": p, "objects": [{"label": "red", "box": [0, 0, 4, 4]}]} for p in paths]).encode()


def test_a_small_zip_of_hundred_megapixel_pngs_is_refused_from_the_headers(tmp_path, monkeypatch):
    from PIL import ImageFile

    from objrel.data import uploads as U

    def decode(*a, **k):
        raise AssertionError("an image was decoded before its size was checked")

    monkeypatch.setattr(ImageFile.ImageFile, "load", decode)

    png = flat_png(10_000, 10_000)
    names = [f"bomb{i}.png" for i in range(10)]
    z = upload_zip({n: png for n in names})
    assert len(z) < 64_000
    with pytest.raises(U.UploadError) as exc:
        U.add_dataset(tmp_path / "up", "bombs", manifest_bytes(*names), z)
    assert "10000x10000" in str(exc.value) and f"at most {MAX_IMAGE_PIXELS} pixels" in str(exc.value)
    assert "\n" not in str(exc.value) and str(tmp_path) not in str(exc.value)
    assert not (tmp_path / "up" / "bombs").exists()


def test_uploads_and_runs_refuse_images_at_the_same_pixel_limit(tmp_path):
    """90.25 Mpx lies between the two limits there used to be: uploads took it, every run then skipped it."""
    from objrel.data import load_rgb
    from objrel.data import uploads as U

    side = 9_500
    assert side * side > MAX_IMAGE_PIXELS
    png = flat_png(side, side)
    with pytest.raises(U.UploadError, match=f"at most {MAX_IMAGE_PIXELS} pixels"):
        U.add_dataset(tmp_path / "up", "big", manifest_bytes("big.png"), upload_zip({"big.png": png}))
    (tmp_path / "big.png").write_bytes(png)
    with pytest.raises(BadSampleError, match=f"limit of {MAX_IMAGE_PIXELS} pixels"):
        load_rgb(tmp_path / "big.png")
    assert U.MAX_IMAGE_PIXELS is MAX_IMAGE_PIXELS


# =====================================================================================
# Skip reasons name files relative to the dataset root, never the server's folders
# =====================================================================================


def test_skip_reasons_name_files_relative_to_the_dataset_root(tmp_path):
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine
    from objrel.store import Store

    from tests.fixtures.colour_model import factory

    root = tmp_path / "server" / "datasets" / "mine"
    red_png(root / "sub" / "ok.png")
    (root / "sub" / "corrupt.png").write_bytes(b"\x89PNG not really an image" * 10)
    (tmp_path / "outside.png").write_bytes(b"secret")
    (root / "sub" / "link.png").symlink_to(tmp_path / "outside.png")
    names = ["sub/ok.png", "sub/missing.png", "sub/corrupt.png", "sub/link.png", "../../outside.png"]
    images = [{"id": n, "file_name": name, "width": 48, "height": 40} for n, name in enumerate(names, start=1)]
    anns = [{"id": n, "image_id": n, "category_id": 1, "bbox": [2, 2, 20, 20], "iscrowd": 0}
            for n in range(1, len(names) + 1)]
    ann = root / "ann.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "red"}]}))
    store = Store(tmp_path / "s.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3", batch_size=2)
    report = Engine(store, cfg, model=factory()).execute()
    rows = {r["sample_id"]: r for r in store.samples(report.run_id)}
    assert rows["1"]["status"] == "tested"
    expected = {"2": ("missing-file", "sub/missing.png"), "3": ("corrupt-image", "sub/corrupt.png"),
                "4": ("path-escapes-root", "sub/link.png"), "5": ("path-escapes-root", "../../outside.png")}
    for sid, (code, name) in expected.items():
        row = rows[sid]
        assert row["status"] == "skipped" and row["skip_code"] == code, row
        assert row["skip_reason"].startswith(f"{name}: "), row["skip_reason"]
        assert str(tmp_path) not in row["skip_reason"] and "/server/" not in row["skip_reason"], row["skip_reason"]
    for message in report.skip_examples.values():
        assert str(tmp_path) not in message


def test_image_errors_raised_to_any_caller_name_no_folder(tmp_path):
    from objrel.data import load_rgb

    (tmp_path / "bad.png").write_bytes(b"GIF89a broken")
    for name, code in (("bad.png", "corrupt-image"), ("gone.png", "missing-file")):
        with pytest.raises(BadSampleError) as exc:
            load_rgb(tmp_path / name)
        assert exc.value.code == code and name in str(exc.value) and str(tmp_path) not in str(exc.value)
        exc.value.path = f"sub/{name}"                # what the engine does: the message follows
        assert str(exc.value).startswith(f"sub/{name}: ")
        again = pickle.loads(pickle.dumps(exc.value))   # (Ray ships errors between processes)
        assert (again.code, again.reason, str(again)) == (exc.value.code, exc.value.reason, str(exc.value))
