"""DeepInspect (seed 004 s3-4): hand-computed cases for every score, then the hooks, the CLI and the
planted benchmark.

The hooked model of the end-to-end cases is ``mean_colour_classifier``: an 8x8 input is averaged
per channel (values in [0, 1]) and one identity ``nn.Linear(3, 3)`` gives the logits, so its
three neurons output exactly (r, g, b) / 255 and every activation can be worked out by hand.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from objrel.studies.deepinspect import (ActivationCounter, Inspector, InspectResult, aucec, avg_bias,
                                avg_confusion_disparity, bias, bias_table, confusion_table, cost_effectiveness,
                                flag_high, flag_low, layer_activity, napvd, optimal_curve, pair_rank,
                                precision_recall, type1_confusion, type2_confusion, weight_distances)
from objrel.studies.deepinspect.evaluation import evaluate_ranking, last_linear
from objrel.studies.deepinspect.metrics import far_cutoff
from objrel.studies.deepinspect.result import heatmap_classes, most_biasing_third
from objrel.studies.deepinspect.planted import PlantedSpec, render, run_planted
from objrel.studies.deepinspect.planted_ranks import BIAS_PAIR, CONFUSION_PAIR, planted_ranks
from objrel.cli.inspect import add_inspect_command
from objrel.models import CallableClassifier, Preprocess, TorchClassifier

COLOURS = ["red", "green", "blue"]


def mean_colour_classifier() -> TorchClassifier:
    """Logits = mean (r, g, b) / 255 of the image; also a ``py:`` factory for the CLI test."""
    module = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 3))
    with torch.no_grad():
        module[2].weight.copy_(torch.eye(3))
        module[2].bias.zero_()
    return TorchClassifier(module, COLOURS, Preprocess(size=8, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0)),
                           name="mean-colour")


def uniform(rgb) -> np.ndarray:
    img = np.empty((8, 8, 3), np.uint8)
    img[:] = rgb
    return img


# Four images and what the identity layer outputs for them (per-input min-max scaling, Th = 0.5):
#   red    (255,   0,   0): out (1, 0, 0)     -> scaled (1, 0, 0)    -> active [1, 0, 0]; predicted red
#   orange (255, 153,   0): out (1, .6, 0)    -> scaled (1, .6, 0)   -> active [1, 1, 0]; predicted red
#   green  (  0, 255,   0): out (0, 1, 0)     -> scaled (0, 1, 0)    -> active [0, 1, 0]; predicted green
#   cyan   (  0, 204, 255): out (0, .8, 1)    -> scaled (0, .8, 1)   -> active [0, 1, 1]; predicted blue
# rho columns: red = [2/2, 1/2, 0] = [1, .5, 0]; green = [0, 1, 0]; blue = [0, 1, 1]
# NAPVD(red, green) = sqrt(1 + .25 + 0) = 1.118034; NAPVD(red, blue) = sqrt(1 + .25 + 1) = 1.5;
# NAPVD(green, blue) = sqrt(0 + 0 + 1) = 1.
FOUR = [((255, 0, 0), 0), ((255, 153, 0), 1), ((0, 255, 0), 1), ((0, 204, 255), 2)]   # (colour, true class)
FOUR_NAPVD = {("red", "green"): math.sqrt(1.25), ("red", "blue"): 1.5, ("green", "blue"): 1.0}


# ---------------------------------------------------------------- coverage


def test_layer_activity_conv_scales_each_input_over_its_whole_layer():
    # input 0: channel maps [0, 2], [4, 4], [1, 3]; min 0, max 4; channel means 1, 4, 2 -> scaled .25, 1, .5
    # input 1: every value 7: constant output, nothing active
    out = torch.tensor([[[[0.0, 2.0]], [[4.0, 4.0]], [[1.0, 3.0]]],
                        [[[7.0, 7.0]], [[7.0, 7.0]], [[7.0, 7.0]]]])        # (N=2, C=3, H=1, W=2)
    assert layer_activity(out, 0.5).tolist() == [[False, True, False], [False, False, False]]  # .5 is not > .5
    assert layer_activity(out, 0.2).tolist() == [[True, True, True], [False, False, False]]
    assert layer_activity(out, 0.3).tolist() == [[False, True, True], [False, False, False]]


def test_layer_activity_linear_and_token_outputs():
    # (N, F): [-1, 0, 3] -> min -1, max 3 -> scaled 0, .25, 1
    assert layer_activity(torch.tensor([[-1.0, 0.0, 3.0]]), 0.2).tolist() == [[False, True, True]]
    # (N, T, F) with channels_last: features [[0, 4], [2, 4]] over two tokens -> feature means 1, 4; min 0, max 4
    tokens = torch.tensor([[[0.0, 4.0], [2.0, 4.0]]])
    assert layer_activity(tokens, 0.5, channels_last=True).tolist() == [[False, True]]   # .25, 1.0


@pytest.mark.parametrize("th", [1.0, -0.1, 1.5])
def test_threshold_outside_zero_one_is_refused(th):
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        layer_activity(torch.zeros(1, 3), th)


def test_activation_counter_probabilities_by_hand():
    # 3 neurons, 3 classes; the 4th image is multi-label (classes 1 and 2) and counts in both columns
    counter = ActivationCounter(3, 3)
    counter.add(np.array([[1, 0, 1], [1, 1, 0]], bool), np.array([[1, 0, 0], [1, 0, 0]], bool))
    counter.add(np.array([[0, 1, 0], [1, 1, 1]], bool), np.array([[0, 1, 0], [0, 1, 1]], bool))
    # class 0: images 1, 2 -> [2/2, 1/2, 1/2]; class 1: images 3, 4 -> [1/2, 2/2, 1/2]; class 2: image 4 -> [1, 1, 1]
    assert counter.class_counts.tolist() == [2, 2, 1]
    assert counter.probabilities().tolist() == [[1.0, 0.5, 1.0], [0.5, 1.0, 1.0], [0.5, 0.5, 1.0]]
    assert counter.n_inputs == 4
    with pytest.raises(ValueError, match="never predicted"):
        ActivationCounter(3, 4).probabilities()


# ---------------------------------------------------------------- NAPVD, bias, avg_bias


def test_napvd_by_hand():
    # columns a = [1, .5, .5], b = [0, 1, 0], c = [1, 1, 1]
    rho = np.array([[1.0, 0.0, 1.0], [0.5, 1.0, 1.0], [0.5, 0.0, 1.0]])
    d = napvd(rho)
    # d(a,b) = sqrt(1 + .25 + .25) = sqrt(1.5); d(a,c) = sqrt(0 + .25 + .25) = sqrt(.5); d(b,c) = sqrt(1 + 0 + 1)
    assert d[0, 1] == pytest.approx(math.sqrt(1.5)) and d[1, 0] == pytest.approx(math.sqrt(1.5))
    assert d[0, 2] == pytest.approx(math.sqrt(0.5))
    assert d[1, 2] == pytest.approx(math.sqrt(2.0))
    assert np.diag(d).tolist() == [0.0, 0.0, 0.0]
    # identical columns are exactly 0 apart (no Gram-matrix rounding)
    assert napvd(np.array([[0.3, 0.3, 0.9], [0.7, 0.7, 0.1]]))[0, 1] == 0.0
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        napvd(np.array([[1.5, 0.0]]))


def test_bias_by_hand():
    # |2 - 3| / (2 + 3) = .2; |1 - 5| / 6 = 2/3; both 0 -> no disparity -> 0
    assert bias(2.0, 3.0) == pytest.approx(0.2)
    assert bias(5.0, 1.0) == pytest.approx(4 / 6)
    assert bias(0.0, 0.0) == 0.0


# Four classes A, B, C, E.  Pair distances 1, 2, 4, 3, 5, 6: mean 3.5, std sqrt(17.5 / 6) = 1.7078,
# far cut-off 5.2078: no triplet has both distances above it, so every third class counts.
D4 = np.array([[0, 1, 2, 4], [1, 0, 3, 5], [2, 3, 0, 6], [4, 5, 6, 0]], dtype=float)


def test_avg_bias_by_hand():
    ab = avg_bias(D4)
    # (A,B): c=C |2-3|/5 = .2; c=E |4-5|/9 = .1111 -> .3111 / 2
    assert ab[0, 1] == pytest.approx((0.2 + 1 / 9) / 2)
    # (A,C): c=B |1-3|/4 = .5; c=E |4-6|/10 = .2 -> .35
    assert ab[0, 2] == pytest.approx(0.35)
    # (A,E): c=B |1-5|/6 = .6667; c=C |2-6|/8 = .5 -> .5833
    assert ab[0, 3] == pytest.approx((4 / 6 + 0.5) / 2)
    # (B,C): c=A |1-2|/3; c=E |5-6|/11
    assert ab[1, 2] == pytest.approx((1 / 3 + 1 / 11) / 2)
    # (B,E): c=A |1-4|/5 = .6; c=C |3-6|/9
    assert ab[1, 3] == pytest.approx((0.6 + 1 / 3) / 2)
    # (C,E): c=A |2-4|/6; c=B |3-5|/8
    assert ab[2, 3] == pytest.approx((1 / 3 + 0.25) / 2)
    assert np.allclose(ab, ab.T) and np.diag(ab).tolist() == [0, 0, 0, 0]
    assert far_cutoff(D4) == pytest.approx(3.5 + math.sqrt(17.5 / 6))


def test_avg_bias_far_filter_by_hand():
    # an explicit far = 2.5: E is far (4, 5, 6) from A, B and C, so every triplet with c = E is left out
    # and adds 0, while the divisor stays |O| - 2 = 2 (seed 004 Eq. 4)
    ab = avg_bias(D4, far=2.5)
    assert ab[0, 1] == pytest.approx(0.2 / 2)            # only c = C: |2-3|/5
    assert ab[0, 2] == pytest.approx(0.5 / 2)            # only c = B: |1-3|/4
    assert ab[1, 2] == pytest.approx((1 / 3) / 2)        # only c = A: |1-2|/3
    # (A,E): c = B has d(B,A) = 1 <= 2.5, so it stays even though d(B,E) = 5 is far
    assert ab[0, 3] == pytest.approx((4 / 6 + 0.5) / 2)


def test_avg_bias_default_cutoff_drops_a_far_triplet():
    # five classes: 0-3 one apart, class 4 is 9 from class 0, 8 from class 1, 1 from classes 2 and 3.
    # pair values: eight 1s, 9, 8 -> mean 2.5, std sqrt((8 * 2.25 + 42.25 + 30.25) / 10) = 3.0083 -> far 5.5083
    d = np.ones((5, 5)) - np.eye(5)
    d[0, 4] = d[4, 0] = 9.0
    d[1, 4] = d[4, 1] = 8.0
    assert far_cutoff(d) == pytest.approx(2.5 + math.sqrt(9.05))
    # (0,1): thirds 2 and 3 are 1 from both (bias 0); third 4 (9 and 8, both > 5.51) is left out -> 0
    assert avg_bias(d)[0, 1] == 0.0
    # without the filter third 4 adds |9-8|/17 over |O| - 2 = 3
    assert avg_bias(d, far=math.inf)[0, 1] == pytest.approx((1 / 17) / 3)
    # (0,2): third 4 is 9 from class 0 but 1 from class 2: kept, |9-1|/10 = .8 -> .8 / 3
    assert avg_bias(d)[0, 2] == pytest.approx(0.8 / 3)


def test_one_std_flags_by_hand():
    # [.5, 2, 3, 4, 5.5]: mean 3, std sqrt(14.5 / 5) = 1.7029 -> low cut 1.2971, high cut 4.7029
    v = np.array([0.5, 2, 3, 4, 5.5])
    low, cut_low = flag_low(v)
    high, cut_high = flag_high(v)
    assert low.tolist() == [True, False, False, False, False] and cut_low == pytest.approx(3 - math.sqrt(2.9))
    assert high.tolist() == [False, False, False, False, True] and cut_high == pytest.approx(3 + math.sqrt(2.9))


# ---------------------------------------------------------------- ground truth


def test_type1_confusion_by_hand():
    # true 0 x4: predicted 0, 0, 0, 1 -> P(1|0) = 1/4; true 1 x2: predicted 0, 0 -> P(0|1) = 1
    # true 2 x2: predicted 2, 1 -> P(1|2) = 1/2
    t1 = type1_confusion([0, 0, 0, 0, 1, 1, 2, 2], [0, 0, 0, 1, 0, 0, 2, 1], 3)
    assert t1[0, 1] == pytest.approx((0.25 + 1.0) / 2) and t1[1, 0] == pytest.approx(0.625)
    assert t1[1, 2] == pytest.approx((0.5 + 0.0) / 2)
    assert t1[0, 2] == 0.0
    # a class with no true image: P(.|1) has no denominator and counts 0 -> (P(1|0) = .5 + 0) / 2
    assert type1_confusion([0, 0], [0, 1], 3)[0, 1] == pytest.approx(0.25)


def test_type2_confusion_by_hand():
    truth = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], bool)
    pred = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 0], [1, 1, 0]], bool)
    t2 = type2_confusion(truth, pred)
    # P((0,1)|0): images with 0 and not 1 are 1, 2; both predicted in image 1 -> 1/2
    # P((0,1)|1): images with 1 and not 0: image 3, both predicted -> 1/1; type2 = (.5 + 1) / 2
    assert t2[0, 1] == pytest.approx(0.75)
    # nothing predicts class 2 -> 0; image 4 (0 and 1 both present) never counts as a type2 error
    assert t2[0, 2] == 0.0 and t2[1, 2] == 0.0


def test_avg_confusion_disparity_by_hand():
    e = np.array([[0, .6, .2, 0], [.6, 0, 0, .1], [.2, 0, 0, 0], [0, .1, 0, 0]])
    acd = avg_confusion_disparity(e)
    assert acd[0, 1] == pytest.approx((0.2 + 0.1) / 2)      # z=2: |.2 - 0|; z=3: |0 - .1|
    assert acd[0, 2] == pytest.approx((0.6 + 0.0) / 2)      # z=1: |.6 - 0|; z=3: |0 - 0|
    assert acd[1, 3] == pytest.approx((0.6 + 0.0) / 2)      # z=0: |.6 - 0|; z=2: |0 - 0|
    assert acd[2, 3] == pytest.approx((0.2 + 0.1) / 2)      # z=0: |.2 - 0|; z=1: |0 - .1|
    assert np.allclose(acd, acd.T)


# ---------------------------------------------------------------- evaluation


def test_precision_recall_and_aucec_by_hand():
    truth = np.array([True, False, True, False])
    assert precision_recall(np.array([True, True, False, False]), truth) == (1, 1, 0.5, 0.5)
    # ranking 0, 1, 2, 3: found 0, 1, 1, 2, 2 of 2 -> y = 0, .5, .5, 1, 1 at x = 0, .25, .5, .75, 1
    x, y = cost_effectiveness(np.array([0, 1, 2, 3]), truth)
    assert y.tolist() == [0, 0.5, 0.5, 1, 1]
    # trapezoids: .25 * (0 + .5)/2 + .25 * (.5 + .5)/2 + .25 * (.5 + 1)/2 + .25 * (1 + 1)/2 = .625
    assert aucec(x, y) == pytest.approx(0.625)
    # optimal: both true pairs first -> y = 0, .5, 1, 1, 1 -> .0625 + .1875 + .25 + .25 = .75
    assert aucec(*optimal_curve(4, 2)) == pytest.approx(0.75)
    # NAPVD-style scores (low = suspicious) give the same ranking; gain over random (.5) = (.625 - .5) / .5
    ev = evaluate_ranking("confusion", "deepinspect", np.array([0.1, 0.2, 0.3, 0.4]), True,
                          np.array([True, True, False, False]), truth)
    assert (ev.aucec, ev.gain_vs_random, ev.precision, ev.recall) == pytest.approx((0.625, 0.25, 0.5, 0.5))
    # top 1% of 4 pairs is one pair (pair 0, a true error)
    assert (ev.top_k, ev.top_tp, ev.top_precision, ev.top_recall) == (1, 1, 1.0, 0.5)
    # avg_bias-style scores (high = suspicious): the reversed order finds pair 2 second, pair 0 last
    ev = evaluate_ranking("bias", "deepinspect", np.array([0.1, 0.2, 0.3, 0.4]), False,
                          np.array([False, False, True, True]), truth)
    # order 3, 2, 1, 0 -> found 0, 0, 1, 1, 2 -> y = 0, 0, .5, .5, 1
    # trapezoids .25 * (0+0)/2 + .25 * (0+.5)/2 + .25 * (.5+.5)/2 + .25 * (.5+1)/2 = 0 + .0625 + .125 + .1875
    assert ev.aucec == pytest.approx(0.375)


def test_weight_vector_baseline_by_hand():
    # rows (0, 0), (3, 4), (0, 1): distances 5, 1 and sqrt(9 + 9)
    d = weight_distances(np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    assert d[0, 1] == pytest.approx(5.0) and d[0, 2] == pytest.approx(1.0) and d[1, 2] == pytest.approx(math.sqrt(18))
    module = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 3))
    assert last_linear(module, 3)[0] == "2"
    with pytest.raises(ValueError, match="final nn.Linear with 5 outputs"):
        last_linear(module, 5)


# ---------------------------------------------------------------- hooks end to end


def four_colour_result() -> InspectResult:
    inspector = Inspector(mean_colour_classifier())
    inspector.add([uniform(c) for c, _ in FOUR], [(t,) for _, t in FOUR], [f"img{i}" for i in range(4)])
    return inspector.finish()


def test_inspector_through_real_hooks_by_hand():
    r = four_colour_result()
    assert r.layers == (("2", 3),) and r.n_images == 4 and r.class_names == tuple(COLOURS)
    assert r.class_counts == (2, 1, 1)                          # red, orange -> red; green; cyan -> blue
    for (a, b), expected in FOUR_NAPVD.items():
        assert r.napvd[r.position(a), r.position(b)] == pytest.approx(expected)
    assert pair_rank(r, "green", "blue") == 1 and pair_rank(r, "red", "blue") == 3
    # ground truth: orange is truly green but predicted red -> P(red|green) = 1/2; type1(red, green) = 1/4
    assert r.ground_truth.kind == "type1" and r.ground_truth.n_images == 4
    assert r.ground_truth.error[0, 1] == pytest.approx(0.25) and r.ground_truth.error[1, 2] == 0.0
    # weight baseline: the identity layer's rows are one-hot, all sqrt(2) apart
    assert np.allclose(r.weights.distances[np.triu_indices(3, 1)], math.sqrt(2))
    # examples keep the references of each predicted class
    assert r.examples == {0: ("img0", "img1"), 1: ("img2",), 2: ("img3",)}
    # a 2-class heatmap shows the most confused pair, in model order
    assert heatmap_classes(r, 2) == ["green", "blue"]
    # the most biasing third class, computed in chunks of one pair or all at once:
    # (red, green): only blue, |1.5 - 1| / 2.5; (green, blue): only red; (red, blue): only green
    assert most_biasing_third(r, chunk=1).tolist() == most_biasing_third(r).tolist() == ["blue", "green", "red"]


def test_result_json_round_trip(tmp_path):
    r = four_colour_result()
    back = InspectResult.load(r.save(tmp_path / "r.json"))
    assert np.array_equal(back.napvd, r.napvd) and np.array_equal(back.avg_bias, r.avg_bias)
    assert back.class_names == r.class_names and back.layers == r.layers
    assert confusion_table(back).equals(confusion_table(r)) and bias_table(back).equals(bias_table(r))
    assert [e.to_dict() for e in back.evaluations] == [e.to_dict() for e in r.evaluations]
    text = (tmp_path / "r.json").read_text()
    assert "NaN" not in text and json.loads(text)["format"] == "objrel-deepinspect"
    with pytest.raises(ValueError, match="expected format 'objrel-deepinspect'"):
        InspectResult.load('{"format": "other"}')


def test_multi_label_counts_every_class_at_or_above_the_threshold():
    # sigmoid(logit) >= .5 <=> logit >= 0; logits are the mean colours, all >= 0, so use a -0.5 bias:
    # yellow (255, 255, 0) -> logits (.5, .5, -.5) -> red and green predicted; red -> red; blue -> blue;
    # cyan (0, 255, 255) -> green and blue
    clf = mean_colour_classifier()
    with torch.no_grad():
        clf.module[2].bias.fill_(-0.5)
    clf.task = "multi"
    inspector = Inspector(clf)
    imgs = [uniform((255, 255, 0)), uniform((255, 0, 0)), uniform((0, 0, 255)), uniform((0, 255, 255))]
    truths = [(0,), (0,), (2,), (1, 2)]                     # yellow is truly only red: a type2 error with green
    inspector.add(imgs, truths)
    r = inspector.finish()
    assert r.class_counts == (2, 2, 2)
    # P((red, green) | red, no green) = 1/2 (yellow: both predicted; red: not)
    # P((red, green) | green, no red) = 0/1 (cyan is not predicted red) -> type2 = (1/2 + 0) / 2
    assert r.ground_truth.kind == "type2" and r.ground_truth.error[0, 1] == pytest.approx(0.25)


def test_a_model_without_torch_module_is_refused():
    clf = CallableClassifier(lambda ims: np.full((len(ims), 3), 1 / 3), COLOURS)
    with pytest.raises(ValueError, match="needs a torch classifier"):
        Inspector(clf)


def test_fewer_than_three_predicted_classes_is_refused():
    inspector = Inspector(mean_colour_classifier())
    inspector.add([uniform((255, 0, 0)), uniform((0, 255, 0))])
    with pytest.raises(ValueError, match="at least 3 predicted classes"):
        inspector.finish()


# ---------------------------------------------------------------- CLI on a COCO folder


def write_four_colour_coco(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    images, anns = [], []
    for i, (rgb, truth) in enumerate(FOUR, start=1):
        Image.fromarray(uniform(rgb)).save(root / f"c{i}.png")
        images.append({"id": i, "file_name": f"c{i}.png", "width": 8, "height": 8})
        anns.append({"id": i, "image_id": i, "category_id": truth + 1, "bbox": [0, 0, 8, 8], "iscrowd": 0})
    images.append({"id": 9, "file_name": "missing.png", "width": 8, "height": 8})
    anns.append({"id": 9, "image_id": 9, "category_id": 1, "bbox": [0, 0, 8, 8], "iscrowd": 0})
    coco = {"images": images, "annotations": anns,
            "categories": [{"id": k + 1, "name": n} for k, n in enumerate(COLOURS)]}
    (root / "ann.json").write_text(json.dumps(coco))
    return root / "ann.json"


def run_cli(argv) -> int:
    ap = argparse.ArgumentParser(prog="objrel")
    add_inspect_command(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    return args.fn(args)


def test_cli_inspects_a_dataset_and_writes_json(tmp_path, capsys):
    ann = write_four_colour_coco(tmp_path / "data")
    out = tmp_path / "inspect" / "colours.json"
    assert run_cli(["inspect", "--model", "py:tests.studies.test_deepinspect:mean_colour_classifier",
                    "--dataset", str(ann), "--out", str(out), "--quiet", "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert "1  green / blue: 1.0000" in text                          # the smallest hand-computed NAPVD
    assert "skipped 1 x missing-file" in text
    saved = json.loads(out.read_text())
    names = saved["class_names"]
    for (a, b), expected in FOUR_NAPVD.items():
        assert saved["napvd"][names.index(a)][names.index(b)] == pytest.approx(expected)
    assert saved["source"]["kind"] == "dataset" and saved["examples"]["2"] == ["c4.png"]


def test_cli_without_dataset_says_what_is_missing(tmp_path):
    with pytest.raises(ValueError, match="needs --dataset"):
        run_cli(["inspect", "--model", "py:tests.studies.test_deepinspect:mean_colour_classifier"])


# ---------------------------------------------------------------- the planted benchmark


def test_planted_images_are_recipes():
    spec = PlantedSpec(seed=3)
    a, la = render(spec, "test", 10)
    b, lb = render(spec, "test", 10)
    c, _ = render(spec, "train", 10)
    assert la == lb == 10 % 7 and np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.shape == (32, 32, 3) and a.dtype == np.uint8


@pytest.fixture(scope="module")
def planted():
    return run_planted(PlantedSpec(seed=0))


# Training seeds of the planted benchmark (seed 0 is ``planted``) and how many of them must find the planted
# bias pair: flagged, and ranked in the top ``BIAS_TOP`` of the 21 pairs.  A ranking blind to the bias puts
# the pair in the top 2 with chance 2/21 per seed, so 3 of 5 by luck has chance C(5,3) (2/21)^3 < 0.01.
PLANTED_SEEDS = (0, 1, 2, 3, 4)
BIAS_FOUND = 3
BIAS_TOP = 2


@pytest.fixture(scope="module")
def planted_seeds(planted):
    """The planted benchmark over the training seeds ``PLANTED_SEEDS``."""
    return [planted] + [run_planted(PlantedSpec(seed=s)) for s in PLANTED_SEEDS[1:]]


@pytest.mark.slow
def test_planted_pairs_rank_first(planted_seeds):
    # One small CNN's training differs in the last bits between CPUs (on an AMD EPYC seed 0 ranked the bias
    # pair 4th; on an Intel Xeon seeds 0-4 rank it 1, 6 (not flagged), 2, 1, 2), so the planted bias must be
    # found for most seeds (``BIAS_FOUND`` of ``PLANTED_SEEDS``); the confusion pair is planted far more
    # strongly and must rank first every time.
    bias_ranks, bias_flagged = [], []
    for planted in planted_seeds:
        ranks = planted_ranks(planted)
        print(f"\nplanted confusion {CONFUSION_PAIR}: NAPVD rank {ranks['confusion']['napvd']} of "
              f"{ranks['confusion']['n_pairs']}, type1 rank {ranks['confusion']['ground_truth']}; planted bias "
              f"{BIAS_PAIR}: avg_bias rank {ranks['bias']['avg_bias']}, avg_cd rank {ranks['bias']['ground_truth']}")
        assert set(planted.class_names) == {"disc", "blush", "tagged", "stripes", "square", "triangle", "cross"}
        assert ranks["confusion"]["napvd"] == 1 and ranks["confusion"]["flagged"]
        assert ranks["confusion"]["ground_truth"] == 1        # the model's own errors agree
        bias_flagged.append(bool(ranks["bias"]["flagged"]))
        bias_ranks.append(ranks["bias"]["avg_bias"])
        if ranks["bias"]["avg_bias"] == 1:
            # the most biasing third class of the planted pair is one of the objects inside "tagged"
            row = bias_table(planted).iloc[0]
            assert (row["a"], row["b"]) == BIAS_PAIR
            assert row["third"] in {"disc", "blush", "square", "triangle", "cross"}
    found = [f and r <= BIAS_TOP for f, r in zip(bias_flagged, bias_ranks)]
    assert sum(found) >= BIAS_FOUND, \
        f"planted bias pair ranks {bias_ranks}, flagged {bias_flagged} over seeds {PLANTED_SEEDS}"
    assert 1 in bias_ranks, f"planted bias pair never ranks first: {bias_ranks}"


@pytest.mark.slow
def test_planted_evaluation_beats_random(planted):
    ev = planted.evaluation("confusion", "deepinspect")
    assert ev.n_true >= 1 and ev.aucec > planted.evaluation("confusion", "random").aucec
    assert planted.evaluation("confusion", "optimal").aucec >= ev.aucec
