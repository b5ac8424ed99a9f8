"""The detection arm of the planted-shortcut benchmark: the planted stand-in detector, the per-unit
counterfactual ground truth, the scoring and one small end-to-end run through the ``DetectionEngine``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from objrel.models import CallableDetector, load_detector
from objrel.relations.associate import iou
from objrel.store import detections as D
from objrel.studies.shortcut import arms
from objrel.studies.shortcut import tables as T
from objrel.studies.shortcut.config import BenchConfig
from objrel.studies.shortcut import planted as PD
from objrel.studies.shortcut.groundtruth import DEFAULT_DRAWS, UnitReliance, detection_ground_truth
from objrel.studies.shortcut.planted import PlantedDetector, planted_reliance
from objrel.studies.shortcut.scenes import FLAT_COLOURS, SyntheticConfig, shape_mask, tight_box, write_split
from objrel.studies.shortcut.scoring import UNION, score_flags

K = 3
NAMES = ["disc", "square", "triangle"]
PALETTE = np.asarray(FLAT_COLOURS[:K], dtype=np.float64)


def hand_scene(shape: str, r: float, bg: int, rgb=(200, 30, 30)):
    """A 64 x 64 scene by hand: a solid ``shape`` of half-extent ``r`` px in the middle of a flat background."""
    img = np.empty((64, 64, 3), np.uint8)
    img[:] = FLAT_COLOURS[bg]
    mask = shape_mask(shape, 64, 32, 32, r, 0.0)
    img[mask] = rgb
    return img, tight_box(mask)


# ---------------------------------------------------------------- the planted detector, on hand-built scenes


def test_small_objects_are_named_by_the_background_and_flip_with_it():
    det = PlantedDetector(K)
    for bg in range(K):                          # the same small disc (extent 10.5/64 < CONTEXT_EXTENT)
        img, box = hand_scene("disc", 10, bg)
        (d,) = det.detect([img])
        assert d.labels == (NAMES[bg],)          # the background's class: disc on navy, square on sage, ...
        assert iou(d.boxes[0], box) > 0.95       # found where it is
        assert det.explain(img)["branch"] == PD.CONTEXT


@pytest.mark.parametrize("shape, r", [("square", 22), ("disc", 20), ("triangle", 20)])
def test_large_objects_are_named_by_their_outline_whatever_the_background(shape, r):
    det = PlantedDetector(K)
    for bg in range(K):
        img, box = hand_scene(shape, r, bg)
        (d,) = det.detect([img])
        assert d.labels == (shape,) and 0 < d.scores[0] < 1
        assert iou(d.boxes[0], box) > 0.9
        assert det.explain(img)["extent"] >= PD.CONTEXT_EXTENT


def test_the_extent_split_is_the_only_switch_and_empty_scenes_give_nothing():
    img, _ = hand_scene("square", 22, 0)                     # a large square on navy
    assert PlantedDetector(K, context_extent=1.0).detect([img])[0].labels == ("disc",)    # navy's class
    small, _ = hand_scene("disc", 10, 1)
    assert PlantedDetector(K, context_extent=0.0).detect([small])[0].labels == ("disc",)  # its outline
    assert len(PlantedDetector(K).detect([np.full((64, 64, 3), FLAT_COLOURS[2], np.uint8)])[0]) == 0
    with pytest.raises(ValueError, match="n_classes"):
        PlantedDetector(1)


def test_the_detector_loads_by_its_py_spec():
    det = load_detector(PD.spec(4))
    assert isinstance(det, PlantedDetector) and det.labels == ("disc", "square", "triangle", "cross")
    assert det.describe()["spec"] == PD.spec(4)


# ---------------------------------------------------------------- ground truth by intervention


@pytest.fixture(scope="module")
def colour_split(tmp_path_factory):
    """12 flat-colour scenes whose background names the class (rho = 1)."""
    cfg = SyntheticConfig(n_classes=K, rho=1.0, backgrounds="colours", seed=0)
    return write_split(cfg, tmp_path_factory.mktemp("det-colours"), "test", 12)


def test_ground_truth_finds_what_was_planted(colour_split):
    always = detection_ground_truth(PlantedDetector(K, context_extent=1.0), colour_split.annotation)
    assert sorted(always) == sorted(f"{i}/r0" for i in range(1, 13))       # the engine's unit ids
    assert all(r.correct and r.reliant and r.swap_dependent for r in always.values())
    # both other types' backgrounds turn the record into their class: T = 0 on every swap, the box stays
    assert all(r.swaps == r.swap_changes == r.swap_label_changes == (K - 1) * DEFAULT_DRAWS for r in always.values())
    assert not any(r.background_sufficient for r in always.values())        # no object: nothing found
    never = detection_ground_truth(PlantedDetector(K, context_extent=0.0), colour_split.annotation)
    assert all(r.correct for r in never.values()) and not any(r.reliant for r in never.values())
    det = PlantedDetector(K)
    truth = detection_ground_truth(det, colour_split.annotation)
    planted = planted_reliance(det, colour_split.annotation)
    assert 0 < sum(planted.values()) < 12                                   # a mix of both branches
    assert all(bool(r.reliant) == planted[r.image_id] for r in truth.values() if r.correct)


def _whole_image(label_of):
    """A detector reporting one whole-image box per image, labelled ``label_of(image)``."""
    def fn(images):
        return [([[0, 0, im.shape[1], im.shape[0]]], [label_of(im)], [0.9]) for im in images]
    return CallableDetector(fn, NAMES, name="whole-image")


def border_class(im) -> int:
    ring = np.concatenate([im[0], im[-1], im[:, 0], im[:, -1]]).astype(np.float64)
    return int(np.argmin(((PALETTE - np.median(ring, axis=0)) ** 2).sum(axis=1)))


def test_background_alone_is_sufficient_for_a_context_box_but_not_for_a_default_answer(colour_split):
    # IoU of a whole-image box with an object box is 0.19-0.41 here: a 0.1 threshold makes every one count
    ctx = detection_ground_truth(_whole_image(border_class), colour_split.annotation, iou_threshold=0.1)
    assert all(r.correct and r.background_t == 1 and r.background_sufficient and r.swap_dependent
               for r in ctx.values())
    const = detection_ground_truth(_whole_image(lambda im: 0), colour_split.annotation, iou_threshold=0.1)
    correct = [r for r in const.values() if r.correct]
    discs = sum(a["category_id"] == 1 for a in json.loads(open(colour_split.annotation).read())["annotations"])
    assert len(correct) == discs >= 1                    # only the discs are named right
    # every background alone gives "disc": a default answer, not reliance; swaps change nothing
    assert all(r.background_t == 1 and not r.background_sufficient and not r.reliant for r in correct)
    assert all(u.endswith("/o0") for u, r in const.items() if not r.correct)   # a wrong label: a missed object


# ---------------------------------------------------------------- scoring, by hand


def _unit(uid: str, reliant: bool, correct: bool = True) -> UnitReliance:
    return UnitReliance(uid, uid.split("/")[0], "disc", int(correct), 2, 2 * reliant, 2 * reliant, 0,
                        reliant if correct else None, False if correct else None)


def test_scoring_counts_by_hand_with_wilson_intervals():
    # five detected units, three of them reliant (a, b, c); one undetected unit (z) that must not count
    truth = {u.unit_id: u for u in [_unit("a/r0", True), _unit("b/r0", True), _unit("c/r0", True),
                                    _unit("d/r0", False), _unit("e/r0", False), _unit("z/o0", True, False)]}
    flags = {"MR-1 3 colours": ("MR-1", "3 colours", {"a/r0", "z/o0"}),
             "MR-2 3 colours": ("MR-2", "3 colours", {"a/r0", "b/r0", "d/r0", "z/o0"}),
             f"{UNION} 3 colours": ("union", "3 colours", {"a/r0", "b/r0", "d/r0", "z/o0"})}
    scores = {s.detector: s for s in score_flags(flags, truth, truth)}
    mr1, mr2 = scores["MR-1 3 colours"], scores["MR-2 3 colours"]
    assert (mr1.tp, mr1.fp, mr1.fn, mr1.tn) == (1, 0, 2, 2)
    assert (mr2.tp, mr2.fp, mr2.fn, mr2.tn) == (2, 1, 1, 1)
    assert mr2.precision == pytest.approx(2 / 3) and mr2.recall == pytest.approx(2 / 3)
    assert mr1.precision == 1.0 and mr1.recall == pytest.approx(1 / 3)
    for (k, n), (lo, hi) in [((2, 3), mr2.precision_ci), ((2, 3), mr2.recall_ci), ((1, 1), mr1.precision_ci),
                             ((1, 3), mr1.recall_ci)]:
        slo, shi = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert (lo, hi) == (pytest.approx(slo, abs=1e-9), pytest.approx(shi, abs=1e-9))
    # the hand formula for 2 of 3: (p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)
    z, p, n = 1.959963984540054, 2 / 3, 3
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    assert mr2.precision_ci == (pytest.approx(centre - half), pytest.approx(centre + half))
    assert mr2.precision_ci[0] == pytest.approx(0.2077, abs=1e-4) and mr2.precision_ci[1] == pytest.approx(
        0.9385, abs=1e-4)


# ---------------------------------------------------------------- the arm end to end


@pytest.fixture(scope="module")
def arm_result(tmp_path_factory):
    from objrel.store import Store

    root = tmp_path_factory.mktemp("arm")
    store = Store(root / "s.db")
    cfg = BenchConfig(seeds=(0,), n_classes=K, n_test=16)
    out = arms.run_detection(cfg, 0, root / "seed0", store, lambda m: None)
    yield cfg, out, store
    store.dispose()


@pytest.fixture(scope="module")
def arm(arm_result):
    """The arm as its results file holds it (``to_dict``)."""
    cfg, out, store = arm_result
    return cfg, out.to_dict(), store


def test_detection_arm_returns_typed_frozen_results(arm_result):
    import dataclasses
    import json

    from objrel.studies.shortcut.results import DetectionResult, DetectionRun, PlantedAgreement

    _, out, _ = arm_result
    assert isinstance(out, DetectionResult) and isinstance(out.planted, PlantedAgreement)
    assert list(out.runs) == list(arms.DETECTION_PLANS)
    assert all(isinstance(r, DetectionRun) and r.summary.run_id == r.run_id for r in out.runs.values())
    assert out.planted.correct == out.reliance["correct"] == sum(r.correct for r in out.truth.values())
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.planted = None
    # what the results file holds: plain JSON, the same keys in the same order as before the types
    d = json.loads(json.dumps(out.to_dict()))
    assert list(d) == ["detector", "data", "runs", "reliance", "planted", "scores", "truth"]
    assert list(d["runs"][arms.DETECTION_PLANS[0]]) == ["run_id", "summary", "flags"]
    assert d["planted"] == {"correct": out.planted.correct, "planted": out.planted.planted, "agree": out.planted.agree}


def test_detection_arm_runs_the_engine_and_scores_mr1_mr2_and_union(arm):
    cfg, res, store = arm
    assert set(res["runs"]) == set(arms.DETECTION_PLANS)
    correct = {u for u, r in res["truth"].items() if r["correct"]}
    reliant = {u for u, r in res["truth"].items() if r["reliant"]}
    assert res["reliance"]["correct"] == len(correct) >= 10 and 0 < len(reliant) < len(correct)
    by = {d["detector"]: d for d in res["scores"]}
    unions = {"MR-1 ∪ MR-2 3 colours": ("MR-1 3 colours", "MR-2 3 colours"),
              "MR-1 ∪ MR-2 (random erase + background noise)": ("MR-1 random erase", "MR-2 background noise")}
    for plan, (union, (g1, g2)) in zip(arms.DETECTION_PLANS, unions.items()):
        run_id = res["runs"][plan]["run_id"]
        run = store.get_run(run_id)
        assert run.task == "detection" and run.config["plan"] == plan
        assert run.config["detector"] == PD.spec(K)
        # the run's correct units are the truth's: same ids, same T on the source
        assert {u.unit_id for u in D.units(store, run_id) if u.detected} == correct
        flagged = {}
        for g in (g1, g2):
            rel = g[:4]
            votes = [v for v in store.votes(run_id) if v["group_name"] == g]
            flagged[g] = {v["sample_id"] for v in votes if v["flagged"]} & correct
            assert votes and all(v["relation"] == rel for v in votes)
        flagged[union] = flagged[g1] | flagged[g2]
        for name in (g1, g2, union):
            d = by[name]
            assert d["tp"] + d["fp"] + d["fn"] + d["tn"] == len(correct)
            assert d["tp"] + d["fn"] == len(reliant)
            assert (d["tp"], d["fp"]) == (len(flagged[name] & reliant), len(flagged[name] - reliant))
    assert by["MR-2 3 colours"]["recall"] >= 0.8          # the fills take the colour cue away
    assert res["planted"]["agree"] >= res["planted"]["correct"] - 1


def test_detection_table_pools_seeds_and_adds_up(arm):
    cfg, res, _ = arm
    results = {"seeds": [{"seed": 0, "detection": res}, {"seed": 1}]}     # seed 1 ran without the arm
    table = T.score_table(T.detection_scores(results))
    assert {"MR-1", "MR-2", "union"} <= set(table["relation"])
    assert len(table[table["relation"] == "union"]) == 2          # one per plan
    assert (table["TP"] + table["FP"] + table["FN"] + table["TN"] == res["reliance"]["correct"]).all()
    assert T.detection_totals(results)["detected"] == res["reliance"]["correct"]
    pooled = T.detection_scores({"seeds": [{"detection": res}, {"detection": res}]})
    assert all(s.n == 2 * res["reliance"]["correct"] for s in pooled)    # seeds sum

