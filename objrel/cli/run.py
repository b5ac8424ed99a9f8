"""Classifier runs: ``run``, ``operators`` and ``demo`` (what is read back from a store is ``objrel.cli.results``).

    objrel run --model efficientnet-lite0 --dataset ann.json --images DIR --store URL
    objrel run --config run.toml          objrel run --resume 3
    objrel operators                      objrel demo --store var/demo.db  (builds the embedded demo store)
"""

from __future__ import annotations

import sys

from objrel.store import Store
from objrel.cli.common import (CLASSIFIER_WORDS, add_store_option, comma_list, execute_with_progress,
                               print_run_report, stored_config)
from objrel.config import RunConfig
from objrel.constants import RUNTIMES
from objrel.data import FORMATS
from objrel.demo import build_demo_store
from objrel.engine.runs import engine_for
from objrel.models import detector_choices, model_choices
from objrel.mutations import PRESETS, SEED002_PLAN, operators

# Run settings that command-line flags override, as (config field, argparse destination).
RUN_OVERRIDES = (
    ("model", "model"), ("weights", "weights"), ("task", "task"), ("threshold", "threshold"),
    ("dataset", "dataset"), ("images", "images"), ("fmt", "format"), ("padding", "padding"),
    ("synset_mapping", "synset_mapping"), ("plan", "plan"), ("vote_k", "vote_k"), ("dilate", "dilate"),
    ("seed", "seed"), ("batch_size", "batch_size"), ("limit", "limit"), ("name", "name"),
    ("engine", "engine"), ("workers", "workers"), ("runtime", "runtime"), ("device", "device"),
)


def run_config(args) -> RunConfig:
    """The run's settings: the TOML file (or the defaults), then every flag given."""
    config = RunConfig.from_toml(args.config) if args.config else RunConfig()
    overrides = {field: getattr(args, dest) for field, dest in RUN_OVERRIDES}
    if args.operators:
        overrides["operators"] = comma_list(args.operators)
    if args.all:
        overrides["test_all"] = True
    if getattr(args, "no_lazy", False):
        overrides["lazy"] = False
    if getattr(args, "compile", False):
        overrides["compile"] = True
    return config.replace(**overrides)


def cmd_run(args) -> int:
    """``objrel run``: start or resume a classifier run and print its report."""
    store = Store(args.store)
    if args.resume is not None:
        # the stored settings, except where the forward pass runs: a GPU run may go on on the CPU (--device cpu)
        config = stored_config(store, args.resume, RunConfig).replace(device=args.device)
    else:
        config = run_config(args)
    engine = engine_for(store, config)
    report = execute_with_progress(engine, args.resume, engine.model.name, CLASSIFIER_WORDS, args.quiet)
    print_run_report(report, CLASSIFIER_WORDS)
    if config.plan == SEED002_PLAN and not config.operators:  # the plan for S: say S and the set it averages over
        from objrel.analysis.relevancy_set import relevancy_over_run

        print(relevancy_over_run(store, report.run_id).describe())
    return 0


def cmd_operators(args) -> int:
    """``objrel operators``: print every mutation operator with its kind, relation and settings."""
    for op in operators():
        print(f"{op.name:<22} {op.kind:<9} {op.relation}  {len(op.grid):>2} settings  {op.description} [{op.source}]")
    return 0


def cmd_demo(args) -> int:
    """``objrel demo``: build the demo store (real model, bundled photos, finished runs)."""
    store = build_demo_store(args.store, force=args.force, log=sys.stderr, explain_ahead=not args.no_lime)
    if args.no_lime:
        from objrel.demo import demo_review_samples

        demo_review_samples(store)
    return 0


def add_run_commands(subparsers) -> None:
    """Add ``run``, ``operators`` and ``demo``."""
    p = subparsers.add_parser("run", help="test a model on an annotated dataset",
                              epilog="Object detectors are tested with `objrel detect` and swept with "
                                     "`objrel sweep`: " + "; ".join(detector_choices()))
    p.add_argument("--config", help="TOML file with run settings (a [run] table or top-level keys)")
    p.add_argument("--resume", type=int, metavar="RUN", help="continue a stopped run with its stored settings")
    p.add_argument("--model", help=f"model name: {', '.join(model_choices())} (default efficientnet-lite0)")
    p.add_argument("--weights",
                   help="local state-dict file (loaded with weights_only=True) or torchvision weights name")
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
    p.add_argument("--no-lazy", action="store_true",
                   help="run every mutation even when the votes are already decided (stores S_p/S_r/S)")
    p.add_argument("--compile", action="store_true", help="torch.compile the model (once; first batch pays)")
    p.add_argument("--runtime", choices=RUNTIMES,
                   help="what runs the model: torch, onnxruntime or openvino (exported once to ONNX, cached), or "
                        "auto (default: the fastest whose outputs match torch's, measured once on this machine)")
    p.add_argument("--device", help="where the forward pass runs: cpu (default), or cuda / cuda:N for a GPU (torch "
                                    "or onnxruntime's CUDA provider, f32); decoding and mutating stay on the CPU; "
                                    "with --resume, where the stored run goes on")
    p.add_argument("--engine", choices=["local", "ray"],
                   help="run here (default) or on Ray: the cluster at $RAY_ADDRESS, else a local one")
    p.add_argument("--workers", type=int, help="actors of a Ray run, one model and one CPU each (default 2)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_store_option(p)
    p.set_defaults(fn=cmd_run)

    p = subparsers.add_parser("operators", help="list the mutation operators")
    p.set_defaults(fn=cmd_operators)

    p = subparsers.add_parser("demo", help="build the embedded demo store (EfficientNet-Lite0 on the bundled photos)")
    p.add_argument("--force", action="store_true", help="rebuild even if the store already has the demo runs")
    p.add_argument("--no-lime", action="store_true",
                   help="draw the review samples but start no LIME: the app's LIME queue explains them once a "
                        "reviewer opens them (make run), and its processes end with the app")
    add_store_option(p)
    p.set_defaults(fn=cmd_demo)
