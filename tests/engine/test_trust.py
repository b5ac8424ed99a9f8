"""Hostile records: bad annotations, huge images, duplicate and unstorable ids, samples that kill the process.
Each ends as a skipped row (or a dropped annotation) with its reason, and the run goes on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.errors import BadSampleError
from objrel.store import Store

from tests.fixtures.colour_model import factory
from tests.fixtures.crashing_model import CRASH_PIXEL, CRASH_STATUS

ROOT = Path(__file__).resolve().parents[2]
W, H = 48, 40
CATS = [{"id": 1, "name": "red"}, {"id": 2, "name": "green"}, {"id": 3, "name": "blue"}]


def red_image(path: Path, pixel=None) -> None:
    img = np.zeros((H, W, 3), np.uint8)
    img[:] = (230, 10, 10)
    if pixel is not None:
        img[0, 0] = pixel
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path)


def ann(aid, image_id, cat, bbox, seg=None, crowd=0) -> dict:
    d = {"id": aid, "image_id": image_id, "category_id": cat, "bbox": bbox, "iscrowd": crowd}
    if seg is not None:
        d["segmentation"] = seg
    return d


def write_coco(root: Path, images, anns) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    p = root / "ann.json"
    p.write_text(json.dumps({"images": images, "annotations": anns, "categories": CATS}))
    return p


def run(store: Store, dataset: Path, **kw):
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(dataset), plan="colours3",
                    batch_size=4, lazy=False, **kw)  # lazy votes: see the verdict-width note in the report
    eng = Engine(store, cfg, model=factory())
    return eng, eng.execute()


BROKEN_CROWD = {"size": [H, W], "counts": "zz~~##"}   # characters outside COCO's RLE alphabet


def test_invalid_annotations_of_other_classes_are_dropped_and_of_the_tested_class_skip(tmp_path):
    root = tmp_path / "data"
    red_image(root / "a.png")
    red_image(root / "b.png")
    images = [{"id": 1, "file_name": "a.png", "width": W, "height": H},
              {"id": 2, "file_name": "b.png", "width": W, "height": H}]
    anns = [ann(1, 1, 1, [5, 5, 20, 20]),                                # the red object the model sees
            ann(2, 1, 99, [0, 0, 4, 4]),                                 # unknown category id
            ann(3, 1, 3, [100, 100, 5, 5]),                              # blue box outside the image
            ann(4, 1, 2, [0, 0, 10, 10], BROKEN_CROWD, crowd=1),         # green crowd with a broken RLE
            ann(5, 2, 1, [5, 5, 20, 20]),
            ann(6, 2, 1, [0, 0, 10, 10], BROKEN_CROWD, crowd=1)]         # broken crowd of the tested class
    store = Store(tmp_path / "s.db")
    _, report = run(store, write_coco(root, images, anns))
    rows = {r["sample_id"]: r for r in store.samples(1)}
    assert rows["1"]["status"] == "tested" and rows["1"]["correct"] is True
    assert sorted(d["code"] for d in rows["1"]["dropped"]) == ["bad-rle", "box-outside-image", "unknown-label"]
    assert {d.get("category") for d in rows["1"]["dropped"]} == {None, "blue", "green"}
    assert rows["2"]["status"] == "skipped" and rows["2"]["skip_code"] == "bad-rle"
    assert "tested class 'red'" in rows["2"]["skip_reason"] and "incomplete" in rows["2"]["skip_reason"]
    assert dict(report.skipped) == {"bad-rle": 1} and report.tested == 1


@pytest.mark.parametrize("coords", [[6e8, 6e8, 6e8 + 5, 6e8, 6e8, 6e8 + 5], [2e8, 1, 2e8 + 3, 1, 2e8, 4],
                                    [1, 1, float("nan"), 2, 3, 3], [1, 1, 5, 1, float("inf"), 4]],
                         ids=["6e8", "2e8", "nan", "inf"])
def test_far_or_non_finite_polygons_are_refused_before_pycocotools(coords, monkeypatch):
    from objrel.data import region

    def boom(*a, **k):
        raise AssertionError("pycocotools was called with a hostile polygon")

    monkeypatch.setattr(region.mask_utils, "frPyObjects", boom)
    with pytest.raises(BadSampleError) as exc:
        region.segmentation_mask([coords], W, H)
    assert exc.value.code == "bad-polygon"
    assert ("non-finite" in exc.value.reason) or ("expected |x| <=" in exc.value.reason)


def test_a_polygon_near_the_image_still_decodes():
    from objrel.data.region import segmentation_mask

    m = segmentation_mask([[-5, -5, W + 5, -5, W + 5, H + 5, -5, H + 5]], W, H)
    assert m.all()


def test_an_image_over_the_memory_budget_is_skipped_with_its_size_and_the_budget(tmp_path):
    from objrel.data.images import load_rgb
    from objrel.models import threads as T

    root = tmp_path / "data"
    root.mkdir()
    big = np.zeros((900, 1000, 3), np.uint8)
    big[:] = (230, 10, 10)
    Image.fromarray(big).save(root / "big.png")
    red_image(root / "small.png")
    with pytest.raises(BadSampleError) as exc:
        load_rgb(root / "big.png", max_bytes=1_000_000)
    assert exc.value.code == "image-too-large" and "1000x900" in exc.value.reason
    assert "2700000 bytes" in exc.value.reason and "budget of 1000000 bytes" in exc.value.reason
    images = [{"id": 1, "file_name": "big.png", "width": 1000, "height": 900},
              {"id": 2, "file_name": "small.png", "width": W, "height": H}]
    anns = [ann(1, 1, 1, [5, 5, 20, 20]), ann(2, 2, 1, [5, 5, 20, 20])]
    store = Store(tmp_path / "s.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(write_coco(root, images, anns)),
                    plan="colours3", batch_size=2)
    eng = Engine(store, cfg, model=factory())
    # 1 MB per image for a chunk of 2 (5 byte copies each) and the float32 copy made in each thread of
    # per-image work (5 byte copies' worth each)
    threads = T.PREPROCESS_THREADS
    eng.memory_budget = (2 * 5 + threads * 5) * 1_000_000
    report = eng.execute()
    rows = {r["sample_id"]: r for r in store.samples(1)}
    assert rows["1"]["skip_code"] == "image-too-large" and "memory budget" in rows["1"]["skip_reason"]
    assert rows["2"]["status"] == "tested" and report.skipped == {"image-too-large": 1}


def test_duplicate_image_ids_become_skipped_rows_naming_the_first(tmp_path):
    root = tmp_path / "data"
    red_image(root / "a.png")
    red_image(root / "b.png")
    images = [{"id": 1, "file_name": "a.png", "width": W, "height": H},
              {"id": 1, "file_name": "b.png", "width": W, "height": H}]
    store = Store(tmp_path / "s.db")
    eng, report = run(store, write_coco(root, images, [ann(1, 1, 1, [5, 5, 20, 20])]))
    rows = store.samples(1)
    assert len(eng.samples) == 2 and len(rows) == 2
    dup = [r for r in rows if r["status"] == "skipped"]
    assert len(dup) == 1 and dup[0]["skip_code"] == "duplicate-id" and "'a.png'" in dup[0]["skip_reason"]
    run_row = store.get_run(1)
    assert (run_row.n_done, run_row.n_skipped) == (2, sum(report.skipped.values())) == (2, 1)


def hostile_id_set(root: Path) -> Path:
    long_id = "L" * 400
    red_image(root / "ok.png")
    images = [{"id": long_id, "file_name": "ok.png", "width": W, "height": H},
              {"id": "nul\x00id", "file_name": "ok.png", "width": W, "height": H},
              {"id": "nulfile", "file_name": "o\x00k.png", "width": W, "height": H}]
    anns = [ann(1, long_id, 1, [5, 5, 20, 20]), ann(2, "nul\x00id", 1, [5, 5, 20, 20]),
            ann(3, "nulfile", 1, [5, 5, 20, 20])]
    return write_coco(root, images, anns)


def check_hostile_ids(store: Store, dataset: Path) -> None:
    eng, report = run(store, dataset)
    rows = {r["sample_id"]: r for r in store.samples(1)}
    assert len(rows) == 3 and all(len(k) <= 300 and "\x00" not in k for k in rows)
    long_row = next(r for k, r in rows.items() if k.startswith("LLLL"))
    assert long_row["status"] == "tested" and "400 characters" in long_row["notes"][0]
    nul_row = next(r for k, r in rows.items() if k.startswith("nul\\x00id"))
    assert nul_row["status"] == "tested"
    file_row = rows["nulfile"]
    assert file_row["status"] == "skipped" and file_row["rel_path"] == "o\\x00k.png" and file_row["notes"]
    again = eng.execute(run_id=1)                         # resume finds every id stored
    assert again.processed == 0 and again.status == "finished" and len(store.samples(1)) == 3


def test_long_and_nul_ids_are_stored_and_resumed_on_sqlite(tmp_path):
    check_hostile_ids(Store(tmp_path / "s.db"), hostile_id_set(tmp_path / "data"))


def test_long_and_nul_ids_are_stored_and_resumed_on_postgresql(tmp_path, pg_url):
    store = Store(pg_url)
    try:
        check_hostile_ids(store, hostile_id_set(tmp_path / "data"))
    finally:
        store.dispose()


CRASH_SCRIPT = """
import importlib, sys
from objrel.config import RunConfig
from objrel.store import Store
from tests.fixtures.crashing_model import factory
module, _, name = sys.argv[3].partition(":")
engine_class = getattr(importlib.import_module(module), name)
store = Store(sys.argv[1])
cfg = RunConfig(model="py:tests.fixtures.crashing_model:factory", dataset=sys.argv[2], plan="colours3", batch_size=4)
eng = engine_class(store, cfg, model=factory())
eng.execute(run_id=int(sys.argv[4]) if len(sys.argv) > 4 else None)
"""


def crash_dataset(root: Path, n: int, killer: int) -> Path:
    """COCO file of ``n`` red images (ids 1..n) where image ``killer`` kills the crashing model's process."""
    images, anns = [], []
    for i in range(1, n + 1):
        red_image(root / f"{i}.png", pixel=CRASH_PIXEL if i == killer else None)
        images.append({"id": i, "file_name": f"{i}.png", "width": W, "height": H})
        anns.append(ann(i, i, 1, [5, 5, 20, 20]))
    return write_coco(root, images, anns)


def crashing_run(db: Path, dataset: Path, *resume: str, engine: str = "objrel.engine.classify:Engine"):
    """Start (or, with a run id, resume) a colours3 run of the crashing model in its own process, batch 4,
    with the worker class ``engine`` (``module:Class``); returns the finished process."""
    return subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(db), str(dataset), engine, *resume], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.subprocess
def test_a_sample_that_kills_the_process_twice_is_skipped_on_the_next_resume(tmp_path):
    dataset = crash_dataset(tmp_path / "data", 5, killer=3)
    db = tmp_path / "s.db"

    def go(*extra):
        return crashing_run(db, dataset, *extra)

    assert go().returncode == CRASH_STATUS                 # the chunk 1..4 dies on sample 3
    assert Store(db).attempts(1) == {str(i): 0 for i in range(1, 5)}   # all suspect, none crashed alone
    assert go("1").returncode == CRASH_STATUS              # one at a time: 1 and 2 commit, 3 dies alone
    store = Store(db)
    assert store.attempts(1) == {"3": 1, "4": 0}
    assert go("1").returncode == CRASH_STATUS              # 3 alone again: its second death alone
    assert store.attempts(1) == {"3": 2, "4": 0}
    last = go("1")
    assert last.returncode == 0, last.stderr
    rows = {r["sample_id"]: r for r in store.samples(1)}
    assert sorted(rows) == ["1", "2", "3", "4", "5"]
    assert rows["3"]["status"] == "skipped" and rows["3"]["skip_code"] == "crashed-twice"
    assert all(rows[k]["status"] == "tested" for k in "1245")
    assert store.attempts(1) == {} and store.get_run(1).status == "finished"
