"""LIME explanations: object share, overlay, reproducibility, the planted colour cases, the store cache.

The model is the hand-written dominant-colour classifier (tests/fixtures/colour_model.py):
p = softmax(0.05 * mean RGB).  Painting a flat gray patch black lowers all three
channel means by the same amount, so it cannot change the probabilities; painting a
red patch black lowers the red mean only.  So for the label "red", the red pixels
are the evidence and gray pixels are not: the cases below are planted, not guessed.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image
from sqlalchemy import func, select

from objrel.config import RunConfig
from objrel.engine import run
from objrel.explain import (EXPLAIN_MAX_SIDE, Explanation, explain, object_share, overlay, segments_from_png,
                            segments_to_png, settings_string)
from objrel.review.explanations import explanation_for
from objrel.store import Store
from objrel.store import schema as S

from tests.fixtures.colour_model import CLASSES, factory

RED, GREEN, BLUE = (CLASSES.index(c) for c in ("red", "green", "blue"))
N = 120  # LIME samples: enough for the colour model, fast on 2 cores
GRAY = (127, 127, 127)
RED_RGB = (200, 30, 30)


def textured(h, w, background, square, box, seed=0):
    """A flat-coloured square on a flat background with +-10 noise, so quickshift finds several superpixels."""
    img = np.empty((h, w, 3), np.int64)
    img[:] = background
    y1, x1, y2, x2 = box
    img[y1:y2, x1:x2] = square
    img += np.random.default_rng(seed).integers(-10, 11, img.shape)
    region = np.zeros((h, w), bool)
    region[y1:y2, x1:x2] = True
    return np.clip(img, 0, 255).astype(np.uint8), region


class Counting:
    """Wraps a classifier; counts images predicted and remembers their shapes and dtypes."""

    def __init__(self, model, before=None):
        self.model = model
        self.images = 0
        self.calls = 0
        self.seen = set()
        self.before = before
        self.num_classes = model.num_classes
        self.name = model.name

    def predict(self, images):
        if self.before is not None:
            self.before(self.calls)
        self.calls += 1
        self.images += len(images)
        self.seen.update((im.shape, im.dtype.str) for im in images)
        return self.model.predict(images)


# ---------------------------------------------------------------- object_share by hand


def two_segments():
    seg = np.zeros((4, 4), np.int32)
    seg[:, 2:] = 1                      # segment 0: left two columns (8 px), segment 1: right two (8 px)
    region = np.zeros((4, 4), bool)
    region[:2, :2] = True               # 4 px of segment 0
    region[0, 3] = True                 # 1 px of segment 1
    return seg, region


def test_object_share_hand_computed():
    seg, region = two_segments()
    # inside: 4 * 0.3 + 1 * 0.1 = 1.3; all: 8 * 0.3 + 8 * 0.1 = 3.2
    assert object_share(seg, {0: 0.3, 1: 0.1}, region) == pytest.approx(1.3 / 3.2)
    # a negative weight contributes nothing: inside 4 * 0.3 = 1.2, all 8 * 0.3 = 2.4
    assert object_share(seg, {0: 0.3, 1: -0.5}, region) == pytest.approx(0.5)
    # only segment 1 positive: 1 of its 8 pixels inside
    assert object_share(seg, {0: -0.2, 1: 0.4}, region) == pytest.approx(1 / 8)
    # a segment without a weight counts as 0
    assert object_share(seg, {1: 0.4}, region) == pytest.approx(1 / 8)
    assert object_share(seg, {0: 0.3, 1: 0.1}, np.ones((4, 4), bool)) == pytest.approx(1.0)
    assert object_share(seg, {0: 0.3, 1: 0.1}, np.zeros((4, 4), bool)) == 0.0


def test_object_share_is_none_without_positive_weight_and_checks_shapes():
    seg, region = two_segments()
    assert object_share(seg, {0: -0.3, 1: 0.0}, region) is None
    assert object_share(seg, {}, region) is None
    with pytest.raises(ValueError, match="region"):
        object_share(seg, {0: 1.0}, region[:3])
    with pytest.raises(ValueError, match="bool"):
        object_share(seg, {0: 1.0}, region.astype(np.uint8))


# ---------------------------------------------------------------- overlay


def three_segment_explanation():
    seg = np.zeros((12, 12), np.int32)
    seg[:, 4:8] = 1
    seg[:, 8:] = 2
    return Explanation(label=0, segments=seg, weights={0: 0.5, 1: -0.4, 2: 0.1}, settings="test")


def test_overlay_tints_only_the_top_segments():
    exp = three_segment_explanation()
    image = np.full((12, 12, 3), 100, np.uint8)
    before = image.copy()
    out = overlay(image, exp, top_k=1, positive_only=True, alpha=0.5)
    assert out.shape == image.shape and out.dtype == np.uint8
    assert np.array_equal(image, before), "the input image must not be modified"
    changed = np.any(out != image, axis=2)
    seg = exp.segments
    assert changed[seg == 0].all()                  # top-1 positive: tinted or boundary
    assert not changed[seg != 0].any()              # segments 1 (negative) and 2 (2nd positive) untouched
    # an interior pixel of segment 0: half gray, half green
    assert tuple(out[5, 1]) == (50, 178, 50)
    # its boundary with segment 1 (column 3) is drawn
    assert not np.array_equal(out[5, 3], out[5, 1])


def test_overlay_shows_negative_segments_when_asked():
    exp = three_segment_explanation()
    image = np.full((12, 12, 3), 100, np.uint8)
    out = overlay(image, exp, top_k=1, positive_only=False, alpha=0.5)
    changed = np.any(out != image, axis=2)
    seg = exp.segments
    assert changed[seg == 1].all()
    assert not changed[seg == 2].any()
    assert tuple(out[5, 6]) == (178, 50, 50)        # interior of the negative segment: red tint
    both = overlay(image, exp, top_k=2, positive_only=True, alpha=0.5)
    assert np.any(both != image, axis=2)[seg == 2].all()
    with pytest.raises(ValueError, match="size"):
        overlay(image[:6], exp)


# ---------------------------------------------------------------- explain on the colour model


def test_same_seed_same_explanation_other_seed_other_weights():
    model = factory()
    image, _ = textured(64, 64, GRAY, RED_RGB, (20, 24, 40, 44))
    a = explain(model, image, label=RED, num_samples=N, seed=3)
    b = explain(model, image, label=RED, num_samples=N, seed=3)
    c = explain(model, image, label=RED, num_samples=N, seed=4)
    assert len(a.weights) >= 3, "the textured image should give several superpixels"
    assert a.weights == b.weights and np.array_equal(a.segments, b.segments)
    assert a.settings == b.settings != c.settings
    # the segmentation seed is fixed, so the superpixels are shared; the LIME sample differs
    assert np.array_equal(a.segments, c.segments)
    assert set(a.weights) == set(c.weights)
    assert any(a.weights[k] != c.weights[k] for k in a.weights)


def test_weights_equal_stock_lime_with_the_same_segments_and_seed():
    """The vectorised, silent sampler draws exactly what LimeImageExplainer.data_labels draws."""
    from lime.lime_image import LimeImageExplainer
    from lime.wrappers.scikit_image import SegmentationAlgorithm

    model = factory()
    image, _ = textured(64, 64, GRAY, RED_RGB, (20, 24, 40, 44))
    algo = SegmentationAlgorithm("quickshift", kernel_size=4, max_dist=200, ratio=0.2, rng=0)

    def segments_0_to_n(im):
        return np.unique(algo(im), return_inverse=True)[1].reshape(im.shape[:2])

    stock = LimeImageExplainer(random_state=5).explain_instance(
        image, lambda batch: model.predict(list(batch)), labels=(RED,), hide_color=0, top_labels=None,
        num_samples=N, batch_size=10, segmentation_fn=segments_0_to_n, random_seed=0)
    ours = explain(model, image, label=RED, num_samples=N, seed=5)
    assert np.array_equal(ours.segments, stock.segments)
    expected = {int(k): float(w) for k, w in stock.local_exp[RED]}
    assert ours.weights.keys() == expected.keys()
    assert all(ours.weights[k] == pytest.approx(expected[k], rel=1e-9, abs=1e-12) for k in expected)


@pytest.mark.parametrize("segmenter", ["quickshift", "slic"])
def test_red_square_on_gray_is_explained_by_the_square(segmenter):
    model = factory()
    image, region = textured(48, 64, GRAY, RED_RGB, (12, 20, 36, 44))
    exp = explain(model, image, label=RED, region=region, num_samples=N, segmenter=segmenter)
    assert exp.segments.shape == (48, 64) and exp.segments.dtype == np.int32
    top_id, top_w = exp.ranked(positive=True)[0]
    assert top_w > 0
    top_pixels = exp.segments == top_id
    assert region[top_pixels].mean() > 0.9, "the strongest positive superpixel must lie on the red square"
    assert exp.object_share is not None and exp.object_share > 0.8
    assert exp.object_share == pytest.approx(object_share(exp.segments, exp.weights, region))


def test_gray_square_on_red_is_explained_by_the_background():
    model = factory()
    image, region = textured(48, 64, RED_RGB, GRAY, (12, 20, 36, 44))
    exp = explain(model, image, label=RED, region=region, num_samples=N)
    assert model.predict([image])[0].argmax() == RED
    assert exp.object_share is not None and exp.object_share < 0.3
    top_id, _ = exp.ranked(positive=True)[0]
    assert not region[exp.segments == top_id].any() or region[exp.segments == top_id].mean() < 0.1


def test_label_defaults_to_top1_and_progress_is_reported():
    model = factory()
    image, _ = textured(32, 32, (20, 180, 20), RED_RGB, (8, 8, 16, 16))   # mostly green
    calls = []
    exp = explain(model, image, num_samples=50, batch_size=16, progress=lambda d, t: calls.append((d, t)))
    assert exp.label == GREEN
    assert exp.object_share is None                                       # no region given
    assert [d for d, _ in calls] == [16, 32, 48, 50] and {t for _, t in calls} == {50}


def test_large_image_is_explained_downscaled_and_segments_come_back_full_size():
    model = Counting(factory())
    h, w = 400, 640
    image, region = textured(h, w, GRAY, RED_RGB, (100, 200, 300, 440))
    exp = explain(model, image, label=RED, region=region, num_samples=20, segmenter="slic")
    assert exp.segments.shape == (h, w)
    small = (round(h * EXPLAIN_MAX_SIDE / w), EXPLAIN_MAX_SIDE, 3)
    assert model.seen == {(small, "|u1")}, "LIME's perturbed images must reach the model as downscaled uint8"
    assert model.images == 20
    assert f"side={EXPLAIN_MAX_SIDE}" in exp.settings
    # the share is measured on the full-size region
    assert exp.object_share == pytest.approx(object_share(exp.segments, exp.weights, region))


def test_bad_inputs_are_refused():
    model = factory()
    image, region = textured(16, 16, GRAY, RED_RGB, (4, 4, 12, 12))
    with pytest.raises(ValueError, match="uint8"):
        explain(model, image.astype(np.float32), num_samples=10)
    with pytest.raises(ValueError, match="segmenter"):
        explain(model, image, segmenter="watershed", num_samples=10)
    with pytest.raises(ValueError, match="region"):
        explain(model, image, region=region[:8], num_samples=10)
    with pytest.raises(ValueError, match="label"):
        explain(model, image, label=3, num_samples=10)


# ---------------------------------------------------------------- serialisation


def test_segments_and_weights_round_trip_through_png_and_json():
    seg = (np.arange(20 * 30, dtype=np.int32).reshape(20, 30) * 97) % 1000   # ids above 255: needs 16 bits
    exp = Explanation(label=7, segments=seg, weights={0: -0.25, 3: 1e-9, 999: 0.125}, settings="lime:test",
                      object_share=0.75)
    row = exp.to_row()
    assert row["segments_png"][:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(row["segments_png"])) as im:
        assert im.mode == "I;16" and im.size == (30, 20)
    text = json.dumps(row["weights"])                 # plain JSON, no pickle
    back = Explanation.from_row(row)
    assert back == exp
    assert np.array_equal(back.segments, seg) and back.segments.dtype == np.int32
    assert back.weights == {0: -0.25, 3: 1e-9, 999: 0.125}
    assert Explanation.from_row({**row, "weights": text}) == exp
    assert np.array_equal(segments_from_png(segments_to_png(np.array([[0, 65535]]))), [[0, 65535]])
    with pytest.raises(ValueError, match="65535"):
        segments_to_png(np.array([[0, 65536]]))


# ---------------------------------------------------------------- the store cache


@pytest.fixture
def colour_run(tmp_path, store):
    from .conftest import write_colour_set

    ann = write_colour_set(tmp_path / "data", bad=False)
    report = run(RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3"), store,
                 model=factory())
    return report.run_id


def explanation_rows(store):
    with store.engine.connect() as c:
        return c.execute(select(func.count()).select_from(S.explanations)).scalar_one()


def test_explanation_for_caches_in_the_store(store, colour_run):
    model = Counting(factory())
    # the colour set's images are flat: quickshift would see one superpixel, SLIC a grid
    first = explanation_for(store, model, colour_run, "2", num_samples=N, segmenter="slic")
    assert model.images >= N
    assert first.label == RED                           # img2: red square on blue, stored top-1 red
    # the red square covers most of img2; hiding the blue background only helps "red"
    from objrel.review.rebuild import rebuild_mutant
    region = rebuild_mutant(store, colour_run, "2", "source").target.region
    assert first.object_share == pytest.approx(object_share(first.segments, first.weights, region))
    assert first.object_share > 0.8
    seen = model.images
    again = explanation_for(store, model, colour_run, "2", num_samples=N, segmenter="slic")
    assert model.images == seen, "a cache hit must not call the model"
    assert again == first
    assert explanation_rows(store) == 1
    explanation_for(store, model, colour_run, "2", num_samples=N, segmenter="slic", seed=1)  # new settings: new row
    assert explanation_rows(store) == 2 and model.images > seen


def test_mutant_explanations_explain_the_source_label(store, colour_run):
    model = Counting(factory())
    key = "fill_object(colour=black)"
    exp = explanation_for(store, model, colour_run, "2", mutation_key=key, num_samples=N)
    from objrel.review.rebuild import rebuild_mutant
    mutant = rebuild_mutant(store, colour_run, "2", key).mutant
    assert factory().predict([mutant])[0].argmax() == BLUE   # the mutant's own top-1 is blue ...
    assert exp.label == RED                                  # ... but the source's label is explained
    assert exp.segments.shape == mutant.shape[:2]
    with pytest.raises(KeyError, match="no mutation"):
        explanation_for(store, model, colour_run, "2", mutation_key="fill_object(colour=pink)", num_samples=N)


def test_concurrent_insert_of_the_same_key_returns_the_stored_row(store, colour_run, tmp_path):
    """Another session stores the same key while we compute: our insert loses, theirs comes back."""
    theirs = Explanation(label=RED, segments=np.zeros((48, 64), np.int32), weights={0: 42.0},
                         settings=settings_string(N, "quickshift", 0),
                         object_share=0.5)
    other = Store(store.url)

    def other_session_wins(call_no):
        if call_no == 0:
            from objrel.store.store import now
            with other.engine.begin() as c:
                c.execute(S.explanations.insert().values(run_id=colour_run, sample_id="2", mutation_key="source",
                                                         created_at=now(), **theirs.to_row()))

    try:
        model = Counting(factory(), before=other_session_wins)
        got = explanation_for(store, model, colour_run, "2", num_samples=N)
    finally:
        other.dispose()
    assert model.images > 0                      # we did compute ...
    assert got == theirs                         # ... but the stored row wins
    assert explanation_rows(store) == 1
