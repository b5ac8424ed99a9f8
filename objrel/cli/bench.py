"""Benchmarks with a planted ground truth: ``objrel bench shortcut``.

    objrel bench shortcut [--quick] [--seeds N] [--out DIR] [--threads N] [--quiet]
"""

from __future__ import annotations

import argparse

from objrel.studies.shortcut.bench import add_arguments, handle


def add_bench_command(subparsers) -> argparse.ArgumentParser:
    """Add ``bench`` with its ``shortcut`` sub-command; returns the ``bench`` parser."""
    bench = subparsers.add_parser("bench", help="benchmarks with planted ground truth (`objrel bench shortcut`)")
    kinds = bench.add_subparsers(dest="bench", required=True)
    p = kinds.add_parser(
        "shortcut",
        help="planted-shortcut benchmark: biased vs unbiased CNNs, precision/recall of MR-1/MR-2 against "
             "counterfactual ground truth, repair by retraining, guided vs random transplanting attacks",
    )
    add_arguments(p)
    p.set_defaults(fn=handle)
    return bench
