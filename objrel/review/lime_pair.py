"""LIME for a review item: its source and one of its mutants, explained side by side.

Each image is explained with ``objrel.explain.explanation_for`` (cached in the store), rebuilt from
its recipe, overlaid with its strongest superpixels and shrunk to a thumbnail.  Progress is reported
over the pair as one fraction in [0, 1], with a text that ends in the time left at the pace so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from objrel.progress import lime_eta_text
from objrel import access as A
from objrel.access import Actor
from objrel.review.items import THUMB_SIDE, thumbnail
from objrel.store import Store

SOURCE_KEY = "source"
# progress(fraction of the pair done in [0, 1], text)
PairProgress = Callable[[float, str], None]


@dataclass(frozen=True)
class ExplainedImage:
    key: str                      # "source" or the mutation key
    image: np.ndarray             # the LIME overlay as a thumbnail, (h, w, 3) uint8
    object_share: float | None    # share of the positive LIME weight inside the target region


def explain_pair(actor: Actor, store: Store, model, run_id: int, sample_id: str, mutation_key: str,
                 num_samples: int, progress: PairProgress | None = None, side: int = THUMB_SIDE) -> list[ExplainedImage]:
    """The source and ``mutation_key``'s mutant of a stored inference, explained with ``model`` (the run's).

    ``actor`` must hold the reviewer, adjudicator or admin role (NotAllowed otherwise): LIME costs
    minutes of model time and writes its result to the store's cache."""
    A.authorize(actor, A.EXPLAIN, f"{sample_id!r} of run {int(run_id)}")
    from objrel.explain import explanation_for, overlay
    from objrel.mutations.rebuild import rebuild_mutant

    keys = (SOURCE_KEY, mutation_key)
    out = []
    t0 = time.perf_counter()
    for done_images, key in enumerate(keys):
        def report(done: int, total: int, key=key, before=done_images) -> None:
            if progress is not None:
                fraction = min(1.0, (before + done / max(total, 1)) / len(keys))
                progress(fraction, f"LIME {key} {done}/{total}: "
                                   f"{lime_eta_text(fraction, time.perf_counter() - t0)}")

        explanation = explanation_for(store, model, run_id, sample_id, key, num_samples=num_samples,
                                      progress=report)
        rebuilt = rebuild_mutant(store, run_id, sample_id, key)
        image = rebuilt.image if key == SOURCE_KEY else rebuilt.mutant
        out.append(ExplainedImage(key, thumbnail(overlay(image, explanation), side), explanation.object_share))
    return out
