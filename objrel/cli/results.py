"""What is read back from a store: ``runs``, ``summary``, ``export`` and ``report``.

    objrel runs                           objrel summary 3
    objrel export 3 --format csv          objrel report 3

Light on purpose: listing runs loads no model library (no torch); the analysis modules are imported by the
command that needs them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from objrel.cli.common import add_store_option
from objrel.store import Store


def cmd_runs(args) -> int:
    """``objrel runs``: list the store's runs as a table or JSON."""
    runs = Store(args.store).list_runs()
    if args.json:
        print(json.dumps([r.to_dict() for r in runs], indent=2, default=str))
        return 0
    if not runs:
        print("no runs in this store; start one with `objrel run`")
        return 0
    print(f"{'id':>4}  {'status':<10} {'model':<22} {'dataset':<18} {'done':>11} {'skipped':>7}  created")
    for r in runs:
        print(f"{r.id:>4}  {r.status:<10} {r.model[:22]:<22} {r.dataset[:18]:<18} {r.n_done:>5}/{r.n_total:<5} "
              f"{r.n_skipped:>7}  {r.created_at:%Y-%m-%d %H:%M}")
    return 0


def cmd_summary(args) -> int:
    """``objrel summary``: print one run's counts and violation ratios as text or JSON."""
    from objrel.analysis.summary import summarize

    s = summarize(Store(args.store), args.run)
    if args.json:
        print(json.dumps(s.to_dict(), indent=2))
        return 0
    row = s.table_row()
    print(f"run {s.run_id}: {s.model} on {s.dataset}: {s.samples} samples, {s.skipped} skipped, "
          f"{s.evaluated} evaluated, {s.correct} correct")
    width = max(len(k) for k in row)
    for k, v in row.items():
        print(f"  {k:<{width}}  {v}")
    return 0


def cmd_export(args) -> int:
    """``objrel export``: write one run's results in the chosen format to a file or stdout."""
    from objrel.analysis.export import write_run

    store = Store(args.store)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as fh:
            n = write_run(store, args.run, fh, args.format)
        print(f"wrote {args.output} ({n} inferences)", file=sys.stderr)
    else:
        write_run(store, args.run, sys.stdout, args.format)
    return 0


def cmd_report(args) -> int:
    """``objrel report``: write one run's HTML report."""
    # imported here: the report's charts (plotly) add over a second to every command's start-up
    from objrel.analysis.report import build_report

    out = Path(args.output or f"objrel-run{args.run}.html")
    out.write_text(build_report(Store(args.store), args.run), encoding="utf-8")
    print(f"wrote {out}")
    return 0


def add_results_commands(subparsers) -> None:
    """Add ``runs``, ``summary``, ``export`` and ``report``."""
    p = subparsers.add_parser("runs", help="list the runs in a store")
    p.add_argument("--json", action="store_true")
    add_store_option(p)
    p.set_defaults(fn=cmd_runs)

    p = subparsers.add_parser("summary", help="accuracy and MR-1 / MR-2 / MR-1&2 counts (EMSE21 Tables 5-6)")
    p.add_argument("run", type=int)
    p.add_argument("--json", action="store_true")
    add_store_option(p)
    p.set_defaults(fn=cmd_summary)

    p = subparsers.add_parser("export", help="one row per tested inference")
    p.add_argument("run", type=int)
    p.add_argument("--format", choices=["csv", "json"], default="csv")
    p.add_argument("--output", "-o", help="file to write (default: standard output)")
    add_store_option(p)
    p.set_defaults(fn=cmd_export)

    p = subparsers.add_parser("report", help="one self-contained HTML report of a run (charts, precision, examples)")
    p.add_argument("run", type=int)
    p.add_argument("--output", "-o", help="HTML file to write (default objrel-runN.html)")
    add_store_option(p)
    p.set_defaults(fn=cmd_report)
