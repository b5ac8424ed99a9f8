"""``PaintedInput``: the model input of a one-colour fill mixed from three resizes of the source equals
the preprocessing of the painted image (up to float32 rounding), on hand-computed cases and on photos."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.data import load_demo, load_rgb
from objrel.models.preprocess import PaintedInput, Preprocess
from objrel.mutations.pixels import dilate_region, paint
from objrel.mutations.recipe import build_target

# float32 rounding of the mix, in grey levels (0..255); a byte of difference would be 1.0
TOLERANCE = 1e-3


def _nhwc(x) -> np.ndarray:
    return x.permute(0, 2, 3, 1).numpy()


def _identity(size: int) -> Preprocess:
    """Preprocessing that leaves values in grey levels: mean 0, std 1/255."""
    return Preprocess(size=size, mean=(0.0,) * 3, std=(1 / 255,) * 3)


def test_area_averaging_of_a_fill_by_hand():
    """16 x 16 -> 8 x 8 averages 2 x 2 blocks: a painted pixel counts a quarter of its block."""
    pre = _identity(8)
    zeros = np.zeros((16, 16, 3), np.uint8)
    one = np.zeros((16, 16), bool)
    one[0, 0] = True
    x = _nhwc(pre([PaintedInput(pre.fill_basis(zeros, one), "inside", (255, 0, 0))]))[0]
    assert x[0, 0].tolist() == pytest.approx([63.75, 0.0, 0.0], abs=TOLERANCE)  # 255 / 4
    assert np.abs(x[1:]).max() < TOLERANCE and np.abs(x[0, 1:]).max() < TOLERANCE

    grey40 = np.full((16, 16, 3), 40, np.uint8)
    column = np.zeros((16, 16), bool)
    column[0:2, 0] = True            # half of the top-left block
    block = np.zeros((16, 16), bool)
    block[2:4, 2:4] = True           # all of block (1, 1)
    region = column | block
    x = _nhwc(pre([PaintedInput(pre.fill_basis(grey40, region), "outside", (100, 100, 100))]))[0]
    assert x[0, 0].tolist() == pytest.approx([70.0] * 3, abs=TOLERANCE)      # (2 x 40 + 2 x 100) / 4
    assert x[1, 1].tolist() == pytest.approx([40.0] * 3, abs=TOLERANCE)      # the object kept
    assert x[5, 6].tolist() == pytest.approx([100.0] * 3, abs=TOLERANCE)     # background painted


@pytest.mark.parametrize("pre", [Preprocess(), Preprocess(resize="shorter-crop"), Preprocess(size=512)],
                         ids=["stretch-area", "shorter-crop", "stretch-bilinear-up"])
def test_painted_inputs_equal_the_painted_photos_preprocessed(pre):
    colours = [(0, 0, 0), (127, 127, 127), (255, 255, 255), (255, 0, 0), (12, 200, 77)]
    for sample in list(load_demo())[:4]:
        image = load_rgb(sample.image_path)
        h, w = image.shape[:2]
        region = build_target(sample.objects, w, h).region
        for dilate in (0, 3):
            grown = dilate_region(region, dilate)
            basis = pre.fill_basis(image, grown)
            items, painted = [], []
            for side, where in (("inside", grown), ("outside", ~grown)):
                for c in colours:
                    items.append(PaintedInput(basis, side, c))
                    painted.append(paint(image, where, c))
            mixed, reference = pre(items), pre(painted)
            std = np.asarray(pre.std, np.float32).reshape(1, 3, 1, 1) * 255   # back to grey levels
            assert float(((mixed - reference).numpy() * std).__abs__().max()) < TOLERANCE
            # a mixed batch of photos and painted inputs gives each the same input as on its own
            both = pre([image, items[0], painted[-1]])
            assert np.allclose(both[1].numpy(), mixed[0].numpy(), atol=1e-6)
            assert np.array_equal(both[0].numpy(), pre([image])[0].numpy())


def test_painted_input_refuses_a_bad_side_and_a_basis_of_another_size():
    pre = Preprocess(size=32)
    image = np.zeros((40, 40, 3), np.uint8)
    region = np.zeros((40, 40), bool)
    region[10:20, 10:20] = True
    basis = pre.fill_basis(image, region)
    with pytest.raises(ValueError, match="'inside' or 'outside'"):
        PaintedInput(basis, "border", (0, 0, 0))
    with pytest.raises(ValueError,
                       match=r"only with the preprocessing that made its basis .*size=32.* not with .*size=64"):
        Preprocess(size=64)([PaintedInput(basis, "inside", (0, 0, 0))])
    with pytest.raises(ValueError, match="not with .*std=.0.25"):    # same size, other normalisation
        Preprocess(size=32, std=(0.25,) * 3)([PaintedInput(basis, "inside", (0, 0, 0))])
    out = np.empty((16, 16, 3), np.float32)
    with pytest.raises(ValueError, match=r"\(32, 32, 3\) float32, got \(16, 16, 3\)"):
        PaintedInput(basis, "inside", (0, 0, 0)).into(out)
    with pytest.raises(ValueError, match="bool region matching the image"):
        pre.fill_basis(image, region[:30])


def test_a_basis_from_the_sources_own_model_input_mixes_the_same_fills():
    """The engine hands ``fill_basis`` the source's row of its prepared batch (it saves one resize)."""
    from objrel.models import load_classifier

    model = load_classifier("efficientnet-lite0")
    sample = list(load_demo())[1]
    image = load_rgb(sample.image_path)
    h, w = image.shape[:2]
    region = build_target(sample.objects, w, h, dilate=3).region
    row = model.prepare([image])[0]
    own, fresh = model.fill_basis(image, region, row), model.fill_basis(image, region)
    for side in ("inside", "outside"):
        a = model.prepare([PaintedInput(own, side, (10, 200, 30))]).numpy()
        b = model.prepare([PaintedInput(fresh, side, (10, 200, 30))]).numpy()
        c = model.prepare([paint(image, region if side == "inside" else ~region, (10, 200, 30))]).numpy()
        assert np.abs(a - b).max() < 1e-5 and np.abs(a - c).max() < 1e-5
    with pytest.raises(ValueError, match=r"prepared image as \(224, 224, 3\) float32"):
        model.preprocess.fill_basis(image, region, np.zeros((224, 224, 3), np.float64))


def test_a_basis_of_a_transposed_view_mixes_like_its_painted_copy():
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (50, 70, 3), dtype=np.uint8).transpose(1, 0, 2)    # not contiguous
    region = np.zeros((50, 70), bool)
    region[10:30, 5:40] = True
    region = region.T
    pre = _identity(24)
    mixed = pre([PaintedInput(pre.fill_basis(image, region), "outside", (9, 99, 199))])
    painted = pre([paint(np.ascontiguousarray(image), ~region, (9, 99, 199))])
    assert float((mixed - painted).abs().max()) < TOLERANCE


@pytest.mark.parametrize("pre", [Preprocess(), Preprocess(resize="shorter-crop"), Preprocess(size=512)],
                         ids=["stretch-area", "shorter-crop", "stretch-bilinear-up"])
def test_a_planar_batch_holds_the_channel_last_batchs_values_bit_for_bit(pre):
    """``planar=True`` (NCHW, for a runtime whose graph takes the network's own layout) writes the same floats
    as the channel-last batch, for photos and for painted inputs of every kind (black: the basis's part alone)."""
    samples = list(load_demo())[:3]
    images = [load_rgb(s.image_path) for s in samples]
    h, w = images[0].shape[:2]
    basis = pre.fill_basis(images[0], build_target(samples[0].objects, w, h).region)
    items = images + [PaintedInput(basis, side, colour) for side in ("inside", "outside")
                      for colour in ((0, 0, 0), (255, 0, 0), (12, 200, 77))]
    last, planar = pre(items), pre(items, planar=True)
    assert planar.is_contiguous() and not last.is_contiguous()   # NCHW laid out plane by plane; NHWC strides
    assert planar.shape == last.shape == (len(items), 3, pre.size, pre.size)
    assert np.array_equal(planar.numpy(), _nhwc(last).transpose(0, 3, 1, 2))


def test_a_planar_painted_input_refuses_a_channel_last_row():
    pre = _identity(8)
    basis = pre.fill_basis(np.zeros((16, 16, 3), np.uint8), np.ones((16, 16), bool))
    with pytest.raises(ValueError, match=r"planar painted input of this basis is \(3, 8, 8\) float32, got \(8, 8, 3\)"):
        PaintedInput(basis, "inside", (1, 2, 3)).into_planar(np.zeros((8, 8, 3), np.float32))
