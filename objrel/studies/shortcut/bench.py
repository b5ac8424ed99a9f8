"""``objrel bench shortcut``: the planted-shortcut benchmark, end to end.

This module is the command line only: the arms run in ``arms`` (what each seed does), their results are typed
in ``results`` (and written to ``OUT/results.json``, what the app's Shortcut page reads), the tables come from
``tables`` and the printed report from ``report``.  ``python -m objrel.studies.shortcut.bench`` runs the same
command (the app starts the quick benchmark that way, ``start_quick``).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from objrel.studies.shortcut.arms import run_bench
from objrel.studies.shortcut.config import DEFAULT_THREADS, BenchConfig
from objrel.studies.shortcut.report import report_text
from objrel.studies.shortcut.results import DEFAULT_OUT, RESULTS_FILE


def import_root() -> Path:
    """The folder that holds the ``objrel`` package (objrel/studies/shortcut/bench.py is three levels down)."""
    return Path(__file__).resolve().parents[3]


def start_quick(out):
    """Start ``objrel bench shortcut --quick --out OUT`` as a separate process (the app never trains in
    its script thread) and return its ``subprocess.Popen``; the caller reaps it.
    The app starts it through ``browse.start_quick_benchmark``, which asks the gate first."""
    import os
    import subprocess

    out = Path(out).resolve()      # the child writes where the page looks, whatever the child's cwd
    out.mkdir(parents=True, exist_ok=True)
    log = out / "quick.log"
    cmd = [sys.executable, "-m", "objrel.studies.shortcut.bench", "--quick", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(import_root()),
                                                                       os.environ.get("PYTHONPATH")]))}
    with open(log, "wb") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)


def config_from_args(args) -> BenchConfig:
    """The benchmark's sizes from the parsed options (``--quick``, ``--seeds``, ``--threads``)."""
    seeds = tuple(range(args.seeds)) if args.seeds else None
    if args.quick:
        cfg = BenchConfig.quick_config(seeds or (0,))
    else:
        cfg = BenchConfig(seeds=seeds or (0, 1, 2))
    if args.threads:
        cfg = replace(cfg, threads=args.threads)
    return cfg


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``objrel bench shortcut``."""
    p.add_argument("--quick", action="store_true", help="small and fast (one seed, 3 classes; for tests)")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds 0..N-1 (default 3; 1 with --quick)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    p.add_argument("--threads", type=int, default=None, help=f"torch threads (default {DEFAULT_THREADS})")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def handle(args) -> int:
    """Run the benchmark the options ask for, print its report and where its results file is."""
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    cfg = config_from_args(args)
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    results = run_bench(cfg, args.out, log)
    print(report_text(results.to_dict()))
    print(f"\nresults: {Path(args.out) / RESULTS_FILE}")
    return 0


def main(argv=None) -> int:
    """``python -m objrel.studies.shortcut.bench [options]``: the same command outside the ``objrel`` CLI."""
    p = argparse.ArgumentParser(prog="objrel bench shortcut", description=__doc__.splitlines()[0])
    add_arguments(p)
    return handle(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
