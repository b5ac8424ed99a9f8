"""``pip install objrel`` without extras gives the library and the command line: in a fresh virtual environment
holding only the core's dependencies, objrel installed from its wheel runs the demo, and the extras' packages
(the app's Streamlit, the runtimes, Ray, PostgreSQL's driver) cannot be imported there.

The environment is made without the network: a new venv whose site folder links only the distributions that
``[project] dependencies`` need (followed through their own requirements, as installed for this test run), and
objrel's wheel, built from the checkout's tracked files, installed into it with ``--no-deps --no-index``.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from objrel.extras import EXTRA_OF_IMPORT

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[1]
# Seconds for building the wheel, installing it, and the demo run on the pretrained model.
BUILD_TIMEOUT_S = 600
RUN_TIMEOUT_S = 900


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def core_distributions() -> dict[str, md.Distribution]:
    """The installed distributions ``[project] dependencies`` need, their own requirements followed (extras and
    markers that do not apply here left out), by normalised name."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    found: dict[str, md.Distribution] = {}
    todo = [Requirement(d) for d in deps]
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = _normalise(req.name)
        if name in found:
            continue
        found[name] = md.distribution(req.name)
        todo += [Requirement(r) for r in found[name].requires or []]
    return found


def top_level_entries(dist: md.Distribution) -> set[str]:
    """The names in site-packages a distribution installed: its packages, modules, shared-library folders and
    its metadata folder."""
    names = set()
    for f in dist.files or []:
        first = f.parts[0]
        if first not in ("..", "__pycache__") and not first.endswith(".pth"):
            names.add(first)
    return names


def core_site(folder: Path) -> Path:
    """``folder`` filled with links to the core distributions' entries in this interpreter's site-packages."""
    folder.mkdir()
    for dist in core_distributions().values():
        base = Path(dist.locate_file(""))
        for name in top_level_entries(dist):
            if not (folder / name).exists() and (base / name).exists():
                (folder / name).symlink_to(base / name)
    return folder


def build_wheel(out: Path) -> Path:
    """objrel's wheel, built from a copy of the checkout's files (tracked, or new and not ignored by git)."""
    src = out / "src"
    tracked = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    for rel in filter(None, tracked.decode().split("\0")):
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                           "--wheel-dir", str(out / "dist"), str(src)], capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return next((out / "dist").glob("objrel-*.whl"))


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory) -> Path:
    """A fresh venv with only the core's dependencies and objrel installed from its wheel."""
    tmp = tmp_path_factory.mktemp("core-install")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "objrel-core-dependencies.pth").write_text(str(core_site(tmp / "core-site")) + "\n")
    wheel = build_wheel(tmp)
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                           "--no-deps", "--no-index", str(wheel)], capture_output=True, text=True,
                          timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return venv


def run_in(venv: Path, args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """``args`` run in ``venv`` from ``cwd``, with nothing of the checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_core_installs_runs_the_demo_and_has_none_of_the_extras(core_venv, tmp_path):
    where = run_in(core_venv, [str(core_venv / "bin" / "python"), "-c", "import objrel; print(objrel.__file__)"],
                   tmp_path, 120)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(core_venv), f"objrel came from {where.stdout.strip()}"

    for name in sorted(EXTRA_OF_IMPORT):
        probe = run_in(core_venv, [str(core_venv / "bin" / "python"), "-c", f"import {name}"], tmp_path, 120)
        assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr, \
            f"{name} (extra {EXTRA_OF_IMPORT[name]}) imports in the core install"

    store = tmp_path / "x.db"
    done = run_in(core_venv, [str(core_venv / "bin" / "objrel"), "run", "--dataset", "demo", "--store", str(store)],
                  tmp_path, RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    listed = run_in(core_venv, [str(core_venv / "bin" / "objrel"), "runs", "--store", str(store)], tmp_path, 120)
    assert listed.returncode == 0 and "finished" in listed.stdout, listed.stdout + listed.stderr


def test_a_command_that_needs_an_extra_names_it_in_one_line(core_venv, tmp_path):
    from objrel.store import Store

    Store(tmp_path / "empty.db").dispose()
    code = ("import sys\nfrom objrel.analysis.report import build_report\nfrom objrel.errors import MissingExtra\n"
            "try:\n    build_report(None, 1)\nexcept MissingExtra as exc:\n    print(exc)\n    sys.exit(3)\n")
    done = run_in(core_venv, [str(core_venv / "bin" / "python"), "-c", code], tmp_path, 120)
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.strip() == ("the HTML report's charts needs plotly, which this objrel was installed without; "
                                   "install it with: pip install 'objrel[app]'")
