"""Shared fixtures: a tiny synthetic COCO set for the hand-written colour model.

Every pytest start imports this file, so it imports nothing heavy at module level: torch, pandas, SQLAlchemy
and the store are imported inside the fixtures that need them, and a test that needs none of them starts in
well under a second.  The markers of ``pyproject.toml`` ([tool.pytest.ini_options]) name what a test starts
(``browser``, ``postgres``, ``ray``, ``subprocess``) or runs (``slow``); ``make test-fast`` leaves those out.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from objrel.constants import LIME_AHEAD_ENV, MODEL_CACHE_ENV

from tests.fixtures.pg_server import pg_bindir, postgres_server


def write_colour_set(root: Path, bad: bool = True) -> Path:
    """Six 48x64 images: a coloured square object on a coloured background, plus bad cases.

    img1: red object on red-ish background       -> "red" correct, background agrees
    img2: red object (large) on blue background  -> "red" correct
    img3: green object on green background       -> "green"
    img4: blue object small on red background    -> predicted red, truth blue: incorrect
    img5: red object, mask as polygon            -> "red"
    img6: green object, 50% of image             -> "green"
    bad (optional): a corrupt file, a missing file, an unknown category, a box outside
    """
    root.mkdir(parents=True, exist_ok=True)
    spec = [
        (1, (200, 30, 30), (170, 60, 60), (16, 12, 48, 36)),
        (2, (220, 20, 20), (20, 20, 120), (8, 4, 56, 44)),
        (3, (20, 200, 20), (60, 150, 60), (20, 10, 44, 38)),
        (4, (20, 20, 220), (200, 40, 40), (28, 20, 36, 28)),
        (5, (210, 10, 10), (120, 90, 90), (10, 10, 40, 40)),
        (6, (10, 210, 10), (90, 90, 90), (0, 0, 32, 48)),
    ]
    cat_of = {0: 1, 1: 2, 2: 3}
    images, anns = [], []
    for i, obj_rgb, bg_rgb, (x1, y1, x2, y2) in spec:
        img = np.empty((48, 64, 3), np.uint8)
        img[:] = bg_rgb
        img[y1:y2, x1:x2] = obj_rgb
        Image.fromarray(img).save(root / f"img{i}.png")
        images.append({"id": i, "file_name": f"img{i}.png", "width": 64, "height": 48})
        cls = int(np.argmax(obj_rgb))
        ann = {"id": i, "image_id": i, "category_id": cat_of[cls], "bbox": [x1, y1, x2 - x1, y2 - y1], "iscrowd": 0}
        if i == 5:
            ann["segmentation"] = [[x1, y1, x2, y1, x2, y2, x1, y2]]
        anns.append(ann)
    if bad:
        (root / "corrupt.png").write_bytes(b"\x89PNG not really a png")
        images += [
            {"id": 7, "file_name": "corrupt.png", "width": 64, "height": 48},
            {"id": 8, "file_name": "missing.png", "width": 64, "height": 48},
            {"id": 9, "file_name": "img1.png", "width": 64, "height": 48},
            {"id": 10, "file_name": "img2.png", "width": 64, "height": 48},
        ]
        anns += [
            {"id": 7, "image_id": 7, "category_id": 1, "bbox": [1, 1, 5, 5]},
            {"id": 8, "image_id": 8, "category_id": 1, "bbox": [1, 1, 5, 5]},
            {"id": 9, "image_id": 9, "category_id": 99, "bbox": [1, 1, 5, 5]},
            {"id": 10, "image_id": 10, "category_id": 1, "bbox": [70, 50, 10, 10]},
        ]
    coco = {"images": images, "annotations": anns,
            "categories": [{"id": 1, "name": "red"}, {"id": 2, "name": "green"}, {"id": 3, "name": "blue"}]}
    path = root / "annotations.json"
    path.write_text(json.dumps(coco))
    return path


@pytest.fixture
def colour_set(tmp_path) -> Path:
    return write_colour_set(tmp_path / "data")


@pytest.fixture
def colour_model():
    from tests.fixtures.colour_model import factory

    return factory()


@pytest.fixture
def store(tmp_path):
    from objrel.store import Store

    s = Store(tmp_path / "store.db")
    yield s
    s.dispose()


def write_flagged_set(root: Path, n_flagged: int = 6, n_clean: int = 2) -> Path:
    """Images the colour model gets right for the wrong reason, and some it gets right for the right one.

    flagged (ids 1..n_flagged): a greenish patch annotated "red" on a saturated red field: the model says red
    because of the field -> flagged by MR-1 and MR-2 (see test_engine for the arithmetic).
    clean (next ids): a large red object on a dark blue field -> neither relation flags it.
    """
    root.mkdir(parents=True, exist_ok=True)
    images, anns = [], []
    for i in range(1, n_flagged + n_clean + 1):
        img = np.zeros((40, 48, 3), np.uint8)
        if i <= n_flagged:
            img[:] = (240 + i % 10, 0, 0)
            img[10:30, 12:32] = (100, 150 + i, 100)
            box = [12, 10, 20, 20]
        else:
            img[:] = (20, 20, 120)
            img[4:36, 6:42] = (220, 20, 20)
            box = [6, 4, 36, 32]
        Image.fromarray(img).save(root / f"f{i}.png")
        images.append({"id": i, "file_name": f"f{i}.png", "width": 48, "height": 40})
        anns.append({"id": i, "image_id": i, "category_id": 1, "bbox": box})
    coco = {"images": images, "annotations": anns,
            "categories": [{"id": 1, "name": "red"}, {"id": 2, "name": "green"}, {"id": 3, "name": "blue"}]}
    path = root / "annotations.json"
    path.write_text(json.dumps(coco))
    return path


def write_background_driven_scene(root: Path) -> Path:
    """One 40x40 image the colour model gets right for the wrong reason: a greenish object annotated "red"
    (box 10..30) on a saturated red field; returns the COCO file (``root/ann.json``)."""
    img = np.zeros((40, 40, 3), np.uint8)
    img[:] = (250, 0, 0)
    img[10:30, 10:30] = (100, 150, 100)
    root.mkdir(parents=True)
    Image.fromarray(img).save(root / "a.png")
    coco = {"images": [{"id": 1, "file_name": "a.png", "width": 40, "height": 40}],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 20, 20]}],
            "categories": [{"id": 1, "name": "red"}]}
    (root / "ann.json").write_text(json.dumps(coco))
    return root / "ann.json"


# Fixtures that start what a marker names: a test that asks for one carries that marker, so that
# ``-m "not postgres"`` leaves it out however the test is written.
FIXTURE_MARKERS = {"pg_url": "postgres"}


# Markers whose tests share one pytest-xdist worker (``make test`` runs ``--dist loadgroup``): the browser tests
# each serve the app and drive chromium, one at a time beside the other worker's tests.
SERIAL_MARKERS = ("browser",)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Markers from fixtures, then a pytest-xdist group per test: the marker's group for the tests of a
    SERIAL_MARKERS marker, otherwise the test's file, so that a module's fixtures are built in one worker."""
    for item in items:
        for fixture, marker in FIXTURE_MARKERS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)
        serial = [m for m in SERIAL_MARKERS if item.get_closest_marker(m)]
        item.add_marker(pytest.mark.xdist_group(serial[0] if serial else item.nodeid.split("::")[0]))


@pytest.fixture(scope="module")
def pg_url():
    """A throwaway PostgreSQL server for the module's tests (``make test`` installs postgresql)."""
    if pg_bindir() is None:
        pytest.skip("PostgreSQL server binaries not installed (make test installs Debian's postgresql)")
    with postgres_server() as url:
        yield url


# The tests open review samples by the hundred: no LIME job is started ahead for them (the app's servers the
# browser tests start inherit this) unless a test turns it on for its own server.
os.environ.setdefault(LIME_AHEAD_ENV, "0")

# Exported networks and auto's runtime measurements go to a folder of this test session (the processes and
# servers the tests start inherit it), not the user's ~/.cache: every session exports and measures afresh.
os.environ.setdefault(MODEL_CACHE_ENV, tempfile.mkdtemp(prefix="objrel-test-models-"))


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory) -> Path:
    """The demo store as ``make run`` leaves it (``objrel demo``: the real pretrained models on the bundled
    photos, its review samples drawn), built once per test session without its background LIME; copy it
    before writing (``shutil.copyfile``)."""
    import io

    from objrel import demo

    path = tmp_path_factory.mktemp("demo") / "demo.db"
    store = demo.build_demo_store(str(path), log=io.StringIO(), explain_ahead=False)
    demo.demo_review_samples(store)
    store.dispose()
    return path


@pytest.fixture
def flagged_store(tmp_path):
    """A store with one finished colour-model run: 6 inferences flagged by both relations, 2 clean."""
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine
    from objrel.store import Store

    from tests.fixtures.colour_model import factory

    ann = write_flagged_set(tmp_path / "flagged")
    store = Store(tmp_path / "flagged.db")
    report = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3",
                                     name="flagged run"), model=factory()).execute()
    yield store, report.run_id
    store.dispose()


_PYTEST_MAIN = sys.modules.get("__main__")


@pytest.fixture(autouse=True)
def _restore_main_module():
    """Streamlit's AppTest runs a page as ``__main__`` and leaves it there; a later test that starts
    processes with multiprocessing's spawn would then re-run that page in every child.  Put pytest's
    own ``__main__`` back after each test."""
    yield
    if _PYTEST_MAIN is not None and sys.modules.get("__main__") is not _PYTEST_MAIN:
        sys.modules["__main__"] = _PYTEST_MAIN


# A skipped test is not a pass: the run fails when any test skipped, unless OBJREL_ALLOW_SKIPS=1
# (for a developer without chromium or postgresql who knows what they are leaving out).
ALLOW_SKIPS_ENV = "OBJREL_ALLOW_SKIPS"


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter else 0
    if skipped and os.environ.get(ALLOW_SKIPS_ENV) != "1" and exitstatus == 0:
        reporter.write_line(f"{skipped} test(s) skipped: a skip counts as a failure here "
                            f"(set {ALLOW_SKIPS_ENV}=1 to accept them)", red=True)
        session.exitstatus = 1
