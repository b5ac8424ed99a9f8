"""``objrel.analysis.same_results.differences``: what two runs' stored rows may and may not differ in."""

from __future__ import annotations

import math

from objrel.analysis.same_results import differences


def test_equal_rows_within_the_tolerance_have_no_difference():
    want = {"verdicts": [{"verdict": "violated", "distance": 0.25, "flags": [True, False]}], "n": 3}
    got = {"verdicts": [{"verdict": "violated", "distance": 0.25 + 4e-6, "flags": [True, False]}], "n": 3}
    assert differences(got, want, tolerance=1e-5) == []
    assert differences(got, want) == [".verdicts[0].distance: 0.250004 != 0.25"]   # exact by default


def test_labels_flags_counts_keys_and_lengths_must_be_equal():
    want = {"verdict": "holds", "flag": True, "n": 3, "labels": [1, 2]}
    assert differences({**want, "verdict": "violated"}, want, 1.0) == [".verdict: 'violated' != 'holds'"]
    assert differences({**want, "flag": False}, want, 1.0) == [".flag: False != True"]
    assert differences({**want, "n": 4}, want, 1.0) == [".n: 4 != 3"]
    assert differences({**want, "labels": [1]}, want, 1.0) == [".labels: 1 items != 2"]
    assert differences({"verdict": "holds"}, want, 1.0) == ["(top level): keys ['flag', 'labels', 'n'] in one only"]


def test_a_float_against_none_text_or_a_flag_differs_whatever_the_tolerance():
    assert differences({"s": None}, {"s": 0.5}, math.inf) == [".s: None != 0.5"]
    assert differences({"s": "0.5"}, {"s": 0.5}, math.inf) == [".s: '0.5' != 0.5"]
    assert differences({"s": True}, {"s": 1.0}, math.inf) == [".s: True != 1.0"]
    # an int against a float: equal only when it is the same value, whatever the tolerance
    assert differences({"s": 3}, {"s": 3.0}, math.inf) == []
    assert differences({"s": 3}, {"s": 3.5}, 1.0) == [".s: 3 != 3.5"]


def test_nan_equals_nan_only_and_every_gap_is_collected():
    floats: list[float] = []
    nan = float("nan")
    assert differences([nan, 0.5, 0.25], [nan, 0.75, nan], tolerance=1.0, floats=floats) == ["[2]: 0.25 != nan"]
    assert floats == [0.25, math.inf]


def test_ids_and_times_are_not_compared_unless_asked():
    want = {"id": 1, "run_id": 7, "elapsed_ms": 12.5, "verdict": "holds"}
    got = {"id": 9, "run_id": 8, "elapsed_ms": 99.0, "verdict": "holds"}
    assert differences(got, want) == []
    assert differences(got, want, skip=()) == [".id: 9 != 1", ".run_id: 8 != 7", ".elapsed_ms: 99.0 != 12.5"]


def test_a_tolerance_may_depend_on_the_path():
    want = {"box": [10.0, 20.0], "score": 0.5}
    got = {"box": [10.3, 20.0], "score": 0.5003}

    def tolerance(path: str) -> float:
        return 0.5 if "box" in path else 1e-4

    assert differences(got, want, tolerance) == [".score: 0.5003 != 0.5"]
