"""``objrel explain-sample``: LIME for a run's review sample, ahead of the reviewers.

    objrel explain-sample --run 1 --relation MR-2 [--samples 300] [--background] [--store URL]

Explains every item of the stored review sample (the source and the relation's mutants) and caches the
results in the store, printing one line per image; the Review page then shows the overlays at once.
``--background`` starts the work in a separate low-priority process instead and returns (its progress is
on the Review page).  ``--job ID`` is how such a process is started (``objrel.review.lime_ahead``).
"""

from __future__ import annotations

import argparse
import sys

from objrel.access import SERVER
from objrel.cli.common import add_store_option
from objrel.store import Store


def cmd_explain_sample(args) -> int:
    """``objrel explain-sample``: compute LIME for a run's review sample, here or in a background job."""
    from objrel.review import lime_ahead

    if args.job:
        return lime_ahead.run_child(args.job, args.samples)
    if args.run is None or args.relation is None:
        raise ValueError("explain-sample needs --run and --relation (the review sample to explain)")
    store = Store(args.store)
    try:
        if args.background:
            status = lime_ahead.start_lime_job(SERVER, store, args.run, args.relation, args.samples)
        else:
            status = lime_ahead.explain_sample_now(SERVER, store, args.run, args.relation, args.samples,
                                                   log=sys.stderr)
    finally:
        store.dispose()
    print(f"run {args.run} {args.relation}: {status.text()}")
    return 1 if status.status == "failed" else 0


def add_explain_command(sub) -> None:
    """Add the ``explain-sample`` command to the subparsers ``sub``."""
    from objrel.review.lime_ahead import AHEAD_SAMPLES

    p = sub.add_parser("explain-sample", help="LIME for a run's review sample, cached ahead of the reviewers")
    p.add_argument("--run", type=int, help="the run whose review sample to explain")
    p.add_argument("--relation", choices=("MR-1", "MR-2"), help="the relation of the review sample")
    p.add_argument("--samples", type=int, default=AHEAD_SAMPLES,
                   help=f"LIME samples per image (default {AHEAD_SAMPLES}, what the Review page looks up)")
    p.add_argument("--background", action="store_true", help="start a background process and return")
    p.add_argument("--job", type=int, action="append", help=argparse.SUPPRESS)
    add_store_option(p)
    p.set_defaults(fn=cmd_explain_sample)

