"""The ``objrel bench`` command group and its ``shortcut`` benchmark.

``objrel/cli.py`` registers it with one call in ``build_parser``::

    from objrel.cli.bench import add_bench_command
    add_bench_command(sub)

    objrel bench shortcut [--quick] [--seeds N] [--out DIR] [--threads N] [--quiet]
"""

from __future__ import annotations

import argparse


def cmd_bench_shortcut(args) -> int:
    from objrel.studies.shortcut.bench import handle

    return handle(args)


def add_bench_command(subparsers) -> argparse.ArgumentParser:
    """Add ``bench`` (with its ``shortcut`` sub-command) to an argparse sub-parser set; returns the ``bench``
    parser.  The handler is ``args.fn``, as for every other objrel command."""
    from objrel.studies.shortcut.bench import add_arguments

    bench = subparsers.add_parser("bench", help="benchmarks with planted ground truth (`objrel bench shortcut`)")
    kinds = bench.add_subparsers(dest="bench", required=True)
    p = kinds.add_parser(
        "shortcut",
        help="planted-shortcut benchmark: biased vs unbiased CNNs, precision/recall of MR-1/MR-2 against "
             "counterfactual ground truth, repair by retraining, guided vs random transplanting attacks",
    )
    add_arguments(p)
    p.set_defaults(fn=cmd_bench_shortcut)
    return bench
