"""Review page: server time for one flagged item on a store with 50,000 flagged inferences,
and memory over a 200-item review session.

Builds a SQLite store whose run has N flagged inferences (rows bulk-inserted; each
points at one of the bundled demo photos with its real polygon, so mutants are
really rebuilt), then drives the real page script with Streamlit's AppTest:

* server time = one script run of pages/review.py showing an item (source + 6
  mutants rebuilt from recipes, predictions, verdicts), cold (first view of the
  item) and warm (same item again), median over items;
* memory = process RSS while stepping through 200 items with the Next button.

    python benchmarks/review_page.py [--flagged 50000] [--items 200]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert  # noqa: E402

from objrel.data import load_demo  # noqa: E402
from objrel.mutations import derive_seed, preset  # noqa: E402
from objrel.relations.classify import Prediction  # noqa: E402
from objrel.store import Store  # noqa: E402
from objrel.store import schema as S  # noqa: E402

CHUNK = 5000


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build_store(path: Path, n_flagged: int) -> int:
    """A finished run of the 3-colour plan with ``n_flagged`` inferences flagged by MR-2."""
    demo = load_demo()
    store = Store(path)
    plan = preset("colours3")
    from objrel.models import imagenet_classes

    names = list(imagenet_classes())
    run_id = store.create_run(
        name=f"synthetic {n_flagged} flagged", model="efficientnet-lite0", model_config={}, task="single",
        class_names=names, dataset="demo", dataset_config={**demo.describe(), "padding": 0}, plan=plan.to_dict(),
        config={"model": "efficientnet-lite0", "dataset": "demo", "plan": "colours3"}, seed=0, n_total=n_flagged)
    photos = [s for s in demo.samples]
    sizes = {}
    from PIL import Image

    for s in photos:
        with Image.open(s.image_path) as im:
            sizes[s.sample_id] = im.size
    muts = plan.mutations
    t = time.perf_counter()
    with store.engine.begin() as c:
        for start in range(0, n_flagged, CHUNK):
            samples, preds, verdicts, votes = [], [], [], []
            for i in range(start, min(n_flagged, start + CHUNK)):
                src = photos[i % len(photos)]
                sid = f"{i:06d}"
                label = src.objects[0].class_index
                w, h = sizes[src.sample_id]
                samples.append({"run_id": run_id, "sample_id": sid, "rel_path": src.rel_path, "status": "tested",
                                "width": w, "height": h, "gt_labels": [label],
                                "gt_categories": [src.objects[0].category],
                                "predicted": [label], "correct": True, "objects": [o.to_dict() for o in src.objects],
                                "region_source": "annotation", "area_ratio": 0.2 + 0.6 * (i % 97) / 97,
                                "s_p": 0.5, "s_r": 0.3, "s": 0.4, "elapsed_ms": 1.0})
                probs = [0.0] * 1000
                probs[label], probs[(label + 1) % 1000] = 0.7, 0.2
                p = Prediction.from_probs(probs, interest=[label]).to_dict()
                preds.append({"run_id": run_id, "sample_id": sid, "mutation_key": "source", "seed": None,
                              "prediction": p})
                for m in muts:
                    preds.append({"run_id": run_id, "sample_id": sid, "mutation_key": m.key,
                                  "seed": str(derive_seed(0, sid, m.key)), "prediction": p})
                    violated = m.relation == "MR-2"
                    verdicts.append({"run_id": run_id, "sample_id": sid, "mutation_key": m.key, "operator": m.operator,
                                     "relation": m.relation, "verdict": "violated" if violated else "holds",
                                     "source_certainty": 0.5, "mutant_certainty": 0.5, "label_changed": violated,
                                     "distance": 0.5, "note": None})
                for g in plan.groups:
                    flagged = g.relation == "MR-2"
                    votes.append({"run_id": run_id, "sample_id": sid, "group_name": g.name, "relation": g.relation,
                                  "is_primary": True, "k": g.k, "n": 3, "applicable": 3,
                                  "violations": 3 if flagged else 0, "flagged": flagged})
            c.execute(insert(S.samples), samples)
            c.execute(insert(S.predictions), preds)
            c.execute(insert(S.verdicts), verdicts)
            c.execute(insert(S.votes), votes)
    store.update_run(run_id, status="finished", n_done=n_flagged, n_tested=n_flagged)
    print(f"built store: {n_flagged} flagged inferences ({n_flagged * 7} predictions, {n_flagged * 6} verdicts) "
          f"in {time.perf_counter() - t:.1f} s")
    return run_id


def page(db: Path):
    from streamlit.testing.v1 import AppTest

    os.environ["OBJREL_STORE"] = str(db)
    at = AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=120)
    at.session_state["reviewer"] = "bench"
    return at


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flagged", type=int, default=50_000)
    ap.add_argument("--items", type=int, default=200)
    ap.add_argument("--timed", type=int, default=10, help="items whose cold and warm times are measured")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "review-bench.db"
        run_id = build_store(db, args.flagged)
        from objrel import review

        store = Store(db)
        review.create_reviewer(store, "bench", "benchmark-passphrase")
        at = page(db)
        at.session_state["review_run"] = run_id
        at.session_state["review_relation"] = "MR-2"
        at.session_state["review_mode"] = "All flagged"
        at.session_state["review_goto"] = None
        t = time.perf_counter()
        at.run()
        first = time.perf_counter() - t
        if at.exception:
            print(at.exception)
            return 1
        cold, warm = [], []
        for _ in range(args.timed):
            t = time.perf_counter()
            at.button(key="review_next").click().run()
            cold.append(time.perf_counter() - t)
            t = time.perf_counter()
            at.run()
            warm.append(time.perf_counter() - t)
        print(f"first page load (store open, queue of {args.flagged} flagged, model-free): {first:.3f} s")
        print(f"server time per item, cold (rebuild source + 6 mutants): median {statistics.median(cold):.3f} s, "
              f"max {max(cold):.3f} s over {args.timed} items  (target < 1 s)")
        print(f"server time per item, warm (cached item): median {statistics.median(warm):.3f} s")
        marks, traced = {}, {}
        rss0 = rss_mb()
        tracemalloc.start()
        for i in range(1, args.items + 1):
            at.button(key="review_next").click().run()
            if i in (10, 50, 100, 150, 200) or i == args.items:
                gc.collect()
                marks[i] = rss_mb()
                traced[i] = tracemalloc.get_traced_memory()[0] / 2**20
        tracemalloc.stop()
        print("Python heap (tracemalloc, numpy arrays included) over the session: "
              + ", ".join(f"item {k}: {v:.1f} MB" for k, v in traced.items()))
        print("process RSS over the session: " + ", ".join(f"item {k}: {v:.0f} MB" for k, v in marks.items()))
        first = min(traced)
        print(f"heap growth from item {first} to item {max(traced)}: {traced[max(traced)] - traced[first]:+.1f} MB "
              f"(RSS at start {rss0:.0f} MB; RSS moves with the allocator's arenas, the heap is the steady measure)")
        print(json.dumps({"cold_median_s": statistics.median(cold), "warm_median_s": statistics.median(warm),
                          "rss_mb": marks, "heap_mb": traced}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
