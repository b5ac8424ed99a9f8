"""Uploads whose zip nests the images in a folder: the images are found wherever they sit (COCO ``file_name``,
manifest ``path``, VOC ``<filename>``), a name that picks no single image refuses the upload before any run,
and the upload report counts the images that resolve.  Real zips of real PNG and JPEG files, made by PIL and
``zipfile`` in a temporary folder, as ``zip -r x.zip images`` makes them."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from objrel.config import RunConfig
from objrel.data import load_dataset, load_voc
from objrel.data import uploads as U
from objrel.errors import BadSampleError
from objrel.engine.classify import Engine
from objrel.store import Store
from tests.fixtures.colour_model import factory


def red_image(path: Path, fmt: str) -> None:
    """A red field with a green patch: the colour model says red (an image it can test)."""
    img = np.zeros((40, 48, 3), np.uint8)
    img[:] = (230, 10, 10)
    img[10:30, 12:32] = (20, 200, 20)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path, fmt)


def zip_folder(folder: Path, top: str, dest: Path) -> bytes:
    """``cd folder/..; zip -r dest top``: every file under ``folder/top`` stored with its ``top/...`` path."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted((folder / top).rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(folder).as_posix())
    return dest.read_bytes()


NAMES = ("a.png", "b.png", "c.jpg", "d.jpg", "e.png", "f.jpg")


@pytest.fixture
def nested_zip(tmp_path) -> bytes:
    """Six images under ``images/`` (two in ``images/more/``), PNG and JPEG, zipped with their folder."""
    src = tmp_path / "src"
    for i, name in enumerate(NAMES):
        sub = "images/more" if i >= 4 else "images"
        red_image(src / sub / name, "PNG" if name.endswith(".png") else "JPEG")
    return zip_folder(src, "images", tmp_path / "x.zip")


def coco(names) -> bytes:
    return json.dumps({
        "images": [{"id": i + 1, "file_name": n, "width": 48, "height": 40} for i, n in enumerate(names)],
        "annotations": [{"id": i + 1, "image_id": i + 1, "category_id": 1, "bbox": [12, 10, 20, 20]}
                        for i in range(len(names))],
        "categories": [{"id": 1, "name": "red"}],
    }).encode()


def manifest(paths) -> bytes:
    return json.dumps([{"path": p, "objects": [{"label": "red", "box": [12, 10, 32, 30]}]} for p in paths]).encode()


def test_a_coco_upload_finds_bare_names_in_a_nested_folder_and_a_run_tests_them(tmp_path, nested_zip):
    up = U.add_dataset(tmp_path / "up", "nested", coco(NAMES), nested_zip)
    assert (up.n_files, up.n_samples, up.n_unpacked) == (6, 6, 6)
    assert U.list_uploads(tmp_path / "up")[0].n_files == 6
    ds = load_dataset(up.annotation, up.images)
    # the stored names are where the images are: the review and the rebuild of mutants open them from there
    assert sorted(s.rel_path for s in ds.samples) == sorted(
        [f"images/{n}" for n in NAMES[:4]] + [f"images/more/{n}" for n in NAMES[4:]])
    store = Store(tmp_path / "s.db")
    try:
        cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(up.annotation),
                        images=str(up.images), plan="colours3")
        report = Engine(store, cfg, model=factory()).execute()
        run = store.get_run(report.run_id)
        assert (run.n_done, run.n_skipped) == (6, 0) and run.n_tested > 0, dict(report.skipped)
    finally:
        store.dispose()


def test_a_manifest_upload_finds_paths_whatever_folder_the_zip_adds(tmp_path, nested_zip):
    # names with a folder the zip does not have ("pics/"), and names with the zip's own top folder
    paths = ["pics/a.png", "images/b.png", "c.jpg", "more/e.png", "images/more/f.jpg"]
    up = U.add_dataset(tmp_path / "up", "man", manifest(paths), nested_zip)
    assert (up.n_files, up.n_samples, up.n_unpacked) == (5, 5, 6)     # d.jpg is named by no entry
    ds = load_dataset(up.annotation, up.images)
    assert all(Path(s.image_path).is_file() for s in ds.samples)
    assert {s.sample_id for s in ds.samples} == set(paths)            # ids stay the names as given


def test_names_that_resolve_to_no_image_refuse_the_upload_naming_them(tmp_path, nested_zip):
    names = [*NAMES, "missing1.png", "missing2.jpg", "gone/missing3.png"]
    with pytest.raises(U.UploadError) as err:
        U.add_dataset(tmp_path / "up", "bad", coco(names), nested_zip)
    msg = str(err.value)
    assert msg.startswith("3 of 9 image names in the coco annotation file do not resolve to one image of the zip")
    assert "'missing1.png'" in msg and "'gone/missing3.png'" in msg and "the zip holds 6 images" in msg
    assert "\n" not in msg and str(tmp_path) not in msg
    assert not (tmp_path / "up" / "bad").exists() and not list((tmp_path / "up").iterdir())


def test_many_unresolved_names_are_counted_and_a_few_named(tmp_path, nested_zip):
    names = [f"nope{i:02d}.png" for i in range(12)]
    with pytest.raises(U.UploadError, match=r"^12 of 12 image names .*'nope00.png', .*'nope04.png' and 7 more"):
        U.add_dataset(tmp_path / "up", "none", manifest(names), nested_zip)


def test_an_ambiguous_name_refuses_the_upload_naming_both_files(tmp_path):
    src = tmp_path / "src"
    red_image(src / "images" / "train" / "x.png", "PNG")
    red_image(src / "images" / "val" / "x.png", "PNG")
    red_image(src / "images" / "val" / "y.png", "PNG")
    z = zip_folder(src, "images", tmp_path / "x.zip")
    with pytest.raises(U.UploadError) as err:
        U.add_dataset(tmp_path / "up", "amb", coco(["x.png", "y.png"]), z)
    msg = str(err.value)
    assert msg.startswith("1 of 2 image names")
    assert "'x.png' (matches 2 files (images/train/x.png, images/val/x.png))" in msg
    assert not list((tmp_path / "up").iterdir())
    # a name with its folder picks one of them
    up = U.add_dataset(tmp_path / "up", "picked", coco(["train/x.png", "val/x.png", "y.png"]), z)
    assert (up.n_files, up.n_samples) == (3, 3)


def test_a_flat_zip_still_registers_as_before(tmp_path):
    src = tmp_path / "flat"
    for n in NAMES[:2]:
        red_image(src / "top" / n, "PNG")
    with zipfile.ZipFile(tmp_path / "f.zip", "w") as zf:
        for n in NAMES[:2]:
            zf.write(src / "top" / n, n)
    up = U.add_dataset(tmp_path / "up", "flat", coco(NAMES[:2]), (tmp_path / "f.zip").read_bytes())
    assert (up.n_files, up.n_samples) == (2, 2)
    assert sorted(s.rel_path for s in load_dataset(up.annotation, up.images).samples) == list(NAMES[:2])


def test_voc_filenames_are_found_in_a_nested_folder(tmp_path):
    root = tmp_path / "voc"
    red_image(root / "JPEGImages" / "2008" / "p1.jpg", "JPEG")
    red_image(root / "JPEGImages" / "2008" / "p2.jpg", "JPEG")
    xmls = tmp_path / "xml"
    xmls.mkdir()
    for stem, filename in (("p1", "p1.jpg"), ("p2", "p2")):    # ILSVRC style: the stem only
        (xmls / f"{stem}.xml").write_text(
            f"<annotation><filename>{filename}</filename><size><width>48</width><height>40</height></size>"
            "<object><name>red</name><bndbox><xmin>13</xmin><ymin>11</ymin><xmax>32</xmax><ymax>30</ymax>"
            "</bndbox></object></annotation>")
    ds = load_voc(xmls, root)
    assert [(s.rel_path, s.problem) for s in ds.samples] == [("JPEGImages/2008/p1.jpg", None),
                                                             ("JPEGImages/2008/p2.jpg", None)]
    assert all(Path(s.image_path).is_file() for s in ds.samples)


def test_the_finder_by_hand(tmp_path):
    from objrel.data.locate import ImageFinder

    for rel in ("a/x.png", "b/x.png", "b/c/y.png", "z.png"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"x")
    f = ImageFinder(tmp_path)
    assert f.locate("z.png") == ("z.png", (tmp_path / "z.png").resolve())        # there as given: no walk
    assert f.locate("y.png")[0] == "b/c/y.png"
    assert f.locate("q/c/y.png")[0] == "b/c/y.png"                               # the most trailing parts win
    assert f.locate("a\\x.png")[0] == "a/x.png"                                  # Windows separators
    assert f.locate("none.png")[0] == "none.png"                                 # nothing: left as given
    with pytest.raises(BadSampleError) as err:
        f.locate("x.png")
    assert err.value.code == "ambiguous-file"
    with pytest.raises(BadSampleError) as err:
        f.locate("../x.png")                                                     # never looked up outside
    assert err.value.code == "path-escapes-root"
