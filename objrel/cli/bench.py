"""Benchmarks: the planted ground truth (``objrel bench shortcut``) and the real-model sanity row (``bggap``).

    objrel bench shortcut [--quick] [--seeds N] [--out DIR] [--threads N] [--quiet]
    objrel bench bggap [--dataset ANN.json --images DIR] [--models a,b,c] [--swaps K] [--seed N] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from objrel.studies.bggap import DEFAULT_MODELS, DEFAULT_OUT, DEFAULT_PLAN, DEFAULT_SEED, DEFAULT_SWAPS
from objrel.studies.shortcut.bench import add_arguments, handle


def add_bench_command(subparsers) -> argparse.ArgumentParser:
    """Add ``bench`` with its ``shortcut`` and ``bggap`` sub-commands; returns the ``bench`` parser."""
    bench = subparsers.add_parser("bench", help="benchmarks with planted ground truth (`objrel bench shortcut`) "
                                                "and a real-model sanity row (`objrel bench bggap`)")
    kinds = bench.add_subparsers(dest="bench", required=True)
    p = kinds.add_parser(
        "shortcut",
        help="planted-shortcut benchmark: biased vs unbiased CNNs, precision/recall of MR-1/MR-2 against "
             "counterfactual ground truth, repair by retraining, guided vs random transplanting attacks",
    )
    add_arguments(p)
    p.set_defaults(fn=handle)
    add_bggap_command(kinds)
    return bench


def add_bggap_command(kinds) -> argparse.ArgumentParser:
    """Add ``bench bggap``: objrel's MR-1/MR-2 rates beside the accuracy lost to background swaps, per model."""
    p = kinds.add_parser(
        "bggap",
        help="real-model sanity row: per model, objrel's MR-1/MR-2 rates (a colours3 run) beside the accuracy "
             "lost when each object is pasted on another photo's background (Mixed-Rand), and whether the two "
             "rank the models alike",
    )
    p.add_argument("--dataset", default="demo",
                   help="COCO-style annotation file with masks (default: demo, the bundled photos)")
    p.add_argument("--images", default=None, help="image folder of --dataset (default: the annotation's folder)")
    models = ",".join(DEFAULT_MODELS)
    p.add_argument("--models", default=models, help=f"comma-separated model names (default {models})")
    p.add_argument("--swaps", type=int, default=DEFAULT_SWAPS,
                   help=f"background swaps per image (default {DEFAULT_SWAPS})")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"seed of the runs and of the donor draws (default {DEFAULT_SEED})")
    p.add_argument("--plan", default=DEFAULT_PLAN, help=f"objrel plan of the runs (default {DEFAULT_PLAN})")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"folder of the store and results.json (default {DEFAULT_OUT})")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=handle_bggap)
    return p


def handle_bggap(args) -> int:
    """Run ``bench bggap`` and print its table."""
    from objrel.studies import bggap

    models = tuple(m.strip() for m in args.models.split(",") if m.strip())
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    result = bggap.run_bggap(models=models, dataset=args.dataset, images=args.images, out=args.out,
                             swaps=args.swaps, seed=args.seed, plan=args.plan, log=log)
    print(result.table())
    print(f"\nruns in {result.store}; results in {Path(args.out) / bggap.RESULTS_FILE} ({result.seconds:.1f} s)")
    return 0
