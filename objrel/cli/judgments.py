"""``objrel judgments``: the reviewers' calls, by the server operator (who needs no sign-in).

    objrel judgments export --store var/demo.db                       (CSV of every call, to standard output)
    objrel judgments export --run 1 --run 3 --relation MR-2 --format json --out calls.json
    objrel judgments export --shape wide --out wide.csv                  (one row per item, a column per reviewer)

One row per item and reviewer (run, relation, item, file, call, reasons, note, validity, time, version) with
the item's adjudication; the app's Agreement page offers the same export to the signed-in account.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from objrel.access import SERVER
from objrel.cli.common import add_store_option
from objrel.review import export
from objrel.review.judgments import RELATIONS
from objrel.store import Store


def cmd_export(args) -> int:
    """``objrel judgments export``: write the reviewers' calls as CSV or JSON to a file or stdout."""
    rows = export.judgment_export(SERVER, Store(args.store), run_ids=args.run, relation=args.relation)
    text = export.export_text(rows, args.format, args.shape)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8", newline="")
        print(f"{len(rows)} calls written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def add_judgments_commands(subparsers) -> argparse.ArgumentParser:
    """Add ``judgments`` with ``export``; returns its parser."""
    p = subparsers.add_parser("judgments", help="the reviewers' calls (export as CSV or JSON)")
    sub = p.add_subparsers(dest="judgments_command", required=True)
    q = sub.add_parser("export", help="one row per item and reviewer, with the adjudication")
    add_store_option(q)
    q.add_argument("--run", type=int, action="append", default=None, metavar="N",
                   help="a run to export (repeat for several; default: every run with judgments)")
    q.add_argument("--relation", choices=RELATIONS, default=None, help="one relation (default: both)")
    q.add_argument("--format", choices=export.EXPORT_FORMATS, default="csv", help="csv (default) or json")
    q.add_argument("--shape", choices=export.EXPORT_SHAPES, default="calls",
                   help="calls (default: every column of each call), long (run, relation, item, reviewer, call) "
                        "or wide (one row per item, a column per reviewer; for Fleiss' kappa, Krippendorff's alpha)")
    q.add_argument("--out", default=None, metavar="FILE", help="write to FILE instead of standard output")
    q.set_defaults(fn=cmd_export)
    return p
