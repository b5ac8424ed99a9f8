"""The lower stages and the listing commands load no model library: ``import objrel.store``, ``objrel.review`` and
``objrel.cli`` leave torch (and ray, lime, plotly) unloaded, and so does ``objrel runs`` on a store.  Each check runs
in a fresh interpreter, since this test process has long imported torch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "torchvision", "ray", "lime", "plotly", "onnxruntime", "openvino")


def loaded_after(code: str, libraries: tuple[str, ...] = HEAVY) -> list[str]:
    """The ``libraries`` in ``sys.modules`` after ``code`` runs in a new interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {libraries!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_store_review_and_cli_packages_import_without_torch():
    assert loaded_after("import objrel.store, objrel.store.store") == []
    assert loaded_after("import objrel.review, objrel.review.judgments, objrel.review.agreement") == []
    assert loaded_after("import objrel.cli, objrel.cli.main") == []


def test_the_tests_shared_fixtures_load_no_heavy_library():
    # every pytest start imports tests/conftest.py: what it loads, even a one-test run pays for
    assert loaded_after("import tests.conftest", HEAVY + ("pandas", "sqlalchemy", "streamlit", "scipy")) == []


def test_listing_runs_loads_no_model_library(tmp_path):
    from objrel.store import Store

    Store(tmp_path / "s.db").dispose()
    code = ("import contextlib, io\nfrom objrel.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['runs', '--store', {str(tmp_path / 's.db')!r}]) == 0")
    assert loaded_after(code) == []


def test_help_still_lists_every_command():
    done = subprocess.run([sys.executable, "-m", "objrel", "--help"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0
    from objrel.cli.main import COMMAND_GROUPS

    for _, _, commands in COMMAND_GROUPS:
        for command in commands:
            assert command in done.stdout, command


# Pages that read results (or manage runs, accounts and study results) and what they must leave unloaded.
READING_PAGES = ("overview", "my_work", "explore", "agreement", "runs", "inspect", "shortcut", "users")
MODEL_LIBRARIES = ("torch", "torchvision", "onnxruntime", "openvino", "lime", "ray")


def test_pages_that_read_results_load_no_model_library(tmp_path):
    """Each page is drawn through app.py in a fresh interpreter, signed in with every role, on a store with a
    finished run and a review day (built like the page benchmark's stores)."""
    url = f"sqlite:///{tmp_path / 'pages.db'}"
    builder = str(ROOT / "benchmarks" / "synthetic_store.py")
    build = ("import importlib.util, sys\n"
             f"spec = importlib.util.spec_from_file_location('synthetic_store', {builder!r})\n"
             "m = importlib.util.module_from_spec(spec)\n"
             "sys.modules['synthetic_store'] = m\n"
             "spec.loader.exec_module(m)\n"
             f"m.build({url!r}, 300, log=lambda msg: None)\n")
    done = subprocess.run([sys.executable, "-c", build], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    for page in READING_PAGES:
        code = ("import os\n"
                f"os.environ['OBJREL_STORE'] = {url!r}\n"
                "os.environ['OBJREL_LIME_AHEAD'] = '0'\n"
                "from streamlit.testing.v1 import AppTest\n"
                f"at = AppTest.from_file({str(ROOT / 'app.py')!r}, default_timeout=120)\n"
                "at.session_state['reviewer'] = 'bench'\n"
                f"at.switch_page('pages/{page}.py')\n"
                "at.run()\n"
                "assert not at.exception, [e.value for e in at.exception]\n")
        loaded = [m for m in loaded_after(code) if m in MODEL_LIBRARIES]
        assert loaded == [], f"pages/{page}.py loaded {loaded}"
