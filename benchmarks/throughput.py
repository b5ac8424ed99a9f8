"""Throughput: objrel's run vs plain batched inference of the same images, in one process.

Both sides make the same number of forward passes through the same model with the
same batch size: plain inference decodes every source and predicts it plus as many
copies as objrel makes mutants; objrel decodes, mutates, checks the relations and
commits every sample to a SQLite store.  Printed: ``ratio = plain_time / objrel_time``
(1.0 = objrel adds nothing; target >= 0.90).

    python benchmarks/throughput.py [--copies 3] [--repeats 3] [--plan colours3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from objrel.config import RunConfig  # noqa: E402
from objrel.data import load_demo, load_rgb  # noqa: E402
from objrel.data.bundled import DEMO_IMAGES  # noqa: E402
from objrel.engine.classify import Engine  # noqa: E402
from objrel.models import load_classifier  # noqa: E402
from objrel.store import Store  # noqa: E402


def correct_subset(model, copies: int, workdir: Path) -> Path:
    """A COCO file listing the demo photos the model classifies correctly, each ``copies`` times,
    so every sample is tested and both sides see identical work."""
    demo = json.loads(Path(load_demo().annotation).read_text())
    ds = load_demo()
    images = [load_rgb(s.image_path) for s in ds.samples]
    top1 = model.predict(images).argmax(axis=1)
    keep = {int(s.sample_id) for s, t in zip(ds.samples, top1) if t == s.objects[0].class_index}
    out = {"categories": demo["categories"], "images": [], "annotations": []}
    for c in range(copies):
        for im in demo["images"]:
            if im["id"] not in keep:
                continue
            new_id = c * 1000 + im["id"]
            out["images"].append({**im, "id": new_id})
            out["annotations"] += [{**a, "id": c * 100000 + a["id"], "image_id": new_id}
                                   for a in demo["annotations"] if a["image_id"] == im["id"]]
    path = workdir / "bench.json"
    path.write_text(json.dumps(out))
    return path


def plain(model, paths: list[str], per_source: int, batch_size: int) -> float:
    t = time.perf_counter()
    batch = []
    for p in paths:
        image = load_rgb(p)
        batch += [image] * per_source
        while len(batch) >= batch_size:
            model.predict(batch[:batch_size])
            batch = batch[batch_size:]
    if batch:
        model.predict(batch)
    return time.perf_counter() - t


def objrel_run(model, ann: Path, plan: str, batch_size: int, workdir: Path, rep: int) -> tuple[float, int]:
    store = Store(workdir / f"bench-{rep}.db")
    cfg = RunConfig(dataset=str(ann), images=str(DEMO_IMAGES), plan=plan, batch_size=batch_size)
    engine = Engine(store, cfg, model=model)
    t = time.perf_counter()
    report = engine.execute()
    elapsed = time.perf_counter() - t
    store.dispose()
    return elapsed, report.forward_passes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="efficientnet-lite0")
    ap.add_argument("--plan", default="colours3")
    ap.add_argument("--copies", type=int, default=3, help="times each correct demo photo is listed")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args(argv)

    model = load_classifier(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ann = correct_subset(model, args.copies, work)
        n_sources = len(json.loads(ann.read_text())["images"])
        paths = [str(DEMO_IMAGES / im["file_name"]) for im in json.loads(ann.read_text())["images"]]
        per_source = 1 + len(RunConfig(plan=args.plan).build_plan().mutations)
        model.predict([load_rgb(paths[0])] * 2)  # warm-up
        plain_t, objrel_t = [], []
        for rep in range(args.repeats):  # interleaved, so drift hits both sides alike
            plain_t.append(plain(model, paths, per_source, args.batch_size))
            t, passes = objrel_run(model, ann, args.plan, args.batch_size, work, rep)
            objrel_t.append(t)
            if passes != n_sources * per_source:
                print(f"warning: objrel made {passes} forward passes, plain {n_sources * per_source}")
        p, o = statistics.median(plain_t), statistics.median(objrel_t)
        print(f"model {args.model}, plan {args.plan}: {n_sources} sources x {per_source} images = "
              f"{n_sources * per_source} forward passes per side, batch {args.batch_size}, {args.repeats} repeats")
        print(f"plain batched inference: median {p:.2f} s  ({n_sources * per_source / p:.1f} images/s)")
        print(f"objrel run (mutate + check + store): median {o:.2f} s  ({n_sources * per_source / o:.1f} images/s)")
        print(f"ratio = plain_time / objrel_time = {p / o:.3f}  (target >= 0.90)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
