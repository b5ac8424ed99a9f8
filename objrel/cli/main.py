"""The ``objrel`` command.

    objrel run --model efficientnet-lite0 --dataset ann.json --images DIR --store URL
    objrel run --config run.toml          objrel run --resume 3
    objrel runs                           objrel summary 3
    objrel export 3 --format csv          objrel operators
    objrel demo --store var/demo.db       (builds the embedded demo store)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from objrel.errors import ObjrelError


def _store(args):
    from objrel.store import Store

    return Store(args.store)


def _add_store(p):
    p.add_argument("--store", default=None,
                   help="database URL or SQLite file (default: $OBJREL_STORE or ./objrel.db)")


def _print_skips(report, out) -> None:
    total = sum(report.skipped.values())
    print(f"run {report.run_id}: {report.status}; {report.processed} samples processed this time, "
          f"{report.tested} tested, {report.untested} not tested (incorrect inference), {total} skipped "
          f"({report.forward_passes} forward passes, {report.seconds:.1f} s)", file=out)
    for code, n in report.skipped.most_common():
        print(f"  skipped {n} x {code}: e.g. {report.skip_examples[code]}", file=out)


def cmd_run(args) -> int:
    from tqdm import tqdm

    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    store = _store(args)
    if args.resume is not None:
        rec = store.get_run(args.resume)
        config = RunConfig.from_dict(rec.config)
        run_id = args.resume
    else:
        if args.config_json:
            config = RunConfig.from_dict(json.loads(Path(args.config_json).read_text()))
        else:
            config = RunConfig.from_toml(args.config) if args.config else RunConfig()
        overrides = {
            "model": args.model, "weights": args.weights, "task": args.task, "threshold": args.threshold,
            "dataset": args.dataset, "images": args.images, "fmt": args.format, "padding": args.padding,
            "synset_mapping": args.synset_mapping, "plan": args.plan, "vote_k": args.vote_k, "dilate": args.dilate,
            "seed": args.seed, "batch_size": args.batch_size, "limit": args.limit, "name": args.name,
        }
        if args.operators:
            overrides["operators"] = tuple(o.strip() for o in args.operators.split(",") if o.strip())
        if args.all:
            overrides["test_all"] = True
        config = config.replace(**overrides)
        run_id = None
    engine = Engine(store, config)
    if run_id is None:
        run_id = engine.create_run()
    if args.run_id_file:
        Path(args.run_id_file).write_text(str(run_id))
    print(f"run {run_id}: {engine.model.name} on {engine.dataset.name} ({len(engine.samples)} samples, "
          f"{len(engine.mutations)} mutations each) -> {store!r}", file=sys.stderr)
    bar = tqdm(total=len(engine.samples), unit="img", disable=args.quiet, file=sys.stderr)

    def progress(done, total):
        bar.n = done
        bar.refresh()

    try:
        report = engine.execute(run_id=run_id, progress=progress)
    finally:
        bar.close()
    _print_skips(report, sys.stdout)
    return 0


def cmd_runs(args) -> int:
    runs = _store(args).list_runs()
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
    from objrel.analysis.summary import summarize

    s = summarize(_store(args), args.run)
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
    from objrel.analysis.export import export_run

    text = export_run(_store(args), args.run, args.format)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_report(args) -> int:
    from objrel.analysis.report import build_report

    out = Path(args.output or f"objrel-run{args.run}.html")
    out.write_text(build_report(_store(args), args.run), encoding="utf-8")
    print(f"wrote {out}")
    return 0


def cmd_operators(args) -> int:
    from objrel.mutations import operators

    for op in operators():
        print(f"{op.name:<22} {op.kind:<9} {op.relation}  {len(op.grid):>2} settings  {op.description} [{op.source}]")
    return 0


def cmd_demo(args) -> int:
    from objrel.engine.demo import build_demo_store

    build_demo_store(args.store, force=args.force, log=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from objrel.data import FORMATS
    from objrel.mutations import PRESETS
    from objrel.models import model_choices

    ap = argparse.ArgumentParser(prog="objrel", description="Test image models with object-relevant "
                                 "metamorphic relations (MR-1: corrupt the object; MR-2: corrupt the background).")
    sub = ap.add_subparsers(dest="command", required=True)

    from objrel.models.detector import detector_choices

    p = sub.add_parser("run", help="test a model on an annotated dataset",
                       epilog="Object detectors are tested with `objrel detect` and swept with `objrel sweep`: "
                              + "; ".join(detector_choices()))
    p.add_argument("--config", help="TOML file with run settings (a [run] table or top-level keys)")
    p.add_argument("--resume", type=int, metavar="RUN", help="continue a stopped run with its stored settings")
    p.add_argument("--model", help=f"model name: {', '.join(model_choices())} (default efficientnet-lite0)")
    p.add_argument("--weights", help="local state-dict file (loaded with weights_only=True) or torchvision weights name")
    p.add_argument("--task", choices=["single", "multi"], help="single-label (softmax) or multi-label (sigmoid)")
    p.add_argument("--threshold", type=float, help="multi-label decision threshold (default 0.5)")
    p.add_argument("--dataset", help="COCO JSON, manifest JSON, VOC XML file/folder, or 'demo'")
    p.add_argument("--images", help="dataset root folder (default: the annotation file's folder)")
    p.add_argument("--format", choices=list(FORMATS), help="annotation format (default auto)")
    p.add_argument("--padding", type=int, help="pixels added around VOC/ImageNet boxes")
    p.add_argument("--synset-mapping", help="LOC_synset_mapping.txt for ILSVRC wnids")
    p.add_argument("--plan", choices=list(PRESETS), help="mutation preset (default colours3)")
    p.add_argument("--operators", help="comma-separated operators added to the 3-colour plan (see `objrel operators`)")
    p.add_argument("--vote-k", type=int, help="violations needed out of 3 colours to flag (default 2)")
    p.add_argument("--dilate", type=int, help="grow the target region by N pixels before mutating")
    p.add_argument("--all", action="store_true", help="test incorrect inferences too (default: correct only)")
    p.add_argument("--seed", type=int, help="run seed (default 0)")
    p.add_argument("--batch-size", type=int, help="images per forward pass (default 16)")
    p.add_argument("--limit", type=int, help="test only the first N samples")
    p.add_argument("--name", help="display name of the run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--config-json", help=argparse.SUPPRESS)   # used by the app's background runs
    p.add_argument("--run-id-file", help=argparse.SUPPRESS)   # the child reports its run id here
    _add_store(p)
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("runs", help="list the runs in a store")
    p.add_argument("--json", action="store_true")
    _add_store(p)
    p.set_defaults(fn=cmd_runs)

    p = sub.add_parser("summary", help="accuracy and MR-1 / MR-2 / MR-1&2 counts (seed 000 Tables 5-6)")
    p.add_argument("run", type=int)
    p.add_argument("--json", action="store_true")
    _add_store(p)
    p.set_defaults(fn=cmd_summary)

    p = sub.add_parser("export", help="one row per tested inference")
    p.add_argument("run", type=int)
    p.add_argument("--format", choices=["csv", "json"], default="csv")
    p.add_argument("--output", "-o", help="file to write (default: standard output)")
    _add_store(p)
    p.set_defaults(fn=cmd_export)

    p = sub.add_parser("report", help="one self-contained HTML report of a run (charts, precision, examples)")
    p.add_argument("run", type=int)
    p.add_argument("--output", "-o", help="HTML file to write (default objrel-runN.html)")
    _add_store(p)
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("operators", help="list the mutation operators")
    p.set_defaults(fn=cmd_operators)

    p = sub.add_parser("demo", help="build the embedded demo store (EfficientNet-Lite0 on the bundled photos)")
    p.add_argument("--force", action="store_true", help="rebuild even if the store already has the demo runs")
    _add_store(p)
    p.set_defaults(fn=cmd_demo)

    from objrel.cli.inspect import add_inspect_command

    add_inspect_command(sub)

    from objrel.cli.detect import add_detection_commands

    add_detection_commands(sub)

    from objrel.cli.bench import add_bench_command

    add_bench_command(sub)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (ObjrelError, KeyError, FileNotFoundError, ValueError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"objrel: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
