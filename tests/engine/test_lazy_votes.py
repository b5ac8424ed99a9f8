"""Lazy votes: a sample's mutations stop once every vote group is decided; flags equal the full evaluation's."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.relations.votes import VoteSchedule, interleaved
from objrel.mutations import Mutation, Plan, VoteGroup, preset
from objrel.relations import common as C

from tests.fixtures.colour_model import factory

VERDICT_CHOICES = (C.HOLDS, C.VIOLATED, C.NOT_APPLICABLE)


def simulate(plan: Plan, truth: dict[str, str]) -> dict[str, str]:
    """Run the schedule against known verdicts; returns the verdicts it asked for."""
    sched = VoteSchedule(plan)
    seen: dict[str, str] = {}
    while True:
        wave = sched.next_wave(seen)
        if not wave:
            return seen
        assert all(m.key not in seen for m in wave)
        seen.update({m.key: truth[m.key] for m in wave})


def flags(plan: Plan, verdicts: dict[str, str]) -> list[bool]:
    return [C.vote(g.name, g.relation, [verdicts.get(m.key, C.NOT_EVALUATED) for m in g.mutations], g.k).flagged
            for g in plan.groups]


def shared_plan() -> Plan:
    a, b, c, d = (Mutation.of("fill_background", colour=x) for x in ("black", "white", "gray", "blue"))
    return Plan((VoteGroup("g1", "MR-2", (a, b, c), 2), VoteGroup("g2", "MR-2", (b, c, d), 2),
                 VoteGroup("g3", "MR-2", (a, d), 1)))


@pytest.mark.parametrize("plan", [preset("colours3"), shared_plan()], ids=["colours3", "shared"])
def test_schedule_flags_equal_full_evaluation_for_every_verdict_pattern(plan):
    keys = [m.key for m in plan.mutations]
    for combo in itertools.product(VERDICT_CHOICES, repeat=len(keys)):
        truth = dict(zip(keys, combo))
        seen = simulate(plan, truth)
        assert flags(plan, seen) == flags(plan, truth), truth
        assert VoteSchedule(plan).all_decided(seen)


def test_two_agreeing_verdicts_settle_a_2_of_3_group():
    plan = preset("colours3")
    assert [g.k for g in plan.groups] == [2, 2]
    sched = VoteSchedule(plan)
    first = sched.next_wave({})
    assert len(first) == 4  # two of each group, interleaved
    assert [m.relation for m in first] == ["MR-1", "MR-2", "MR-1", "MR-2"]
    agree = {m.key: (C.VIOLATED if m.relation == "MR-1" else C.HOLDS) for m in first}
    assert sched.next_wave(agree) == []
    split = dict(agree)
    mr1 = [m for m in first if m.relation == "MR-1"]
    split[mr1[0].key] = C.HOLDS
    third = sched.next_wave(split)
    assert [m.relation for m in third] == ["MR-1"]


def test_interleaved_order_alternates_groups_and_keeps_shared_once():
    plan = shared_plan()
    order = interleaved(plan)
    assert len(order) == len(plan.mutations) == 4
    assert {m.key for m in order} == {m.key for m in plan.mutations}


def write_random_colour_set(root: Path, n: int = 24, seed: int = 3) -> Path:
    """Coloured boxes on coloured backgrounds with random colours and sizes, so that some vote groups split."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True, exist_ok=True)
    images, anns = [], []
    for i in range(1, n + 1):
        img = np.empty((40, 48, 3), np.uint8)
        img[:] = rng.integers(0, 256, 3)
        x1, y1 = (int(v) for v in rng.integers(0, 16, 2))
        x2, y2 = x1 + int(rng.integers(12, 32)), y1 + int(rng.integers(10, 24))
        obj = rng.integers(0, 256, 3)
        img[y1:y2, x1:x2] = obj
        Image.fromarray(img).save(root / f"r{i}.png")
        images.append({"id": i, "file_name": f"r{i}.png", "width": 48, "height": 40})
        anns.append({"id": i, "image_id": i, "category_id": int(np.argmax(obj)) + 1,
                     "bbox": [x1, y1, min(x2, 48) - x1, min(y2, 40) - y1]})
    coco = {"images": images, "annotations": anns,
            "categories": [{"id": 1, "name": "red"}, {"id": 2, "name": "green"}, {"id": 3, "name": "blue"}]}
    path = root / "annotations.json"
    path.write_text(json.dumps(coco))
    return path


@pytest.mark.parametrize("plan", ["colours3", "all"])
def test_lazy_run_flags_and_verdicts_equal_the_full_run(tmp_path, plan):
    from objrel.store import Store

    ann = write_random_colour_set(tmp_path / "data")
    out = {}
    for lazy in (False, True):
        store = Store(tmp_path / f"{plan}-{lazy}.db")
        cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan=plan,
                        batch_size=4, test_all=True, lazy=lazy)
        report = Engine(store, cfg, model=factory()).execute()
        out[lazy] = (report, store.samples(report.run_id), store.verdicts(report.run_id), store.votes(report.run_id),
                     {s["sample_id"]: store.predictions(report.run_id, s["sample_id"])
                      for s in store.samples(report.run_id)})
        store.dispose()
    (full, s_full, v_full, votes_full, p_full), (lazy, s_lazy, v_lazy, votes_lazy, p_lazy) = out[False], out[True]
    assert full.tested == lazy.tested > 10
    flag = lambda vs: {(v["sample_id"], v["group_name"]): v["flagged"] for v in vs}  # noqa: E731
    assert flag(votes_lazy) == flag(votes_full)
    assert any(v["flagged"] for v in votes_full) and not all(v["flagged"] for v in votes_full)
    full_by = {(v["sample_id"], v["mutation_key"]): v for v in v_full}
    skipped = saved = 0
    for v in v_lazy:
        ref = full_by[(v["sample_id"], v["mutation_key"])]
        if v["verdict"] == C.NOT_EVALUATED:
            skipped += 1
            saved += ref["verdict"] != C.NOT_APPLICABLE  # an n/a mutant never reaches the model anyway
            assert v["note"] == C.VOTE_DECIDED and v["distance"] is None
            assert p_lazy[v["sample_id"]][v["mutation_key"]]["prediction"] is None
            # its recipe is still stored: the same seed as the full run's
            sid, key = v["sample_id"], v["mutation_key"]
            assert p_lazy[sid][key]["seed"] == p_full[sid][key]["seed"]
        else:
            assert {k: v[k] for k in ("verdict", "note", "distance", "label_changed")} == \
                   {k: ref[k] for k in ("verdict", "note", "distance", "label_changed")}
    assert len(v_lazy) == len(v_full)
    assert skipped > 0
    # every applicable mutation that did not run saved one forward pass
    assert full.forward_passes - lazy.forward_passes == saved > 0
    assert all(s["s"] is None for s in s_lazy)
    assert any(s["s"] is not None for s in s_full if s["status"] == "tested")


def test_lazy_run_still_batches_across_samples(tmp_path):
    """The mutants of different samples share forward passes (no batch of one per sample)."""
    from objrel.models import CallableClassifier
    from objrel.store import Store
    from tests.fixtures.colour_model import CLASSES, dominant_colour_probs

    sizes = []

    def fn(images):
        sizes.append(len(images))
        return dominant_colour_probs(images)

    ann = write_random_colour_set(tmp_path / "data", n=16)
    store = Store(tmp_path / "b.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3", batch_size=8,
                    test_all=True)
    Engine(store, cfg, model=CallableClassifier(fn, CLASSES, name="dominant-colour")).execute()
    store.dispose()
    mutant_calls = sizes[1::1]
    assert max(mutant_calls) == 8
    assert sum(s == 8 for s in sizes) >= len(sizes) // 2


def test_not_evaluated_is_not_applicable_nor_holds_in_votes():
    v = C.vote("g", "MR-1", [C.VIOLATED, C.NOT_EVALUATED, C.HOLDS], 2)
    assert (v.n, v.applicable, v.violations, v.flagged) == (3, 2, 1, False)
