"""LIME time: one explanation of a demo photo with EfficientNet-Lite0 through objrel's adapter.

Prints the seconds of ``objrel.explain.explain`` at ``--samples`` perturbed images (300 by default,
what the Review page computes), median of ``--repeats`` runs after a warm-up forward pass.

    python benchmarks/lime_time.py [--samples 300] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from objrel.data import load_demo, load_rgb  # noqa: E402
from objrel.explain import explain  # noqa: E402
from objrel.models import load_classifier  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    model = load_classifier("efficientnet-lite0")
    sample = load_demo().samples[0]
    image = load_rgb(sample.image_path)
    model.predict([image])  # warm-up
    times = []
    for rep in range(args.repeats):
        t = time.perf_counter()
        explain(model, image, num_samples=args.samples, seed=rep)
        times.append(time.perf_counter() - t)
    print(f"LIME on {sample.rel_path} ({image.shape[1]}x{image.shape[0]}), {args.samples} samples, "
          f"EfficientNet-Lite0: median {statistics.median(times):.2f} s "
          f"(min {min(times):.2f}, max {max(times):.2f}, {args.repeats} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
