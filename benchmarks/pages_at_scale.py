"""Every page of the app at the scale of the papers' datasets: server seconds and memory at N tested samples.

What it measures.  For each back end (SQLite, PostgreSQL) and store size N (10,000, 100,000 and 1,000,000
tested samples by default) it builds a store with ``benchmarks/synthetic_store.py`` (a finished run of N samples
with the engine's row shapes, a second model's run over 10 % of them, a review day: accounts, drawn review
samples, two reviewers' judgments with disagreements, adjudications), then renders every page of ``app.py``
with Streamlit's AppTest, signed in as an account holding every role, each page in fresh processes:

* **first**: the page's first view of a store that no page has viewed since it was built, in a fresh process.
  A page may keep what it computes in the store (per-run results kept for later views) or write other rows;
  the next page's first view then starts again from a copy of the store as it was built, so every page's
  first view pays the full price, as it does for the first person who opens that page after a run finishes.
* **cold**: the first script run in another fresh process (Streamlit imported beforehand; objrel's imports,
  opening the store and filling Streamlit's in-process caches are counted), on the store as the page's first
  view left it: what the next visitor pays after a server restart.
* **warm**: the median of further script runs of the same page in that process (``--warm``, 3): a reload,
  or the next visitor of a running server.
* **RSS**: the process's peak resident memory (VmHWM) over its cold and warm runs, and its resident memory
  (VmRSS) after them: what one server process needs to serve the page.

A run that raises (``at.exception``) is a failure, printed with its exception's first line.  A run that takes
longer than ``--page-timeout`` seconds is recorded as "> T s" and its process ended (later runs of that page
are not made); a process whose memory passes ``--rss-limit-mb`` is ended too (the machine is shared).  Whether
a view wrote to the store is read from the SQLite files or PostgreSQL's row counters of the store's tables.

The tables show page x size as "cold / warm s / peak RSS MB", marked against the targets of issue 39 for a
quiet 2-core machine: at 1,000,000 samples every page warm <= 1 s and cold <= 3 s, warm at the largest size
within 2x of warm at the smallest (1,000,000 against 10,000; a page under 0.1 s warm at the largest size passes
whatever the ratio of two timer-noise figures), peak RSS <= 600 MB at every size.  Every figure, with the load
average at each render, goes to ``benchmarks/results/pages_at_scale.json`` (``--out``).

Why.  A page that reads every row of a run on each view is instant on the demo and unusable at ImageNet's
50,000 validation images or a team's accumulated million; only rendering the real pages on stores of that size
shows which page does that, on which back end, and how its time and memory grow with N.

``--before REV`` renders the same pages with the code of an older commit as well (a git worktree; its objrel
and pages are imported, from this virtual environment) and prints both side by side.  When the older code's
schema (Alembic head) differs from this code's, each code gets its own store with the same rows, built through
its own ``Store``.

    python benchmarks/pages_at_scale.py --sizes 10000 --backends sqlite,postgresql
    python benchmarks/pages_at_scale.py --sizes 10000 --before 1969717
    python benchmarks/pages_at_scale.py --sizes 100000 --build-only      # build time and size only
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_ROOT = Path(os.environ.get("OBJREL_BENCH_CODE_ROOT") or ROOT).resolve()
SYNTHETIC = ROOT / "benchmarks" / "synthetic_store.py"
PAGES = ("overview", "my_work", "explore", "review", "agreement", "runs", "inspect", "shortcut", "users")
DEFAULT_SIZES = (10_000, 100_000, 1_000_000)
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "pages_at_scale.json"
BENCH_ACCOUNT = "bench"       # synthetic_store.BENCH_ACCOUNT: every role
DEFAULT_PAGE = "overview"     # app.py's default page

# The targets of issue 39 (at TARGET_SIZE samples, on a quiet 2-core machine).
TARGET_SIZE = 1_000_000
TARGET_WARM_S = 1.0
TARGET_COLD_S = 3.0
TARGET_GROWTH = 2.0           # warm at the largest size / warm at the smallest
TARGET_RSS_MB = 600.0
GROWTH_FLOOR_S = 0.1          # warm times both under this pass the growth target whatever their ratio
# Seconds a worker process may take beyond its script runs' timeouts (starting Python, importing Streamlit).
WORKER_SLACK_S = 120
MARK = "@@R "


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def say(msg: str) -> None:
    print(msg, flush=True)


# ---------------------------------------------------------------- the page worker (a fresh process per page)


def process_rss_mb(pid: int) -> float | None:
    """The resident memory of process ``pid`` and its children in MB (None once it is gone)."""
    total, found = 0.0, False
    for p in [pid, *_children(pid)]:
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) / 1024.0
                        found = True
        except OSError:
            continue
    return total if found else None


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def memory_mb() -> tuple[float, float]:
    """(peak RSS, RSS) of this process in MB, from /proc/self/status."""
    vals = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmHWM:", "VmRSS:")):
                vals[line.split(":")[0]] = int(line.split()[1]) / 1024.0
    return vals.get("VmHWM", 0.0), vals.get("VmRSS", 0.0)


def emit(**rec) -> None:
    sys.stdout.write(MARK + json.dumps(rec) + "\n")
    sys.stdout.flush()


def _first_line(text) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else ""


def page_worker(page: str, runs: int, timeout: float) -> None:
    """Render pages/<page>.py through app.py ``runs`` times in this process, reporting each run on stdout."""
    sys.path.insert(0, str(CODE_ROOT))
    import importlib.util

    t = time.perf_counter()
    from streamlit.testing.v1 import AppTest

    spec = importlib.util.find_spec("objrel")     # where objrel will come from, without importing it yet
    emit(stage="import", s=time.perf_counter() - t, objrel=str(Path(spec.origin).resolve().parent))
    at = AppTest.from_file(str(CODE_ROOT / "app.py"), default_timeout=timeout)
    at.session_state["reviewer"] = BENCH_ACCOUNT
    target = (CODE_ROOT / "pages" / f"{page}.py").resolve()
    if page != DEFAULT_PAGE:     # the default page is what a visitor opening the app's address gets
        at.switch_page(f"pages/{page}.py")
    for i in range(runs):
        t = time.perf_counter()
        try:
            at.run(timeout=timeout)
        except RuntimeError as exc:
            if "timed out" not in str(exc):
                raise
            hwm, rss = memory_mb()
            emit(stage="timeout", i=i, s=time.perf_counter() - t, hwm_mb=hwm, rss_mb=rss)
            return
        s = time.perf_counter() - t
        hwm, rss = memory_mb()
        ran = None
        with contextlib.suppress(Exception):
            info = at._registered_pages.get(at._finished_page_script_hash) or {}
            ran = str(Path(info["script_path"]).resolve()) if info.get("script_path") else None
        emit(stage="run", i=i, s=s, hwm_mb=hwm, rss_mb=rss,
             exceptions=[_first_line(e.message) for e in at.exception],
             errors=[_first_line(e.value) for e in at.error],
             titles=[str(x.value) for x in at.title], page_ok=ran is None or ran == str(target), ran=ran)


def worker_main(args) -> int:
    try:
        page_worker(args.worker, 1 if args.mode == "first" else 1 + args.warm, args.page_timeout)
    except BaseException as exc:  # reported, then the process ends without waiting for the script's thread
        emit(stage="crash", error=f"{type(exc).__name__}: {_first_line(exc)}")
    sys.stdout.flush()
    os._exit(0)


# ---------------------------------------------------------------- code versions and stores


@dataclass
class Version:
    name: str            # "now" or "before"
    root: Path
    rev: str
    head: str = ""       # its schema's Alembic head

    def env(self, **extra) -> dict:
        env = {**os.environ, "OBJREL_BENCH_CODE_ROOT": str(self.root), "PYTHONPATH": str(self.root)}
        env.update(extra)
        return env


def schema_head(v: Version) -> str:
    out = subprocess.run([sys.executable, "-c", "from objrel.store.revisions import head; print(head())"],
                         cwd=v.root, env=v.env(), capture_output=True, text=True, check=True)
    return out.stdout.strip()


class StoreHandle:
    """One built store: its URL, a copy of it as built (for first views), and whether a view changed it."""

    def __init__(self, backend: str, url: str, admin_url: str | None = None, path: Path | None = None):
        self.backend, self.url, self.admin_url, self.path = backend, url, admin_url, path
        self.pristine = None
        self.built_fp = None
        self.restores = 0

    # --- fingerprints: SQLite files' sizes and times; PostgreSQL's row counters of the store's tables
    def fingerprint(self):
        if self.backend == "sqlite":
            out = []
            for p in (self.path, Path(f"{self.path}-wal")):
                st = p.stat() if p.exists() else None
                out.append((st.st_size, st.st_mtime_ns) if st and st.st_size else None)
            return tuple(out)
        from sqlalchemy import create_engine, text

        time.sleep(0.3)    # a backend that just ended flushes its counters on exit
        eng = create_engine(self.url)
        try:
            with eng.connect() as c:
                return tuple(c.execute(text(
                    "select relname, n_tup_ins, n_tup_upd, n_tup_del from pg_stat_user_tables order by relname")))
        finally:
            eng.dispose()

    def changed(self) -> bool:
        return self.built_fp is not None and self.fingerprint() != self.built_fp

    def keep_pristine(self) -> None:
        """Keep a copy of the store as built, for first views."""
        if self.backend == "sqlite":
            self.pristine = Path(f"{self.path}.pristine")
            shutil.copyfile(self.path, self.pristine)
        else:
            self.pristine = f"{self.dbname}_pristine"
            self._admin(f'CREATE DATABASE "{self.pristine}" TEMPLATE "{self.dbname}"')
        self.built_fp = self.fingerprint()

    def restore(self) -> None:
        """Put the store back as it was built (after a view wrote to it)."""
        if self.backend == "sqlite":
            for p in self._sidecars():
                p.unlink(missing_ok=True)
            shutil.copyfile(self.pristine, self.path)
        else:
            self._admin(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')
            self._admin(f'CREATE DATABASE "{self.dbname}" TEMPLATE "{self.pristine}"')
        self.restores += 1
        self.built_fp = self.fingerprint()

    @property
    def dbname(self) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.url).database

    def _admin(self, sql: str) -> None:
        from sqlalchemy import create_engine, text

        eng = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with eng.connect() as c:
                c.execute(text(sql))
        finally:
            eng.dispose()

    def create_empty(self) -> None:
        if self.backend == "postgresql":
            self._admin(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')
            self._admin(f'CREATE DATABASE "{self.dbname}"')
        else:
            for p in [self.path, *self._sidecars()]:
                p.unlink(missing_ok=True)

    def _sidecars(self) -> list[Path]:
        """SQLite's -wal and -shm files and any other file objrel keeps beside the store (name-suffix)."""
        return [p for p in self.path.parent.glob(f"{self.path.name}-*") if p.is_file()]

    def drop(self) -> None:
        if self.backend == "postgresql":
            self._admin(f'DROP DATABASE IF EXISTS "{self.dbname}" WITH (FORCE)')
            if self.pristine:
                self._admin(f'DROP DATABASE IF EXISTS "{self.pristine}" WITH (FORCE)')
        else:
            for p in [self.path, *self._sidecars(), self.pristine]:
                if p:
                    Path(p).unlink(missing_ok=True)


def stream_subprocess(cmd, cwd, env, prefix: str, timeout: float | None = None) -> tuple[int, list[str]]:
    """Run ``cmd``, echoing its output lines with ``prefix``; returns (exit status, lines)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    lines: list[str] = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        if not line.startswith("@@"):
            say(f"{prefix}{line.rstrip()}")
    return proc.wait(timeout=timeout), lines


def build_store(handle: StoreHandle, size: int, v: Version) -> dict:
    handle.create_empty()
    cmd = [sys.executable, str(SYNTHETIC), "build", "--url", handle.url, "--n", str(size), "--json"]
    rc, lines = stream_subprocess(cmd, v.root, v.env(), "    ")
    if rc != 0:
        raise RuntimeError(f"building the {size:,}-sample {handle.backend} store with the {v.name} code failed "
                           f"(exit status {rc})")
    info = json.loads(next(ln for ln in lines if ln.startswith("@@BUILD "))[len("@@BUILD "):])
    say(f"  built {handle.backend} store of {size:,} samples ({v.name} code, schema {info['schema_head']}): "
        f"{info['seconds']['total']:.1f} s (load {info['seconds']['load_flagged'] + info['seconds']['load_rest']:.1f}"
        f" s, review day {info['seconds']['review']:.1f} s, finish {info['seconds']['finish']:.1f} s), "
        f"{sum(info['rows'].values()):,} rows, {info['bytes'] / 2**20:,.0f} MB")
    return info


def shape_check(handle: StoreHandle, v: Version, workdir: Path) -> dict:
    code = ("import json, sys, pathlib; sys.path.insert(0, sys.argv[3]); import synthetic_store as s; "
            "r = s.shape_check(sys.argv[1], pathlib.Path(sys.argv[2])); print('@@SHAPE ' + json.dumps(r))")
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        rc, lines = stream_subprocess([sys.executable, "-c", code, handle.url, tmp, str(SYNTHETIC.parent)], v.root,
                                      v.env(), "    ")
    found = [ln for ln in lines if ln.startswith("@@SHAPE ")]
    if rc != 0 or not found:
        return {"ok": False, "differences": [f"the shape check did not finish (exit status {rc})"], "unchecked": []}
    return json.loads(found[0][len("@@SHAPE "):])


# ---------------------------------------------------------------- one page in one fresh process


@dataclass
class Render:
    backend: str
    size: int
    version: str
    page: str
    mode: str                      # first | cold (cold includes the warm runs)
    runs: list[dict] = field(default_factory=list)
    import_s: float | None = None
    timed_out: int | None = None   # index of the run that timed out (or was killed for its memory)
    timeout_rec: dict | None = None
    killed_mb: float | None = None  # RSS at which the process was killed (--rss-limit-mb)
    crash: str | None = None
    wrote: bool | None = None      # whether the process changed the store
    objrel_path: str | None = None
    load: float | None = None

    @property
    def first_s(self) -> float | None:
        return self.runs[0]["s"] if self.runs else None

    @property
    def warm(self) -> list[float]:
        return [r["s"] for r in self.runs[1:]]

    @property
    def warm_median_s(self) -> float | None:
        return statistics.median(self.warm) if self.warm else None

    @property
    def hwm_mb(self) -> float | None:
        vals = [r["hwm_mb"] for r in self.runs] + ([self.timeout_rec["hwm_mb"]] if self.timeout_rec else [])
        vals += [self.killed_mb] if self.killed_mb is not None else []
        return max(vals) if vals else None

    @property
    def rss_mb(self) -> float | None:
        return self.runs[-1]["rss_mb"] if self.runs else None

    @property
    def exceptions(self) -> list[str]:
        return sorted({e for r in self.runs for e in r["exceptions"]})

    @property
    def errors(self) -> list[str]:
        return sorted({e for r in self.runs for e in r["errors"]})

    def to_dict(self) -> dict:
        return {"backend": self.backend, "size": self.size, "version": self.version, "page": self.page,
                "mode": self.mode, "seconds": [r["s"] for r in self.runs], "first_run_s": self.first_s,
                "warm_median_s": self.warm_median_s if self.mode == "cold" else None,
                "peak_rss_mb": self.hwm_mb, "rss_mb": self.rss_mb, "import_s": self.import_s,
                "timed_out_run": self.timed_out, "killed_at_rss_mb": self.killed_mb, "crash": self.crash,
                "exceptions": self.exceptions,
                "errors": self.errors, "store_written": self.wrote, "objrel": self.objrel_path,
                "load_avg_1m": self.load, "titles": self.runs[0]["titles"] if self.runs else None,
                "page_reached": all(r.get("page_ok", True) for r in self.runs)}


def render(v: Version, handle: StoreHandle, size: int, page: str, mode: str, args, empty_dir: Path) -> Render:
    rec = Render(handle.backend, size, v.name, page, mode, load=os.getloadavg()[0])
    runs = 1 if mode == "first" else 1 + args.warm
    env = v.env(OBJREL_STORE=handle.url, OBJREL_LIME_AHEAD="0", OBJREL_INSPECT_DIR=str(empty_dir / "inspect"),
                OBJREL_SHORTCUT_DIR=str(empty_dir / "shortcut"))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", page, "--mode", mode, "--warm", str(args.warm),
           "--page-timeout", str(args.page_timeout)]
    log = empty_dir / f"worker-{handle.backend}-{size}-{v.name}-{page}-{mode}.log"
    with open(log, "w") as err:
        proc = subprocess.Popen(cmd, cwd=v.root, env=env, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
        reader.start()
        deadline = time.monotonic() + runs * args.page_timeout + WORKER_SLACK_S
        while proc.poll() is None:
            rss = process_rss_mb(proc.pid)
            if rss is not None and rss > args.rss_limit_mb:
                os.killpg(proc.pid, signal.SIGKILL)
                rec.killed_mb = rss
            elif time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                rec.crash = "the worker process outlived its time limit and was killed"
            else:
                time.sleep(0.25)
                continue
            proc.wait()
        reader.join(timeout=10)
    for line in lines:
        if not line.startswith(MARK):
            continue
        r = json.loads(line[len(MARK):])
        if r["stage"] == "import":
            rec.import_s, rec.objrel_path = r["s"], r["objrel"]
        elif r["stage"] == "run":
            rec.runs.append(r)
        elif r["stage"] == "timeout":
            rec.timed_out, rec.timeout_rec = r["i"], r
        elif r["stage"] == "crash":
            rec.crash = r["error"]
    if rec.killed_mb is not None:
        rec.timed_out = len(rec.runs)     # the run in progress did not finish
    elif rec.timed_out is None and not rec.crash and len(rec.runs) < runs:
        tail = [ln for ln in log.read_text(errors="replace").splitlines() if "ScriptRunContext" not in ln][-3:]
        rec.crash = (f"the worker ended after {len(rec.runs)} of {runs} runs (exit status {proc.returncode}): "
                     + " / ".join(tail))
    if rec.objrel_path and Path(rec.objrel_path) != (v.root / "objrel").resolve():
        rec.crash = f"the worker imported objrel from {rec.objrel_path}, not from {v.root}"
    return rec


def describe(rec: Render, timeout: float) -> str:
    def s(x):
        return f"{x:.2f}" if x is not None else "-"

    def secs(x):
        txt = fmt_s(x, timeout)
        return txt if x != x else f"{txt} s"

    if rec.mode == "first":
        txt = f"first {secs(cell_values(rec, timeout)[0])}"
    else:
        cold, warm = (secs(x) for x in cell_values(rec, timeout)[:2])
        txt = f"cold {cold}, warm {warm} ({', '.join(s(x) for x in rec.warm)})"
    txt += f", peak RSS {rec.hwm_mb or 0:.0f} MB"
    if rec.killed_mb is not None:
        txt += f" (ended: memory past --rss-limit-mb at {rec.killed_mb:,.0f} MB)"
    if rec.wrote:
        txt += ", wrote to the store"
    return txt


# ---------------------------------------------------------------- tables


def cell_values(rec: Render | None, timeout: float):
    """(cold, warm) seconds with None for not reached and inf for timed out, and peak RSS."""
    if rec is None:
        return None, None, None
    inf = float("nan") if rec.killed_mb is not None else float("inf")    # nan: ended for its memory
    cold = inf if rec.timed_out == 0 else rec.first_s
    if rec.timed_out == 0:
        warm = None                       # not reached
    elif rec.timed_out is not None:
        warm = inf
    else:
        warm = rec.warm_median_s
    return cold, warm, rec.hwm_mb


def fmt_s(x, timeout) -> str:
    if x is None:
        return "-"
    if x != x:
        return "ended (memory)"
    if x == float("inf"):
        return f"> {timeout:g}"
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def cell(rec: Render | None, timeout: float) -> str:
    if rec is None:
        return "n/a"
    cold, warm, rss = cell_values(rec, timeout)
    fails = []
    if not (cold is not None and cold <= TARGET_COLD_S):
        fails.append("cold")
    if not (warm is not None and warm <= TARGET_WARM_S):
        fails.append("warm")
    if not (rss is not None and rss <= TARGET_RSS_MB):
        fails.append("RSS")
    txt = f"{fmt_s(cold, timeout)} / {fmt_s(warm, timeout)} / {rss or 0:,.0f}"
    txt += " ok" if not fails else " ✗ " + ",".join(fails)
    if rec.killed_mb is not None:
        txt += f" (ended at {rec.killed_mb:,.0f} MB)"
    if rec.exceptions or rec.crash:
        txt += " EXC"
    return txt


def table(headers: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def find(renders, backend, size, version, page, mode="cold"):
    for r in renders:
        if (r.backend, r.size, r.version, r.page, r.mode) == (backend, size, version, page, mode):
            return r
    return None


def growth(renders, backend, version, page, sizes, timeout):
    lo, hi = find(renders, backend, sizes[0], version, page), find(renders, backend, sizes[-1], version, page)
    if lo is None or hi is None or len(sizes) < 2:
        return None
    w_lo, w_hi = cell_values(lo, timeout)[1], cell_values(hi, timeout)[1]
    if w_lo is None or w_hi is None or w_lo == float("inf") or w_lo == 0:
        return None
    return w_hi / w_lo


def growth_pass(renders, backend, version, page, sizes, timeout) -> bool | None:
    """The growth target: warm at the largest size within TARGET_GROWTH x warm at the smallest, or both under
    GROWTH_FLOOR_S (a ratio of two timer-noise figures says nothing); None with one size."""
    if len(sizes) < 2:
        return None
    g = growth(renders, backend, version, page, sizes, timeout)
    hi = cell_values(find(renders, backend, sizes[-1], version, page), timeout)[1]
    return g is not None and (g <= TARGET_GROWTH or (hi is not None and hi <= GROWTH_FLOOR_S))


def targets(renders, backend, version, pages, sizes, timeout) -> dict:
    big = sizes[-1]
    res = {"size": big, "target_size": TARGET_SIZE, "warm": {}, "cold": {}, "rss": {}, "growth": {}}
    for page in pages:
        rec = find(renders, backend, big, version, page)
        cold, warm, _ = cell_values(rec, timeout)
        res["warm"][page] = {"s": warm, "pass": warm is not None and warm <= TARGET_WARM_S}
        res["cold"][page] = {"s": cold, "pass": cold is not None and cold <= TARGET_COLD_S}
        peaks = [cell_values(find(renders, backend, n, version, page), timeout)[2] for n in sizes]
        peak = max((p for p in peaks if p is not None), default=None)
        res["rss"][page] = {"mb": peak, "pass": peak is not None and peak <= TARGET_RSS_MB}
        g = growth(renders, backend, version, page, sizes, timeout)
        res["growth"][page] = {"ratio": g, "pass": growth_pass(renders, backend, version, page, sizes, timeout)}
    return res


def print_report(renders, builds, pages, sizes, backends, versions, timeout) -> dict:
    summary = {}
    for backend in backends:
        for v in versions:
            say(f"\n### {backend}, {v.name} code ({v.rev}): cold / warm s / peak RSS MB")
            rows = [[page] + [cell(find(renders, backend, n, v.name, page), timeout) for n in sizes]
                    + [_growth_txt(growth(renders, backend, v.name, page, sizes, timeout),
                                   growth_pass(renders, backend, v.name, page, sizes, timeout))]
                    for page in pages]
            say(table(["page"] + [f"{n:,}" for n in sizes] + [f"warm {sizes[-1]:,} / {sizes[0]:,}"], rows))
            firsts = [[page] + [_first_txt(find(renders, backend, n, v.name, page, "first"),
                                           find(renders, backend, n, v.name, page), timeout) for n in sizes]
                      for page in pages]
            if any(find(renders, backend, n, v.name, p, "first") for n in sizes for p in pages):
                say(f"\nfirst view of each page on a store no page had viewed ({backend}, {v.name} code): s, "
                    "and whether the views wrote to the store")
                say(table(["page"] + [f"{n:,}" for n in sizes], firsts))
            t = targets(renders, backend, v.name, pages, sizes, timeout)
            summary[f"{backend}/{v.name}"] = t
            say(_targets_txt(t, sizes, timeout))
        if len(versions) > 1:
            say(f"\n### {backend}: before ({versions[1].rev}) | now ({versions[0].rev}), cold / warm s / peak RSS MB")
            headers, rows = ["page"], []
            for n in sizes:
                headers += [f"{n:,} before", f"{n:,} now"]
            for page in pages:
                row = [page]
                for n in sizes:
                    row += [cell(find(renders, backend, n, versions[1].name, page), timeout),
                            cell(find(renders, backend, n, versions[0].name, page), timeout)]
                rows.append(row)
            say(table(headers, rows))
    failures = [r for r in renders if r.exceptions or r.crash or not all(x.get("page_ok", True) for x in r.runs)]
    say("\n### failures")
    if not failures:
        say("none: no page raised, crashed or showed another page")
    for r in failures:
        what = "; ".join(r.exceptions) or r.crash or f"showed {r.runs[0].get('ran')}"
        say(f"- {r.page} ({r.backend}, {r.size:,}, {r.version} code, {r.mode}): {what}")
    errors = [r for r in renders if r.errors]
    for r in errors:
        say(f"- (st.error shown) {r.page} ({r.backend}, {r.size:,}, {r.version}, {r.mode}): {'; '.join(r.errors)}")
    return summary


def _growth_txt(g, passed) -> str:
    if passed is None:
        return "n/a (one size)"
    if g is None:
        return "- ✗"
    return f"x{g:.2f}" + (" ok" if passed else " ✗")


def _first_txt(first: Render | None, cold: Render | None, timeout) -> str:
    if first is None:
        return "-"
    s = fmt_s(cell_values(first, timeout)[0], timeout)
    notes = []
    if first.wrote:
        notes.append("wrote")
    if cold is not None and cold.wrote:
        notes.append("cold wrote")
    return s + (f" ({', '.join(notes)})" if notes else "")


def _targets_txt(t, sizes, timeout) -> str:
    lines = [f"targets ({'at' if t['size'] == TARGET_SIZE else 'set for'} {TARGET_SIZE:,} samples; "
             f"measured here at {t['size']:,}):"]

    def block(name, key, label, fmt):
        bad = {p: x for p, x in t[key].items() if not x["pass"]}
        lines.append(f"  {label}: {'pass' if not bad else 'FAIL'}, {len(t[key]) - len(bad)} of {len(t[key])} pages "
                     "pass" + ("; failing: " + ", ".join(f"{p} {fmt(x)}" for p, x in bad.items()) if bad else ""))

    block("warm", "warm", f"warm <= {TARGET_WARM_S:g} s",
          lambda x: "not reached" if x["s"] is None else fmt_s(x["s"], timeout))
    block("cold", "cold", f"cold <= {TARGET_COLD_S:g} s", lambda x: fmt_s(x["s"], timeout))
    if len(sizes) > 1:
        block("growth", "growth", f"warm at {sizes[-1]:,} within {TARGET_GROWTH:g}x of warm at {sizes[0]:,}",
              lambda x: "-" if x["ratio"] is None else f"x{x['ratio']:.2f}")
    else:
        lines.append("  warm growth: not measured (one size)")
    block("rss", "rss", f"peak RSS <= {TARGET_RSS_MB:g} MB at every size", lambda x: f"{x['mb'] or 0:,.0f} MB")
    return "\n".join(lines)


# ---------------------------------------------------------------- the whole benchmark


@contextlib.contextmanager
def backend_server(backend: str):
    """(admin URL or None) of a throwaway PostgreSQL server, or None for SQLite."""
    if backend == "sqlite":
        yield None
        return
    sys.path.insert(0, str(ROOT))
    from tests.fixtures.pg_server import postgres_server

    with postgres_server() as url:
        yield url


def handle_for(backend: str, admin: str | None, size: int, head: str, workdir: Path) -> StoreHandle:
    if backend == "sqlite":
        path = workdir / f"pages-{size}-{head}.db"
        return StoreHandle("sqlite", f"sqlite:///{path}", path=path)
    from sqlalchemy.engine import make_url

    url = make_url(admin).set(database=f"objrel_{size}_{head}").render_as_string(hide_password=False)
    return StoreHandle("postgresql", url, admin_url=admin)


def git(*args, cwd=ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def run_benchmark(args) -> int:
    sizes = sorted(int(s.replace("_", "").replace(",", "")) for s in args.sizes.split(","))
    backends = [b.strip() for b in args.backends.split(",")]
    pages = [p.strip() for p in args.pages.split(",")] if args.pages else list(PAGES)
    for b in backends:
        if b not in ("sqlite", "postgresql"):
            raise SystemExit(f"unknown back end {b!r}; expected sqlite and/or postgresql")
    for p in pages:
        if p not in PAGES:
            raise SystemExit(f"unknown page {p!r}; expected some of {', '.join(PAGES)}")
    tmp_root = Path(tempfile.mkdtemp(prefix="objrel-pages-", dir=args.workdir))
    versions = [Version("now", ROOT, git("rev-parse", "--short", "HEAD") + ("+changes" if git("status", "--porcelain",
                                                                                               "--untracked-files=no")
                                                                               else ""))]
    worktree = None
    try:
        if args.before:
            worktree = tmp_root / "before"
            git("worktree", "add", "--detach", str(worktree), args.before)
            versions.append(Version("before", worktree, git("rev-parse", "--short", args.before)))
        for v in versions:
            v.head = schema_head(v)
        say(f"pages_at_scale: sizes {', '.join(f'{n:,}' for n in sizes)}; back ends {', '.join(backends)}; "
            f"pages {', '.join(pages)}; " + "; ".join(f"{v.name} code {v.rev} (schema {v.head})" for v in versions)
            + f"; page timeout {args.page_timeout:g} s; load average {os.getloadavg()[0]:.2f}")
        if len(versions) > 1 and versions[0].head != versions[1].head:
            say(f"the schemas differ ({versions[1].head} before, {versions[0].head} now): each code gets its own "
                "store, built by its own Store with the same rows")
        renders: list[Render] = []
        builds, shape = [], None
        empty = tmp_root / "empty"
        (empty / "inspect").mkdir(parents=True)
        (empty / "shortcut").mkdir(parents=True)
        for backend in backends:
            with backend_server(backend) as admin:
                for size in sizes:
                    say(f"\n== {backend}, {size:,} samples")
                    stores: dict[str, StoreHandle] = {}
                    try:
                        for v in versions:
                            if v.head in stores:
                                continue
                            h = handle_for(backend, admin, size, v.head, tmp_root)
                            stores[v.head] = h
                            info = build_store(h, size, v)
                            builds.append({"backend": backend, "size": size, "version": v.name, **info})
                            if not (args.no_first or args.build_only):
                                h.keep_pristine()
                        if size == sizes[0] and not args.no_shape_check:
                            res = shape_check(stores[versions[0].head], versions[0], tmp_root)
                            shape = shape or {}
                            shape[backend] = res
                            say("  shape check: ok" if res["ok"] else
                                "  shape check: differences\n    " + "\n    ".join(res["differences"]))
                            for u in res["unchecked"]:
                                say(f"    (unchecked) {u}")
                        for page in [] if args.build_only else pages:
                            for v in versions:
                                h = stores[v.head]
                                modes = ["cold"] if args.no_first else ["first", "cold"]
                                for mode in modes:
                                    if mode == "first" and h.changed():
                                        h.restore()
                                    before = h.fingerprint()
                                    rec = render(v, h, size, page, mode, args, empty)
                                    rec.wrote = h.fingerprint() != before
                                    renders.append(rec)
                                    say(f"  {page:<10} {v.name:<6} {describe(rec, args.page_timeout)}"
                                        + (f"  EXCEPTION {'; '.join(rec.exceptions)}" if rec.exceptions else "")
                                        + (f"  CRASH {rec.crash}" if rec.crash else ""))
                    finally:
                        if not args.keep:
                            for h in stores.values():
                                with contextlib.suppress(Exception):
                                    h.drop()
        summary = {} if args.build_only else print_report(renders, builds, pages, sizes, backends, versions,
                                                          args.page_timeout)
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({
            "meta": {"finished_at": now_iso(), "argv": sys.argv[1:], "sizes": sizes, "backends": backends,
                     "pages": pages, "page_timeout_s": args.page_timeout, "warm_runs": args.warm,
                     "versions": [{"name": v.name, "rev": v.rev, "schema_head": v.head} for v in versions],
                     "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                 "load_avg_end": os.getloadavg()},
                     "targets": {"size": TARGET_SIZE, "warm_s": TARGET_WARM_S, "cold_s": TARGET_COLD_S,
                                 "growth": TARGET_GROWTH, "rss_mb": TARGET_RSS_MB}},
            "builds": builds, "shape_check": shape, "renders": [r.to_dict() for r in renders],
            "targets": summary}, indent=1))
        say(f"\nfigures written to {out}")
        return 1 if any(r.exceptions or r.crash for r in renders) else 0
    finally:
        if worktree is not None:
            with contextlib.suppress(Exception):
                git("worktree", "remove", "--force", str(worktree))
        if not args.keep:
            shutil.rmtree(tmp_root, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=",".join(str(n) for n in DEFAULT_SIZES),
                    help="tested samples per store, comma-separated (default 10000,100000,1000000)")
    ap.add_argument("--backends", default="sqlite,postgresql", help="sqlite and/or postgresql (default both)")
    ap.add_argument("--pages", default=None, help=f"pages to render (default all: {','.join(PAGES)})")
    ap.add_argument("--warm", type=int, default=3, help="warm runs per page after the cold one (default 3)")
    ap.add_argument("--page-timeout", type=float, default=300.0,
                    help="seconds one script run may take before it is recorded as '> T s' (default 300)")
    ap.add_argument("--rss-limit-mb", type=float, default=8000.0,
                    help="end a page's process whose memory passes this many MB (default 8000: the machine is shared)")
    ap.add_argument("--before", default=None, metavar="REV", help="also render with the code of commit REV")
    ap.add_argument("--workdir", default=None, help="folder for the SQLite stores and logs (default: a temp folder)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help=f"JSON results file (default {DEFAULT_OUT})")
    ap.add_argument("--no-first", action="store_true",
                    help="skip the first views (no pristine copies of the stores are kept)")
    ap.add_argument("--no-shape-check", action="store_true", help="skip the comparison with a real engine run")
    ap.add_argument("--keep", action="store_true", help="keep the stores and worker logs")
    ap.add_argument("--build-only", action="store_true", help="build the stores (and check their shape) only")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="cold", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker_main(args)
    return run_benchmark(args)


if __name__ == "__main__":
    sys.exit(main())
