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


# ---------------------------------------------------------------- multi-label

PRESENCE_GAIN = 40.0      # sigmoid steepness
PRESENCE_SHARE = 0.1      # a colour is "present" when it dominates more than 10% of the pixels
DOMINANCE_MARGIN = 50     # a pixel shows colour c when channel c exceeds both others by this much


def colour_presence_probs(images) -> np.ndarray:
    """p_c = sigmoid(GAIN * (share of pixels dominated by channel c - SHARE)), per channel."""
    out = []
    for im in images:
        x = im.reshape(-1, 3).astype(np.int32)
        shares = []
        for c in range(3):
            others = np.delete(x, c, axis=1)
            shares.append(np.mean(np.all(x[:, [c]] - others > DOMINANCE_MARGIN, axis=1)))
        out.append(1.0 / (1.0 + np.exp(-PRESENCE_GAIN * (np.asarray(shares) - PRESENCE_SHARE))))
    return np.asarray(out)


def presence_factory() -> CallableClassifier:
    return CallableClassifier(colour_presence_probs, CLASSES, task="multi", name="colour-presence")
