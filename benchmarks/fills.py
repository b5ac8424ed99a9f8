"""Fill inputs: what the model's input of a source's one-colour fills costs, painted or mixed.

For every demo photo and its target region (dilated 3 pixels, as the demo run does), both ways side by
side in one process, alternating their order each round:

  painted  paint each fill on the full-size photo, then the adapter's ``prepare`` (one resize per mutant)
  mixed    the adapter's ``fill_basis`` (two resizes: the object's pixels and the region; the source's own
           model input, which its forward pass needed anyway, is reused as the engine does), then ``prepare``
           of a ``PaintedInput`` per fill

for plan colours3 (3 colours x 2 sides = 6 fills per source) and palette15 (15 x 2 = 30), on one thread
(the engine spreads sources over the cores; this measures the work).  Prints milliseconds per source
(median of rounds), the ratio painted / mixed, and the largest difference between the two inputs.

    python benchmarks/fills.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from objrel.data import load_demo, load_rgb  # noqa: E402
from objrel.models import load_classifier  # noqa: E402
from objrel.models.preprocess import PaintedInput  # noqa: E402
from objrel.models.threads import configure_inference_threads, set_preprocess_threads  # noqa: E402
from objrel.mutations.colours import PALETTE_15, THREE_COLOURS  # noqa: E402
from objrel.mutations.pixels import paint  # noqa: E402
from objrel.mutations.recipe import build_target  # noqa: E402

PLANS = {"colours3": THREE_COLOURS, "palette15": PALETTE_15}
DILATE = 3


def painted(model, image, region, source, colours) -> np.ndarray:
    return model.prepare([paint(image, where, c) for where in (region, ~region) for c in colours]).numpy()


def mixed(model, image, region, source, colours) -> np.ndarray:
    basis = model.fill_basis(image, region, source)
    return model.prepare([PaintedInput(basis, side, c) for side in ("inside", "outside") for c in colours]).numpy()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    model = load_classifier("efficientnet-lite0")
    configure_inference_threads()
    set_preprocess_threads(1)
    scenes = []
    for s in load_demo().samples:
        image = load_rgb(s.image_path)
        h, w = image.shape[:2]
        scenes.append((image, build_target(s.objects, w, h, DILATE).region, model.prepare([image])[0]))
    std = np.asarray(model.preprocess.std, np.float32).reshape(1, 3, 1, 1) * 255
    print(f"EfficientNet-Lite0 preprocessing ({model.preprocess.size} px, {model.preprocess.resize}), "
          f"{len(scenes)} demo photos, one thread, {args.rounds} rounds (medians)")
    for plan, colours in PLANS.items():
        colours = list(colours.values())
        worst = max(float(np.abs(painted(model, *scene, colours) - mixed(model, *scene, colours)).max() * std.max())
                    for scene in scenes)
        times = {"painted": [], "mixed": []}
        for rnd in range(args.rounds):
            order = ("painted", "mixed") if rnd % 2 == 0 else ("mixed", "painted")
            for way in order:
                fn = painted if way == "painted" else mixed
                t = time.perf_counter()
                for scene in scenes:
                    fn(model, *scene, colours)
                times[way].append((time.perf_counter() - t) / len(scenes) * 1000)
        p, m = statistics.median(times["painted"]), statistics.median(times["mixed"])
        pairs = sorted(a / b for a, b in zip(times["painted"], times["mixed"]))
        print(f"{plan:9s} ({2 * len(colours)} fills per source): painted {p:.2f} ms/source, mixed {m:.2f} ms/source, "
              f"painted/mixed = {p / m:.2f}x (pairs {pairs[0]:.2f}..{pairs[-1]:.2f}); largest input difference "
              f"{worst:.1e} grey levels")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
