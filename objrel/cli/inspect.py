"""``objrel inspect``: class-level confusion and bias (DeepInspect, DeepInspect s3-4).

    objrel inspect --model torchvision:resnet18 --weights r18.pt --dataset ann.json --out var/inspect/r18.json
    objrel inspect --planted --out var/inspect/planted.json       (the synthetic benchmark; prints the ranks)
"""

from __future__ import annotations

import argparse
import sys

from objrel.cli.common import comma_list, progress_bar
from objrel.data import load_dataset
from objrel.models import DEFAULT_MODEL, load_classifier
from objrel.studies.deepinspect import bias_table, confusion_table, inspect_dataset
from objrel.studies.deepinspect.constants import ACTIVATION_THRESHOLD, DEFAULT_BATCH_SIZE, MIN_CLASS_IMAGES
from objrel.studies.deepinspect.planted import PlantedSpec, run_planted
from objrel.studies.deepinspect.planted_ranks import format_planted_ranks, planted_ranks

# Pairs printed per ranked list unless --top says otherwise.
DEFAULT_TOP = 10


def add_inspect_command(subparsers) -> argparse.ArgumentParser:
    """Add ``inspect``; returns its parser."""
    p = subparsers.add_parser(
        "inspect", help="class-level confusion and bias from neuron coverage (DeepInspect)",
        description="Stream images through a torch classifier with hooks on every conv/linear layer, build "
                    "the neuron activation probability matrix per predicted class, and rank class pairs by "
                    "NAPVD (confusion) and avg_bias (bias).  Labelled images add the ground truth from the "
                    "model's errors and DeepInspect's precision, recall and AUCEC against it.")
    p.add_argument("--planted", action="store_true",
                   help="run the synthetic benchmark (planted confusion and bias) instead of a model/dataset")
    p.add_argument("--seed", type=int, default=0, help="seed of the planted benchmark (default 0)")
    p.add_argument("--model", help="model name as for `objrel run` (default efficientnet-lite0); must be a torch model")
    p.add_argument("--weights",
                   help="local state-dict file (loaded with weights_only=True) or torchvision weights name")
    p.add_argument("--task", choices=["single", "multi"], default="single",
                   help="single-label (classes = arg-max) or multi-label (classes = sigmoid >= --threshold)")
    p.add_argument("--threshold", type=float, default=0.5, help="multi-label decision threshold (default 0.5)")
    p.add_argument("--dataset", help="COCO JSON, manifest JSON, VOC XML file/folder, or 'demo'")
    p.add_argument("--images", help="dataset root folder (default: the annotation file's folder)")
    p.add_argument("--format", choices=["auto", "coco", "voc", "manifest"], default="auto")
    p.add_argument("--padding", type=int, default=0, help="pixels added around VOC/ImageNet boxes")
    p.add_argument("--synset-mapping", help="LOC_synset_mapping.txt for ILSVRC wnids")
    p.add_argument("--limit", type=int, help="use only the first N samples")
    p.add_argument("--th", type=float, default=ACTIVATION_THRESHOLD,
                   help=f"neuron activation threshold Th on per-layer min-max scaled outputs (default "
                        f"{ACTIVATION_THRESHOLD})")
    p.add_argument("--layers", help="comma-separated layer names to hook (default: every conv and linear layer)")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, help="images per forward pass")
    p.add_argument("--min-class-images", type=int, default=MIN_CLASS_IMAGES,
                   help="leave out classes predicted fewer times than this (default 1)")
    p.add_argument("--out", "-o", help="write the result as JSON here (the app's Inspect page reads it)")
    p.add_argument("--top", type=int, default=DEFAULT_TOP, help="pairs printed per ranked list (default 10)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(fn=cmd_inspect)
    return p


def _fmt(x, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def print_result(result, top: int = DEFAULT_TOP, out=None) -> None:
    """The result as text: what was inspected, the ranked pairs, the evaluation (to ``out``, default stdout)."""
    out = out or sys.stdout
    print(f"{result.model.get('name', '?')} on {result.source.get('name', result.source.get('kind'))}: "
          f"{result.n_images} images, {result.n_neurons} neurons in {len(result.layers)} layers, "
          f"{result.n_classes} classes analysed, Th = {result.activation_threshold} ({result.seconds:.1f} s)", file=out)
    conf = confusion_table(result)
    print(f"\nmost confused pairs (NAPVD; flagged below {result.confusion_cutoff:.4f} = mean - 1 std: "
          f"{int(conf['flagged'].sum())} of {len(conf)})", file=out)
    gt_col = [c for c in conf.columns if c.endswith("_confusion")]
    for row in conf.head(top).itertuples(index=False):
        extra = f"  {gt_col[0]} {getattr(row, gt_col[0]):.3f}{' TRUE' if row.true_error else ''}" if gt_col else ""
        print(f"  {row.rank:>4}  {row.a} / {row.b}: {row.napvd:.4f}{' *' if row.flagged else ''}{extra}", file=out)
    bias = bias_table(result)
    print(f"\nmost biased pairs (avg_bias; flagged above {result.bias_cutoff:.4f} = mean + 1 std: "
          f"{int(bias['flagged'].sum())} of {len(bias)})", file=out)
    for row in bias.head(top).itertuples(index=False):
        extra = f"  avg_cd {row.avg_cd:.3f}{' TRUE' if row.true_error else ''}" if "avg_cd" in bias.columns else ""
        print(f"  {row.rank:>4}  {row.a} / {row.b}: {row.avg_bias:.4f}{' *' if row.flagged else ''}"
              f"  most with respect to {row.third or '-'}{extra}", file=out)
    if result.evaluations:
        print(f"\nagainst the ground truth ({result.ground_truth.kind} confusion and avg_cd from "
              f"{result.ground_truth.n_images} labelled images; flags at 1 std)", file=out)
        print(f"  {'error':<10} {'method':<12} {'true':>5} {'flags':>5} {'tp':>6} {'prec':>6} {'recall':>6} "
              f"{'top1%prec':>9} {'AUCEC':>6} {'gain':>7}", file=out)
        for e in result.evaluations:
            print(f"  {e.error:<10} {e.method:<12} {e.n_true:>5} {e.n_flagged:>5} {e.tp:>6.1f} "
                  f"{_fmt(e.precision):>6} {_fmt(e.recall):>6} {_fmt(e.top_precision):>9} {_fmt(e.aucec):>6} "
                  f"{_fmt(e.gain_vs_random):>7}", file=out)
    for note in result.notes:
        print(f"note: {note}", file=out)


def cmd_inspect(args) -> int:
    """``objrel inspect``: run DeepInspect on a dataset (or the planted benchmark) and print or save the result."""
    if args.top < 0:
        raise ValueError(f"--top must be >= 0, got {args.top}")
    if args.planted:
        log = None if args.quiet else (lambda msg: print(msg, file=sys.stderr))
        result = run_planted(PlantedSpec(seed=args.seed), threshold=args.th, log=log)
        print_result(result, args.top)
        print("", *format_planted_ranks(planted_ranks(result)), sep="\n")
    else:
        if not args.dataset:
            raise ValueError("objrel inspect needs --dataset (or --planted for the synthetic benchmark)")
        clf = load_classifier(args.model or DEFAULT_MODEL, args.weights, task=args.task, threshold=args.threshold)
        dataset = load_dataset(args.dataset, args.images, args.format, synset_mapping=args.synset_mapping,
                               padding=args.padding)
        layers = list(comma_list(args.layers)) or None
        total = len(dataset) if args.limit is None else min(args.limit, len(dataset))
        with progress_bar(total, args.quiet) as progress:
            result = inspect_dataset(clf, dataset, threshold=args.th, batch_size=args.batch_size, limit=args.limit,
                                     layers=layers, progress=progress, min_class_images=args.min_class_images)
        print_result(result, args.top)
    if args.out:
        path = result.save(args.out)
        print(f"\nwrote {path} (open it on the app's Inspect page)")
    return 0
