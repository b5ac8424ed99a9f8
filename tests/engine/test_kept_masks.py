"""A sample's object masks, decoded once for the objects' checks, build the same target as decoding them again;
a sample with many objects keeps none (their memory would pass the image's own)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from objrel.config import RunConfig
from objrel.data import load_demo
from objrel.engine.classify import KEPT_MASKS_PER_IMAGE, Engine
from objrel.models import load_classifier
from objrel.mutations import build_target
from objrel.relations.classify import Prediction
from objrel.store import Store


def test_kept_masks_build_the_target_the_decoded_masks_build(tmp_path):
    model = load_classifier("efficientnet-lite0", runtime="torch")
    engine = Engine(Store(tmp_path / "m.db"), RunConfig(dataset="demo", plan="colours3"), model=model)
    demo = load_demo()
    masked = [s for s in demo.samples if any(o.segmentation is not None for o in s.objects)]
    assert masked
    for sample in masked:
        prep = engine._prepare(sample)
        assert prep.skip is None and prep.masks is not None and len(prep.masks) == len(prep.objects)
        h, w = prep.image.shape[:2]
        fresh = build_target(prep.objects, w, h)
        kept = build_target(prep.objects, w, h, masks=list(prep.masks))
        assert np.array_equal(fresh.region, kept.region) and fresh.boxes == kept.boxes
        probs = model.predict([prep.image])[0]
        engine._decide(prep, Prediction.from_probs(probs, model.task, interest=prep.labels, threshold=model.threshold))
        assert prep.masks is None                       # let go once the target is built
        if prep.tested:
            assert np.array_equal(prep.target.region, build_target(prep.target_objects, w, h).region)
    many = replace(masked[0], objects=masked[0].objects * (KEPT_MASKS_PER_IMAGE + 1))
    prep = engine._prepare(many)
    assert prep.skip is None and prep.masks is None
