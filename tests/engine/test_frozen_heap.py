"""The heap a run starts with is frozen for the cyclic collector while the run works, and given back after."""

from __future__ import annotations

import gc
import threading

from objrel.config import RunConfig
from objrel.engine import loop
from objrel.engine.classify import Engine
from objrel.models import CallableClassifier
from tests.fixtures.colour_model import CLASSES, dominant_colour_probs


def test_a_run_freezes_the_objects_it_starts_with_and_unfreezes_them_when_it_ends(colour_set, store):
    frozen_during = []

    def model(images):
        frozen_during.append(gc.get_freeze_count())
        return dominant_colour_probs(images)

    assert gc.get_freeze_count() == 0
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3")
    report = Engine(store, cfg, model=CallableClassifier(model, CLASSES)).execute()
    assert report.status == "finished" and frozen_during
    # everything alive at the start (this test's modules and fixtures: thousands of objects) was frozen
    assert min(frozen_during) > 1000
    assert gc.get_freeze_count() == 0


def test_a_failed_run_unfreezes_too(colour_set, store):
    def broken(images):
        raise RuntimeError("the model fell over")

    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3")
    try:
        Engine(store, cfg, model=CallableClassifier(broken, CLASSES)).execute()
    except RuntimeError:
        pass
    assert gc.get_freeze_count() == 0


def test_overlapping_runs_unfreeze_only_when_the_last_one_leaves():
    first, second = loop.frozen_heap(), loop.frozen_heap()
    first.__enter__()
    assert gc.get_freeze_count() > 0
    entered, leave = threading.Event(), threading.Event()

    def other_run():
        with second:
            entered.set()
            leave.wait(5)

    t = threading.Thread(target=other_run)
    t.start()
    assert entered.wait(5)
    first.__exit__(None, None, None)
    assert gc.get_freeze_count() > 0          # the other run is still inside
    leave.set()
    t.join(5)
    assert gc.get_freeze_count() == 0
