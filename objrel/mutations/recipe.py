"""From a recipe (source pixels, target, mutation, seed) to a mutant.

This is the single place mutants are made, by the engine during a run and by the
app and reports when they rebuild a mutant from its stored row (ARCHITECTURE.md
decision 1: store recipes, not pixels).
"""

from __future__ import annotations

import numpy as np

from objrel.data.region import check_box, target_region
from objrel.mutations.pixels import dilate_region
from objrel.mutations.plan import Mutation
from objrel.mutations.registry import Target, get_operator


def build_target(objects, width: int, height: int, dilate: int = 0, masks=None) -> Target:
    """Target of ``objects`` on a ``width`` x ``height`` image; raises BadSampleError on bad regions.
    ``masks``: the objects' masks, in their order, when the caller decoded them already."""
    region = target_region(objects, width, height, masks=masks)
    if dilate:
        region = dilate_region(region, dilate)
    boxes = tuple(check_box(o.box, width, height) for o in objects)
    masked = any(o.segmentation is not None for o in objects)
    return Target(region=region, boxes=boxes, masked=masked)


def make_mutant(image: np.ndarray, target: Target, mutation: Mutation, seed: int) -> np.ndarray:
    """Apply ``mutation`` with a fresh ``Generator(seed)``; same inputs give the same bytes."""
    op = get_operator(mutation.operator)
    return op(image, target, np.random.default_rng(seed), **mutation.kwargs)
