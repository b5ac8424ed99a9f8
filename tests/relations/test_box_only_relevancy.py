"""S on box-only data (seed 002 s V-A, s VII-B): the paper's weights are kept, the flag and the caveat shown."""

from __future__ import annotations

import pytest

from objrel.data.sample import TargetObject
from objrel.relations import common as C


def test_box_only_caps_s_r_at_two_thirds_under_seed002_weights():
    # every applicable removing operation moved the prediction all the way (D = 1); RmvObjByMM had no mask
    rel = C.seed002_relevancy({"move_to_background": [1.0], "blend_to_background": [1.0],
                               "gray_background_blur": [1.0]},
                              {"fill_object_blur": [1.0] * 9, "inpaint": [1.0, 1.0]},
                              {"move_to_background": 1, "blend_to_background": 1, "gray_background_blur": 1},
                              {"fill_object_blur": 9, "inpaint": 2, "margin_fill": 2})
    assert rel.s_r == pytest.approx(2 / 3) and rel.s == pytest.approx(5 / 6)


def test_box_only_is_a_region_without_any_mask():
    box = TargetObject("cat", 0, (0, 0, 10, 10))
    poly = TargetObject("cat", 0, (0, 0, 10, 10), [[0, 0, 10, 0, 10, 10]])
    assert C.box_only([box]) and C.box_only([box.to_dict()])
    assert not C.box_only([poly]) and not C.box_only([box, poly]) and not C.box_only([])


def test_the_05_reading_says_box_only_and_the_cap_and_a_masked_case_says_nothing_more():
    # the issue's photo: S 0.415 with seed 002's weights on box-only data (0.574 over the applicable operators)
    assert C.relevancy_verdict(0.415, True, C.SCORING_SEED002) == "at most 0.5 (box-only: S_r capped at 2/3)"
    assert C.relevancy_verdict(0.574, True, C.SCORING_SEED002) == "above 0.5 (box-only: S_r capped at 2/3)"
    assert C.relevancy_verdict(0.415, True, C.SCORING_APPLICABLE) == "at most 0.5 (box-only)"
    assert C.relevancy_verdict(0.5, False, C.SCORING_SEED002) == "at most 0.5"      # seed 002: low is <= 0.5
    assert C.relevancy_verdict(0.574, False, C.SCORING_SEED002) == "above 0.5"
    assert C.relevancy_verdict(None, True, C.SCORING_SEED002) is None
    assert "capped at 2/3" in C.box_only_caveat(C.SCORING_SEED002)
    assert "left out" in C.box_only_caveat(C.SCORING_APPLICABLE)
