"""Models for the crash and lease tests, loaded by ``py:`` specs in the run processes.

* ``kill_once``: the crashing model of ``tests.fixtures.crashing_model`` (dies on ``CRASH_PIXEL`` every time),
  which also dies ONCE on ``KILL_ONCE_PIXEL`` while the file named by ``$OBJREL_TEST_KILL_MARKER`` exists (it
  deletes it first): a stand-in for a kill (OOM killer, an operator) that lands while an innocent sample runs.
* ``slow``: the colour model, sleeping ``SLOW_S`` per batch, so that a test can act while a run goes on.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from objrel.models import CallableClassifier
from tests.fixtures.colour_model import CLASSES, dominant_colour_probs
from tests.fixtures.crashing_model import CRASH_PIXEL, CRASH_STATUS

KILL_ONCE_PIXEL = (9, 9, 9)
MARKER_ENV = "OBJREL_TEST_KILL_MARKER"
# Seconds the slow model sleeps per batch.
SLOW_S = 0.4


def kill_once() -> CallableClassifier:
    def predict(images):
        marker = os.environ.get(MARKER_ENV)
        for im in images:
            pixel = tuple(int(v) for v in np.asarray(im)[0, 0])
            if pixel == CRASH_PIXEL:
                os._exit(CRASH_STATUS)
            if pixel == KILL_ONCE_PIXEL and marker and Path(marker).exists():
                Path(marker).unlink()
                os._exit(CRASH_STATUS)
        return dominant_colour_probs(images)

    return CallableClassifier(predict, CLASSES, name="kill-once-colour")


def slow() -> CallableClassifier:
    def predict(images):
        time.sleep(SLOW_S)
        return dominant_colour_probs(images)

    return CallableClassifier(predict, CLASSES, name="slow-colour")
