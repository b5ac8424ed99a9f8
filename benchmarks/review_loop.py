"""The review loop in a real browser: from a reviewer's call to the next item drawn, side by side.

Serves the app on a copy of the demo store (LIME ahead running in the background, as on a reviewer's day)
and drives Debian's chromium through Playwright as a reviewer does: signed in, on the "All flagged" queue
of the demo's 3-colour run (MR-2), calling items with keys and with the mouse, mixed:

* ``key``: the call's key (T, F, U) with nothing focused;
* ``mouse``: a click on the call button;
* ``mouse then key``: a click on "valid test" and on a false-positive reason, then the call's key (the
  radio or checkbox holds the focus);

For each call it measures the seconds from the press to the next item drawn: its heading shown, no element
stale, every image loaded.  Before each call the walk looks at the item for ``LOOK_S`` (not counted).  A key
the page did not act on within ``LOST_KEY_S`` counts as lost, and the reviewer then clicks the button (the
time runs on from the key).  Where a tree makes the reviewer wait
before a call counts (an older tree's ``MIN_LOOK_S``), the walk waits it out before each call and reports
the wait apart.

``--before REF`` runs the same walk first on a worktree of git ref ``REF`` (same Python, same store copy,
same machine, one after the other) and prints the two side by side.  Results go to
``benchmarks/results/review_loop.json``, which the README quotes.

    python benchmarks/review_loop.py [--calls 32] [--before REF]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "review_loop.json"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1400, "height": 900}
REVIEWER, PASSPHRASE = "alice", "alice-demo-pass"     # a demo account
RUN_NAME_PREFIX = "EfficientNet-Lite0 on demo photos (3 colours"
RELATION = "MR-2"
START_TIMEOUT_S = 90
# Seconds a key may take before it counts as lost (the reviewer then clicks the button).
LOST_KEY_S = 10.0
# Seconds the walk looks at each item before its call (not counted): a reviewer's quickest glance.  A tree that
# refuses a call sooner after an item opened (``MIN_LOOK_S``) is waited out instead, and that wait is reported.
LOOK_S = 0.6
STYLES = ("key", "mouse", "mouse then key")
CALL_KEYS = {"tp": "t", "fp": "f", "uncertain": "u"}
CALL_BUTTONS = {"tp": "True positive", "fp": "False positive", "uncertain": "Uncertain"}
VERDICTS = ("tp", "fp", "uncertain")

DRAWN_JS = """(before) => {
  const h = [...document.querySelectorAll('h3')].find(e => e.innerText.includes('(sample '));
  if (!h || h.innerText === before) { return false; }
  if (document.querySelectorAll('[data-stale="true"]').length) { return false; }
  return [...document.querySelectorAll('[data-testid="stImage"] img')].every(i => i.complete && i.naturalWidth > 0);
}"""
SETTLED_JS = ("document.querySelectorAll('[data-stale=\"true\"]').length === 0 && "
              "!document.querySelector('[data-testid=\"stStatusWidget\"]')")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(tree: Path, db: Path, workdir: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    """`streamlit run serve.py` of ``tree`` (app.py where the tree has no serve.py) on ``db`` from a folder of
    its own; returns the process and base URL."""
    cwd = workdir / "srv"
    cwd.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree / ".streamlit", cwd / ".streamlit", dirs_exist_ok=True)
    env = {**os.environ, "OBJREL_STORE": str(db), "PYTHONPATH": str(tree), "OBJREL_LIME_AHEAD": "1",
           "OBJREL_LOG_DIR": str(workdir / "logs")}
    port = free_port()
    entry = tree / "serve.py" if (tree / "serve.py").exists() else tree / "app.py"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(entry), "--server.headless",
                                 "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2).status == 200:
                return proc, base
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("the app did not start: " + log_path.read_text()[-2000:])


def stop(proc: subprocess.Popen) -> None:
    import signal

    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)


def queue_items(db: Path) -> tuple[int, list[str]]:
    """The 3-colour demo run's id and its MR-2 flagged sample ids (the "All flagged" queue, in its order)."""
    sys.path.insert(0, str(ROOT))
    from objrel.store import Store

    store = Store(db)
    try:
        run = next(r for r in store.list_runs() if r.name.startswith(RUN_NAME_PREFIX))
        return run.id, list(store.flagged_sample_ids(run.id, RELATION))
    finally:
        store.dispose()


def look_wait_s(tree: Path) -> float:
    """The wait an older tree imposes before a call counts (0 for a tree without one)."""
    code = ("import objrel.review.queue as q; print(getattr(q, 'MIN_LOOK_S', 0.0))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)},
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def heading(page) -> str:
    h = page.locator("h3", has_text="(sample ").first
    h.wait_for(timeout=60_000)
    return h.inner_text()


def walk(base: str, run_id: int, items: list[str], calls: int, look_s: float) -> dict:
    """Make ``calls`` calls in the browser; return the seconds of each with its style and the keys lost."""
    from urllib.parse import urlencode

    from playwright.sync_api import sync_playwright

    first = f"{base}/review?{urlencode({'run': run_id, 'relation': RELATION, 'queue': 'all', 'item': items[0]})}"
    rows: list = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport=VIEWPORT).new_page()
        page.set_default_timeout(60_000)
        page.goto(first)
        page.get_by_label("Name").fill(REVIEWER)
        page.get_by_label("Passphrase").fill(PASSPHRASE)
        page.get_by_role("button", name="Sign in", exact=True).click()
        page.get_by_text(f"Signed in as {REVIEWER}").wait_for()
        # the browser holds the sign-in cookie (its component's rerun is over) before the first call
        page.get_by_text("Saving your sign-in").wait_for(state="detached")
        deadline = time.time() + 30
        while not any(c["name"] == "objrel_session" for c in page.context.cookies()) and time.time() < deadline:
            time.sleep(0.1)
        try:
            _walk_calls(page, first, items, calls, look_s, rows, lost_waited := [0, 0.0])
        except Exception:
            shot = Path(tempfile.gettempdir()) / "objrel-review-loop-failed.png"
            page.screenshot(path=str(shot), full_page=True)
            print(f"review loop: the walk failed at {page.url} after {len(rows)} calls; the page is in {shot}",
                  file=sys.stderr)
            raise
        lost, waited = lost_waited
        browser.close()
    return {"calls": rows, "keys_lost": lost, "forced_wait_s": waited}


def _walk_calls(page, first: str, items: list[str], calls: int, look_s: float, rows: list, counts: list) -> None:
    """The calls of ``walk``, appended to ``rows``; ``counts`` gathers [keys lost, seconds waited before calls]."""
    i = 0
    while len(rows) < calls:
        page.wait_for_function(SETTLED_JS)
        before = heading(page)
        if f"(sample {items[-1]})" in before:       # the last item: a call there opens no next item; back to the
            for _ in items[1:]:                     # first one with P, as a reviewer does (not timed)
                shown = heading(page)
                page.keyboard.press("p")
                page.wait_for_function(DRAWN_JS, arg=shown)
            page.wait_for_function(SETTLED_JS)
            continue
        style, verdict = STYLES[i % len(STYLES)], VERDICTS[i % len(VERDICTS)]
        i += 1
        time.sleep(max(LOOK_S, look_s + 0.2 if look_s else 0.0))
        if look_s:
            counts[1] += look_s + 0.2
        if style == "mouse then key":
            page.get_by_text("valid test", exact=True).first.click()
            reason = page.locator('[class*="st-key-review_reason_1_"] label')   # a tree with reason boxes
            if reason.count():
                reason.first.click()
            verdict = "fp"
        t0 = time.perf_counter()
        if style == "mouse":
            page.get_by_role("button", name=CALL_BUTTONS[verdict]).first.click()
        else:
            page.keyboard.press(CALL_KEYS[verdict])
        try:
            page.wait_for_function(DRAWN_JS, arg=before, timeout=LOST_KEY_S * 1000 if style != "mouse" else 60_000)
        except Exception:   # the key did nothing: the reviewer clicks the button
            counts[0] += 1
            if os.environ.get("OBJREL_BENCH_TRACE"):
                said = page.evaluate("document.documentElement.getAttribute('data-objrel-key')")
                alerts = page.locator('[data-testid="stAlert"]').all_inner_texts()
                print(f"  lost key: the page's key listener says {said!r}; alerts {alerts}", file=sys.stderr)
            page.get_by_role("button", name=CALL_BUTTONS[verdict]).first.click()
            page.wait_for_function(DRAWN_JS, arg=before, timeout=60_000)
        rows.append({"style": style, "seconds": time.perf_counter() - t0})
        if os.environ.get("OBJREL_BENCH_TRACE"):
            print(f"  {style:15} {verdict:9} {time.perf_counter() - t0:5.2f} s  {before} -> {page.url}",
                  file=sys.stderr)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def summary(result: dict) -> dict:
    secs = [r["seconds"] for r in result["calls"]]
    return {"calls": len(secs), "p50_s": statistics.median(secs), "p90_s": quantile(secs, 0.9), "max_s": max(secs),
            "keys_lost": result["keys_lost"], "forced_wait_s": result["forced_wait_s"],
            "by_style_p50_s": {s: statistics.median([r["seconds"] for r in result["calls"] if r["style"] == s])
                               for s in STYLES if any(r["style"] == s for r in result["calls"])}}


def lime_pids(db: Path) -> list[int]:
    """The pids of the LIME processes recorded in the store that still run."""
    import sqlite3

    with sqlite3.connect(db) as c:
        pids = {p for (p,) in c.execute("SELECT pid FROM review_jobs WHERE pid IS NOT NULL")}
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as fh:       # a zombie has ended
                if fh.read().split()[2] != "Z":
                    alive.append(pid)
        except (ProcessLookupError, FileNotFoundError, PermissionError):
            pass
    return alive


def measure(tree: Path, label: str, demo_db: Path, calls: int, workdir: Path) -> dict:
    import signal

    db = workdir / f"{label}.db"
    shutil.copyfile(demo_db, db)
    run_id, items = queue_items(db)
    proc, base = serve(tree, db, workdir / label, workdir / f"{label}.log")
    try:
        out = summary(walk(base, run_id, items, calls, look_wait_s(tree)))
    finally:
        stop(proc)
    time.sleep(3.0)
    left = lime_pids(db)
    out["lime_processes_left_after_stop"] = len(left)
    for pid in left:                         # the walk leaves nothing running behind it
        os.kill(pid, signal.SIGKILL)
    log = (workdir / f"{label}.log").read_text(errors="replace")
    out["deprecation_warnings"] = log.lower().count("deprecat")
    return out


def demo_store(workdir: Path) -> Path:
    db = workdir / "demo.db"
    subprocess.run([sys.executable, "-m", "objrel", "demo", "--no-lime", "--store", str(db)], cwd=ROOT, check=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return db


def worktree(ref: str, workdir: Path) -> Path:
    tree = workdir / "before-tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), ref], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return tree


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=32, help="calls per walk (at least 30)")
    ap.add_argument("--before", help="a git ref to measure first, side by side (a worktree of it is made)")
    ap.add_argument("--demo-store", help="a demo store built by `objrel demo --no-lime` to copy (default: build one)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="objrel-review-loop-"))
    results = {}
    tree = None
    try:
        db = Path(args.demo_store) if args.demo_store else demo_store(work)
        if args.before:
            tree = worktree(args.before, work)
            results["before"] = {"ref": args.before, **measure(tree, "before", db, args.calls, work)}
        results["after"] = {"ref": "working tree", **measure(ROOT, "after", db, args.calls, work)}
    finally:
        if tree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)
    cols = list(results)
    print(f"review loop: {args.calls} calls each on the demo, chromium {VIEWPORT['width']}x{VIEWPORT['height']}, "
          "LIME ahead running")
    print(f"{'':28}" + "".join(f"{c:>16}" for c in cols))
    for key, label in (("p50_s", "call -> next drawn p50 (s)"), ("p90_s", "p90 (s)"), ("max_s", "max (s)"),
                       ("keys_lost", "keys lost"), ("forced_wait_s", "forced wait, total (s)"),
                       ("deprecation_warnings", "deprecation warnings"),
                       ("lime_processes_left_after_stop", "LIME left after stop")):
        print(f"{label:28}" + "".join(f"{results[c][key]:>16.2f}" if isinstance(results[c][key], float)
                                      else f"{results[c][key]:>16}" for c in cols))
    for style in STYLES:
        print(f"{'  p50 ' + style + ' (s)':28}"
              + "".join(f"{results[c]['by_style_p50_s'].get(style, float('nan')):>16.2f}" for c in cols))
    if "before" in results:
        print(f"{'p50 before / after':28}{results['before']['p50_s'] / results['after']['p50_s']:>16.1f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"calls": args.calls, "viewport": VIEWPORT, **results}, indent=2) + "\n")
    print(f"written: {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
