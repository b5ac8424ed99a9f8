"""The app as the browser tests serve it: `streamlit run serve.py` (app.py behind objrel's web gate) in a folder
of its own on a free port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Seconds the server has to answer its health check.
START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(tmp_path: Path, store_url: str, data_roots: bool = False, env: dict | None = None) -> Iterator[str]:
    """Serve app.py on ``store_url`` from ``tmp_path/srv`` (so uploads land in its var/uploads, never in the
    repository's var/); yields the base URL.  ``data_roots``: the demo assets and that uploads folder are the
    roots the Runs page may read; ``env``: more environment for the server."""
    from objrel.engine import run_form

    cwd = tmp_path / "srv"
    (cwd / "var" / "uploads").mkdir(parents=True)
    shutil.copytree(ROOT / ".streamlit", cwd / ".streamlit")
    server_env = {**os.environ, "OBJREL_STORE": store_url, "OBJREL_LOG_DIR": str(tmp_path / "logs"),
                  "PYTHONPATH": str(ROOT), **(env or {})}
    if data_roots:
        server_env[run_form.DATA_ROOTS_ENV] = os.pathsep.join([str(run_form.DEMO_ASSETS),
                                                               str(cwd / "var" / "uploads")])
    port = free_port()
    log_path = tmp_path / "streamlit.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "serve.py"),
                                 "--server.headless", "true", "--server.port", str(port), "--server.address",
                                 "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType",
                                 "none"], cwd=cwd, env=server_env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + log_path.read_text())
    try:
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=20)
