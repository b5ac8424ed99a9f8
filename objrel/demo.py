"""Build the embedded demo store: EfficientNet-Lite0 over the bundled real photos."""

from __future__ import annotations

import sys

from .config import RunConfig
from .engine import Engine
from .store import Store

DEMO_STORE = "var/demo.db"
# The demo's runs: the paper's 3-colour plan with every other operator beside it,
# and the 15-colour palette comparison (seed 000 s5.2).
DEMO_RUNS = (
    RunConfig(model="efficientnet-lite0", dataset="demo", plan="all", name="EfficientNet-Lite0 on demo photos (all operators)"),
    RunConfig(model="efficientnet-lite0", dataset="demo", plan="colours3", test_all=True, dilate=3,
              name="EfficientNet-Lite0 on demo photos (3 colours, all inferences, region dilated 3 px)"),
)


def build_demo_store(url: str | None = None, force: bool = False, log=sys.stderr) -> Store:
    """Create the demo runs unless the store already holds finished runs of the same names."""
    store = Store(url or DEMO_STORE)
    have = {r.name for r in store.list_runs() if r.status == "finished"}
    model = None
    for cfg in DEMO_RUNS:
        if cfg.name in have and not force:
            print(f"demo run already present: {cfg.name}", file=log)
            continue
        engine = Engine(store, cfg, model=model)
        model = engine.model  # load the network once for every demo run
        report = engine.execute()
        print(f"demo run {report.run_id}: {cfg.name}: {report.tested} tested, {sum(report.skipped.values())} "
              f"skipped, {report.seconds:.1f} s", file=log)
    return store
