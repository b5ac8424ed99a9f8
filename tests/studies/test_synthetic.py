"""The planted-shortcut scene generator: exact masks and boxes, determinism, the planted rate rho."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from objrel.data import load_dataset, target_region
from objrel.studies.shortcut.scenes import (
    FLAT_COLOURS, SyntheticConfig, load_arrays, read_split, render_scene, shape_mask, swapped_scene, tight_box,
    write_split,
)


def test_shape_masks_are_exact_by_hand():
    # square: |u|, |v| <= 0.85 r.  r = 5 at centre (10, 10): pixel centres x + 0.5 in [5.75, 14.25] -> x = 6..13.
    sq = shape_mask("square", 20, 10.0, 10.0, 5.0, 0.0)
    assert sq.sum() == 64 and tight_box(sq) == (6, 6, 14, 14)
    assert sq[6:14, 6:14].all()
    # disc r = 3 at (5, 5): centre offsets +-0.5, 1.5, 2.5; all 9 combinations per quadrant but (2.5, 2.5)
    # (6.25 + 6.25 > 9) are inside: 4 * 8 = 32 pixels, box x, y = 2..7.
    disc = shape_mask("disc", 10, 5.0, 5.0, 3.0, 0.0)
    assert disc.sum() == 32 and tight_box(disc) == (2, 2, 8, 8)
    assert not disc[2, 2] and disc[2, 3] and disc[5, 5]
    with pytest.raises(ValueError, match="unknown shape"):
        shape_mask("blob", 10, 5, 5, 3, 0)


def test_written_masks_boxes_and_pixels_are_exact(tmp_path):
    cfg = SyntheticConfig(n_classes=4, seed=3)
    split = write_split(cfg, tmp_path, "test", 8)
    ds = load_dataset(split.annotation)   # objrel's own COCO loader, unchanged
    data = json.loads(open(split.annotation).read())
    assert len(ds) == 8 and ds.categories == ("disc", "square", "triangle", "cross")
    for sample, rec in zip(ds.samples, sorted(data["images"], key=lambda r: r["id"])):
        scene = render_scene(cfg, "test", int(sample.sample_id) - 1)
        (obj,) = sample.objects
        truth = scene.objects[0]
        region = target_region(sample.objects, 64, 64)
        assert np.array_equal(region, truth.mask)               # RLE of the exact mask
        ys, xs = np.nonzero(truth.mask)
        assert obj.box == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)   # tight xyxy box
        assert obj.class_index == truth.label and obj.category == cfg.class_names[truth.label]
        image = np.asarray(Image.open(sample.image_path))
        background = np.asarray(Image.open(tmp_path / rec["background_file"]))
        assert np.array_equal(image, scene.image)                # PNG is lossless
        assert np.array_equal(image[~region], background[~region])   # outside the mask: the background layer
        assert (image[region] != background[region]).any()      # inside: the object
        assert rec["bg_type"] == scene.bg_type


def test_generation_is_deterministic_and_order_free(tmp_path):
    cfg = SyntheticConfig(seed=11)
    a = write_split(cfg, tmp_path / "a", "train", 5)
    b = write_split(cfg, tmp_path / "b", "train", 5)
    write_split(cfg.replace(seed=12), tmp_path / "c", "train", 5)
    assert open(a.annotation).read() == open(b.annotation).read()
    for i in range(5):
        name = f"images/train_{i:05d}.png"
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "images/train_00000.png").read_bytes() != (tmp_path / "c" / "images/train_00000.png"
                                                                         ).read_bytes()
    # scene 4 alone renders the same pixels as in the sequential split
    assert np.array_equal(render_scene(cfg, "train", 4).image,
                          np.asarray(Image.open(tmp_path / "a" / "images/train_00004.png")))
    # splits are independent streams
    assert not np.array_equal(render_scene(cfg, "train", 0).image, render_scene(cfg, "test", 0).image)


@pytest.mark.parametrize("rho, lo, hi", [(1.0, 1.0, 1.0), (0.0, 0.0, 0.0), (0.95, 0.92, 0.98), (0.25, 0.19, 0.31)])
def test_background_type_goes_with_the_class_at_rate_rho(rho, lo, hi):
    cfg = SyntheticConfig(n_classes=4, rho=rho, size=32, seed=0)
    scenes = [render_scene(cfg, "train", i) for i in range(400)]
    share = np.mean([s.bg_type == s.objects[0].label for s in scenes])
    # 400 draws: a binomial share is within about 3 standard errors (0.033 at 0.95, 0.065 at 0.25) of rho
    assert lo <= share <= hi
    assert {s.objects[0].label for s in scenes} == {0, 1, 2, 3}


def test_multi_label_scenes_hold_disjoint_objects_of_distinct_classes(tmp_path):
    cfg = SyntheticConfig(n_classes=5, multi_label=True, objects=(2, 3), seed=2)
    split = write_split(cfg, tmp_path, "train", 12)
    data = read_split(split.annotation)
    counts = {}
    for a in data["annotations"]:
        counts[a["image_id"]] = counts.get(a["image_id"], 0) + 1
    assert sorted(set(counts.values())) <= [2, 3] and len(counts) == 12
    for i in range(12):
        scene = render_scene(cfg, "train", i)
        labels = [o.label for o in scene.objects]
        assert len(labels) == len(set(labels)) == counts[i + 1]
        union = np.zeros((64, 64), int)
        for o in scene.objects:
            union += o.mask
            assert tight_box(o.mask) == o.box
        assert union.max() == 1                                  # no pixel belongs to two objects
    x, y = load_arrays(split.annotation)
    assert x.shape == (12, 64, 64, 3) and y.shape == (12, 5)
    assert list(y.sum(1)) == [counts[i + 1] for i in range(12)]


def test_swapped_scene_keeps_the_object_and_changes_the_background_type():
    cfg = SyntheticConfig(seed=5)
    for i in range(10):
        scene, swap = render_scene(cfg, "test", i), swapped_scene(cfg, "test", i)
        m = scene.mask
        assert np.array_equal(swap.image[m], scene.image[m])
        assert swap.bg_type != scene.objects[0].label
        assert np.array_equal(swap.image[~m], swap.background[~m])


def test_flat_colour_backgrounds():
    cfg = SyntheticConfig(n_classes=3, rho=1.0, backgrounds="colours", seed=0)
    scene = render_scene(cfg, "train", 0)
    border = np.concatenate([scene.background[0], scene.background[-1]]).astype(int)
    expect = np.asarray(FLAT_COLOURS[scene.objects[0].label])
    assert np.abs(border - expect).max() <= 8
    assert cfg.background_types == ["navy", "sage", "pink"]


@pytest.mark.parametrize("kwargs, match", [({"n_classes": 9}, "n_classes"), ({"rho": 1.5}, "rho"),
                                           ({"size": 16}, "size"), ({"objects": (3, 2)}, "objects"),
                                           ({"backgrounds": "photos"}, "backgrounds")])
def test_bad_configs_say_what_was_expected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SyntheticConfig(**kwargs)
