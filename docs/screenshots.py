"""Screenshots of the app for the README and the role guides, taken from the demo store in chromium.

    python docs/screenshots.py                       # the demo store var/demo.db (built first when missing)
    python docs/screenshots.py --store var/demo.db --out docs/screenshots

The store is copied first (signing in and opening Review write to it), the copy is served with
``streamlit run serve.py`` (app.py behind objrel's web gate), and each role's pages are captured as that role
sees them: a visitor's Overview and Explore, a reviewer's Review and My work, the adjudicator's Agreement, the
admin's Runs and Users.  Browser: Debian's chromium through Playwright (``--chromium``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_STORE = ROOT / "var" / "demo.db"
DEFAULT_OUT = ROOT / "docs" / "screenshots"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
# Seconds the server has to answer its health check, and a page to finish drawing.
START_TIMEOUT_S = 90
PAGE_TIMEOUT_MS = 120_000
# Window the pages are captured in (the README's pictures are scaled down by the reader's browser).
VIEWPORT = {"width": 1400, "height": 900}
# The demo's accounts (objrel.demo makes them): name -> passphrase.
DEMO_PASSPHRASES = {"alice": "alice-demo-pass", "carol": "carol-demo-pass", "admin": "admin-demo-pass"}


@dataclass(frozen=True)
class Shot:
    """One screenshot: its file name, who takes it (None: a visitor), the page's path, the text to wait for,
    and how tall the capture is (the page scrolls below the window)."""

    name: str
    account: str | None
    path: str
    wait_for: str
    height: int = VIEWPORT["height"]


SHOTS = (
    Shot("overview.png", None, "", "Overview"),
    Shot("explore.png", None, "explore", "Explore", height=1100),
    Shot("review.png", "alice", "review", "(sample "),
    Shot("my-work.png", "alice", "my-work", "My work"),
    Shot("agreement.png", "carol", "agreement", "Agreement", height=1100),
    Shot("runs.png", "admin", "runs", "Runs", height=1100),
    Shot("users.png", "admin", "users", "Users"),
)


def copy_store(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite store (its WAL included) through SQLite's backup API."""
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(store: Path, workdir: Path) -> tuple[subprocess.Popen, str]:
    """``streamlit run serve.py`` on ``store`` from ``workdir``; returns the process and its base URL."""
    shutil.copytree(ROOT / ".streamlit", workdir / ".streamlit")
    env = {**os.environ, "OBJREL_STORE": str(store), "OBJREL_LOG_DIR": str(workdir / "logs"),
           "OBJREL_LIME_AHEAD": "0", "PYTHONPATH": str(ROOT)}
    port = free_port()
    log = open(workdir / "streamlit.log", "wb")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "serve.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2).status == 200:
                return proc, base
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"the app did not answer within {START_TIMEOUT_S} s; its log is {workdir / 'streamlit.log'}")


def settled(page) -> None:
    """Wait until the script run is over: no element is stale, no status widget, the images decoded and the
    charts drawn."""
    page.wait_for_function("document.querySelectorAll('[data-stale=\"true\"]').length === 0 && "
                           "!document.querySelector('[data-testid=\"stStatusWidget\"]')")
    page.wait_for_function("Array.from(document.images).every(i => i.complete)")
    # plotly draws after the script run: every chart has its SVG, and no placeholder is left
    page.wait_for_function("Array.from(document.querySelectorAll('[data-testid=\"stPlotlyChart\"]'))"
                           ".every(c => c.querySelector('svg.main-svg')) && "
                           "!document.querySelector('[data-testid=\"stSkeleton\"]')")
    page.wait_for_timeout(1500)


def sign_in(page, base: str, name: str) -> None:
    """Sign in as a demo account in the sidebar and wait until the page says so."""
    page.goto(f"{base}/review")
    page.get_by_label("Name").fill(name)
    page.get_by_label("Passphrase").fill(DEMO_PASSPHRASES[name])
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=PAGE_TIMEOUT_MS)
    settled(page)


def capture(base: str, out: Path, chromium: str) -> list[Path]:
    """Take every shot of ``SHOTS``, one browser context per account; returns the files written."""
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        for account in dict.fromkeys(s.account for s in SHOTS):
            context = browser.new_context(viewport=VIEWPORT)
            page = context.new_page()
            page.set_default_timeout(PAGE_TIMEOUT_MS)
            if account:
                sign_in(page, base, account)
            for shot in (s for s in SHOTS if s.account == account):
                page.set_viewport_size({"width": VIEWPORT["width"], "height": shot.height})
                page.goto(f"{base}/{shot.path}")
                page.get_by_text(shot.wait_for).first.wait_for()
                settled(page)
                path = out / shot.name
                page.screenshot(path=str(path))
                written.append(path)
                print(f"screenshots: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
            context.close()
        browser.close()
    return written


def main(argv=None) -> int:
    """Copy the store, serve it, capture every shot; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", type=Path, default=DEFAULT_STORE, help="demo store (SQLite file); built when missing")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder the PNG files are written to")
    ap.add_argument("--chromium", default=CHROMIUM, help="the chromium binary Playwright drives")
    args = ap.parse_args(argv)
    if not args.store.exists():
        subprocess.run([sys.executable, "-m", "objrel", "demo", "--no-lime", "--store", str(args.store)],
                       cwd=ROOT, check=True)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="objrel-screenshots-") as tmp:
        workdir = Path(tmp)
        store = workdir / "demo.db"
        copy_store(args.store, store)
        proc, base = serve(store, workdir)
        try:
            capture(base, args.out, args.chromium)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
