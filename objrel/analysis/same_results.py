"""Whether two runs stored the same results: every label, flag, verdict and count exactly, every float within a
tolerance.

The runtime equality tests (torch against ONNX Runtime and OpenVINO, classifiers and detectors) and
``benchmarks/gpu.py`` (a GPU's run against the CPU's) compare runs of the same work this way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection

from objrel.store import Store

# Fields that differ between two runs of the same work (row ids, the run's id, times): never compared.
VOLATILE_FIELDS = frozenset({"run_id", "id", "seconds", "elapsed_ms", "created_at", "updated_at", "started_at",
                             "finished_at"})

Tolerance = float | Callable[[str], float]


def classifier_rows(store: Store, run_id: int) -> dict:
    """Every stored result of a classifier run (samples, verdicts, votes, each sample's predictions), in an
    order that does not depend on when a row was written, so that two runs compare item by item."""
    samples = sorted(store.samples(run_id), key=lambda s: s["sample_id"])

    def key(row: dict) -> str:
        return json.dumps({k: v for k, v in row.items() if not isinstance(v, float) and k not in VOLATILE_FIELDS},
                          sort_keys=True, default=str)

    return {"samples": samples,
            "verdicts": sorted(store.verdicts(run_id), key=key),
            "votes": sorted(store.votes(run_id), key=key),
            "predictions": {s["sample_id"]: store.predictions(run_id, s["sample_id"]) for s in samples}}


def differences(got, want, tolerance: Tolerance = 0.0, floats: list[float] | None = None,
                skip: Collection[str] = VOLATILE_FIELDS, path: str = "") -> list[str]:
    """Where two stored structures differ, one line each (``path: got != want``).

    Two floats differ by more than ``tolerance`` (a number, or a function of the value's path such as
    ``.boxes[0]``); two NaNs are equal.  A float against anything else must be equal to it exactly (an int of
    the same value), and never against None, text or a flag.  Everything else (text, labels, flags, counts,
    the keys of a dict, the length of a list) must be equal.  Values under the keys in
    ``skip`` are not compared.  ``floats``, when given, collects every pair's absolute difference (inf where
    one of them is NaN), so a caller can report the largest.
    """
    if isinstance(got, float) or isinstance(want, float):
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (got, want))
        if not numbers or not (isinstance(got, float) and isinstance(want, float)):
            return [] if numbers and got == want else [f"{path}: {got!r} != {want!r}"]
        if math.isnan(got) and math.isnan(want):
            return []
        gap = math.inf if math.isnan(got) or math.isnan(want) else abs(got - want)
        if floats is not None:
            floats.append(gap)
        allowed = tolerance(path) if callable(tolerance) else tolerance
        return [] if gap <= allowed else [f"{path}: {got!r} != {want!r}"]
    if isinstance(got, dict) and isinstance(want, dict):
        if set(got) != set(want):
            return [f"{path or '(top level)'}: keys {sorted(set(got) ^ set(want))} in one only"]
        return [d for k in want if k not in skip
                for d in differences(got[k], want[k], tolerance, floats, skip, f"{path}.{k}")]
    if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)):
        if len(got) != len(want):
            return [f"{path or '(top level)'}: {len(got)} items != {len(want)}"]
        return [d for i, (a, b) in enumerate(zip(got, want))
                for d in differences(a, b, tolerance, floats, skip, f"{path}[{i}]")]
    return [] if got == want else [f"{path}: {got!r} != {want!r}"]
