"""Mutation operators: the registry-wide contract, the registry and plans, hand-checked behaviour.

Expected values are worked out by hand (comments show the arithmetic) or with
independent numpy code, never read back from the operators themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import skimage.data
from hypothesis import given, settings
from hypothesis import strategies as st

from objrel.data.sample import TargetObject
from objrel.mutations import (
    NINE_COLOURS,
    PALETTE_15,
    PRESETS,
    THREE_COLOURS,
    Mutation,
    NotApplicable,
    Plan,
    Target,
    VoteGroup,
    build_target,
    derive_seed,
    dilate_region,
    get_operator,
    make_mutant,
    operators,
    parse_colour,
    plan_from_operators,
    preset,
    register,
)
from objrel.mutations import registry

REPO = Path(__file__).resolve().parents[2]
BACKGROUNDS = REPO / "assets" / "backgrounds"

# ------------------------------------------------------------------ fixtures

H, W = 96, 128
CHELSEA = skimage.data.chelsea()  # (300, 451, 3): the cat picture bundled with scikit-image
CROP = (slice(90, 90 + H), slice(150, 150 + W))

# Ellipse centred at (x=64, y=48) with semi-axes 30 (x) and 24 (y): it spans
# x = 34..94 and y = 24..72, so its xyxy box (x2/y2 exclusive) is (34, 24, 95, 73).
_yy, _xx = np.mgrid[:H, :W]
ELLIPSE = ((_xx - 64) / 30.0) ** 2 + ((_yy - 48) / 24.0) ** 2 <= 1.0
ELLIPSE_BOX = (34, 24, 95, 73)


def cat_image() -> tuple[np.ndarray, np.ndarray]:
    """A fresh writable copy of the picture and a 96x128 crop of it (a non-contiguous view)."""
    full = CHELSEA.copy()
    return full, full[CROP]


def texture(h: int, w: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


def rect(h: int, w: int, box) -> np.ndarray:
    x1, y1, x2, y2 = box
    m = np.zeros((h, w), dtype=bool)
    m[y1:y2, x1:x2] = True
    return m


def changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(H, W) bool: pixels where any channel differs."""
    return (a != b).any(axis=2)


def grid_cases():
    return [
        pytest.param(op.name, params, id=f"{op.name}-{json.dumps(params, sort_keys=True)}")
        for op in operators()
        for params in op.grid
    ]


def test_ellipse_fixture_is_what_the_comments_say():
    ys, xs = np.nonzero(ELLIPSE)
    assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == ELLIPSE_BOX
    assert 0.1 < ELLIPSE.mean() < 0.5  # pi*30*24/(96*128) ~ 0.18: a non-trivial region
    assert cat_image()[1].shape == (H, W, 3)


# ------------------------------------------------------------------ 1. the contract


@pytest.mark.parametrize("name, params", grid_cases())
def test_operator_contract(name, params):
    op = get_operator(name)
    assert op.kind in ("corrupt", "preserve")
    assert op.relation == {"corrupt": "MR-1", "preserve": "MR-2"}[op.kind]
    # A promise about the wrong side would contradict the operator's kind.
    assert not (op.kind == "corrupt" and op.keeps_inside)
    assert not (op.kind == "preserve" and op.keeps_outside)
    assert json.loads(json.dumps(params)) == params

    full, image = cat_image()
    full_before, image_before = full.copy(), image.copy()
    region = ELLIPSE.copy()
    target = Target(region, (ELLIPSE_BOX,), masked=True)

    out = op(image, target, np.random.default_rng(2024), **params)
    np.testing.assert_array_equal(image, image_before)
    np.testing.assert_array_equal(full, full_before)
    np.testing.assert_array_equal(region, ELLIPSE)
    assert out.shape == (H, W, 3) and out.dtype == np.uint8
    assert not np.shares_memory(out, full)

    again = op(image, target, np.random.default_rng(2024), **params)
    assert out.tobytes() == again.tobytes()
    # Scribbling over a result must not leak into later results (no shared caches).
    out_bytes = out.tobytes()
    out[:] = 0
    assert op(image, target, np.random.default_rng(2024), **params).tobytes() == out_bytes
    out = np.frombuffer(out_bytes, dtype=np.uint8).reshape(H, W, 3)

    diff = changed(out, image)
    assert diff.any(), "a mutation must change something"
    if op.kind == "corrupt":
        assert diff[ELLIPSE].any(), "a corrupting operator must change the object"
    if op.keeps_outside:
        assert not diff[~ELLIPSE].any(), f"{name} promised to keep the background"
    if op.keeps_inside:
        assert not diff[ELLIPSE].any(), f"{name} promised to keep the object"
        assert diff[~ELLIPSE].any()

    # The recipe path gives the same bytes as calling the operator with Generator(seed).
    mutation = Mutation.of(name, **params)
    assert mutation.kwargs == params
    assert mutation.relation == op.relation
    assert make_mutant(image, target, mutation, 2024).tobytes() == out_bytes


def test_box_only_targets_are_not_applicable_only_for_margin_fill():
    _, image = cat_image()
    box = ELLIPSE_BOX
    box_target = Target(rect(H, W, box), (box,), masked=False)
    refused = set()
    for op in operators():
        for params in op.grid:
            try:
                out = op(image, box_target, np.random.default_rng(0), **params)
            except NotApplicable:
                refused.add(op.name)
            else:
                assert out.shape == (H, W, 3) and out.dtype == np.uint8
    assert refused == {"margin_fill"}
    # ... and margin_fill works on the same pixels once the region is a mask.
    masked = Target(ELLIPSE, (box,), masked=True)
    for params in get_operator("margin_fill").grid:
        assert changed(get_operator("margin_fill")(image, masked, np.random.default_rng(0), **params), image).any()


def test_background_operators_grid_lists_the_bundled_pictures():
    files = sorted(p.name for p in BACKGROUNDS.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
    assert files, "assets/backgrounds holds no picture"
    needing = [op for op in operators() if op.needs_backgrounds]
    assert {op.name for op in needing} == {"move_to_background", "blend_to_background"}
    for op in needing:
        assert [g["background"] for g in op.grid] == files


def test_operators_reject_bad_inputs():
    op = get_operator("fill_object")
    _, image = cat_image()
    target = Target(ELLIPSE, (ELLIPSE_BOX,), masked=True)
    with pytest.raises(ValueError, match="uint8"):
        op(image.astype(np.float32), target, np.random.default_rng(0))
    with pytest.raises(ValueError, match="region"):
        op(image, Target(ELLIPSE[:-1], (ELLIPSE_BOX,)), np.random.default_rng(0))
    with pytest.raises(ValueError, match="colour"):
        op(image, target, np.random.default_rng(0), colour="beige")


# ------------------------------------------------------------------ 2. registry, mutations, plans


def test_duplicate_names_and_bad_kinds_are_refused():
    before = get_operator("fill_object")
    with pytest.raises(ValueError, match="already registered"):
        register("fill_object", "corrupt", [{}], "again", "test")(lambda image, target, rng: image.copy())
    assert get_operator("fill_object") is before
    with pytest.raises(ValueError, match="kind"):
        register("smudge", "destroy", [{}], "bad kind", "test")
    with pytest.raises(KeyError):
        get_operator("smudge")


def test_register_adds_an_operator(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))

    @register("zz_invert", "corrupt", [{}], "invert the object", "test", keeps_outside=True)
    def invert(image, target, rng):
        out = image.copy()
        out[target.region] = 255 - out[target.region]
        return out

    op = get_operator("zz_invert")
    assert op.apply is invert and op.relation == "MR-1" and op.grid == ({},)
    assert operators()[-1] is op  # sorted by name
    assert op in operators("corrupt") and op not in operators("preserve")
    with pytest.raises(ValueError, match="already registered"):
        register("zz_invert", "preserve", [{}], "again", "test")(invert)


def test_operators_are_sorted_and_split_by_kind():
    names = [op.name for op in operators()]
    assert names == sorted(names) and len(set(names)) == len(names)
    corrupt, preserve = operators("corrupt"), operators("preserve")
    assert all(op.kind == "corrupt" for op in corrupt) and all(op.kind == "preserve" for op in preserve)
    assert sorted(op.name for op in corrupt + preserve) == names
    for expected in ("fill_object", "fill_background", "margin_fill", "random_erase", "background_noise"):
        assert expected in names


def test_unknown_operator_names_list_the_choices():
    with pytest.raises(KeyError) as err:
        get_operator("no_such_operator")
    message = str(err.value)
    assert "no_such_operator" in message
    for op in operators():
        assert op.name in message
    with pytest.raises(KeyError, match="no_such_operator"):
        Mutation.of("no_such_operator", colour="black")
    with pytest.raises(KeyError):
        Mutation.from_dict({"operator": "no_such_operator", "params": {}})


def test_mutation_keys_are_stable_strings():
    assert Mutation.of("fill_object", colour="black").key == "fill_object(colour=black)"
    assert Mutation.of("gray_background_blur").key == "gray_background_blur()"
    a = Mutation.of("object_noise", variance=16.0, ratio=1.0)
    b = Mutation.of("object_noise", ratio=1.0, variance=16.0)
    assert a == b and a.key == b.key == "object_noise(ratio=1.0,variance=16.0)"
    c = Mutation.of("fill_object", colour=[0, 128, 128])
    assert c.key == "fill_object(colour=[0,128,128])"
    assert c.kwargs == {"colour": [0, 128, 128]}
    assert hash(c) == hash(Mutation.of("fill_object", colour=[0, 128, 128]))
    for m in (a, c, Mutation.of("random_erase", ratio=0.5)):
        assert isinstance(m.key, str)
        back = Mutation.from_dict(json.loads(json.dumps(m.to_dict())))
        assert back == m and back.key == m.key


def _json_round_trip(d):
    return json.loads(json.dumps(d))


@pytest.mark.parametrize("plan", [
    *(preset(name) for name in PRESETS),
    preset("colours3", k=3, dilate=4),
    plan_from_operators(["inpaint", "random_erase", "fill_object"], dilate=2),
], ids=[*PRESETS, "colours3-k3-dilate4", "from-operators"])
def test_plan_and_vote_group_round_trip(plan):
    back = Plan.from_dict(_json_round_trip(plan.to_dict()))
    assert back == plan
    assert back.dilate == plan.dilate
    assert [m.key for m in back.mutations] == [m.key for m in plan.mutations]
    for group in plan.groups:
        assert VoteGroup.from_dict(_json_round_trip(group.to_dict())) == group


def test_vote_groups_and_plans_validate():
    black = Mutation.of("fill_object", colour="black")
    gray_bg = Mutation.of("fill_background", colour="gray")
    with pytest.raises(ValueError, match="mixes"):
        VoteGroup("mixed", "MR-1", (black, gray_bg), 1)
    with pytest.raises(ValueError, match="k must be"):
        VoteGroup("too many", "MR-1", (black,), 2)
    with pytest.raises(ValueError, match="no mutation"):
        VoteGroup("empty", "MR-1", (), 1)
    g = VoteGroup("g", "MR-1", (black,), 1)
    with pytest.raises(ValueError, match="unique"):
        Plan((g, g))
    with pytest.raises(ValueError, match="dilate"):
        Plan((g,), dilate=-1)
    with pytest.raises(ValueError, match="preset"):
        preset("colours4")


def test_preset_colours3():
    plan = preset("colours3")
    assert len(plan.groups) == 2
    mr1, mr2 = plan.groups
    assert (mr1.relation, mr2.relation) == ("MR-1", "MR-2")
    assert mr1.k == mr2.k == 2
    assert [(m.operator, m.kwargs) for m in mr1.mutations] == [
        ("fill_object", {"colour": c}) for c in ("black", "gray", "white")]
    assert [(m.operator, m.kwargs) for m in mr2.mutations] == [
        ("fill_background", {"colour": c}) for c in ("black", "gray", "white")]
    assert len(plan.mutations) == 6
    assert plan.primary("MR-1") is mr1 and plan.primary("MR-2") is mr2
    assert THREE_COLOURS["black"] == (0, 0, 0) and THREE_COLOURS["white"] == (255, 255, 255)
    r, g, b = THREE_COLOURS["gray"]
    assert r == g == b and r in (127, 128)  # mid gray


# Seed 000 s5.2.1: the 16 basic HTML colours without silver, typed in by hand.
HAND_PALETTE_15 = {
    "black": (0, 0, 0), "white": (255, 255, 255),
    "red": (255, 0, 0), "maroon": (128, 0, 0),
    "yellow": (255, 255, 0), "olive": (128, 128, 0),
    "lime": (0, 255, 0), "green": (0, 128, 0),
    "aqua": (0, 255, 255), "teal": (0, 128, 128),
    "blue": (0, 0, 255), "navy": (0, 0, 128),
    "fuchsia": (255, 0, 255), "purple": (128, 0, 128),
}


def test_preset_palette15():
    plan = preset("palette15")
    assert [g.relation for g in plan.groups] == ["MR-1", "MR-2", "MR-1", "MR-2"]
    assert plan.primary("MR-1").k == 2 and len(plan.primary("MR-1").mutations) == 3
    pal1, pal2 = plan.groups[2:]
    assert pal1.k == pal2.k == 8
    assert len(pal1.mutations) == len(pal2.mutations) == 15
    assert {m.operator for m in pal1.mutations} == {"fill_object"}
    assert {m.operator for m in pal2.mutations} == {"fill_background"}
    names = [m.kwargs["colour"] for m in pal1.mutations]
    assert names == [m.kwargs["colour"] for m in pal2.mutations]
    assert len(set(names)) == 15 and set(names) == set(HAND_PALETTE_15) | {"gray"}
    for name, rgb in HAND_PALETTE_15.items():
        assert parse_colour(name) == rgb, name
    assert parse_colour("gray") == THREE_COLOURS["gray"]
    assert len({parse_colour(n) for n in names}) == 15  # 15 distinct RGB values
    # The 3 colours are among the 15, so the plan runs 15 + 15 distinct mutations.
    assert len(plan.mutations) == 30
    assert set(NINE_COLOURS) <= set(PALETTE_15)


def test_preset_all_has_a_majority_group_per_other_operator():
    plan = preset("all")
    names = {g.name for g in plan.groups}
    for op in operators():
        if op.name in ("fill_object", "fill_background"):
            continue
        assert op.name in names
        g = next(g for g in plan.groups if g.name == op.name)
        assert len(g.mutations) == len(op.grid) and g.k == len(op.grid) // 2 + 1
        assert g.relation == op.relation


def test_parse_colour():
    assert parse_colour([1, 2, 3]) == (1, 2, 3)
    assert parse_colour("navy") == (0, 0, 128)
    for bad in ("beige", [0, 0, 256], [-1, 0, 0], [1, 2], 7):
        with pytest.raises(ValueError):
            parse_colour(bad)


def test_derive_seed_is_deterministic_and_distinguishes_inputs():
    key = Mutation.of("random_erase", ratio=0.5).key
    s = derive_seed(7, "img-1", key)
    assert s == derive_seed(7, "img-1", key)
    assert isinstance(s, int) and 0 <= s < 2**63
    others = {
        derive_seed(7, "img-2", key),
        derive_seed(8, "img-1", key),
        derive_seed(7, "img-1", Mutation.of("random_erase", ratio=0.3).key),
        derive_seed(7, "img-1", Mutation.of("background_noise", variance=400.0).key),
    }
    assert s not in others and len(others) == 4
    # Sample ids "1" and 1 are the same id (str), but ("a", "b|c") must not collide with ("a|b", "c").
    assert derive_seed(7, 1, key) == derive_seed(7, "1", key)
    assert derive_seed(7, "a", "b|c") != derive_seed(7, "a|b", "c")


@pytest.mark.subprocess
def test_derive_seed_is_stable_across_processes():
    code = "from objrel.mutations import derive_seed; print(derive_seed(7, 'img-1', 'random_erase(ratio=0.5)'))"
    here = derive_seed(7, "img-1", "random_erase(ratio=0.5)")
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env,
                             capture_output=True, text=True, check=True)
        assert int(out.stdout) == here


# ------------------------------------------------------------------ 3. hand-checked behaviour


def test_fill_object_paints_exactly_the_region():
    _, image = cat_image()
    target = Target(ELLIPSE, (ELLIPSE_BOX,), masked=True)
    for colour, rgb in (("teal", (0, 128, 128)), ([12, 34, 56], (12, 34, 56))):
        out = get_operator("fill_object")(image, target, np.random.default_rng(0), colour=colour)
        assert (out[ELLIPSE] == rgb).all()
        np.testing.assert_array_equal(out[~ELLIPSE], image[~ELLIPSE])


def test_fill_background_paints_exactly_the_complement():
    _, image = cat_image()
    target = Target(ELLIPSE, (ELLIPSE_BOX,), masked=True)
    out = get_operator("fill_background")(image, target, np.random.default_rng(0), colour="maroon")
    assert (out[~ELLIPSE] == (128, 0, 0)).all()
    np.testing.assert_array_equal(out[ELLIPSE], image[ELLIPSE])


def erased_pixels(box, ratio, shape=(80, 80), seed=0):
    """Exactly the pixels random_erase writes: a random pixel cannot equal both 0 and 255."""
    h, w = shape
    target = Target(rect(h, w, box), (box,), masked=False)
    op = get_operator("random_erase")
    black = np.zeros((h, w, 3), np.uint8)
    white = np.full((h, w, 3), 255, np.uint8)
    a = op(black, target, np.random.default_rng(seed), ratio=ratio)
    b = op(white, target, np.random.default_rng(seed), ratio=ratio)
    return changed(a, black) | changed(b, white)


def bounds(mask):
    ys, xs = np.nonzero(mask)
    return xs.min(), ys.min(), xs.max() + 1, ys.max() + 1


def test_random_erase_quarter_of_a_40x40_box_is_the_centred_20x20_square():
    # Box x 10..49, y 20..59 (40x40, centre (30, 40)); ratio 0.25 -> side 40*sqrt(0.25) = 20,
    # so x 20..39 and y 30..49.
    box = (10, 20, 50, 60)
    erased = erased_pixels(box, 0.25)
    expected = rect(80, 80, (20, 30, 40, 50))
    np.testing.assert_array_equal(erased, expected)
    image = texture(80, 80, seed=3)
    out = get_operator("random_erase")(image, Target(rect(80, 80, box), (box,)), np.random.default_rng(5), ratio=0.25)
    np.testing.assert_array_equal(out[~expected], image[~expected])
    assert changed(out, image)[expected].mean() > 0.99


@pytest.mark.parametrize("ratio", [g["ratio"] for g in get_operator("random_erase").grid])
def test_random_erase_area_is_about_ratio_of_the_box(ratio):
    box = (10, 20, 50, 60)
    erased = erased_pixels(box, ratio)
    x1, y1, x2, y2 = bounds(erased)
    assert erased.sum() == (x2 - x1) * (y2 - y1)  # one solid rectangle
    assert abs(erased.sum() / 1600 - ratio) < 0.03
    assert abs((x1 - 10) - (50 - x2)) <= 1 and abs((y1 - 20) - (60 - y2)) <= 1  # centred


def test_random_erase_size_does_not_depend_on_where_the_box_is():
    # A 6x6 box at ratio 0.25 -> a 3x3 square (area 9 = 0.25 * 36), wherever the box sits.
    for x0 in (0, 1, 2, 3):
        erased = erased_pixels((x0, x0, x0 + 6, x0 + 6), 0.25, shape=(12, 12))
        assert erased.sum() == 9, x0
    # A 4x4 box at ratio 1/16 -> a single pixel.
    assert erased_pixels((0, 0, 4, 4), 1 / 16, shape=(8, 8)).sum() == 1
    assert erased_pixels((0, 0, 4, 4), 0.0, shape=(8, 8)).sum() == 0
    assert erased_pixels((2, 1, 6, 7), 1.0, shape=(8, 8)).sum() == 24  # the whole 4x6 box


def test_margin_fill_uses_mean_and_median_of_box_minus_mask():
    # 40x40 picture: outside the box white, the 12x12 mask black, the 256 margin pixels
    # (20x20 box minus the mask) A = (100, 40, 200) except every 4th one (64 pixels) B = (20, 240, 0).
    # mean = (3A + B) / 4 = (320/4, 360/4, 600/4) = (80, 90, 150); median = A.
    box = (10, 10, 30, 30)
    mask = rect(40, 40, (14, 14, 26, 26))
    margin = rect(40, 40, box) & ~mask
    assert margin.sum() == 256
    image = np.full((40, 40, 3), 255, np.uint8)
    image[mask] = 0
    ys, xs = np.nonzero(margin)
    image[ys, xs] = (100, 40, 200)
    image[ys[::4], xs[::4]] = (20, 240, 0)
    target = Target(mask, (box,), masked=True)
    op = get_operator("margin_fill")
    for stat, rgb in (("mean", (80, 90, 150)), ("median", (100, 40, 200))):
        out = op(image, target, np.random.default_rng(0), stat=stat)
        assert (out[mask] == rgb).all(), stat
        np.testing.assert_array_equal(out[~mask], image[~mask])
    with pytest.raises(NotApplicable):
        op(image, Target(rect(40, 40, box), (box,), masked=True), np.random.default_rng(0), stat="mean")
    with pytest.raises(ValueError, match="stat"):
        op(image, target, np.random.default_rng(0), stat="mode")


@pytest.mark.parametrize("method", ["ns", "telea"])
def test_inpaint_on_a_large_image_keeps_the_background(method):
    # Longer side 720 > 512 takes the downscaled path: only region pixels may come back from it.
    import cv2

    image = cv2.resize(CHELSEA, (720, 540), interpolation=cv2.INTER_LINEAR)
    yy, xx = np.mgrid[:540, :720]
    region = ((xx - 360) / 120.0) ** 2 + ((yy - 270) / 90.0) ** 2 <= 1.0
    target = Target(region, ((240, 180, 481, 361),), masked=True)
    out = get_operator("inpaint")(image, target, np.random.default_rng(0), method=method)
    assert out.shape == image.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(out[~region], image[~region])
    assert changed(out, image)[region].mean() > 0.5


def _gray_scene(size=200):
    image = np.full((size, size, 3), 128, np.uint8)
    region = rect(size, size, (80, 80, 120, 120))
    image[region] = (10, 200, 30)
    return image, Target(region, ((80, 80, 120, 120),), masked=True)


def test_background_noise_of_variance_zero_is_the_identity():
    image, target = _gray_scene()
    out = get_operator("background_noise")(image, target, np.random.default_rng(0), variance=0.0)
    np.testing.assert_array_equal(out, image)


@pytest.mark.parametrize("variance", [100.0, 400.0])
def test_background_noise_has_the_requested_variance_and_zero_mean(variance):
    # 40000 - 1600 = 38400 background pixels x 3 channels; around 128 with sd <= 20 nothing clips.
    # Standard errors: mean ~ 20/sqrt(115200) = 0.06, variance ~ 400*sqrt(2/115200) = 1.7.
    image, target = _gray_scene()
    out = get_operator("background_noise")(image, target, np.random.default_rng(11), variance=variance)
    bg = out[~target.region].astype(np.float64)
    assert abs(bg.var() - variance) < 0.04 * variance
    assert abs(bg.mean() - 128.0) < 0.3
    np.testing.assert_array_equal(out[target.region], image[target.region])
    with pytest.raises(ValueError, match="variance"):
        get_operator("background_noise")(image, target, np.random.default_rng(0), variance=-1.0)


def disc(h, w, cy, cx, r):
    yy, xx = np.mgrid[:h, :w]
    return (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r


@pytest.mark.parametrize("radius, count", [(1, 5), (2, 13), (3, 29), (5, None)])
def test_dilate_region_grows_a_pixel_into_a_disc(radius, count):
    # Lattice points with dx^2 + dy^2 <= r^2: r=1 -> 5 (a plus), r=2 -> 13, r=3 -> 7 + 2*5 + 2*5 + 2 = 29.
    region = np.zeros((21, 21), bool)
    region[10, 10] = True
    grown = dilate_region(region, radius)
    np.testing.assert_array_equal(grown, disc(21, 21, 10, 10, radius))
    if count is not None:
        assert grown.sum() == count
    assert region.sum() == 1  # input untouched


def test_dilate_region_edge_cases():
    region = np.zeros((6, 6), bool)
    region[0, 0] = True
    # r=2 disc clipped to the image corner: (0,0),(0,1),(0,2),(1,0),(1,1),(2,0).
    assert dilate_region(region, 2).sum() == 6
    np.testing.assert_array_equal(dilate_region(region, 0), region)
    with pytest.raises(ValueError):
        dilate_region(region, -1)


def test_build_target_from_boxes_masks_and_dilation():
    box_obj = TargetObject("cat", 281, (10, 10, 20, 20))
    t = build_target([box_obj], 32, 32)
    assert t.masked is False and t.boxes == ((10, 10, 20, 20),)
    np.testing.assert_array_equal(t.region, rect(32, 32, (10, 10, 20, 20)))
    # Dilating a 10x10 square by 2: 100 + 4 sides * 10 * 2 + 4 corners * 1 ((1,1) is the only
    # diagonal offset with dx^2 + dy^2 <= 4) = 184 pixels, spanning x, y = 8..21.
    g = build_target([box_obj], 32, 32, dilate=2)
    assert g.region.sum() == 184 and bounds(g.region) == (8, 8, 22, 22)
    assert (g.region & t.region).sum() == t.region.sum()
    assert g.boxes == t.boxes

    poly = TargetObject("cat", 281, (4, 4, 24, 24), segmentation=[[4, 4, 24, 4, 24, 24, 4, 24]])
    m = build_target([poly], 32, 32)
    md = build_target([poly], 32, 32, dilate=3)
    assert m.masked and md.masked
    assert (md.region >= m.region).all() and md.region.sum() > m.region.sum()
    x1, y1, x2, y2 = bounds(m.region)
    assert bounds(md.region) == (x1 - 3, y1 - 3, x2 + 3, y2 + 3)


def test_make_mutant_is_deterministic_per_seed():
    _, image = cat_image()
    target = Target(ELLIPSE, (ELLIPSE_BOX,), masked=True)
    for m in (Mutation.of("random_erase", ratio=0.5), Mutation.of("background_noise", variance=400.0)):
        a = make_mutant(image, target, m, 1)
        assert a.tobytes() == make_mutant(image, target, m, 1).tobytes()
        assert a.tobytes() != make_mutant(image, target, m, 2).tobytes()
    fill = Mutation.of("fill_object", colour="black")
    assert make_mutant(image, target, fill, 1).tobytes() == make_mutant(image, target, fill, 2).tobytes()


# ------------------------------------------------------------------ 4. properties

PROPS = settings(max_examples=25, deadline=None)


@st.composite
def scenes(draw, min_side=4, max_side=24):
    """A random small image and a random rectangle inside it: (image, (x1, y1, x2, y2))."""
    h = draw(st.integers(min_side, max_side))
    w = draw(st.integers(min_side, max_side))
    x1 = draw(st.integers(0, w - 1))
    x2 = draw(st.integers(x1 + 1, w))
    y1 = draw(st.integers(0, h - 1))
    y2 = draw(st.integers(y1 + 1, h))
    return texture(h, w, seed=draw(st.integers(0, 2**32 - 1))), (x1, y1, x2, y2)


@PROPS
@given(scenes(), st.sampled_from(sorted(PALETTE_15)) | st.lists(st.integers(0, 255), min_size=3, max_size=3))
def test_fill_object_and_fill_background_are_complementary(scene, colour):
    image, box = scene
    h, w = image.shape[:2]
    target = Target(rect(h, w, box), (box,), masked=False)
    rng = np.random.default_rng(0)
    rgb = parse_colour(colour)
    obj = get_operator("fill_object")(image, target, rng, colour=colour)
    both = get_operator("fill_background")(obj, target, rng, colour=colour)
    assert (both == np.array(rgb, np.uint8)).all()
    # The other order gives the same flat picture.
    bg = get_operator("fill_background")(image, target, rng, colour=colour)
    assert (get_operator("fill_object")(bg, target, rng, colour=colour) == both).all()


KEEPS_OUTSIDE = [(op.name, p) for op in operators() if op.keeps_outside for p in op.grid]


@PROPS
@given(scenes(), st.integers(0, 3), st.sampled_from(KEEPS_OUTSIDE), st.integers(0, 2**32 - 1))
def test_corrupting_operators_that_keep_outside_never_touch_the_background(scene, pad, case, seed):
    image, (x1, y1, x2, y2) = scene
    h, w = image.shape[:2]
    name, params = case
    region = rect(h, w, (x1, y1, x2, y2))
    box = (max(0, x1 - pad), max(0, y1 - pad), min(w, x2 + pad), min(h, y2 + pad))
    target = Target(region, (box,), masked=True)
    before = image.copy()
    try:
        out = get_operator(name)(image, target, np.random.default_rng(seed), **params)
    except NotApplicable:
        assert name == "margin_fill" and not (rect(h, w, box) & ~region).any()  # no margin to sample
        return
    np.testing.assert_array_equal(image, before)
    np.testing.assert_array_equal(out[~region], image[~region])


@PROPS
@given(scenes(min_side=3, max_side=16), st.integers(0, 4), st.integers(0, 2**32 - 1))
def test_dilation_commutes_with_transposition_and_contains_the_region(scene, radius, seed):
    image, box = scene
    h, w = image.shape[:2]
    rng = np.random.default_rng(seed)
    region = rect(h, w, box) | (rng.random((h, w)) < 0.05)
    grown = dilate_region(region, radius)
    np.testing.assert_array_equal(dilate_region(region.T.copy(), radius), grown.T)
    assert (grown >= region).all()
    # Independent reference: a pixel is in the dilation iff some region pixel is within radius.
    ys, xs = np.nonzero(region)
    yy, xx = np.mgrid[:h, :w]
    d2 = (yy[..., None] - ys) ** 2 + (xx[..., None] - xs) ** 2
    np.testing.assert_array_equal(grown, (d2 <= radius * radius).any(axis=-1))


@PROPS
@given(scenes(), st.floats(0.0, 1.0))
def test_random_erase_writes_a_centred_sub_box_of_the_right_size(scene, ratio):
    image, box = scene
    h, w = image.shape[:2]
    x1, y1, x2, y2 = box
    erased = erased_pixels(box, ratio, shape=(h, w))
    assert not (erased & ~rect(h, w, box)).any()
    s = np.sqrt(ratio)
    if not erased.any():
        assert min((x2 - x1) * s, (y2 - y1) * s) <= 0.5
        return
    ex1, ey1, ex2, ey2 = bounds(erased)
    assert erased.sum() == (ex2 - ex1) * (ey2 - ey1)
    assert abs((ex2 - ex1) - (x2 - x1) * s) <= 0.5 and abs((ey2 - ey1) - (y2 - y1) * s) <= 0.5
    assert abs((ex1 - x1) - (x2 - ex2)) <= 1 and abs((ey1 - y1) - (y2 - ey2)) <= 1


@pytest.mark.parametrize("shape", [(48, 40, 3), (1, 1, 3), (37, 53, 3)])
def test_paint_and_copy_where_give_the_bytes_of_boolean_indexing(shape):
    from objrel.mutations.pixels import copy_where, paint

    rng = np.random.default_rng(sum(shape))
    image = rng.integers(0, 256, shape, dtype=np.uint8)
    other = rng.integers(0, 256, shape, dtype=np.uint8)
    where = rng.random(shape[:2]) > 0.4
    expected = image.copy()
    expected[where] = (10, 200, 30)
    assert np.array_equal(paint(image, where, (10, 200, 30)), expected)
    flipped = image[:, ::-1]                                # a view that is not C-contiguous
    expected = flipped.copy()
    expected[where] = (1, 2, 3)
    assert np.array_equal(paint(flipped, where, (1, 2, 3)), expected)
    expected = image.copy()
    expected[where] = other[where]
    assert np.array_equal(copy_where(image.copy(), other, where), expected)
    with pytest.raises(ValueError, match="one shape"):
        copy_where(image.copy(), np.zeros((shape[0] + 1, shape[1], 3), np.uint8), where)
