"""A hand-written classifier for engine tests: it names the dominant colour of the whole image.

Classes: red, green, blue.  Probabilities are a softmax of the mean channel
intensities (scaled by ``SHARPNESS``), so the model looks at *every* pixel, object
and background alike: it is a real, deterministic model whose reliance on the
background we can reason about by hand.  Not a stand-in for any pretrained network.
"""

from __future__ import annotations

import time

import numpy as np

from objrel.models import CallableClassifier

CLASSES = ["red", "green", "blue"]
SHARPNESS = 0.05


def dominant_colour_probs(images) -> np.ndarray:
    means = np.stack([im.reshape(-1, 3).mean(axis=0) for im in images]).astype(np.float64)
    z = SHARPNESS * means
    z -= z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def factory() -> CallableClassifier:
    return CallableClassifier(dominant_colour_probs, CLASSES, name="dominant-colour")


def slow_factory() -> CallableClassifier:
    """Same model, 0.3 s per call, so a test can kill a run between two samples."""

    def slow(images):
        time.sleep(0.3)
        return dominant_colour_probs(images)

    return CallableClassifier(slow, CLASSES, name="dominant-colour")
