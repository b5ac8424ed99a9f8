"""The real-model sanity row (``objrel bench bggap``): compositing, the gap and rank arithmetic, and the command
end to end on the bundled photos with EfficientNet-Lite0."""

from __future__ import annotations

import contextlib
import io
import json

import numpy as np
import pytest
from scipy.stats import kendalltau, spearmanr

from objrel.data.bundled import DEMO_ANNOTATIONS, DEMO_IMAGES
from objrel.studies import bggap as B

RED, BLUE, GREEN, GREY = (220, 30, 30), (20, 40, 230), (30, 200, 60), (128, 128, 128)


def _square(shape, y0, y1, x0, x1):
    m = np.zeros(shape, dtype=bool)
    m[y0:y1, x0:x1] = True
    return m


def _hand_built():
    """An image with a red object on grey, and a donor with a blue object on a green/grey gradient-free field."""
    image = np.empty((24, 24, 3), dtype=np.uint8)
    image[:] = GREY
    obj = _square((24, 24), 4, 12, 6, 14)
    image[obj] = RED
    donor = np.empty((24, 24, 3), dtype=np.uint8)
    donor[:] = GREEN
    donor[:, 12:] = (200, 190, 40)            # two background colours, so the fill has something to blend
    donor_obj = _square((24, 24), 10, 18, 8, 18)
    donor[donor_obj] = BLUE
    return image, obj, donor, donor_obj


def test_the_composite_keeps_the_object_exactly_and_takes_the_rest_from_the_cleaned_donor():
    image, obj, donor, donor_obj = _hand_built()
    clean = B.remove_objects(donor, donor_obj)
    out = B.mixed_rand(image, obj, clean)
    assert out.shape == image.shape and out.dtype == np.uint8
    assert np.array_equal(out[obj], image[obj])                  # object pixels kept byte for byte
    assert np.array_equal(out[~obj], clean[~obj])                # everything else is the donor's background
    # the donor's object does not leak through: no pixel is near its blue, and the donor's untouched pixels
    # (outside its grown region) are its own
    blueness = lambda a: np.abs(a.astype(int) - np.array(BLUE)).sum(axis=2)  # noqa: E731
    assert blueness(out).min() > 150, blueness(out).min()
    assert blueness(B.mixed_rand(image, obj, donor)).min() == 0       # (the uncleaned donor would leak it)
    grown = B.dilate_region(donor_obj, B.CLEAR_MARGIN)
    assert np.array_equal(clean[~grown], donor[~grown])
    assert not np.array_equal(clean[donor_obj], donor[donor_obj])
    # the inputs are left as they were
    assert (donor[donor_obj] == BLUE).all() and (image[obj] == RED).all()


def test_a_donor_of_another_size_is_resized_to_the_image():
    image, obj, _, _ = _hand_built()
    donor = np.zeros((10, 40, 3), dtype=np.uint8)
    donor[:] = GREEN
    out = B.mixed_rand(image, obj, donor)
    assert out.shape == image.shape
    assert np.array_equal(out[obj], image[obj])
    assert (out[~obj] == GREEN).all()
    with pytest.raises(ValueError, match="mask"):
        B.mixed_rand(image, obj[:5], donor)


def test_donors_are_drawn_deterministically_without_repeats_and_never_share_a_class():
    a = B.draw_donors(0, "7", 12, 6)
    assert a == B.draw_donors(0, "7", 12, 6) and len(set(a)) == 6 and all(0 <= i < 12 for i in a)
    assert B.draw_donors(0, "7", 4, 6) == [0, 1, 2, 3]           # fewer eligible than asked: all of them
    assert B.draw_donors(1, "7", 12, 6) != a or B.draw_donors(0, "8", 12, 6) != a
    with pytest.raises(ValueError, match="swaps must be >= 1"):
        B.draw_donors(0, "7", 12, 0)
    item = B.Item("1", "cat.jpg", frozenset({285}), ())
    donors = [B.Donor("photo:cat.jpg", frozenset({285}), "cat.jpg", "1"),
              B.Donor("photo:cat2.jpg", frozenset({285, 3}), "cat2.jpg", "2"),
              B.Donor("photo:cup.jpg", frozenset({967}), "cup.jpg", "3"),
              B.Donor("bundled:grass.jpg", frozenset(), "grass.jpg")]
    assert [d.name for d in B.eligible_donors(item, donors)] == ["photo:cup.jpg", "bundled:grass.jpg"]


def test_the_gap_is_accuracy_minus_swapped_accuracy():
    acc, mixed, gap = B.accuracy_gap(7, 9, 25, 54)
    assert acc == 7 / 9 and mixed == 25 / 54 and gap == pytest.approx(7 / 9 - 25 / 54)
    assert B.accuracy_gap(0, 0, 0, 0) == (None, None, None)
    assert B.accuracy_gap(3, 4, 0, 0) == (0.75, None, None)


def _rows(gaps, mr2):
    return [B.ModelRow(model=f"m{i}", run_id=i, images=9, correct=7, accuracy=0.8, swaps=54, swaps_correct=30,
                       mixed_accuracy=0.5, bg_gap=g, mr1=0, mr2=3, mr1_rate=0.0, mr2_rate=m)
            for i, (g, m) in enumerate(zip(gaps, mr2))]


@pytest.mark.parametrize("gaps, mr2, ranks_bg, ranks_mr2, word", [
    ((0.3, 0.1, 0.2), (0.5, 0.2, 0.4), (1, 3, 2), (1, 3, 2), "the same"),
    ((0.3, 0.1, 0.2), (0.2, 0.5, 0.4), (1, 3, 2), (3, 1, 2), "opposite orders"),
    ((0.3, 0.2, 0.1), (0.4, 0.5, 0.1), (1, 2, 3), (2, 1, 3), "differently"),
    ((0.3, 0.2, 0.1), (0.4, 0.4, 0.4), (1, 2, 3), (2, 2, 2), "undefined"),
])
def test_ranks_and_rank_correlations_follow_scipy(gaps, mr2, ranks_bg, ranks_mr2, word):
    rows = B.with_ranks(_rows(gaps, mr2))
    assert tuple(r.bg_rank for r in rows) == ranks_bg and tuple(r.mr2_rank for r in rows) == ranks_mr2
    rho, tau = B.rank_correlations(list(gaps), list(mr2))
    if word == "undefined":
        assert (rho, tau) == (None, None)
    else:
        assert rho == pytest.approx(spearmanr(gaps, mr2).statistic)
        assert tau == pytest.approx(kendalltau(gaps, mr2).statistic)
    result = B.BgGapResult("demo", "colours3", 0, 6, 6, 6, ("a",), tuple(rows), rho, tau, "s.db", 1.0)
    assert word in result.agreement() and "n = 3 models" in result.agreement()
    assert "not a significance test" in result.agreement()


@pytest.mark.parametrize("where", [[], ["--dataset", str(DEMO_ANNOTATIONS), "--images", str(DEMO_IMAGES)]],
                         ids=["demo", "coco-file"])
def test_bench_bggap_on_the_bundled_photos_with_lite0(tmp_path, where):
    from objrel.analysis.summary import summarize
    from objrel.cli.main import main
    from objrel.store import Store

    out = tmp_path / "bggap"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["bench", "bggap", *where, "--models", "efficientnet-lite0", "--swaps", "3", "--out", str(out),
                   "--quiet"])
    text = buf.getvalue()
    assert rc == 0, text
    lines = text.splitlines()
    for column in ("model", "images", "accuracy", "mixed-rand acc.", "BG-gap", "MR-1 rate", "MR-2 rate",
                   "rank BG-gap", "rank MR-2"):
        assert column in lines[0], (column, lines[0])
    assert lines[2].startswith("efficientnet-lite0 ")
    assert "3 background swaps per image" in text and "n = 1 models" in text

    data = json.loads((out / B.RESULTS_FILE).read_text())
    (row,) = data["rows"]
    assert data["swaps_min"] == data["swaps_max"] == 3 and row["images"] == 9 and row["swaps"] == 27
    for key in ("accuracy", "mixed_accuracy", "mr1_rate", "mr2_rate"):
        assert 0.0 <= row[key] <= 1.0, (key, row[key])
    assert row["bg_gap"] == pytest.approx(row["accuracy"] - row["mixed_accuracy"])
    store = Store(str(out / B.STORE_FILE))
    try:
        s = summarize(store, row["run_id"])
        run = store.get_run(row["run_id"])
    finally:
        store.dispose()
    assert run.status == "finished" and run.model == "efficientnet-lite0"
    assert (row["mr1_rate"], row["mr2_rate"], row["accuracy"]) == (s.mr1_ratio, s.mr2_ratio, s.accuracy)
    assert (row["mr1"], row["mr2"], row["correct"], row["images"]) == (s.mr1, s.mr2, s.correct, s.evaluated)
    assert f"{100 * s.mr2_ratio:.1f}% ({s.mr2}/{s.correct})" in lines[2]
