"""Working ahead: the model predicts the next chunk's sources while the mutant worker makes this chunk's
first batch.  The rows must equal those of a run that never works ahead (mutants made in a thread beside
the model or in turn on every core), and a process killer met while working ahead must never get an
innocent sample skipped as 'crashed-twice'.  Working ahead is on only where the forward pass leaves cores
free (not on a 2-core build machine), so these tests switch it on themselves."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from objrel.config import RunConfig
from objrel.data import load_dataset, load_rgb
from objrel.engine.classify import Engine
from objrel.models import CallableClassifier
from objrel.store import Store

from tests.conftest import write_flagged_set
from tests.engine.test_engine import rows
from tests.engine.test_trust import crash_dataset, crashing_run
from tests.fixtures.colour_model import CLASSES, dominant_colour_probs
from tests.fixtures.crashing_model import CRASH_STATUS


class WaitingEngine(Engine):
    """Works ahead every time: waits for the decode thread instead of skipping when it is not done yet
    (in a real run a slow decode simply means no working ahead for that chunk)."""

    read_ahead = True
    prefetch_mutants = True

    def _decide_next(self, report):
        ahead = getattr(self, "_ahead", None)
        if ahead is not None:
            ahead[1].result()
        super()._decide_next(report)


def recording_model(calls: list):
    """The colour model, logging each forward batch as the digests of its images."""
    def predict(images):
        calls.append([hashlib.sha1(np.ascontiguousarray(im).tobytes()).hexdigest() for im in images])
        return dominant_colour_probs(images)

    return CallableClassifier(predict, CLASSES, name="colour-recorded")


@pytest.mark.parametrize("lazy", [False, True])
@pytest.mark.parametrize("in_thread", [False, True])
def test_working_ahead_gives_the_rows_of_a_run_that_does_not(tmp_path, lazy, in_thread):
    data = write_flagged_set(tmp_path / "data", n_flagged=7, n_clean=5)   # 12 samples: 3 chunks of 4
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(data), plan="colours3",
                    batch_size=4, lazy=lazy)
    results, passes, order = [], [], []
    for engine_cls, ahead in ((Engine, False), (WaitingEngine, True)):
        store = Store(tmp_path / f"{engine_cls.__name__}-{lazy}-{in_thread}.db")
        calls: list = []
        eng = engine_cls(store, cfg, model=recording_model(calls))
        eng.read_ahead, eng.prefetch_mutants = ahead, in_thread or ahead
        report = eng.execute()
        results.append(rows(store, report.run_id))
        passes.append(report.forward_passes)
        order.append(calls)
        store.dispose()
    assert results[0] == results[1]
    assert passes[0] == passes[1] == sum(map(len, order[0])) == sum(map(len, order[1]))
    sources = {hashlib.sha1(load_rgb(s.image_path).tobytes()).hexdigest() for s in load_dataset(str(data)).samples}
    is_sources = [[set(batch) <= sources for batch in calls] for calls in order]
    # Without working ahead the second batch the model sees is chunk 1's first mutants; working ahead it
    # is chunk 2's sources, predicted while the worker made those mutants.
    assert is_sources[0][:2] == [True, False]
    assert is_sources[1][:2] == [True, True]
    assert sum(is_sources[0]) == sum(is_sources[1]) == 3     # one source batch per chunk either way


@pytest.mark.subprocess
def test_a_killer_met_while_working_ahead_is_the_only_sample_skipped(tmp_path):
    dataset = crash_dataset(tmp_path / "data", 8, killer=6)     # chunks 1..4 and 5..8
    db = tmp_path / "s.db"

    def go(*extra):
        return crashing_run(db, dataset, *extra, engine="tests.engine.test_work_ahead:WaitingEngine")

    # Chunk 1..4 is being tested when the model, working ahead, meets sample 6: chunk 1..4 is blamed.
    assert go().returncode == CRASH_STATUS
    assert Store(db).attempts(1) == {str(i): 0 for i in range(1, 5)}    # suspects, none crashed alone yet
    exits = []
    for _ in range(5):             # resume until the run finishes
        exits.append(go("1").returncode)
        if exits[-1] == 0:
            break
    # 1..4 one at a time without working ahead (all commit), then chunk 5..8 dies on 6, then 5 commits
    # and 6 dies alone, then 6 dies alone again, then 6 is skipped and 7, 8 are tested.
    assert exits == [CRASH_STATUS, CRASH_STATUS, CRASH_STATUS, 0]
    store = Store(db)
    got = {r["sample_id"]: (r["status"], r.get("skip_code")) for r in store.samples(1)}
    assert got == {**{str(i): ("tested", None) for i in (1, 2, 3, 4, 5, 7, 8)}, "6": ("skipped", "crashed-twice")}
    assert store.attempts(1) == {} and store.get_run(1).status == "finished"


def test_mutants_made_on_every_core_come_in_the_batches_made_one_at_a_time():
    """``mutant_batches(parallel=True)`` (the engine's in-turn mode) must give the same batches, bytes,
    seeds and not-applicable records as making one mutant after another."""
    from types import SimpleNamespace

    from objrel.data.sample import TargetObject
    from objrel.engine.loop import mutant_batches
    from objrel.mutations import Mutation, NotApplicable, build_target, preset

    boxed = TargetObject("a", 0, (4.0, 4.0, 30.0, 26.0))
    mutations = list(preset("palette15").mutations) + [Mutation.of("margin_fill")]  # margin_fill: n/a on boxes
    runs = []
    for parallel in (False, True):
        holders = [SimpleNamespace(seeds={}, mutants={}, name=i) for i in range(5)]
        jobs = [(h, f"s{h.name}", np.random.default_rng(h.name).integers(0, 256, (40, 48, 3), dtype=np.uint8),
                 build_target((boxed,), 48, 40), m) for h in holders for m in mutations]
        batches = [[(h.name, m.key, hashlib.sha1(img.tobytes()).hexdigest()) for h, m, img in b]
                   for b in mutant_batches(iter(jobs), 11, 7, parallel=parallel)]
        runs.append((batches, [h.seeds for h in holders],
                     [{k: str(v) for k, v in h.mutants.items() if isinstance(v, NotApplicable)} for h in holders]))
    assert runs[0] == runs[1]
    batches, seeds, not_applicable = runs[0]
    applicable = 5 * (len(mutations) - 1)                         # all but margin_fill, on 5 images
    assert [len(b) for b in batches] == [7] * (applicable // 7) + [applicable % 7]
    assert all(set(n) == {mutations[-1].key} for n in not_applicable)
    assert all(len(s) == len(mutations) for s in seeds)


def test_mutants_made_together_never_run_ahead_of_the_batch_they_fill():
    """In-turn mode makes the jobs that fill the current batch and no more: when a batch is yielded, every
    job taken from the queue is in it, in an earlier batch, or not applicable."""
    from types import SimpleNamespace

    from objrel.data.sample import TargetObject
    from objrel.engine.loop import mutant_batches
    from objrel.mutations import Mutation, NotApplicable, build_target, preset

    boxed = TargetObject("a", 0, (4.0, 4.0, 30.0, 26.0))
    mutations = list(preset("colours3").mutations) + [Mutation.of("margin_fill")]
    holders = [SimpleNamespace(seeds={}, mutants={}) for _ in range(4)]
    image = np.zeros((40, 48, 3), np.uint8)
    taken = []

    def jobs():
        for n, h in enumerate(holders):
            for m in mutations:
                taken.append(1)
                yield h, f"s{n}", image, build_target((boxed,), 48, 40), m

    yielded = 0
    for parallel in (True, False):
        taken.clear()
        yielded = 0
        for h in holders:
            h.seeds.clear(), h.mutants.clear()
        for batch in mutant_batches(jobs(), 3, 5, parallel=parallel):
            yielded += len(batch)
            not_applicable = sum(isinstance(v, NotApplicable) for h in holders for v in h.mutants.values())
            assert len(taken) == yielded + not_applicable and len(batch) <= 5
