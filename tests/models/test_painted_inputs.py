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


@pytest.mark.parametrize("pre", [Preprocess(), Preprocess(resize="shorter-crop"), Preprocess(size=512)],
                         ids=["stretch-area", "shorter-crop", "stretch-bilinear-up"])
def test_a_planar_basis_mixes_the_channel_last_basiss_values_bit_for_bit(pre):
    """A basis laid out in planes (``fill_basis(planar=True)``, what a planar adapter makes) holds the channel-last
    basis's values with the channel axis first, and mixes the same floats into either batch layout: each colour
    and black, each side, a basis made from the source's own prepared row and one resized afresh, and an empty
    region."""
    samples = list(load_demo())[:2]
    image = load_rgb(samples[0].image_path)
    h, w = image.shape[:2]
    region = build_target(samples[0].objects, w, h).region
    last_row = _nhwc(pre([image]))[0]
    planar_row = pre([image], planar=True).numpy()[0]
    for mask, row_last, row_planar in ((region, last_row, planar_row), (region, None, None),
                                       (np.zeros_like(region), None, None)):
        last = pre.fill_basis(image, mask, row_last)
        planar = pre.fill_basis(image, mask, row_planar, planar=True)
        assert planar.planar and not last.planar
        assert planar.outside.shape == (3, pre.size, pre.size) and planar.coverage.shape == (1, pre.size, pre.size)
        for name in ("outside", "inside", "coverage", "uncovered"):
            assert np.array_equal(getattr(planar, name), getattr(last, name).transpose(2, 0, 1)), name
        for side in ("inside", "outside"):
            for colour in ((0, 0, 0), (255, 255, 255), (12, 200, 77)):
                a, b = PaintedInput(last, side, colour), PaintedInput(planar, side, colour)
                assert np.array_equal(pre([a]).numpy(), pre([b]).numpy()), (side, colour)
                assert np.array_equal(pre([a], planar=True).numpy(), pre([b], planar=True).numpy()), (side, colour)
    n = pre.size
    with pytest.raises(ValueError, match=rf"prepared image as \(3, {n}, {n}\) float32, got \({n}, {n}, 3\)"):
        pre.fill_basis(image, region, last_row, planar=True)


def test_a_planar_adapter_keeps_its_rows_planar_and_mixes_what_the_channels_last_one_mixes():
    """The torch adapter without channels_last keeps each source's row as it laid it out, planes first (no
    transposing copy), builds planar bases from it, and feeds its network the same floats as the channels_last
    adapter does, one painted input after another."""
    import torch

    from objrel.models.classifier import TorchClassifier

    module = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                                 torch.nn.Linear(4, 3))
    pre = Preprocess(size=64)
    nchw = TorchClassifier(module, ["a", "b", "c"], pre, channels_last=False)
    nhwc = TorchClassifier(module, ["a", "b", "c"], pre, channels_last=True)
    samples = list(load_demo())[:2]
    images = [load_rgb(s.image_path) for s in samples]
    regions = [build_target(s.objects, im.shape[1], im.shape[0]).region for s, im in zip(samples, images)]
    rows_planar, rows_last = nchw.input_copies(nchw.prepare(images)), nhwc.input_copies(nhwc.prepare(images))
    assert all(r.shape == (3, 64, 64) and r.flags.c_contiguous for r in rows_planar)
    assert all(r.shape == (64, 64, 3) for r in rows_last)
    assert np.array_equal(nchw.input_copy(nchw.prepare(images)[1]), rows_planar[1])
    for image, region, rp, rl in zip(images, regions, rows_planar, rows_last):
        bp, bl = nchw.fill_basis(image, region, rp), nhwc.fill_basis(image, region, rl)
        assert bp.planar and not bl.planar
        for side in ("inside", "outside"):
            for colour in ((0, 0, 0), (40, 90, 250)):
                xp = nchw.prepare([PaintedInput(bp, side, colour)])
                xl = nhwc.prepare([PaintedInput(bl, side, colour)])
                assert xp.is_contiguous() and np.array_equal(xp.numpy(), xl.numpy())
