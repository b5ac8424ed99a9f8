"""LIME for a review item: its source and one of its mutants, explained side by side.

Each image is explained with ``objrel.review.explanations.explanation_for`` (cached in the store), rebuilt from
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
                 num_samples: int, progress: PairProgress | None = None, side: int = THUMB_SIDE,
                 outline: bool = True) -> list[ExplainedImage]:
    """The source and ``mutation_key``'s mutant of a stored inference, explained with ``model`` (the run's).

    ``actor`` must hold the reviewer, adjudicator or admin role (NotAllowed otherwise): LIME costs
    minutes of model time and writes its result to the store's cache.  With ``outline`` the target
    region's contour is drawn over each overlay.  A pair not cached yet is computed in a slot of the work queue
    (``objrel.work_queue``): with the server's or the actor's cap reached, WorkRefused and nothing computed."""
    A.authorize(actor, A.EXPLAIN, f"{sample_id!r} of run {int(run_id)}")
    cached = cached_pair(store, run_id, sample_id, mutation_key, num_samples, side, outline)
    if cached is not None:
        return cached
    from objrel import work_queue
    from objrel.review.explanations import explanation_for

    keys = (SOURCE_KEY, mutation_key)
    out = []
    t0 = time.perf_counter()
    with work_queue.admit(actor, work_queue.LIME, f"LIME of {sample_id!r} of run {int(run_id)}"):
        for done_images, key in enumerate(keys):
            def report(done: int, total: int, key=key, before=done_images) -> None:
                if progress is not None:
                    fraction = min(1.0, (before + done / max(total, 1)) / len(keys))
                    progress(fraction, f"LIME {key} {done}/{total}: "
                                       f"{lime_eta_text(fraction, time.perf_counter() - t0)}")

            explanation = explanation_for(store, model, run_id, sample_id, key, num_samples=num_samples,
                                          progress=report)
            out.append(_drawn(store, run_id, sample_id, key, explanation, side, outline))
    return out


def cached_pair(store: Store, run_id: int, sample_id: str, mutation_key: str, num_samples: int,
                side: int = THUMB_SIDE, outline: bool = True) -> list[ExplainedImage] | None:
    """What ``explain_pair`` returns for the source and ``mutation_key``'s mutant, drawn from the store's
    cache, or None while either explanation is not computed yet.  Never runs a model (a page may call it
    on every redraw); needs no role, as it only reads what a reviewer or the job ahead stored."""
    from objrel.review.explanations import cached_explanation

    found = [(key, cached_explanation(store, run_id, sample_id, key, num_samples=num_samples))
             for key in (SOURCE_KEY, mutation_key)]
    if any(e is None for _, e in found):
        return None
    return [_drawn(store, run_id, sample_id, key, e, side, outline) for key, e in found]


def _drawn(store: Store, run_id: int, sample_id: str, key: str, explanation, side: int,
           outline: bool) -> ExplainedImage:
    """One explained image as the page shows it: the image rebuilt from its recipe, shrunk to a thumbnail,
    the explanation (resampled to the thumbnail) tinted over it and, with ``outline``, the target region's
    contour drawn at the thumbnail's scale (so the line is 2 px in the browser whatever the photo's size)."""
    import cv2

    from objrel.explain import overlay, resized
    from objrel.review.rebuild import rebuild_mutant

    rebuilt = rebuild_mutant(store, run_id, sample_id, key)
    image = rebuilt.image if key == SOURCE_KEY else rebuilt.mutant
    small = thumbnail(image, side)
    h, w = small.shape[:2]
    region = None
    if outline:
        region = cv2.resize(rebuilt.target.region.astype(np.uint8), (w, h), interpolation=cv2.INTER_NEAREST) > 0
    drawn = overlay(small, resized(explanation, (h, w)), outline=region)
    return ExplainedImage(key, drawn, explanation.object_share)
