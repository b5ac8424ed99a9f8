"""Every module of objrel imports on its own in a fresh interpreter, and in any order.

A module that only imports after another one has been imported first hides a cycle or a
missing import; pytest's single process would never notice, so each module gets its own
interpreter here.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[1]
# Seconds one interpreter may take (torch's first import is the slow part).
IMPORT_TIMEOUT_S = 120


def objrel_modules() -> list[str]:
    mods = []
    for path in sorted((ROOT / "objrel").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__main__":
            continue  # runs the command line on import
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods.append(".".join(parts))
    return mods


# The third-party libraries objrel builds on: loaded once before the forks, so each child pays only
# for objrel's own modules (what this test is about) and not for torch's import again.
THIRD_PARTY = ("numpy", "torch", "torchvision", "cv2", "PIL.Image", "sqlalchemy", "pandas", "scipy.stats",
               "streamlit", "plotly.graph_objects", "pycocotools.mask", "skimage", "tqdm")

FORK_EACH = """
import importlib, os, sys, traceback
for lib in %r:
    importlib.import_module(lib)
assert not [m for m in sys.modules if m == "objrel" or m.startswith("objrel.")]
failed = {}
for mod in %r:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a process in which no objrel module was ever imported
        os.close(r)
        try:
            importlib.import_module(mod)
            code = 0
        except BaseException:
            os.write(w, traceback.format_exc().strip().splitlines()[-1].encode())
            code = 1
        os._exit(code)
    os.close(w)
    msg = os.read(r, 4096).decode()
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        failed[mod] = msg or f"status {status}"
print(repr(failed))
"""


def _import_each_alone(mods: list[str]) -> dict[str, str]:
    res = subprocess.run([sys.executable, "-c", FORK_EACH % (THIRD_PARTY, mods)], cwd=ROOT, capture_output=True,
                         text=True, timeout=IMPORT_TIMEOUT_S * 3)
    assert res.returncode == 0, res.stderr[-2000:]
    return eval(res.stdout.strip().splitlines()[-1])  # a dict literal printed by our own child


def test_the_module_list_is_the_package():
    mods = objrel_modules()
    assert "objrel.engine.classify" in mods and "objrel.store.schema" in mods
    assert "objrel.__main__" not in mods
    assert len(mods) > 50


def test_every_module_imports_alone_in_a_fresh_interpreter():
    failures = _import_each_alone(objrel_modules())
    assert failures == {}, f"modules that do not import on their own: {failures}"


def test_all_modules_import_in_shuffled_orders():
    mods = objrel_modules()
    for seed in (0, 1):
        order = mods[:]
        random.Random(seed).shuffle(order)
        code = "import importlib\nfor m in %r:\n    importlib.import_module(m)\n" % order
        res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                             timeout=IMPORT_TIMEOUT_S)
        assert res.returncode == 0, f"order seed {seed}: {res.stderr.strip().splitlines()[-1:]}"
