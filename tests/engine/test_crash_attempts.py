"""F8: only deaths while a sample ran ALONE count towards 'crashed-twice'.  A kill that lands while the
samples of a crashed chunk are retried one at a time hits an innocent sample; that sample, already blamed
for the chunk's death, must not be skipped for good."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from objrel.store import Store
from tests.engine.kill_models import KILL_ONCE_PIXEL, MARKER_ENV
from tests.engine.test_trust import W, H, ann, red_image, write_coco
from tests.fixtures.crashing_model import CRASH_PIXEL, CRASH_STATUS

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.store import Store
from tests.engine.kill_models import kill_once
store = Store(sys.argv[1])
cfg = RunConfig(model="py:tests.engine.kill_models:kill_once", dataset=sys.argv[2], plan="colours3", batch_size=4)
Engine(store, cfg, model=kill_once()).execute(run_id=int(sys.argv[3]) if len(sys.argv) > 3 else None)
"""


def dataset(root: Path) -> Path:
    """Five red images: 3 kills the process every time, 1 once while the marker file exists."""
    images, anns = [], []
    for i in range(1, 6):
        red_image(root / f"{i}.png", pixel={1: KILL_ONCE_PIXEL, 3: CRASH_PIXEL}.get(i))
        images.append({"id": i, "file_name": f"{i}.png", "width": W, "height": H})
        anns.append(ann(i, i, 1, [5, 5, 20, 20]))
    return write_coco(root, images, anns)


def test_a_kill_during_the_one_at_a_time_retry_does_not_skip_an_innocent_sample(tmp_path):
    data, db, marker = dataset(tmp_path / "data"), tmp_path / "s.db", tmp_path / "kill-once"

    def go(*resume: str) -> int:
        env = {**os.environ, MARKER_ENV: str(marker)}
        return subprocess.run([sys.executable, "-c", SCRIPT, str(db), str(data), *resume], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120).returncode

    assert go() == CRASH_STATUS                  # kill 1: chunk 1..4 dies of sample 3; all four are suspects
    marker.touch()
    assert go("1") == CRASH_STATUS               # kill 2 lands while sample 1 (innocent) is retried alone
    assert not marker.exists()
    store = Store(db)
    assert go("1") == CRASH_STATUS               # 1 is tried again (and passes), 2 passes, 3 dies alone
    rows = {r["sample_id"]: (r["status"], r["skip_code"]) for r in store.samples(1)}
    assert rows == {"1": ("tested", None), "2": ("tested", None)}
    assert store.attempts(1) == {"3": 1, "4": 0}  # one death alone for 3; 4 only shared the chunk's
    assert go("1") == CRASH_STATUS               # 3 dies alone a second time
    assert go("1") == 0
    rows = {r["sample_id"]: (r["status"], r["skip_code"]) for r in store.samples(1)}
    assert rows == {"1": ("tested", None), "2": ("tested", None), "3": ("skipped", "crashed-twice"),
                    "4": ("tested", None), "5": ("tested", None)}
    assert store.attempts(1) == {} and store.get_run(1).status == "finished"
