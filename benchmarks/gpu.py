"""Throughput on a GPU: objrel's run against the bare network on the same GPU, for torch and for ONNX Runtime's
CUDA provider, with the stored rows of the two compared (and torch on the GPU against torch on the CPU).

The model is ResNet-50 (torchvision's architecture).  Its ImageNet weights are not on the machines this runs on
(no internet there), so ``--weights`` takes a state-dict file when one is at hand and otherwise the weights are
torchvision's own random initialisation, seeded: a dense f32 network does the same arithmetic whatever its
weight values, so images/s and the ratios do not depend on them; the verdicts mean nothing then, and the
report says which weights ran.

Sources: ``--sources`` samples listed from the bundled demo photos in turn (each decoded from its file every
time, as a run does), each annotated with the model's own top-1 on it, so that every source is tested and
every mutation runs.  Plan: colours3 plus ``gray_background_blur``: 7 mutants per source, 8 forward passes.

  limit    the bare network on inputs preprocessed beforehand, in batches of ``--batch-size``: torch with the
           batch already on the device (default and channels_last layouts), torch copying each batch from host
           memory first, and each exported runtime's GPU session on host arrays (how objrel hands them over);
           the fastest is the limit;
  objrel   a full run on the same GPU (decode, mutate, predict, check, vote, commit to SQLite), lazy votes off,
           then on, for each runtime: images/s (forward passes) and sources/s;
  ratios   objrel(lazy off) images/s against its own runtime's bare network and against the limit;
  rows     every verdict, vote and prediction of the runtimes' lazy-off runs compared: labels, flags, verdicts
           and counts exactly, and the largest difference of their probabilities and scores (with the random
           weights, logits reach ~85 on the demo photos, and f32 rounding alone moves a mutant's probability by
           up to ~2e-5 between ONNX Runtime and torch on the CPU, above ``MATCH_TOLERANCE``, which the bundled
           trained networks meet); likewise torch on the GPU
           against torch on the CPU over the first ``--compare-cpu`` sources.

    python benchmarks/gpu.py [--device cuda] [--sources 10000] [--batch-size 64] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from objrel.analysis.same_results import classifier_rows, differences  # noqa: E402
from objrel.config import RunConfig  # noqa: E402
from objrel.constants import ONNXRUNTIME, TORCH_RUNTIME  # noqa: E402
from objrel.data import load_demo, load_rgb  # noqa: E402
from objrel.data.bundled import DEMO_IMAGES  # noqa: E402
from objrel.engine.classify import Engine  # noqa: E402
from objrel.models import load_classifier  # noqa: E402
from objrel.models.runtimes import MATCH_TOLERANCE, RuntimeUnavailable, runtime_version, with_runtime  # noqa: E402
from objrel.models.threads import configure_inference_threads  # noqa: E402
from objrel.store import Store  # noqa: E402

MODEL = "torchvision:resnet50"
# The extra operator beside colours3's six fills: one more mutant per source, painted and resized (not mixed).
EXTRA_OPERATOR = "gray_background_blur"
# Seed of the random weights when no weights file is given.
WEIGHT_SEED = 0
# Batches the bare network is timed on (after WARM_UP_BATCHES untimed ones).
LIMIT_BATCHES, WARM_UP_BATCHES = 60, 5


def relabelled_sources(model, ds, photos: list, n: int, workdir: Path) -> Path:
    """A COCO file of ``n`` samples listing the demo photos in turn (``ds``, the demo dataset, and ``photos``,
    its images decoded), each object labelled with the model's top-1 on its photo (so every source is answered
    correctly and tested)."""
    demo = json.loads(Path(ds.annotation).read_text())
    top1 = model.predict(photos).argmax(axis=1)
    label = {int(s.sample_id): int(t) for s, t in zip(ds.samples, top1)}
    names = model.class_names
    out = {"categories": [{"id": c + 1, "name": names[c], "imagenet_index": c} for c in sorted(set(label.values()))],
           "images": [], "annotations": []}
    photos = demo["images"]
    for i in range(n):
        im = photos[i % len(photos)]
        new_id = i + 1
        out["images"].append({**im, "id": new_id})
        out["annotations"] += [{**a, "id": len(out["annotations"]) + 1, "image_id": new_id,
                                "category_id": label[im["id"]] + 1}
                               for a in demo["annotations"] if a["image_id"] == im["id"]]
    path = workdir / f"sources-{n}.json"
    path.write_text(json.dumps(out))
    return path


def synchronise(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(fn, inputs: list, device: str) -> float:
    """images/s of ``fn`` over ``inputs`` (``(x, images in it)``), after ``WARM_UP_BATCHES`` untimed calls."""
    for x, _ in inputs[:WARM_UP_BATCHES]:
        fn(x)
    synchronise(device)
    start = time.perf_counter()
    for x, _ in inputs:
        fn(x)
    synchronise(device)
    return sum(n for _, n in inputs) / (time.perf_counter() - start)


def bare_limits(models: dict, photos: list, batch_size: int, device: str,
                n_batches: int = LIMIT_BATCHES) -> dict[str, float]:
    """images/s of the bare network, each way: ``{label: images/s}``."""
    batch = [photos[i % len(photos)] for i in range(batch_size)]
    torch_model = models[TORCH_RUNTIME]
    host = torch_model.preprocess(batch)  # (N, 3, S, S) float32 on the CPU
    module = torch_model.module
    out = {}
    with torch.inference_mode():
        for label, fmt in (("torch, batch on the device, default layout", torch.contiguous_format),
                           ("torch, batch on the device, channels_last", torch.channels_last)):
            module.to(memory_format=fmt)
            x = host.to(device).contiguous(memory_format=fmt)
            out[label] = timed(module, [(x, batch_size)] * n_batches, device)
        module.to(memory_format=torch.channels_last)  # the adapter's own layout

        def from_host(x):
            return module(x.to(device, non_blocking=False).contiguous(memory_format=torch.channels_last))

        out["torch, batch copied from host memory"] = timed(from_host, [(host, batch_size)] * n_batches, device)
    for runtime, model in models.items():
        if runtime == TORCH_RUNTIME:
            continue
        session = model._open()
        arr = np.ascontiguousarray(host.permute(0, 2, 3, 1).numpy())  # NHWC, as objrel's preprocessing writes it
        where = "CUDA provider" if device.startswith("cuda") else "CPU provider"
        out[f"{runtime} {runtime_version(runtime)}, {where}, host arrays"] = \
            timed(session, [(arr, batch_size)] * n_batches, device)
    return out


def objrel_run(model, cfg: RunConfig, path: Path) -> dict:
    """One run into a fresh SQLite store: seconds, forward passes, tested sources, seconds by step, the rows."""
    store = Store(path)
    engine = Engine(store, cfg, model=model)
    start = time.perf_counter()
    report = engine.execute()
    seconds = time.perf_counter() - start
    rows = classifier_rows(store, report.run_id)
    store.dispose()
    return {"seconds": seconds, "passes": report.forward_passes, "tested": report.tested,
            "skipped": dict(report.skipped), "steps": dict(report.steps), "rows": rows,
            "images_per_s": report.forward_passes / seconds, "sources_per_s": report.tested / seconds}


def compare(label: str, a: dict, b: dict) -> dict:
    """Two runs' rows: identical in every label, flag and count?  And their floats' largest difference."""
    floats: list[float] = []
    diffs = differences(a["rows"], b["rows"], math.inf, floats)   # every float collected, none refused
    if (a["tested"], a["passes"], a["skipped"]) != (b["tested"], b["passes"], b["skipped"]):
        diffs.insert(0, f"tested {a['tested']} / {b['tested']}, passes {a['passes']} / {b['passes']}, "
                        f"skipped {a['skipped']} / {b['skipped']}")
    counts = {k: len(a["rows"][k]) for k in ("verdicts", "votes", "predictions")}
    largest = max(floats, default=0.0)
    within = sum(f <= MATCH_TOLERANCE for f in floats)
    print(f"rows   {label}: {'identical' if not diffs else 'DIFFER'} in every verdict, flag, label and count "
          f"({counts['verdicts']} verdicts, {counts['votes']} votes, {counts['predictions']} sources' predictions); "
          f"floats: largest difference {largest:.1e}, {within} of {len(floats)} within {MATCH_TOLERANCE:.0e}"
          + "".join(f"\n       {d}" for d in diffs[:5]))
    return {"label": label, "identical": not diffs, "differences": len(diffs), "first": diffs[:5],
            "largest_float_difference": largest, "floats": len(floats), "floats_within_tolerance": within}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--weights", help="a ResNet-50 state-dict file (default: seeded random weights)")
    ap.add_argument("--sources", type=int, default=10_000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--compare-cpu", type=int, default=100, help="sources run on the CPU too, rows compared")
    ap.add_argument("--runtimes", default=f"{TORCH_RUNTIME},{ONNXRUNTIME}")
    ap.add_argument("--limit-batches", type=int, default=LIMIT_BATCHES, help="batches the bare network is timed on")
    ap.add_argument("--out", help="folder for gpu.json (the figures)")
    args = ap.parse_args(argv)

    threads = configure_inference_threads()
    torch.manual_seed(WEIGHT_SEED)
    base = load_classifier(MODEL, args.weights, device=args.device)
    weights = args.weights or f"torchvision's random initialisation, seed {WEIGHT_SEED}"
    gpu = torch.cuda.get_device_name(base.device) if args.device.startswith("cuda") else "cpu"
    print(f"device {args.device} ({gpu}), torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{threads} CPU threads; model resnet50, weights: {weights}; batch {args.batch_size}; TF32 "
          f"{'on' if torch.backends.cudnn.allow_tf32 else 'off'} (f32)")
    models, refused = {TORCH_RUNTIME: base}, {}
    for runtime in args.runtimes.split(","):
        if runtime == TORCH_RUNTIME:
            continue
        try:
            models[runtime] = with_runtime(base, runtime)
            print(f"model  {runtime} {runtime_version(runtime)}: exported, largest difference from torch on "
                  f"the GPU {models[runtime].max_difference:.1e}")
        except RuntimeUnavailable as exc:
            refused[runtime] = str(exc)
            print(f"model  {runtime}: {exc}")
    result = {"device": args.device, "gpu": gpu, "torch": torch.__version__, "weights": weights,
              "batch_size": args.batch_size, "sources": args.sources, "refused": refused}
    demo = load_demo()
    photos = [load_rgb(s.image_path) for s in demo.samples]

    def save() -> None:  # after every step: a run stopped at its time limit still leaves what it measured
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "gpu.json").write_text(json.dumps(result, indent=1, default=str))

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ann = relabelled_sources(base, demo, photos, args.sources, work)

        def config(**kw) -> RunConfig:
            return RunConfig(dataset=str(ann), images=str(DEMO_IMAGES), operators=(EXTRA_OPERATOR,),
                             batch_size=args.batch_size, device=args.device, **kw)

        limits = bare_limits(models, photos, args.batch_size, args.device, args.limit_batches)
        for label, speed in limits.items():
            print(f"limit  {label:<58} {speed:8.1f} images/s")
        fastest = max(limits, key=limits.get)
        print(f"limit  = fastest: {fastest}, {limits[fastest]:.1f} images/s")
        result["limits"] = limits
        save()
        runs, result["runs"], result["rows"] = {}, {}, []
        for lazy in (False, True):  # every runtime's lazy-off run first: the figures the ratios need
            for runtime, model in models.items():
                tag = f"{runtime}-{'lazy' if lazy else 'full'}"
                runs[tag] = r = objrel_run(model, config(lazy=lazy, runtime=runtime), work / f"{tag}.db")
                own = max(v for k, v in limits.items() if k.startswith(runtime))
                steps = ", ".join(f"{k} {v / r['seconds']:.0%}" for k, v in sorted(r["steps"].items(),
                                                                                    key=lambda kv: -kv[1]))
                print(f"objrel {runtime:<12} lazy {'on ' if lazy else 'off'}: {r['seconds']:.1f} s, "
                      f"{r['images_per_s']:.1f} images/s, {r['sources_per_s']:.1f} sources/s ({r['passes']} forward "
                      f"passes, {r['tested']} tested); / own bare {own:.1f} = {r['images_per_s'] / own:.3f}; "
                      f"/ limit = {r['images_per_s'] / limits[fastest]:.3f}; steps: {steps}")
                result["runs"][tag] = {f: v for f, v in r.items() if f != "rows"}
                if runtime != TORCH_RUNTIME and not lazy:
                    result["rows"].append(compare(f"{runtime} vs torch on {args.device}, lazy off, {args.sources} "
                                                  f"sources", r, runs[f"{TORCH_RUNTIME}-full"]))
                if lazy:
                    del runs[tag]["rows"]
                save()
        if args.compare_cpu:
            cpu = load_classifier(MODEL, args.weights)
            cpu.module.load_state_dict(base.module.state_dict())  # the same weights, on the CPU
            part = dict(limit=args.compare_cpu, lazy=False, runtime=TORCH_RUNTIME)
            on_cpu = objrel_run(cpu, config(**part).replace(device="cpu"), work / "cpu.db")
            on_gpu = objrel_run(base, config(**part), work / "gpu-part.db")
            result["rows"].append(compare(f"torch on {args.device} vs torch on the CPU, lazy off, first "
                                          f"{args.compare_cpu} sources", on_gpu, on_cpu))
            save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
