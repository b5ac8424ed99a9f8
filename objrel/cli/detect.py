"""Object-detector runs: ``detect``, ``sweep`` and ``detectors``.

    objrel detect --detector haar:frontalface_default --dataset demo-faces --store var/det.db
    objrel detect --detector mtcnn --images photos/ --regions-from mtcnn       (no boxes: the detector supplies them)
    objrel detect --resume 3 --store var/det.db
    objrel detect --engine ray --workers 4 ...            (Ray: the cluster at $RAY_ADDRESS, else a local one)
    objrel sweep --detector mtcnn --dataset demo-faces --operator background_noise --plot sweep.png
    objrel detectors
"""

from __future__ import annotations

import argparse
import json
import sys

from objrel.analysis.summary import summarize
from objrel.engine.sweep import SWEEP_DEFAULTS, plot_sweep, run_sweep, sweep_table
from objrel.cli.common import (DETECTION_WORDS, add_store_option, comma_list, execute_with_progress,
                               print_run_report, progress_bar, stored_config)
from objrel.config import DEFAULT_RAY_WORKERS, ENGINES, DetectionConfig
from objrel.constants import RUNTIMES
from objrel.engine.runs import engine_for
from objrel.models import detector_choices
from objrel.mutations import PRESETS
from objrel.store import Store

# The dataset a detection run tests when neither --dataset nor --images is given.
DEFAULT_DETECTION_DATASET = "demo-faces"
# Detection settings that command-line flags override, as (config field, argparse destination).
DETECTION_OVERRIDES = (
    ("detector", "detector"), ("weights", "weights"), ("score_threshold", "score_threshold"),
    ("iou_threshold", "iou_threshold"), ("dataset", "dataset"), ("images", "images"), ("fmt", "format"),
    ("padding", "padding"), ("regions_from", "regions_from"), ("seed", "seed"), ("batch_size", "batch_size"),
    ("limit", "limit"), ("name", "name"), ("dilate", "dilate"), ("runtime", "runtime"),
)


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def _params(items) -> dict:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--set expects NAME=VALUE, got {item!r}")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            out[key.strip()] = value
    return out


def _detector_help() -> str:
    return "detectors:\n  " + "\n  ".join(detector_choices())


def detection_config(args) -> DetectionConfig:
    """The settings ``detect`` and ``sweep`` share: the TOML file (or the defaults), then every flag given."""
    if args.config:
        config = DetectionConfig.from_toml(args.config)
    else:
        config = DetectionConfig(dataset=args.dataset or (DEFAULT_DETECTION_DATASET if not args.images else None),
                                 images=args.images)
    overrides = {field: getattr(args, dest) for field, dest in DETECTION_OVERRIDES}
    if args.labels:
        overrides["labels"] = comma_list(args.labels)
    return config.replace(**overrides)


def _add_common(p) -> None:
    p.add_argument("--config", help="TOML file with detection settings (a [detect] table or top-level keys)")
    p.add_argument("--detector", help="detector name (see below; default haar:frontalface_default)")
    p.add_argument("--weights", help="torchvision detectors: local state-dict file or torchvision weights name")
    p.add_argument("--labels", help="torchvision detectors: comma-separated class names by output index "
                                    "(default COCO's 91)")
    p.add_argument("--score-threshold", type=float,
                   help="drop detections below this score (default: torchvision 0.5, mtcnn 0.9, OpenCV none)")
    p.add_argument("--iou-threshold", type=float,
                   help="test T: IoU with the ground truth needed to count as detected (default 0.3, DetReport)")
    p.add_argument("--dataset", help="COCO JSON, manifest JSON, VOC XML file/folder, or 'demo-faces' (default)")
    p.add_argument("--images", help="dataset root; without --dataset, a folder of images with no boxes "
                                    "(then give --regions-from)")
    p.add_argument("--format", choices=["auto", "coco", "voc", "manifest"], help="annotation format (default auto)")
    p.add_argument("--padding", type=int, help="pixels added around VOC/ImageNet boxes")
    p.add_argument("--regions-from", metavar="DETECTOR",
                   help="a detector that supplies the target objects of images without boxes (EMSE21 s4.2); "
                        "stored as region_source=detector")
    p.add_argument("--dilate", type=int, help="grow each target region by N pixels before mutating")
    p.add_argument("--seed", type=int, help="run seed (default 0)")
    p.add_argument("--batch-size", type=int, help="images per detector call (default 8)")
    p.add_argument("--limit", type=int, help="test only the first N images")
    p.add_argument("--name", help="display name of the run")
    p.add_argument("--runtime", choices=RUNTIMES,
                   help="what runs the detector: torch, or onnxruntime / openvino for torchvision SSD and SSDlite "
                        "networks (exported once to ONNX, cached), or auto (default: the fastest whose detections "
                        "match torch's; OpenCV, MTCNN and the other detectors keep their own runtime)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_store_option(p)


def _print_detection_summary(store, run_id: int, out) -> None:
    s = summarize(store, run_id)
    print(f"  units {s.evaluated}, detected on the source (T=1) {s.correct}; flagged MR-1 {s.flagged_all_mr1}, "
          f"MR-2 {s.flagged_all_mr2}; MR-2 violations: {s.missing_detections} missing, "
          f"{s.incorrect_detections} incorrect detections", file=out)


def cmd_detect(args) -> int:
    """``objrel detect``: start or resume a detector run and print its report."""
    store = Store(args.store)
    if args.resume is not None:
        config = stored_config(store, args.resume, DetectionConfig)
    else:
        config = detection_config(args).replace(plan=args.plan, vote_k=args.vote_k)
        if args.operators:
            config = config.replace(operators=comma_list(args.operators))
        if args.detected_only:
            config = config.replace(detected_only=True)
        config = config.replace(engine=args.engine, workers=args.workers)
    engine = engine_for(store, config)
    report = execute_with_progress(engine, args.resume, engine.detector.name, DETECTION_WORDS, args.quiet)
    print_run_report(report, DETECTION_WORDS)
    _print_detection_summary(store, report.run_id, sys.stdout)
    return 0


def cmd_sweep(args) -> int:
    """``objrel sweep``: run a parameter sweep (or read a stored one) and print its table."""
    store = Store(args.store)
    if args.run is not None:
        result = sweep_table(store, args.run)
    else:
        fixed = _params(args.set) if args.set else None
        with progress_bar(0, args.quiet) as progress:
            result = run_sweep(store, detection_config(args), args.operator, args.param, args.values, fixed,
                               progress=progress)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.markdown() if args.markdown else result.table())
    if args.plot:
        print(f"wrote {plot_sweep(result, args.plot)}", file=sys.stderr)
    return 0


def cmd_detectors(args) -> int:
    """``objrel detectors``: print the detector names and what each takes."""
    print(_detector_help())
    return 0


def _sweep_grid(param, values, fixed) -> str:
    shown = " with " + ", ".join(f"{k}={v:g}" for k, v in fixed.items()) if fixed else ""
    return f"{param} = {', '.join(f'{v:g}' for v in values)}{shown}"


def add_detection_commands(subparsers) -> None:
    """Add ``detect``, ``sweep`` and ``detectors``."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = subparsers.add_parser(
        "detect", help="test an object detector on a dataset with boxes (DetReport / ORMR V-B)",
        description="Test an object detector: for every detection record, its Associated Object (the ground-truth "
                    "object of its label it overlaps most) is corrupted (MR-1: test T should flip) or its background "
                    "is (MR-2: T should stay; violations are missing or incorrect detections).",
        epilog=_detector_help(), formatter_class=fmt)
    _add_common(p)
    p.add_argument("--resume", type=int, metavar="RUN", help="continue a stopped detection run")
    p.add_argument("--plan", choices=list(PRESETS),
                   help="erase_noise (random erase; background and object noise; 2 of 3; DetReport) or another preset "
                        "applied to each associated object (default erase_noise)")
    p.add_argument("--operators", help="comma-separated operators added to the plan (see `objrel operators`)")
    p.add_argument("--vote-k", type=int, help="violations needed out of 3 to flag (default 2)")
    p.add_argument("--detected-only", action="store_true",
                   help="test only objects detected on the source (skips MR-2's incorrect detections)")
    p.add_argument("--engine", choices=list(ENGINES),
                   help="run here (default) or on Ray: the cluster at $RAY_ADDRESS, else a local one")
    p.add_argument("--workers", type=int,
                   help=f"actors of a Ray run, one detector and one CPU each (default {DEFAULT_RAY_WORKERS})")
    p.set_defaults(fn=cmd_detect)

    defaults = "; ".join(f"{op}: {_sweep_grid(*spec)}" for op, spec in SWEEP_DEFAULTS.items())
    p = subparsers.add_parser("sweep", help="violations per mutation ratio or variance (DetReport Tables 3-4)",
                              description=f"Run one operator at a grid of settings and print (and plot) the "
                                          f"violations per setting. Defaults: {defaults}.",
                              epilog=_detector_help(), formatter_class=fmt)
    _add_common(p)
    p.add_argument("--operator", default="background_noise",
                   help=f"operator to sweep (default background_noise; defaults exist for {sorted(SWEEP_DEFAULTS)})")
    p.add_argument("--param", help="parameter to sweep (default: the operator's, e.g. ratio or variance)")
    p.add_argument("--values", type=_floats, help="comma-separated values (default: the operator's grid)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="fix another parameter (repeatable)")
    p.add_argument("--run", type=int, help="print the table of a stored sweep run instead of running one")
    p.add_argument("--plot", help="write a PNG bar chart of the violations per setting")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.set_defaults(fn=cmd_sweep)

    p = subparsers.add_parser("detectors", help="list the object detectors objrel can load")
    p.set_defaults(fn=cmd_detectors)
