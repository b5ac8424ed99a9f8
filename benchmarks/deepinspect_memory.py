"""Peak memory of DeepInspect's coverage pass: 1,000 vs 10,000 images.

    .venv/bin/python benchmarks/deepinspect_memory.py            # both sizes, side by side
    .venv/bin/python benchmarks/deepinspect_memory.py --sizes 1000,10000,20000

The planted benchmark's small CNN is trained once (seed 0, a few seconds); each size then
runs in a fresh child process that loads its weights and draws the 32x32 test images
batch by batch (nothing is held beyond one batch), streaming them through the hooked
model (5 layers, 95 neurons) with labels, so coverage counts and ground-truth error
counts are both accumulated, then the full analysis runs.  The child reports

* tracemalloc peak: the largest Python-heap (numpy arrays included) in use at once while
  streaming and analysing, measured from after the model is built;
* RSS growth: ru_maxrss at the end minus ru_maxrss before streaming (the process's high
  water mark, so it covers torch's own buffers too), and the anonymous RSS (heap and
  buffers, without mapped libraries) before and after.  Importing torch alone takes about
  500 MB of RSS, 290 MB of it anonymous, hence the large absolute numbers;

and, for scale, what a recorder that kept every input's activity would need.  The check
at the end fails (exit 1) when the 10x larger run's tracemalloc peak is more than
``MAX_PEAK_RATIO`` times the smaller one's, or its RSS grows by more than ``MAX_RSS_GROWTH_MB``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BATCH = 64
# A bounded pass may differ between sizes by allocator noise, not by a factor: the peak of
# the 10x run must stay under this multiple of the small run's peak ...
MAX_PEAK_RATIO = 1.5
# ... and the process high-water mark may grow by at most this many MB while streaming.
MAX_RSS_GROWTH_MB = 64.0


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # Linux: kilobytes


def _anon_rss_mb() -> float:
    """Resident anonymous memory now (heap, torch buffers; not the mapped libraries), from /proc."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def child(n_images: int, weights: str) -> dict:
    import numpy as np

    from objrel.studies.deepinspect import Inspector
    from objrel.studies.deepinspect.planted import CLASSES, PlantedSpec, planted_preprocess, render, tiny_cnn
    from objrel.models import TorchClassifier, load_state_dict, torch_threads

    module = tiny_cnn()
    module.load_state_dict(load_state_dict(weights))
    clf = TorchClassifier(module, list(CLASSES), planted_preprocess(), name="planted-tiny-cnn")
    spec = PlantedSpec(seed=0)
    with torch_threads(1):
        inspector = Inspector(clf)
        inspector.add([render(spec, "test", 0)[0]], [(0,)], ["test:0"])   # warm-up: lazy torch init
        rss_before, anon_before = _rss_mb(), _anon_rss_mb()
        tracemalloc.start()
        t0 = time.perf_counter()
        for start in range(1, n_images, BATCH):
            idx = range(start, min(n_images, start + BATCH))
            items = [render(spec, "test", i) for i in idx]
            inspector.add([im for im, _ in items], [(lab,) for _, lab in items], [f"test:{i}" for i in idx])
        result = inspector.finish(source={"kind": "planted", "spec": spec.to_dict()})
        seconds = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    rss_after, anon_after = _rss_mb(), _anon_rss_mb()
    # What keeping every input's activity would cost: one bool per neuron per image, or the
    # hooked layers' float32 outputs per image (16x32x32 + 32x16x16 + 64 + ... values).
    sizes = {"conv": 8 * 32 * 32 + 16 * 16 * 16 + 32 * 8 * 8, "linear": 32 + len(CLASSES)}
    return {
        "n_images": result.n_images, "seconds": seconds, "tracemalloc_peak_mb": peak / 2**20,
        "rss_before_mb": rss_before, "rss_after_mb": rss_after, "rss_growth_mb": rss_after - rss_before,
        "anon_before_mb": anon_before, "anon_after_mb": anon_after,
        "naive_activity_mb": n_images * inspector.hooks.n_neurons / 2**20,
        "naive_outputs_mb": n_images * (sizes["conv"] + sizes["linear"]) * 4 / 2**20,
        "classes_analysed": result.n_classes, "ground_truth_images": result.ground_truth.n_images,
        "counter_shapes": [list(inspector.activations.counts.shape), list(inspector.errors.confusion.shape)],
        "torch_threads": 1, "check": float(np.asarray(result.napvd).sum()),
    }


def run_child(n_images: int, weights: str) -> dict:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, __file__, "--child", str(n_images), "--weights", weights],
                         capture_output=True, text=True, env=env, cwd=str(ROOT), check=False)
    if out.returncode != 0:
        raise SystemExit(f"child for {n_images} images failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000", help="comma-separated image counts (default 1000,10000)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--weights", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.weights)))
        return 0
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if len(sizes) < 2 or any(s < 2 for s in sizes):
        raise SystemExit(f"--sizes needs at least two counts >= 2, got {args.sizes!r}")
    import torch

    from objrel.studies.deepinspect.planted import PlantedSpec, train_planted_model

    with tempfile.TemporaryDirectory() as tmp:
        weights = str(Path(tmp) / "planted-tiny-cnn.pt")
        torch.save(train_planted_model(PlantedSpec(seed=0)).module.state_dict(), weights)
        rows = [run_child(n, weights) for n in sizes]
    print(f"DeepInspect coverage + ground truth + analysis, 32x32 images, batch {BATCH}, tiny CNN "
          f"(95 neurons in 5 hooked layers), 1 torch thread, one fresh process per size")
    head = f"{'':<44}" + "".join(f"{r['n_images']:>12,}" for r in rows)
    print(head)
    lines = [
        ("tracemalloc peak while streaming (MB)", "tracemalloc_peak_mb", "{:>12.2f}"),
        ("RSS high-water before streaming (MB)", "rss_before_mb", "{:>12.1f}"),
        ("RSS high-water after (MB)", "rss_after_mb", "{:>12.1f}"),
        ("RSS growth while streaming (MB)", "rss_growth_mb", "{:>12.1f}"),
        ("anonymous RSS before streaming (MB)", "anon_before_mb", "{:>12.1f}"),
        ("anonymous RSS after analysis (MB)", "anon_after_mb", "{:>12.1f}"),
        ("seconds (render + inspect + analyse)", "seconds", "{:>12.1f}"),
        ("naive: every image's activity, bool (MB)", "naive_activity_mb", "{:>12.2f}"),
        ("naive: every hooked output, float32 (MB)", "naive_outputs_mb", "{:>12.1f}"),
    ]
    for label, key, fmt in lines:
        print(f"{label:<44}" + "".join(fmt.format(r[key]) for r in rows))
    small, big = rows[0], rows[-1]
    ratio = big["tracemalloc_peak_mb"] / max(small["tracemalloc_peak_mb"], 1e-9)
    growth = big["n_images"] / small["n_images"]
    ok = ratio <= MAX_PEAK_RATIO and big["rss_growth_mb"] <= MAX_RSS_GROWTH_MB
    print(f"\n{growth:.0f}x the images -> {ratio:.2f}x the tracemalloc peak (bound {MAX_PEAK_RATIO}x), "
          f"RSS growth {big['rss_growth_mb']:.1f} MB (bound {MAX_RSS_GROWTH_MB:.0f} MB): "
          f"{'bounded' if ok else 'NOT BOUNDED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
