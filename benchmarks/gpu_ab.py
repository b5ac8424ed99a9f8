"""On a GPU: objrel's lazy-off run with one engine change on and off, interleaved, the rows compared.

    python benchmarks/gpu_ab.py CHANGE [--device cuda] [--sources 3000] [--rounds 3]

CHANGE is one of:
  input-copies   the sources' model inputs copied back in one transfer per batch (``TorchClassifier.input_copies``)
                 against one per row (``Classifier.input_copies``).
A change to compare is a function that turns it on or off and two labels (``CHANGES``).

The model, weights, sources and plan are ``benchmarks/gpu.py``'s (ResNet-50, random weights, the demo photos
relabelled with its top-1, colours3 plus one painted operator, batch 64).  Prints each run's images/s and
steps, the median of the per-round ratios (on / off), and whether the last round's rows are identical.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu as G  # noqa: E402
import torch  # noqa: E402

from objrel.config import RunConfig  # noqa: E402
from objrel.constants import TORCH_RUNTIME  # noqa: E402
from objrel.models.classifier import Classifier, TorchClassifier  # noqa: E402

ONE_COPY = TorchClassifier.input_copies


def set_input_copies(on: bool) -> None:
    TorchClassifier.input_copies = ONE_COPY if on else Classifier.input_copies


# change: (what sets it, its label on, its label off); the labels are padded to one width
CHANGES = {"input-copies": (set_input_copies, "one copy", "row by row")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("change", choices=sorted(CHANGES))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sources", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args(argv)
    switch, label_on, label_off = CHANGES[args.change]
    width = max(len(label_on), len(label_off))

    G.configure_inference_threads()
    torch.manual_seed(G.WEIGHT_SEED)
    model = G.load_classifier(G.MODEL, None, device=args.device)
    name = torch.cuda.get_device_name(model.device) if args.device.startswith("cuda") else "the CPU"
    print(f"device {args.device} ({name}), torch {torch.__version__}; resnet50, batch {args.batch_size}, "
          f"{args.sources} sources, lazy off; {args.change}: {label_on} against {label_off}")
    demo = G.load_demo()
    photos = [G.load_rgb(s.image_path) for s in demo.samples]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ann = G.relabelled_sources(model, demo, photos, args.sources, work)
        cfg = RunConfig(dataset=str(ann), images=str(G.DEMO_IMAGES), operators=(G.EXTRA_OPERATOR,),
                        batch_size=args.batch_size, device=args.device, lazy=False, runtime=TORCH_RUNTIME)
        G.objrel_run(model, cfg.replace(limit=2 * args.batch_size), work / "warm-up.db")
        speed: dict[bool, list[float]] = {True: [], False: []}
        last: dict[bool, dict] = {}
        try:
            for i in range(args.rounds):
                for on in ((True, False) if i % 2 else (False, True)):
                    switch(on)
                    last[on] = r = G.objrel_run(model, cfg, work / f"round{i}-{on}.db")
                    speed[on].append(r["images_per_s"])
                    steps = ", ".join(f"{k} {v / r['seconds']:.1%}"
                                      for k, v in sorted(r["steps"].items(), key=lambda kv: -kv[1]))
                    label = label_on if on else label_off
                    print(f"round {i} {label:<{width}}: {r['seconds']:.2f} s, {r['images_per_s']:.1f} images/s "
                          f"({r['passes']} passes); steps: {steps}", flush=True)
        finally:
            switch(True)
    pairs = [a / b for a, b in zip(speed[True], speed[False])]
    print(f"{label_on} / {label_off}: median {statistics.median(pairs):.3f} "
          f"(pairs {' '.join(f'{p:.3f}' for p in pairs)})")
    G.compare(f"{label_on} vs {label_off}, last round", last[True], last[False])
    return 0


if __name__ == "__main__":
    sys.exit(main())
