"""The allocator setting's effect on the bare module: glibc's defaults against freed blocks kept.

Each round starts two fresh processes, one with ``OBJREL_ALLOCATOR=system`` (glibc's defaults) and one
with objrel's setting (``objrel.models.allocator.keep_freed_memory``); each times the bare module on the
same preprocessed batches of the demo photos (channels_last, torch threads as objrel sets them) and
reports images/s, the page faults, user and system CPU time of the timed loop and the process's peak RSS.
The ratio is the median of the rounds' pairs; the two processes of a round run back to back, in turns
(defaults first in odd rounds, kept first in even ones), so drift on a shared machine divides out.

    python benchmarks/allocator.py [--rounds 5] [--batches 20] [--batch-size 16] [--model efficientnet-lite0]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def child(model_name: str, batches: int, batch_size: int) -> dict:
    """Runs in the measured process: images/s, minor page faults and system seconds of the timed loop."""
    import torch

    from objrel.data import load_demo, load_rgb
    from objrel.models import load_classifier
    from objrel.models.allocator import keep_freed_memory
    from objrel.models.threads import configure_inference_threads

    configure_inference_threads()
    model = load_classifier(model_name)
    photos = [load_rgb(s.image_path) for s in load_demo().samples]
    images = [photos[i % len(photos)] for i in range(batches * batch_size)]
    xs = [model.prepare(images[i : i + batch_size]) for i in range(0, len(images), batch_size)]
    with torch.inference_mode():
        model.module(xs[0])  # warm-up
        before = resource.getrusage(resource.RUSAGE_SELF)
        t = time.perf_counter()
        for x in xs:
            model.module(x)
        elapsed = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_SELF)
    return {"images_per_s": len(images) / elapsed, "faults": after.ru_minflt - before.ru_minflt,
            "sys_s": after.ru_stime - before.ru_stime, "user_s": after.ru_utime - before.ru_utime,
            "peak_rss_mb": after.ru_maxrss / 1024, "allocator": keep_freed_memory()}


def measure(mode: str, args) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if mode == "system":
        env["OBJREL_ALLOCATOR"] = "system"
    else:
        env.pop("OBJREL_ALLOCATOR", None)
    out = subprocess.run([sys.executable, __file__, "--child", "--model", args.model, "--batches", str(args.batches),
                          "--batch-size", str(args.batch_size)], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="efficientnet-lite0")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.model, args.batches, args.batch_size)))
        return 0
    rows = []
    for r in range(args.rounds):
        if r % 2 == 0:
            system, kept = measure("system", args), measure("kept", args)
        else:
            kept, system = measure("kept", args), measure("system", args)
        if system["allocator"] != "disabled" or kept["allocator"] != "kept":
            raise SystemExit(f"the setting did not apply as asked: defaults process {system['allocator']!r}, "
                             f"kept process {kept['allocator']!r}")
        rows.append((system, kept))
        line = lambda d: (f"{d['images_per_s']:.1f} images/s ({d['faults']} page faults, CPU user {d['user_s']:.2f} s "  # noqa: E731
                          f"+ system {d['sys_s']:.2f} s, peak RSS {d['peak_rss_mb']:.0f} MB)")
        print(f"round {r + 1}: glibc defaults {line(system)} | kept {line(kept)}", flush=True)
    med = statistics.median
    ratios = [k["images_per_s"] / s["images_per_s"] for s, k in rows]
    print(f"{args.model}, batch {args.batch_size}, {args.batches} batches, {args.rounds} rounds (medians): "
          f"glibc defaults "
          f"{med(s['images_per_s'] for s, _ in rows):.1f} images/s, kept {med(k['images_per_s'] for _, k in rows):.1f} "
          f"images/s; kept / defaults = {med(ratios):.2f} (pairs {min(ratios):.2f}..{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
