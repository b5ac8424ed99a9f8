"""``objrel detect``, ``objrel sweep`` and ``objrel detectors``: object-detector runs from the command line.

    objrel detect --detector haar:frontalface_default --dataset demo-faces --store var/det.db
    objrel detect --detector mtcnn --images photos/ --regions-from mtcnn       (no boxes: the detector supplies them)
    objrel detect --resume 3 --store var/det.db
    objrel sweep --detector mtcnn --dataset demo-faces --operator background_noise --plot sweep.png
    objrel detectors

``add_detection_commands(subparsers)`` adds them to the ``objrel`` parser.
"""

from __future__ import annotations

import argparse
import json
import sys


def _store(args):
    from objrel.store import Store

    return Store(args.store)


def _add_store(p) -> None:
    p.add_argument("--store", default=None,
                   help="database URL or SQLite file (default: $OBJREL_STORE or ./objrel.db)")


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
    from objrel.models.detector import detector_choices

    return "detectors:\n  " + "\n  ".join(detector_choices())


def _config(args):
    from objrel.config import DetectionConfig

    if args.config:
        config = DetectionConfig.from_toml(args.config)
    else:
        config = DetectionConfig(dataset=args.dataset or ("demo-faces" if not args.images else None),
                                 images=args.images)
    overrides = {
        "detector": args.detector, "weights": args.weights, "score_threshold": args.score_threshold,
        "iou_threshold": args.iou_threshold, "dataset": args.dataset, "images": args.images, "fmt": args.format,
        "padding": args.padding, "regions_from": args.regions_from, "seed": args.seed, "batch_size": args.batch_size,
        "limit": args.limit, "name": args.name, "dilate": args.dilate,
    }
    if args.labels:
        overrides["labels"] = tuple(v.strip() for v in args.labels.split(",") if v.strip())
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
                   help="test T: IoU with the ground truth needed to count as detected (default 0.3, seed 001)")
    p.add_argument("--dataset", help="COCO JSON, manifest JSON, VOC XML file/folder, or 'demo-faces' (default)")
    p.add_argument("--images", help="dataset root; without --dataset, a folder of images with no boxes "
                                    "(then give --regions-from)")
    p.add_argument("--format", choices=["auto", "coco", "voc", "manifest"], help="annotation format (default auto)")
    p.add_argument("--padding", type=int, help="pixels added around VOC/ImageNet boxes")
    p.add_argument("--regions-from", metavar="DETECTOR",
                   help="a detector that supplies the target objects of images without boxes (seed 000 s4.2); "
                        "stored as region_source=detector")
    p.add_argument("--dilate", type=int, help="grow each target region by N pixels before mutating")
    p.add_argument("--seed", type=int, help="run seed (default 0)")
    p.add_argument("--batch-size", type=int, help="images per detector call (default 8)")
    p.add_argument("--limit", type=int, help="test only the first N images")
    p.add_argument("--name", help="display name of the run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_store(p)


def _progress(engine_total: int, quiet: bool):
    from tqdm import tqdm

    bar = tqdm(total=engine_total, unit="img", disable=quiet, file=sys.stderr)

    def progress(done, total):
        bar.n = done
        bar.refresh()

    return bar, progress


def _print_report(report, out) -> None:
    total = sum(report.skipped.values())
    print(f"run {report.run_id}: {report.status}; {report.processed} images processed this time, "
          f"{report.tested} units tested, {report.untested} not tested, {total} images skipped "
          f"({report.forward_passes} detector passes, {report.seconds:.1f} s)", file=out)
    for code, n in report.skipped.most_common():
        print(f"  skipped {n} x {code}: e.g. {report.skip_examples[code]}", file=out)


def _print_summary(store, run_id: int, out) -> None:
    from objrel.relations.detect import INCORRECT_DETECTION, MISSING_DETECTION
    from objrel.analysis.summary import summarize

    s = summarize(store, run_id)
    notes = [v["note"] for v in store.verdicts(run_id) if v["verdict"] == "violated" and v["relation"] == "MR-2"]
    print(f"  units {s.evaluated}, detected on the source (T=1) {s.correct}; flagged MR-1 {s.flagged_all_mr1}, "
          f"MR-2 {s.flagged_all_mr2}; MR-2 violations: {notes.count(MISSING_DETECTION)} missing, "
          f"{notes.count(INCORRECT_DETECTION)} incorrect detections", file=out)


def cmd_detect(args) -> int:
    from objrel.config import DetectionConfig
    from objrel.engine.detect import DetectionEngine, is_detection_run

    store = _store(args)
    if args.resume is not None:
        rec = store.get_run(args.resume)
        if not is_detection_run(rec):
            raise ValueError(f"run {args.resume} is a {rec.task!r} run; resume it with `objrel run --resume`")
        config, run_id = DetectionConfig.from_dict(rec.config), args.resume
    else:
        config = _config(args).replace(plan=args.plan, vote_k=args.vote_k)
        if args.operators:
            config = config.replace(operators=tuple(o.strip() for o in args.operators.split(",") if o.strip()))
        if args.detected_only:
            config = config.replace(detected_only=True)
        run_id = None
    engine = DetectionEngine(store, config)
    run_id = run_id if run_id is not None else engine.create_run()
    print(f"run {run_id}: {engine.detector.name} on {engine.dataset.name} ({len(engine.samples)} images, "
          f"{len(engine.mutations)} mutations per unit) -> {store!r}", file=sys.stderr)
    bar, progress = _progress(len(engine.samples), args.quiet)
    try:
        report = engine.execute(run_id=run_id, progress=progress)
    finally:
        bar.close()
    _print_report(report, sys.stdout)
    _print_summary(store, run_id, sys.stdout)
    return 0


def cmd_sweep(args) -> int:
    from objrel.analysis.sweep import plot_sweep, run_sweep, sweep_table

    store = _store(args)
    if args.run is not None:
        result = sweep_table(store, args.run)
    else:
        config = _config(args)
        fixed = _params(args.set) if args.set else None
        bar, progress = _progress(0, args.quiet)
        try:
            def prog(done, total):
                bar.total = total
                progress(done, total)

            result = run_sweep(store, config, args.operator, args.param, args.values, fixed, progress=prog)
        finally:
            bar.close()
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result.markdown() if args.markdown else result.table())
    if args.plot:
        print(f"wrote {plot_sweep(result, args.plot)}", file=sys.stderr)
    return 0


def cmd_detectors(args) -> int:
    print(_detector_help())
    return 0


def add_detection_commands(sub) -> None:
    """Add ``detect``, ``sweep`` and ``detectors`` to the ``objrel`` subparsers."""
    from objrel.mutations import PRESETS
    from objrel.analysis.sweep import SWEEP_DEFAULTS

    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("detect", help="test an object detector on a dataset with boxes (seed 001 / seed 002 V-B)",
                       description="Test an object detector: for every detection record, its Associated Object "
                                   "(the ground-truth object of its label it overlaps most) is corrupted (MR-1: "
                                   "test T should flip) or its background is (MR-2: T should stay; violations are "
                                   "missing or incorrect detections).", epilog=_detector_help(), formatter_class=fmt)
    _add_common(p)
    p.add_argument("--resume", type=int, metavar="RUN", help="continue a stopped detection run")
    p.add_argument("--plan", choices=list(PRESETS),
                   help="erase_noise (random erase; background and object noise; 2 of 3; seed 001) or another preset "
                        "applied to each associated object (default erase_noise)")
    p.add_argument("--operators", help="comma-separated operators added to the plan (see `objrel operators`)")
    p.add_argument("--vote-k", type=int, help="violations needed out of 3 to flag (default 2)")
    p.add_argument("--detected-only", action="store_true",
                   help="test only objects detected on the source (skips MR-2's incorrect detections)")
    p.set_defaults(fn=cmd_detect)

    def grid(par, vals, fx) -> str:
        fixed = " with " + ", ".join(f"{k}={v:g}" for k, v in fx.items()) if fx else ""
        return f"{par} = {', '.join(f'{v:g}' for v in vals)}{fixed}"

    defaults = "; ".join(f"{op}: {grid(*spec)}" for op, spec in SWEEP_DEFAULTS.items())
    p = sub.add_parser("sweep", help="violations per mutation ratio or variance (seed 001 Tables 3-4)",
                       description=f"Run one operator at a grid of settings and print (and plot) the violations "
                                   f"per setting. Defaults: {defaults}.", epilog=_detector_help(),
                       formatter_class=fmt)
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

    p = sub.add_parser("detectors", help="list the object detectors objrel can load")
    p.set_defaults(fn=cmd_detectors)


def main(argv=None) -> int:
    """``python -m objrel.cli.detect ...``: the same as ``objrel ...`` (which includes these commands)."""
    from objrel.cli.main import main as objrel_main

    return objrel_main(argv)


if __name__ == "__main__":
    sys.exit(main())
