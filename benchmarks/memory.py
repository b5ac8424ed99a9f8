"""Memory of a long run on the local engine: peak RSS and the store's bytes per tested image.

Generates ``--n`` small PNGs (``--size`` px squares: a coloured box on a coloured background, annotated with
its dominant colour) and a COCO file, then runs the colour-model fixture (tests/fixtures/colour_model.py)
over them with plan ``--plan`` into a fresh SQLite store.  Printed: peak RSS before the run (imports,
dataset index) and after it, RSS sampled while it ran, and the store's size per tested image.

    python benchmarks/memory.py [--n 50000] [--size 64] [--plan colours3] [--no-lazy]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from objrel.config import RunConfig  # noqa: E402
from objrel.engine.classify import Engine  # noqa: E402
from objrel.store import Store  # noqa: E402
from tests.fixtures.colour_model import factory  # noqa: E402

CATEGORIES = [{"id": 1, "name": "red"}, {"id": 2, "name": "green"}, {"id": 3, "name": "blue"}]


def synthetic_set(root: Path, n: int, size: int, seed: int = 0) -> Path:
    """``n`` PNGs of ``size`` x ``size``: a random box in a random colour on a random background."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    images, anns = [], []
    for i in range(1, n + 1):
        img = np.empty((size, size, 3), np.uint8)
        img[:] = rng.integers(0, 256, 3)
        w, h = (int(v) for v in rng.integers(size // 4, size // 2 + 1, 2))
        x, y = (int(v) for v in rng.integers(0, size - max(w, h) + 1, 2))
        obj = rng.integers(0, 256, 3)
        obj[rng.integers(0, 3)] = 255  # a clear dominant channel
        img[y : y + h, x : x + w] = obj
        name = f"{i // 1000:03d}/s{i}.png"
        (root / name).parent.mkdir(exist_ok=True)
        Image.fromarray(img).save(root / name, compress_level=1)
        images.append({"id": i, "file_name": name, "width": size, "height": size})
        anns.append({"id": i, "image_id": i, "category_id": int(np.argmax(obj)) + 1, "bbox": [x, y, w, h]})
    path = root / "annotations.json"
    path.write_text(json.dumps({"images": images, "annotations": anns, "categories": CATEGORIES}))
    return path


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50_000, help="images in the synthetic dataset")
    ap.add_argument("--size", type=int, default=64, help="image side in pixels")
    ap.add_argument("--plan", default="colours3")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--no-lazy", action="store_true")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t = time.perf_counter()
        ann = synthetic_set(work / "data", args.n, args.size)
        t_gen = time.perf_counter() - t
        db = work / "memory.db"
        store = Store(db)
        cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan=args.plan,
                        batch_size=args.batch_size, test_all=True, lazy=not args.no_lazy)
        engine = Engine(store, cfg, model=factory())
        before_rss, before_peak = rss_mb(), peak_mb()
        samples: list[float] = []
        stop = threading.Event()

        def sample_rss():
            while not stop.wait(0.5):
                samples.append(rss_mb())

        sampler = threading.Thread(target=sample_rss, daemon=True)
        sampler.start()
        t = time.perf_counter()
        report = engine.execute()
        elapsed = time.perf_counter() - t
        stop.set()
        sampler.join()
        store.dispose()
        size = sum(p.stat().st_size for p in work.glob("memory.db*"))
        q = lambda p: np.percentile(samples, p) if samples else float("nan")  # noqa: E731
        print(f"{args.n} synthetic {args.size}x{args.size} PNGs (made in {t_gen:.1f} s), plan {args.plan}, "
              f"batch {args.batch_size}, lazy {not args.no_lazy}, colour-model fixture")
        print(f"run: {elapsed:.1f} s, {report.processed} samples, {report.tested} tested, "
              f"{report.forward_passes} forward passes, {report.processed / elapsed:.0f} samples/s")
        print("time by step (the run's thread): " + ", ".join(f"{name} {share:.1%}" for name, _, share in
                                                               report.step_shares()))
        print(f"RSS before the run {before_rss:.0f} MB (peak so far {before_peak:.0f} MB); while running: "
              f"p50 {q(50):.0f} MB, p95 {q(95):.0f} MB, last {samples[-1] if samples else float('nan'):.0f} MB; "
              f"process peak RSS {peak_mb():.0f} MB")
        print(f"store: {size / 2**20:.1f} MB = {size / max(report.tested, 1):.0f} bytes per tested image")
    return 0


if __name__ == "__main__":
    sys.exit(main())
