"""Dataset loaders (COCO, VOC/ILSVRC XML, manifest), target regions and image decoding.

Every fixture is a tiny file written into ``tmp_path``; the default image is
10 wide x 8 tall (80 pixels).  Expected masks are drawn with numpy slicing
(``rect_mask``) and expected RLE counts come from the independent encoder in
``loader_fixtures``; nothing is copied from objrel's own output.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from PIL import Image
from pycocotools import mask as mask_utils

import objrel.data.images as images_mod
from objrel.data import (
    Dataset,
    Sample,
    TargetObject,
    area_ratio,
    detect_format,
    load_coco,
    load_dataset,
    load_manifest,
    load_rgb,
    load_voc,
    resolve_inside,
    target_region,
)
from objrel.data.bundled import DEMO_ANNOTATIONS
from objrel.data.region import check_box, decode_region, encode_region, segmentation_mask, union_box
from objrel.data.voc import read_synset_mapping
from objrel.errors import AnnotationError, BadSampleError

from tests.fixtures.loader_fixtures import (
    CLASS_NAMES,
    H,
    W,
    coco_ann,
    coco_image,
    engine_prepare,
    pattern,
    rect_mask,
    rle_counts,
    voc_xml,
    write_image,
    write_json,
    write_text,
)


def compressed_rle(mask: np.ndarray) -> dict:
    """COCO compressed RLE of ``mask`` as it appears in a JSON file (counts is a str)."""
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(v) for v in rle["size"]], "counts": rle["counts"].decode("ascii")}


def region_of(sample: Sample) -> np.ndarray:
    """The sample's target region on its declared image size."""
    return target_region(sample.objects, sample.width, sample.height)


def region_of_size(sample: Sample, w: int = W, h: int = H) -> np.ndarray:
    """Target region of a sample whose annotation declares no size."""
    return target_region(sample.objects, w, h)


def by_id(ds: Dataset) -> dict[str, Sample]:
    return {s.sample_id: s for s in ds.samples}


# =====================================================================================
# Image decoding: load_rgb
# =====================================================================================


def assert_rgb_array(arr: np.ndarray, h: int, w: int) -> None:
    assert arr.shape == (h, w, 3)
    assert arr.dtype == np.uint8
    assert arr.flags.c_contiguous


class TestLoadRgbModes:
    """Every supported mode decodes to (H, W, 3) uint8 with hand-computed pixel values."""

    def test_rgb_png_is_bit_exact(self, tmp_path):
        arr = pattern(7, 5)
        p = write_image(tmp_path / "rgb.png", arr)
        out = load_rgb(p)
        assert_rgb_array(out, 5, 7)
        np.testing.assert_array_equal(out, arr)

    def test_grayscale_L_is_copied_to_three_channels(self, tmp_path):
        gray = np.array([[0, 17, 255], [128, 64, 3]], np.uint8)
        Image.fromarray(gray, mode="L").save(tmp_path / "g.png")
        out = load_rgb(tmp_path / "g.png")
        assert_rgb_array(out, 2, 3)
        for c in range(3):
            np.testing.assert_array_equal(out[:, :, c], gray)

    def test_bilevel_mode_1(self, tmp_path):
        img = Image.new("1", (2, 1))
        img.putdata([0, 1])
        img.save(tmp_path / "b.png")
        assert load_rgb(tmp_path / "b.png").tolist() == [[[0, 0, 0], [255, 255, 255]]]

    def test_LA_is_composited_over_white(self, tmp_path):
        img = Image.new("LA", (3, 1))
        img.putdata([(100, 255), (0, 0), (0, 128)])  # opaque, fully transparent, half transparent black
        img.save(tmp_path / "la.png")
        out = load_rgb(tmp_path / "la.png")
        assert_rgb_array(out, 1, 3)
        assert out[0, 0].tolist() == [100, 100, 100]
        assert out[0, 1].tolist() == [255, 255, 255]
        # 0 * 128/255 + 255 * (1 - 128/255) = 127
        assert np.all(np.abs(out[0, 2].astype(int) - 127) <= 1)

    def test_RGBA_is_composited_over_white(self, tmp_path):
        img = Image.new("RGBA", (3, 1))
        img.putdata([(10, 20, 30, 255), (10, 200, 30, 0), (200, 0, 0, 51)])
        img.save(tmp_path / "rgba.png")
        out = load_rgb(tmp_path / "rgba.png")
        assert_rgb_array(out, 1, 3)
        assert out[0, 0].tolist() == [10, 20, 30]
        assert out[0, 1].tolist() == [255, 255, 255], "a fully transparent pixel must become white"
        # alpha 0.2: 200*0.2 + 255*0.8 = 244 ; 0*0.2 + 255*0.8 = 204
        assert np.all(np.abs(out[0, 2].astype(int) - [244, 204, 204]) <= 1)

    @staticmethod
    def _palette_image() -> Image.Image:
        img = Image.new("P", (3, 2))
        img.putpalette([255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * (256 * 3 - 9))
        img.putdata([0, 1, 2, 2, 1, 0])
        return img

    def test_palette_without_transparency(self, tmp_path):
        self._palette_image().save(tmp_path / "p.png")
        assert Image.open(tmp_path / "p.png").mode == "P"
        red, green, blue = [255, 0, 0], [0, 255, 0], [0, 0, 255]
        assert load_rgb(tmp_path / "p.png").tolist() == [[red, green, blue], [blue, green, red]]

    def test_palette_with_transparent_index_becomes_white(self, tmp_path):
        self._palette_image().save(tmp_path / "pt.png", transparency=1)  # green is transparent
        assert Image.open(tmp_path / "pt.png").info.get("transparency") == 1
        red, white, blue = [255, 0, 0], [255, 255, 255], [0, 0, 255]
        out = load_rgb(tmp_path / "pt.png")
        assert_rgb_array(out, 2, 3)
        assert out.tolist() == [[red, white, blue], [blue, white, red]]

    def test_rgb_with_transparent_colour_key(self, tmp_path):
        img = Image.new("RGB", (2, 1))
        img.putdata([(10, 20, 30), (40, 50, 60)])
        img.save(tmp_path / "key.png", transparency=(10, 20, 30))
        assert load_rgb(tmp_path / "key.png").tolist() == [[[255, 255, 255], [40, 50, 60]]]

    def test_16bit_is_stretched_min_to_0_max_to_255(self, tmp_path):
        a = np.array([[1000, 2020], [3550, 1000]], np.uint16)
        Image.fromarray(a).save(tmp_path / "g16.png")
        assert Image.open(tmp_path / "g16.png").mode.startswith("I"), "fixture must be a 16-bit grayscale PNG"
        out = load_rgb(tmp_path / "g16.png")
        assert_rgb_array(out, 2, 2)
        # (2020 - 1000) * 255 / (3550 - 1000) = 102
        expected = np.array([[0, 102], [255, 0]], np.uint8)
        for c in range(3):
            np.testing.assert_array_equal(out[:, :, c], expected)

    def test_32bit_integer_tiff_is_stretched(self, tmp_path):
        a = np.array([[-500, 0], [1000, 4600]], np.int32)  # range 5100: each unit is 0.05 of a grey level
        Image.fromarray(a).save(tmp_path / "i32.tif")
        assert Image.open(tmp_path / "i32.tif").mode == "I"
        out = load_rgb(tmp_path / "i32.tif")
        assert_rgb_array(out, 2, 2)
        assert out[:, :, 2].tolist() == [[0, 25], [75, 255]]  # 500 * 0.05, 1500 * 0.05

    def test_float_tiff_is_stretched(self, tmp_path):
        a = np.array([[0.5, 1.0], [2.5, 0.5]], np.float32)  # 1.0 -> 0.5 * 255 / 2 = 63.75 -> 64
        Image.fromarray(a).save(tmp_path / "f.tif")
        assert Image.open(tmp_path / "f.tif").mode == "F"
        out = load_rgb(tmp_path / "f.tif")
        assert_rgb_array(out, 2, 2)
        assert out[:, :, 1].tolist() == [[0, 64], [255, 0]]

    def test_cmyk_jpeg_becomes_rgb(self, tmp_path):
        Image.new("CMYK", (8, 8), (0, 255, 255, 0)).save(tmp_path / "c.jpg", quality=100)
        out = load_rgb(tmp_path / "c.jpg")
        assert_rgb_array(out, 8, 8)
        assert np.all(np.abs(out.astype(int) - [255, 0, 0]) <= 4)  # C=0 M=Y=255 K=0 is red

    def test_transposed_image_is_still_contiguous(self, tmp_path):
        # EXIF rotation transposes the pixels; the result must still be C-contiguous.
        exif = Image.Exif()
        exif[0x0112] = 6
        write_image(tmp_path / "t.png", pattern(9, 4), exif=exif)
        out = load_rgb(tmp_path / "t.png")
        assert_rgb_array(out, 9, 4)


class TestExifOrientation:
    """EXIF orientation is applied unless the annotation's size matches the raw pixels."""

    RAW_W, RAW_H = 32, 16

    def _raw(self) -> np.ndarray:
        # 8-pixel-aligned colour blocks so JPEG (4:4:4) reproduces them closely.
        raw = np.zeros((self.RAW_H, self.RAW_W, 3), np.uint8)
        raw[:, :16] = (255, 0, 0)
        raw[:, 16:] = (0, 0, 255)
        raw[:8, :8] = (0, 255, 0)
        return raw

    def _write(self, path, orientation, **save):
        exif = Image.Exif()
        exif[0x0112] = orientation
        return write_image(path, self._raw(), exif=exif, **save)

    def test_jpeg_orientation_6_is_rotated_upright(self, tmp_path):
        p = self._write(tmp_path / "r.jpg", 6, quality=95, subsampling=0)
        out = load_rgb(p)
        assert_rgb_array(out, self.RAW_W, self.RAW_H)  # 90 degrees: 16 wide, 32 tall
        # Orientation 6: the picture must be turned 90 degrees clockwise to stand upright.
        upright = np.rot90(self._raw(), k=-1)
        assert np.abs(out.astype(int) - upright).max() <= 8
        # The green corner (raw top-left) ends up top-right.
        assert out[2, -3].tolist()[1] > 200 and out[2, 2].tolist()[0] > 200

    def test_jpeg_expected_raw_size_keeps_raw_orientation(self, tmp_path):
        p = self._write(tmp_path / "r.jpg", 6, quality=95, subsampling=0)
        out = load_rgb(p, expected_size=(self.RAW_W, self.RAW_H))
        assert_rgb_array(out, self.RAW_H, self.RAW_W)
        assert np.abs(out.astype(int) - self._raw()).max() <= 8

    def test_jpeg_expected_upright_size_is_rotated(self, tmp_path):
        p = self._write(tmp_path / "r.jpg", 6, quality=95, subsampling=0)
        out = load_rgb(p, expected_size=(self.RAW_H, self.RAW_W))
        assert out.shape == (self.RAW_W, self.RAW_H, 3)

    @pytest.mark.parametrize("orientation,k", [(3, 2), (6, -1), (8, 1)])
    def test_png_orientations_bit_exact(self, tmp_path, orientation, k):
        p = self._write(tmp_path / "r.png", orientation)
        np.testing.assert_array_equal(load_rgb(p), np.rot90(self._raw(), k=k))

    def test_size_matching_neither_orientation_is_refused(self, tmp_path):
        p = self._write(tmp_path / "r.jpg", 6, quality=95)
        with pytest.raises(BadSampleError) as ei:
            load_rgb(p, expected_size=(20, 20))
        assert ei.value.code == "size-mismatch"
        assert "20x20" in ei.value.reason and "16x32" in ei.value.reason

    def test_size_mismatch_without_exif(self, tmp_path):
        p = write_image(tmp_path / "plain.png", size=(10, 8))
        assert load_rgb(p, expected_size=(10, 8)).shape == (8, 10, 3)
        with pytest.raises(BadSampleError) as ei:
            load_rgb(p, expected_size=(8, 10))
        assert ei.value.code == "size-mismatch"


class TestLoadRgbErrors:
    """Unreadable files raise BadSampleError with a code and a message naming the file."""

    def test_random_bytes_with_png_name(self, tmp_path):
        p = tmp_path / "noise.png"
        p.write_bytes(np.random.default_rng(0).integers(0, 256, 300, dtype=np.uint8).tobytes())
        with pytest.raises(BadSampleError) as ei:
            load_rgb(p)
        assert ei.value.code == "corrupt-image"
        assert "cannot decode image" in ei.value.reason
        assert "noise.png" in str(ei.value)

    def test_truncated_png(self, tmp_path):
        full = write_image(tmp_path / "full.png", pattern(40, 30)).read_bytes()
        p = tmp_path / "cut.png"
        p.write_bytes(full[: len(full) // 2])
        with pytest.raises(BadSampleError) as ei:
            load_rgb(p)
        assert ei.value.code == "corrupt-image"

    def test_empty_file(self, tmp_path):
        p = tmp_path / "empty.jpg"
        p.write_bytes(b"")
        with pytest.raises(BadSampleError) as ei:
            load_rgb(p)
        assert ei.value.code == "corrupt-image"

    def test_missing_file(self, tmp_path):
        with pytest.raises(BadSampleError) as ei:
            load_rgb(tmp_path / "nope.png")
        assert ei.value.code == "missing-file"
        assert "nope.png" in ei.value.reason and "does not exist" in ei.value.reason

    def test_directory_is_not_an_image(self, tmp_path):
        (tmp_path / "dir.png").mkdir()
        with pytest.raises(BadSampleError) as ei:
            load_rgb(tmp_path / "dir.png")
        assert ei.value.code == "missing-file"

    def test_image_over_pixel_limit_is_refused(self, tmp_path, monkeypatch):
        # 12x12 = 144 pixels, over a limit of 100 but under PIL's hard error at 2x the limit.
        monkeypatch.setattr(images_mod, "MAX_IMAGE_PIXELS", 100)
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
        p = write_image(tmp_path / "big.png", size=(12, 12))
        with pytest.warns(Image.DecompressionBombWarning), pytest.raises(BadSampleError) as ei:
            load_rgb(p)
        assert ei.value.code == "corrupt-image"
        assert "too large" in ei.value.reason and "100" in ei.value.reason

    def test_image_under_pixel_limit_decodes(self, tmp_path, monkeypatch):
        monkeypatch.setattr(images_mod, "MAX_IMAGE_PIXELS", 100)
        monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
        assert load_rgb(write_image(tmp_path / "ok.png", size=(10, 10))).shape == (10, 10, 3)


# =====================================================================================
# Paths: resolve_inside
# =====================================================================================


class TestResolveInside:
    """Image paths must stay inside the dataset root, symlinks included."""

    def test_plain_relative_path(self, tmp_path):
        p = write_image(tmp_path / "sub" / "a.png")
        assert resolve_inside(tmp_path, "sub/a.png") == p.resolve()

    @pytest.mark.parametrize("rel", ["../outside.png", "sub/../../outside.png"])
    def test_dotdot_is_refused(self, tmp_path, rel):
        root = tmp_path / "root"
        (root / "sub").mkdir(parents=True)
        write_image(tmp_path / "outside.png")
        with pytest.raises(BadSampleError) as ei:
            resolve_inside(root, rel)
        assert ei.value.code == "path-escapes-root"
        assert "outside the dataset root" in ei.value.reason

    def test_absolute_path_is_refused(self, tmp_path):
        root = tmp_path / "root"
        root.mkdir()
        outside = write_image(tmp_path / "outside.png")
        with pytest.raises(BadSampleError) as ei:
            resolve_inside(root, str(outside))
        assert ei.value.code == "path-escapes-root"

    def test_symlink_to_outside_is_refused(self, tmp_path):
        root = tmp_path / "root"
        root.mkdir()
        outside = write_image(tmp_path / "outside.png")
        os.symlink(outside, root / "link.png")
        with pytest.raises(BadSampleError) as ei:
            resolve_inside(root, "link.png")
        assert ei.value.code == "path-escapes-root"

    def test_symlink_inside_root_is_allowed(self, tmp_path):
        target = write_image(tmp_path / "real" / "a.png")
        os.symlink(target, tmp_path / "alias.png")
        assert resolve_inside(tmp_path, "alias.png") == target.resolve()

    def test_symlink_loop_is_a_bad_sample_not_a_crash(self, tmp_path):
        os.symlink(tmp_path / "loop.png", tmp_path / "loop.png")
        with pytest.raises(BadSampleError) as ei:
            resolve_inside(tmp_path, "loop.png")
        assert ei.value.code == "bad-path"

    def test_nul_byte_is_a_bad_sample_not_a_crash(self, tmp_path):
        with pytest.raises(BadSampleError) as ei:
            resolve_inside(tmp_path, "a\x00.png")
        assert ei.value.code == "bad-path"


# =====================================================================================
# Regions: boxes, polygons, RLE
# =====================================================================================


class TestRegions:
    """Masks from boxes, polygons and RLE match numpy-drawn expectations pixel for pixel."""

    def test_rectangle_polygon_matches_slice(self):
        m = segmentation_mask([[2, 1, 7, 1, 7, 5, 2, 5]], W, H)
        assert m.shape == (H, W) and m.dtype == bool
        np.testing.assert_array_equal(m, rect_mask((2, 1, 7, 5)))
        assert m.sum() == 5 * 4

    def test_l_shaped_polygon(self):
        # L: a 3-wide column x 1..4, y 1..7 plus a foot x 4..8, y 5..7.
        poly = [[1, 1, 4, 1, 4, 5, 8, 5, 8, 7, 1, 7]]
        expected = rect_mask((1, 1, 4, 7), (4, 5, 8, 7))
        np.testing.assert_array_equal(segmentation_mask(poly, W, H), expected)
        assert expected.sum() == 3 * 6 + 4 * 2

    def test_several_polygons_are_united(self):
        segs = [[0, 0, 2, 0, 2, 2, 0, 2], [6, 4, 9, 4, 9, 8, 6, 8]]
        np.testing.assert_array_equal(segmentation_mask(segs, W, H), rect_mask((0, 0, 2, 2), (6, 4, 9, 8)))

    def test_uncompressed_rle(self):
        expected = rect_mask((3, 2, 9, 6))
        seg = {"size": [H, W], "counts": rle_counts(expected)}
        # column-major: 3 empty columns (24), then per column 2 off, 4 on, 2 off...
        assert seg["counts"][:3] == [3 * H + 2, 4, 4]
        np.testing.assert_array_equal(segmentation_mask(seg, W, H), expected)

    def test_compressed_rle(self):
        expected = rect_mask((1, 1, 4, 7), (4, 5, 8, 7))
        np.testing.assert_array_equal(segmentation_mask(compressed_rle(expected), W, H), expected)

    def test_compressed_rle_as_bytes(self):
        expected = rect_mask((0, 0, 10, 1))
        rle = mask_utils.encode(np.asfortranarray(expected.astype(np.uint8)))
        np.testing.assert_array_equal(segmentation_mask(rle, W, H), expected)

    @pytest.mark.parametrize(
        "seg,fragment",
        [
            ({"size": [H, W], "counts": [10, 20]}, "sum to 30, expected 80"),
            ({"size": [H, W], "counts": [90, -10]}, "expected 80"),
            ({"size": [4, 4], "counts": [16]}, "does not match the image 8x10"),
            ({"size": [H, W], "counts": "zzzz"}, "character 'z'"),
            ({"size": [H, W], "counts": "abc"}, "ends in the middle"),
            ({"size": [H, W], "counts": ""}, "sum to 0, expected 80"),
            ({"size": [H, W], "counts": "9"}, "sum to 9, expected 80"),
            ({"size": [H, W], "counts": 80}, "neither a list nor a string"),
        ],
        ids=["list-sum", "list-negative", "size", "str-badchar", "str-truncated", "str-empty", "str-short",
             "counts-int"],
    )
    def test_broken_rle_is_bad_rle(self, seg, fragment):
        with pytest.raises(BadSampleError) as ei:
            segmentation_mask(seg, W, H)
        assert ei.value.code == "bad-rle"
        assert fragment in ei.value.reason

    def test_compressed_rle_too_long_is_bad_rle(self):
        other = compressed_rle(np.ones((H, W + 1), bool))  # 88 pixels in a string declared 8x10
        with pytest.raises(BadSampleError) as ei:
            segmentation_mask({"size": [H, W], "counts": other["counts"]}, W, H)
        assert ei.value.code == "bad-rle" and "88" in ei.value.reason

    def test_segmentation_of_wrong_type(self):
        with pytest.raises(BadSampleError) as ei:
            segmentation_mask("polygon", W, H)
        assert ei.value.code == "bad-segmentation"

    def test_polygon_with_fewer_than_three_points(self):
        with pytest.raises(BadSampleError) as ei:
            segmentation_mask([[1, 1, 5, 5]], W, H)
        assert ei.value.code == "empty-region" and "3 points" in ei.value.reason

    def test_collinear_polygon_gives_empty_region(self):
        obj = TargetObject("x", 0, (0, 0, 9, 1), segmentation=[[0, 0, 5, 0, 9, 0]])
        with pytest.raises(BadSampleError) as ei:
            target_region([obj], W, H)
        assert ei.value.code == "empty-region"

    def test_all_zero_rle_gives_empty_region(self):
        obj = TargetObject("x", 0, (0, 0, 5, 5), segmentation={"size": [H, W], "counts": [H * W]})
        with pytest.raises(BadSampleError) as ei:
            target_region([obj], W, H)
        assert ei.value.code == "empty-region" and "no pixel" in ei.value.reason

    def test_no_objects_is_empty_region(self):
        with pytest.raises(BadSampleError) as ei:
            target_region([], W, H)
        assert ei.value.code == "empty-region"

    def test_union_of_box_and_mask_objects(self):
        objs = [
            TargetObject("a", 0, (0, 0, 3, 3)),
            TargetObject("b", 1, (5, 2, 9, 6),
                         segmentation={"size": [H, W], "counts": rle_counts(rect_mask((5, 2, 9, 6)))}),
        ]
        region = target_region(objs, W, H)
        np.testing.assert_array_equal(region, rect_mask((0, 0, 3, 3), (5, 2, 9, 6)))
        assert area_ratio(region) == pytest.approx((9 + 16) / 80)

    def test_fractional_box_covers_every_touched_pixel(self):
        region = target_region([TargetObject("a", 0, (1.5, 0.2, 3.1, 2.0))], W, H)
        np.testing.assert_array_equal(region, rect_mask((1, 0, 4, 2)))

    def test_box_overhanging_within_tolerance_is_clipped(self):
        assert check_box((8, 6, 11.5, 9.5), W, H) == (8, 6, 10, 8)
        assert check_box((-2, -1, 3, 3), W, H) == (0, 0, 3, 3)

    @pytest.mark.parametrize("box", [(20, 20, 23, 23), (10, 0, 13, 5), (-5, 0, 0, 4), (0, 8, 4, 12)])
    def test_box_outside_image(self, box):
        with pytest.raises(BadSampleError) as ei:
            target_region([TargetObject("a", 0, box)], W, H)
        assert ei.value.code == "box-outside-image"
        assert "lies entirely outside the 10x8 image" in ei.value.reason

    @pytest.mark.parametrize("box,pixels", [((0, 0, 13, 5), (0, 0, 10, 5)), ((-5, 0, 4, 4), (0, 0, 4, 4)),
                                            ((9.5, 0, 12.5, 4), (9, 0, 10, 4))])
    def test_box_past_the_border_is_clipped(self, box, pixels):
        assert check_box(box, W, H) == pixels
        np.testing.assert_array_equal(target_region([TargetObject("a", 0, box)], W, H), rect_mask(pixels))

    @pytest.mark.parametrize("box", [(5, 5, 5, 7), (6, 1, 2, 4), (0, 0, float("nan"), 3)])
    def test_empty_or_nonfinite_box(self, box):
        with pytest.raises(BadSampleError) as ei:
            check_box(box, W, H)
        assert ei.value.code == "bad-box"

    def test_mask_object_box_is_still_checked(self):
        obj = TargetObject("a", 0, (30, 30, 40, 40), segmentation=[[2, 1, 7, 1, 7, 5, 2, 5]])
        with pytest.raises(BadSampleError) as ei:
            target_region([obj], W, H)
        assert ei.value.code == "box-outside-image"

    def test_union_box(self):
        objs = [TargetObject("a", 0, (1.5, 2, 3, 4)), TargetObject("b", 0, (5, 0.5, 9.2, 3))]
        assert union_box(objs, W, H) == (1, 0, 10, 4)

    def test_encode_decode_region_roundtrip(self):
        region = rect_mask((1, 1, 4, 7), (4, 5, 8, 7))
        rle = encode_region(region)
        assert isinstance(rle["counts"], str) and rle["size"] == [H, W]
        json.dumps(rle)
        np.testing.assert_array_equal(decode_region(rle), region)

    def test_area_ratio(self):
        assert area_ratio(rect_mask((0, 0, 5, 8))) == 0.5
        assert area_ratio(rect_mask()) == 0.0
        assert area_ratio(rect_mask((0, 0, 10, 8))) == 1.0


class TestSampleTypes:
    """TargetObject round-trips through dicts; Sample.categories is the sorted label set."""

    def test_target_object_roundtrip(self):
        obj = TargetObject("cat", 3, (1.0, 2.0, 3.0, 4.0), {"size": [H, W], "counts": "abc"}, True)
        d = obj.to_dict()
        assert d["box"] == [1.0, 2.0, 3.0, 4.0]
        assert TargetObject.from_dict(json.loads(json.dumps(d))) == obj

    def test_from_dict_defaults(self):
        obj = TargetObject.from_dict({"category": "dog", "box": [1, 2, 3, 4]})
        assert obj == TargetObject("dog", None, (1.0, 2.0, 3.0, 4.0), None, False)

    def test_categories_sorted_unique(self):
        objs = tuple(TargetObject(c, None, (0, 0, 1, 1)) for c in ("zebra", "ant", "zebra"))
        assert Sample("1", "/x", "x", 1, 1, objs).categories == ("ant", "zebra")


# =====================================================================================
# COCO
# =====================================================================================


CAT = {"id": 1, "name": "Egyptian cat", "imagenet_index": 285}
ESPRESSO = {"id": 2, "name": "espresso", "class_index": 967}
TRIPOD = {"id": 3, "name": "tripod"}

POLY_RECT = (2, 1, 7, 5)  # xyxy of image 1's polygon
RLE_LIST_RECT = (3, 2, 9, 6)
L_SHAPE = [(1, 1, 4, 7), (4, 5, 8, 7)]
CROWD_RECT = (0, 0, 5, 8)


@pytest.fixture
def coco(tmp_path):
    """A COCO file covering every segmentation kind; images 10x8 in tmp_path/images."""
    root = tmp_path / "images"
    names = ["poly.png", "rle_list.png", "rle_str.png", "crowd.png", "box.png", "sub/multi.png"]
    for i, name in enumerate(names):
        write_image(root / name, color=(10 * i, 20, 30))
    x1, y1, x2, y2 = POLY_RECT
    doc = {
        "images": [  # deliberately out of order, with ids 2 and 10 to check numeric sorting
            coco_image(10, "sub/multi.png"),
            coco_image(3, "rle_str.png"),
            coco_image(1, "poly.png"),
            coco_image(5, "box.png"),
            coco_image(2, "rle_list.png"),
            coco_image(4, "crowd.png"),
        ],
        "annotations": [
            coco_ann(101, 1, 1, [2, 1, 5, 4], [[x1, y1, x2, y1, x2, y2, x1, y2]]),
            coco_ann(201, 2, 2, [3, 2, 6, 4], {"size": [H, W], "counts": rle_counts(rect_mask(RLE_LIST_RECT))}),
            coco_ann(301, 3, 3, [1, 1, 7, 6], compressed_rle(rect_mask(*L_SHAPE))),
            coco_ann(401, 4, 1, [0, 0, 5, 8], {"size": [H, W], "counts": rle_counts(rect_mask(CROWD_RECT))}, iscrowd=1),
            coco_ann(501, 5, 2, [1.0, 2.0, 3.0, 4.0]),
            coco_ann(1001, 10, 1, [0, 0, 3, 3], [[0, 0, 3, 0, 3, 3, 0, 3]]),
            coco_ann(1002, 10, 2, [6, 4, 4, 4]),
            coco_ann(1003, 10, 1, [1, 1, 3, 3], [[1, 1, 4, 1, 4, 4, 1, 4]]),
        ],
        "categories": [CAT, ESPRESSO, TRIPOD],
    }
    return write_json(tmp_path / "instances.json", doc), root


class TestCocoLoading:
    """A well-formed COCO file: ids, order, boxes, categories and exact regions."""

    def test_dataset_metadata(self, coco):
        ann, root = coco
        ds = load_coco(ann, root)
        assert ds.format == "coco" and ds.name == "instances"
        assert ds.root == str(root.resolve()) and ds.annotation == str(ann.resolve())
        assert len(ds) == 6 and ds.describe()["n_samples"] == 6
        assert ds.categories == ("Egyptian cat", "espresso", "tripod")
        assert load_coco(ann, root, name="mine").name == "mine"

    def test_samples_sorted_numerically_by_image_id(self, coco):
        ds = load_coco(*coco)
        assert [s.sample_id for s in ds] == ["1", "2", "3", "4", "5", "10"]

    def test_paths_sizes_and_no_problems(self, coco):
        ann, root = coco
        s = by_id(load_coco(ann, root))
        assert all(x.problem is None for x in s.values())
        assert s["10"].rel_path == "sub/multi.png"
        assert s["10"].image_path == str((root / "sub" / "multi.png").resolve())
        assert (s["1"].width, s["1"].height) == (W, H)
        assert s["1"].region_source == "annotation"

    def test_boxes_are_converted_from_xywh_to_xyxy(self, coco):
        s = by_id(load_coco(*coco))
        assert s["1"].objects[0].box == (2.0, 1.0, 7.0, 5.0)
        assert s["5"].objects[0].box == (1.0, 2.0, 4.0, 6.0)
        assert [o.box for o in s["10"].objects] == [(0.0, 0.0, 3.0, 3.0), (6.0, 4.0, 10.0, 8.0), (1.0, 1.0, 4.0, 4.0)]

    def test_categories_and_class_indices(self, coco):
        s = by_id(load_coco(*coco))
        assert (s["1"].objects[0].category, s["1"].objects[0].class_index) == ("Egyptian cat", 285)
        assert (s["2"].objects[0].category, s["2"].objects[0].class_index) == ("espresso", 967)
        assert (s["3"].objects[0].category, s["3"].objects[0].class_index) == ("tripod", None)
        assert s["10"].categories == ("Egyptian cat", "espresso")

    def test_category_map_by_name_and_id_overrides(self, coco):
        s = by_id(load_coco(*coco, category_map={"tripod": 872, 2: 7, "Egyptian cat": 281}))
        assert s["3"].objects[0].class_index == 872
        assert s["2"].objects[0].class_index == 7
        assert s["1"].objects[0].class_index == 281
        s = by_id(load_coco(*coco, category_map={"3": 11}))
        assert s["3"].objects[0].class_index == 11

    def test_polygon_region(self, coco):
        s = by_id(load_coco(*coco))["1"]
        region = region_of(s)
        np.testing.assert_array_equal(region, rect_mask(POLY_RECT))
        assert region.sum() == 20 and area_ratio(region) == 0.25
        assert isinstance(s.objects[0].segmentation, list)

    def test_uncompressed_rle_region(self, coco):
        region = region_of(by_id(load_coco(*coco))["2"])
        np.testing.assert_array_equal(region, rect_mask(RLE_LIST_RECT))
        assert area_ratio(region) == 24 / 80

    def test_compressed_rle_region(self, coco):
        s = by_id(load_coco(*coco))["3"]
        assert isinstance(s.objects[0].segmentation["counts"], str)
        region = region_of(s)
        np.testing.assert_array_equal(region, rect_mask(*L_SHAPE))
        assert area_ratio(region) == 26 / 80

    def test_crowd_rle_counts_as_target(self, coco):
        s = by_id(load_coco(*coco))["4"]
        assert s.objects[0].iscrowd is True
        region = region_of(s)
        np.testing.assert_array_equal(region, rect_mask(CROWD_RECT))
        assert area_ratio(region) == 0.5
        assert all(o.iscrowd is False for o in by_id(load_coco(*coco))["1"].objects)

    def test_bbox_only_object_region_is_its_box(self, coco):
        s = by_id(load_coco(*coco))["5"]
        assert s.objects[0].segmentation is None
        np.testing.assert_array_equal(region_of(s), rect_mask((1, 2, 4, 6)))

    def test_empty_segmentation_list_means_box(self, tmp_path):
        write_image(tmp_path / "a.png")
        ann = write_json(tmp_path / "c.json", {"images": [coco_image(1, "a.png")],
                                               "annotations": [coco_ann(1, 1, 1, [4, 4, 2, 2], [])],
                                               "categories": [CAT]})
        s = load_coco(ann, tmp_path).samples[0]
        assert s.objects[0].segmentation is None
        np.testing.assert_array_equal(region_of(s), rect_mask((4, 4, 6, 6)))

    def test_several_objects_region_is_union(self, coco):
        s = by_id(load_coco(*coco))["10"]
        assert len(s.objects) == 3
        expected = rect_mask((0, 0, 3, 3), (1, 1, 4, 4), (6, 4, 10, 8))
        region = region_of(s)
        np.testing.assert_array_equal(region, expected)
        assert region.sum() == 9 + 9 - 4 + 16
        assert area_ratio(region) == 30 / 80

    def test_engine_decodes_every_sample(self, coco):
        """Through the engine's preparation: no skip, decoded image 10x8, region as annotated."""
        names = list(CLASS_NAMES)
        names[5] = "tripod"  # the tripod category has no index; the engine finds it by name
        for s in load_coco(*coco):
            prep = engine_prepare(s, names)
            assert prep.skip is None, (s.sample_id, prep.skip)
            assert prep.image.shape == (H, W, 3)
        prep = engine_prepare(by_id(load_coco(*coco))["3"], names)
        assert prep.labels == (5,)

    def test_annotation_of_unlisted_image_is_ignored(self, tmp_path):
        write_image(tmp_path / "a.png")
        ann = write_json(tmp_path / "c.json", {
            "images": [coco_image(1, "a.png")],
            "annotations": [coco_ann(1, 1, 1, [0, 0, 2, 2]), coco_ann(2, 99, 1, [0, 0, 5, 5])],
            "categories": [CAT]})
        ds = load_coco(ann, tmp_path)
        assert len(ds) == 1 and len(ds.samples[0].objects) == 1

    def test_missing_annotations_and_categories_keys(self, tmp_path):
        write_image(tmp_path / "a.png")
        ann = write_json(tmp_path / "c.json", {"images": [coco_image(1, "a.png")]})
        ds = load_coco(ann, tmp_path)
        assert ds.categories == ()
        assert ds.samples[0].problem[0] == "empty-region"


def single_coco(tmp_path, ann=None, image=None, categories=(CAT,), file_name="a.png", write=True):
    """A one-image COCO dataset in tmp_path/root; returns its only sample."""
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    if write:
        write_image(root / "a.png")
    doc = {
        "images": [image or coco_image(1, file_name)],
        "annotations": [] if ann is None else [ann],
        "categories": list(categories),
    }
    ds = load_coco(write_json(tmp_path / "c.json", doc), root)
    assert len(ds) == 1
    return ds.samples[0]


class TestCocoBadSamples:
    """Each unusable sample is flagged with a code and a message that names the problem."""

    # ---- problems found while loading: Sample.problem

    @pytest.mark.parametrize(
        "ann,code,fragment",
        [
            (None, "empty-region", "no annotated object"),
            (coco_ann(7, 1, 99, [1, 1, 2, 2]), "unknown-label", "category_id 99"),
            (coco_ann(7, 1, 1, [1, 1, 2]), "bad-box", "is not four numbers [x, y, w, h]"),
            (coco_ann(7, 1, 1, None), "bad-box", "is not four numbers [x, y, w, h]"),
            (coco_ann(7, 1, 1, ["a", 0, 1, 1]), "bad-box", "four numbers"),
            (coco_ann(7, 1, 1, [None, 0, 1, 1]), "bad-box", "four numbers"),
        ],
        ids=["no-annotation", "unknown-category", "bbox-3-values", "bbox-null", "bbox-text", "bbox-null-value"],
    )
    def test_problem_recorded_at_load(self, tmp_path, ann, code, fragment):
        s = single_coco(tmp_path, ann)
        assert s.problem is not None and s.problem[0] == code
        assert fragment in s.problem[1]
        assert s.objects == ()
        prep = engine_prepare(s)
        assert prep.skip.code == code and prep.image is None

    def test_unknown_category_names_the_known_ones(self, tmp_path):
        s = single_coco(tmp_path, coco_ann(7, 1, 99, [1, 1, 2, 2]), categories=(CAT, ESPRESSO))
        assert "[1, 2]" in s.problem[1] and "annotation 7" in s.problem[1]

    def test_one_bad_annotation_is_dropped_not_the_whole_image(self, tmp_path):
        """An annotation with an unknown category id goes to ``dropped``; the engine decides whether it matters."""
        root = tmp_path / "root"
        write_image(root / "a.png")
        write_image(root / "b.png")
        doc = {"images": [coco_image(1, "a.png"), coco_image(2, "b.png")],
               "annotations": [coco_ann(1, 1, 1, [0, 0, 2, 2]), coco_ann(2, 1, 42, [0, 0, 2, 2]),
                               coco_ann(3, 2, 1, [0, 0, 2, 2])],
               "categories": [CAT]}
        s = by_id(load_coco(write_json(tmp_path / "c.json", doc), root))
        assert s["1"].problem is None and len(s["1"].objects) == 1
        assert [(d["annotation"], d["code"]) for d in s["1"].dropped] == [(2, "unknown-label")]
        assert "category_id 42" in s["1"].dropped[0]["reason"]
        assert s["2"].problem is None and s["2"].dropped == ()

    # ---- problems found when decoding the image or building the region: BadSampleError

    @pytest.mark.parametrize(
        "ann,code,fragment",
        [
            (coco_ann(7, 1, 1, [20, 20, 3, 3]), "box-outside-image", "outside the 10x8 image"),
            (coco_ann(7, 1, 1, [0, 0, 5, 5], {"size": [H, W], "counts": [H * W]}), "empty-region", "no pixel"),
            (coco_ann(7, 1, 1, [0, 0, 5, 5], compressed_rle(np.zeros((H, W), bool))), "empty-region", "no pixel"),
            (coco_ann(7, 1, 1, [0, 0, 9, 1], [[0, 0, 5, 0, 9, 0]]), "empty-region", "no pixel"),
            (coco_ann(7, 1, 1, [1, 1, 4, 4], [[1, 1, 5, 5]]), "empty-region", "at least 3 points"),
            (coco_ann(7, 1, 1, [0, 0, 5, 5], {"size": [H, W], "counts": [10, 20]}), "bad-rle", "expected 80"),
            (coco_ann(7, 1, 1, [0, 0, 5, 5], {"size": [H, W], "counts": "zz~~##"}), "bad-rle", "character"),
            (coco_ann(7, 1, 1, [0, 0, 5, 5], {"size": [H, W], "counts": "0"}), "bad-rle", "expected 80"),
            (coco_ann(7, 1, 1, [0, 0, 5, 5], {"size": [4, 4], "counts": [16]}), "bad-rle", "does not match"),
            (coco_ann(7, 1, 1, [0, 0, 5, 5], 42), "bad-segmentation", "neither a polygon"),
        ],
        ids=["box-outside", "rle-all-zero", "compressed-all-zero", "collinear-polygon", "two-point-polygon",
             "rle-sum", "rle-garbage", "rle-short-string", "rle-size", "segmentation-int"],
    )
    def test_problem_raised_when_building_region(self, tmp_path, ann, code, fragment):
        s = single_coco(tmp_path, ann)
        assert s.problem is None  # the file itself parsed fine
        with pytest.raises(BadSampleError) as ei:
            region_of(s)
        assert ei.value.code == code and fragment in ei.value.reason
        prep = engine_prepare(s)
        assert prep.skip is not None and prep.skip.code == code

    def test_box_overhanging_by_one_pixel_is_clipped(self, tmp_path):
        s = single_coco(tmp_path, coco_ann(7, 1, 1, [8, 6, 3, 3]))  # xyxy (8, 6, 11, 9) on 10x8
        np.testing.assert_array_equal(region_of(s), rect_mask((8, 6, 10, 8)))

    def test_corrupt_image(self, tmp_path):
        s = single_coco(tmp_path, coco_ann(7, 1, 1, [0, 0, 2, 2]), write=False)
        (tmp_path / "root" / "a.png").write_bytes(os.urandom(200))
        assert s.problem is None
        assert engine_prepare(s).skip.code == "corrupt-image"

    def test_missing_image(self, tmp_path):
        s = single_coco(tmp_path, coco_ann(7, 1, 1, [0, 0, 2, 2]), write=False)
        skip = engine_prepare(s).skip
        assert skip.code == "missing-file" and "a.png" in str(skip)

    def test_declared_size_differs_from_file(self, tmp_path):
        s = single_coco(tmp_path, coco_ann(7, 1, 1, [0, 0, 2, 2]), image=coco_image(1, "a.png", w=20, h=16))
        skip = engine_prepare(s).skip
        assert skip.code == "size-mismatch" and "20x16" in skip.reason


class TestCocoPathEscapes:
    """file_name leaving the root is refused, and nothing outside the root is ever opened."""

    @pytest.fixture
    def layout(self, tmp_path):
        root = tmp_path / "root"
        root.mkdir()
        outside = write_image(tmp_path / "outside.png")
        os.symlink(outside, root / "link.png")
        return root, outside

    @pytest.fixture
    def opened(self, monkeypatch):
        """Every path passed to PIL's Image.open while the test runs."""
        paths: list[str] = []
        real_open = Image.open

        def spy(fp, *a, **k):
            paths.append(str(fp))
            return real_open(fp, *a, **k)

        monkeypatch.setattr(Image, "open", spy)
        return paths

    @pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
    def test_escaping_file_name_is_refused(self, tmp_path, layout, kind, opened):
        root, outside = layout
        file_name = {"dotdot": "../outside.png", "absolute": str(outside), "symlink": "link.png"}[kind]
        doc = {"images": [coco_image(1, file_name)], "annotations": [coco_ann(1, 1, 1, [0, 0, 4, 4])],
               "categories": [CAT]}
        s = load_coco(write_json(tmp_path / "c.json", doc), root).samples[0]
        assert s.problem is not None and s.problem[0] == "path-escapes-root"
        assert "outside the dataset root" in s.problem[1]
        assert s.rel_path == file_name
        assert not s.image_path.startswith(str(tmp_path / "outside")), "refused sample must not point outside"
        assert not s.image_path or s.image_path.startswith(str(root.resolve()))
        prep = engine_prepare(s)
        assert prep.skip.code == "path-escapes-root"
        assert prep.image is None
        assert opened == [], f"the engine opened {opened} for a refused sample"

    def test_image_inside_root_is_accepted_and_opened(self, tmp_path, layout, opened):
        """Control for the spy above: an accepted sample is opened, from inside the root."""
        root, outside = layout
        write_image(root / "inside.png")
        doc = {"images": [coco_image(1, "inside.png")], "annotations": [coco_ann(1, 1, 1, [0, 0, 4, 4])],
               "categories": [CAT]}
        s = load_coco(write_json(tmp_path / "c.json", doc), root).samples[0]
        assert s.problem is None
        assert engine_prepare(s).skip is None
        assert opened == [str((root / "inside.png").resolve())]

    def test_nul_byte_in_file_name_is_flagged_not_fatal(self, tmp_path):
        s = single_coco(tmp_path, coco_ann(1, 1, 1, [0, 0, 4, 4]), file_name="a\x00.png")
        assert s.problem[0] == "bad-path"


class TestCocoFileErrors:
    """A file that is not a COCO annotation raises AnnotationError naming the problem."""

    @pytest.mark.parametrize(
        "content,fragment",
        [
            ("this is not json {", "not valid JSON"),
            ("[1, 2, 3]", "expected a JSON object with an 'images' list"),
            ('{"annotations": []}', "expected a JSON object with an 'images' list"),
            ('{"images": {"1": "a.png"}}', "expected a JSON object with an 'images' list"),
            ('{"images": [{"file_name": "a.png"}]}', "images[0] has no 'id'"),
            ('{"images": ["a.png"]}', "images[0] is str"),
            ('{"images": [], "annotations": null}', "'annotations' is NoneType"),
            ('{"images": [], "annotations": [{"id": 1, "image_id": 1, "bbox": [0, 0, 1, 1]}]}',
             "annotations[0] has no 'category_id'"),
            ('{"images": [], "annotations": [{"image_id": 1, "category_id": 1}]}', "annotations[0] has no 'id'"),
            ('{"images": [], "categories": [{"name": "cat"}]}', "categories[0] has no 'id'"),
            ('{"images": [{"id": [1]}]}', "not a valid COCO annotation file"),
        ],
        ids=["not-json", "list", "no-images", "images-dict", "image-no-id", "image-str", "annotations-null",
             "ann-no-category", "ann-no-id", "category-no-id", "unhashable-id"],
    )
    def test_bad_file(self, tmp_path, content, fragment):
        p = write_text(tmp_path / "bad.json", content)
        with pytest.raises(AnnotationError) as ei:
            load_coco(p, tmp_path)
        assert fragment in str(ei.value)
        assert "bad.json" in str(ei.value)

    def test_missing_file(self, tmp_path):
        with pytest.raises(AnnotationError, match="does not exist"):
            load_coco(tmp_path / "none.json", tmp_path)

    def test_binary_file(self, tmp_path):
        p = tmp_path / "bin.json"
        p.write_bytes(b"\xff\xfe\x00garbage")
        with pytest.raises(AnnotationError, match="not valid JSON"):
            load_coco(p, tmp_path)


# =====================================================================================
# VOC / ILSVRC XML
# =====================================================================================


@pytest.fixture
def voc(tmp_path):
    """tmp_path/images with a.png, b.png, c.png (10x8) and tmp_path/xml for annotations."""
    root = tmp_path / "images"
    for n in "abc":
        write_image(root / f"{n}.png")
    (tmp_path / "xml").mkdir()
    return tmp_path / "xml", root


SYNSETS = "n01440764 tench, Tinca tinca\n\nn02123597 Siamese cat, Siamese\nn02124075 Egyptian cat\n"


class TestVoc:
    """VOC / ILSVRC XML: one file or a folder, union of boxes, padding, synsets."""

    def test_single_file(self, voc):
        xml_dir, root = voc
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (2, 3, 5, 6))]))  # 1-based, inclusive
        ds = load_voc(p, root)
        assert ds.format == "voc" and ds.name == "a" and len(ds) == 1
        assert ds.annotation == str(p.resolve()) and ds.root == str(root.resolve())
        s = ds.samples[0]
        assert (s.sample_id, s.rel_path, s.width, s.height) == ("a", "a.png", W, H)
        assert s.image_path == str((root / "a.png").resolve())
        assert s.problem is None
        assert s.objects == (TargetObject("cat", None, (1.0, 2.0, 5.0, 6.0)),)
        np.testing.assert_array_equal(region_of(s), rect_mask((1, 2, 5, 6)))
        assert engine_prepare(s, ["dog", "cat"]).skip is None

    def test_folder_sorted_by_stem_and_only_xml(self, voc):
        xml_dir, root = voc
        for n in "cab":
            write_text(xml_dir / f"{n}.xml", voc_xml(f"{n}.png", [(f"label_{n}", (0, 0, 2, 2))]))
        write_text(xml_dir / "notes.txt", "not an annotation")
        ds = load_voc(xml_dir, root)
        assert [s.sample_id for s in ds] == ["a", "b", "c"]
        assert ds.categories == ("label_a", "label_b", "label_c")
        assert ds.name == "xml"

    def test_union_of_several_boxes(self, voc):
        xml_dir, root = voc
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (2, 2, 4, 4)), ("dog", (6, 4, 9, 7)),
                                                           ("cat", (3, 3, 5, 5))]))
        s = load_voc(p, root).samples[0]
        assert len(s.objects) == 3 and s.categories == ("cat", "dog")
        region = region_of(s)
        np.testing.assert_array_equal(region, rect_mask((1, 1, 4, 4), (5, 3, 9, 7), (2, 2, 5, 5)))
        assert region.sum() == 9 + 16 + 9 - 4

    def test_padding_grows_boxes_and_clips_to_image(self, voc):
        xml_dir, root = voc
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (3, 3, 5, 5)), ("cat", (8, 2, 9, 4))]))
        s = load_voc(p, root, padding=3).samples[0]
        # file (3,3,5,5) is 0-based (2,2,5,5); file (8,2,9,4) is (7,1,9,4)
        # (2,2,5,5) - 3 -> (-1,-1,8,8) clipped to (0,0,8,8); (7,1,9,4) -> (4,-2,12,7) -> (4,0,10,7)
        assert [o.box for o in s.objects] == [(0.0, 0.0, 8.0, 8.0), (4.0, 0.0, 10.0, 7.0)]
        np.testing.assert_array_equal(region_of(s), rect_mask((0, 0, 8, 8), (4, 0, 10, 7)))

    def test_zero_padding_keeps_boxes(self, voc):
        xml_dir, root = voc
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (3, 3, 5, 5))]))  # 1-based (3..5)
        assert load_voc(p, root, padding=0).samples[0].objects[0].box == (2.0, 2.0, 5.0, 5.0)

    def test_negative_padding_is_refused(self, voc):
        xml_dir, root = voc
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (2, 2, 5, 5))]))
        with pytest.raises(ValueError, match="padding"):
            load_voc(p, root, padding=-1)

    def test_ilsvrc_filename_without_extension(self, tmp_path):
        root = tmp_path / "images"
        write_image(root / "n02123597_12.JPEG", format="JPEG")
        write_image(root / "n02123597_13.png")
        xml_dir = tmp_path / "xml"
        write_text(xml_dir / "n02123597_12.xml", voc_xml("n02123597_12", [("n02123597", (0, 0, 4, 4))]))
        write_text(xml_dir / "n02123597_13.xml", voc_xml("n02123597_13", [("n02123597", (0, 0, 4, 4))]))
        write_text(xml_dir / "n02123597_14.xml", voc_xml("n02123597_14", [("n02123597", (0, 0, 4, 4))]))
        s = by_id(load_voc(xml_dir, root))
        assert s["n02123597_12"].rel_path == "n02123597_12.JPEG"
        assert s["n02123597_13"].rel_path == "n02123597_13.png"
        assert engine_prepare(s["n02123597_12"], ["n02123597"]).skip is None
        # No image at all: the default .JPEG name is used and decoding reports the missing file.
        assert s["n02123597_14"].rel_path == "n02123597_14.JPEG"
        assert engine_prepare(s["n02123597_14"], ["n02123597"]).skip.code == "missing-file"

    def test_read_synset_mapping(self, tmp_path):
        m = read_synset_mapping(write_text(tmp_path / "LOC_synset_mapping.txt", SYNSETS))
        assert m == {"n01440764": (0, "tench"), "n02123597": (1, "Siamese cat"), "n02124075": (2, "Egyptian cat")}

    def test_synset_mapping_gives_index_and_name(self, voc, tmp_path):
        xml_dir, root = voc
        syn = write_text(tmp_path / "syn.txt", SYNSETS)
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("n02124075", (0, 0, 3, 3)), ("n02123597", (4, 4, 6, 6))]))
        ds = load_voc(p, root, synset_mapping=syn)
        objs = ds.samples[0].objects
        assert [(o.category, o.class_index) for o in objs] == [("Egyptian cat", 2), ("Siamese cat", 1)]
        assert ds.categories == ("Egyptian cat", "Siamese cat")

    def test_unknown_wnid(self, voc, tmp_path):
        xml_dir, root = voc
        syn = write_text(tmp_path / "syn.txt", SYNSETS)
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("n02124075", (0, 0, 3, 3)), ("n99999999", (4, 4, 6, 6))]))
        s = load_voc(p, root, synset_mapping=syn).samples[0]
        assert s.problem[0] == "unknown-label"
        assert "n99999999" in s.problem[1] and "3 classes" in s.problem[1]
        assert engine_prepare(s).skip.code == "unknown-label"

    def test_missing_synset_file(self, voc, tmp_path):
        xml_dir, root = voc
        p = write_text(xml_dir / "a.xml", voc_xml("a.png", [("n02124075", (0, 0, 3, 3))]))
        with pytest.raises(AnnotationError, match="synset mapping"):
            load_voc(p, root, synset_mapping=tmp_path / "missing.txt")

    def test_invalid_xml_is_recorded_and_others_still_load(self, voc):
        xml_dir, root = voc
        write_text(xml_dir / "a.xml", "<annotation><filename>a.png</filename>")
        write_text(xml_dir / "b.xml", voc_xml("b.png", [("cat", (0, 0, 2, 2))]))
        s = by_id(load_voc(xml_dir, root))
        assert s["a"].problem[0] == "bad-annotation" and "invalid XML" in s["a"].problem[1]
        assert "a.xml" in s["a"].problem[1]
        assert s["b"].problem is None
        assert engine_prepare(s["a"]).skip.code == "bad-annotation"

    @pytest.mark.parametrize(
        "xml,code,fragment",
        [
            (voc_xml("a.png", [("cat", None)]), "bad-annotation", "has no <bndbox>"),
            (voc_xml("a.png", []), "empty-region", "no <object>"),
            (voc_xml(None, [("cat", (0, 0, 2, 2))]), "bad-annotation", "missing <filename>"),
            (voc_xml("a.png", [("cat", (0, 0, "two", 2))]), "bad-annotation", "two"),
            (voc_xml("a.png", [("cat", (0, 0, 2, 2))]).replace("<ymax>2</ymax>", ""), "bad-annotation",
             "missing <ymax>"),
            (voc_xml("a.png", [("cat", (0, 0, 2, 2))], size=("wide", 8)), "bad-annotation", "wide"),
            (voc_xml("../outside.png", [("cat", (0, 0, 2, 2))]), "path-escapes-root", "outside the dataset root"),
        ],
        ids=["no-bndbox", "no-object", "no-filename", "bad-coordinate", "no-ymax", "bad-size", "escape"],
    )
    def test_bad_annotation(self, voc, xml, code, fragment):
        xml_dir, root = voc
        s = load_voc(write_text(xml_dir / "a.xml", xml), root).samples[0]
        assert s.problem is not None and s.problem[0] == code
        assert fragment in s.problem[1]
        assert s.objects == ()

    def test_missing_bndbox_names_the_object(self, voc):
        xml_dir, root = voc
        s = load_voc(write_text(xml_dir / "a.xml", voc_xml("a.png", [("tabby", None)])), root).samples[0]
        assert "'tabby'" in s.problem[1] and "a.xml" in s.problem[1]

    def test_absolute_filename_outside_root_is_refused(self, voc, tmp_path):
        xml_dir, root = voc
        outside = write_image(tmp_path / "outside.png")
        s = load_voc(write_text(xml_dir / "a.xml", voc_xml(str(outside), [("cat", (0, 0, 2, 2))])), root).samples[0]
        assert s.problem[0] == "path-escapes-root"
        assert not s.image_path.startswith(str(outside))

    def test_box_outside_image_at_region_building(self, voc):
        xml_dir, root = voc
        s = load_voc(write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (20, 20, 30, 30))])), root).samples[0]
        assert s.problem is None
        assert engine_prepare(s, ["cat"]).skip.code == "box-outside-image"

    def test_missing_size_gives_no_declared_size(self, voc):
        xml_dir, root = voc
        s = load_voc(write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (0, 0, 2, 2))], size=None)), root)
        assert (s.samples[0].width, s.samples[0].height) == (None, None)
        assert engine_prepare(s.samples[0], ["cat"]).skip is None

    def test_nonexistent_path(self, tmp_path):
        with pytest.raises(AnnotationError, match="does not exist"):
            load_voc(tmp_path / "none.xml", tmp_path)

    def test_folder_without_xml(self, tmp_path):
        (tmp_path / "empty").mkdir()
        with pytest.raises(AnnotationError, match="no .xml files"):
            load_voc(tmp_path / "empty", tmp_path)


# =====================================================================================
# Manifest JSON
# =====================================================================================


MANIFEST_ENTRIES = [
    {"path": "img/b.png", "id": "b", "width": W, "height": H,
     "objects": [{"label": "tabby", "box": [1, 2, 5, 6]}]},
    {"path": "img/a.png", "id": "a", "objects": [{"label": "tabby", "polygon": [[2, 1], [7, 1], [7, 5], [2, 5]]}]},
    {"path": "img/c.png", "objects": [{"label": 281, "box": [0, 0, 10, 8]}, {"label": "dog", "box": [0, 0, 1, 1]}]},
    {"path": "img/d.png", "id": "d"},
    {"id": "nopath"},
]


@pytest.fixture
def manifest(tmp_path):
    for n in "abcd":
        write_image(tmp_path / "img" / f"{n}.png")
    return write_json(tmp_path / "manifest.json", {"images": MANIFEST_ENTRIES})


class TestManifest:
    """The plain JSON manifest: boxes, polygons, integer labels, both top-level forms."""

    def test_ids_sorted_and_defaulting_to_path(self, manifest):
        ds = load_manifest(manifest)
        assert ds.format == "manifest" and ds.name == "manifest"
        assert [s.sample_id for s in ds] == ["#4", "a", "b", "d", "img/c.png"]
        assert ds.root == str(manifest.parent.resolve())
        assert ds.categories == ("281", "dog", "tabby")

    def test_box_object(self, manifest):
        s = by_id(load_manifest(manifest))["b"]
        assert s.problem is None
        assert s.objects == (TargetObject("tabby", None, (1.0, 2.0, 5.0, 6.0)),)
        assert (s.width, s.height) == (W, H)
        assert s.image_path == str((manifest.parent / "img" / "b.png").resolve())
        np.testing.assert_array_equal(region_of(s), rect_mask((1, 2, 5, 6)))

    def test_polygon_object_gets_box_and_mask(self, manifest):
        s = by_id(load_manifest(manifest))["a"]
        obj = s.objects[0]
        assert obj.box == (2.0, 1.0, 7.0, 5.0)
        assert obj.segmentation == [[2.0, 1.0, 7.0, 1.0, 7.0, 5.0, 2.0, 5.0]]
        assert (s.width, s.height) == (None, None)
        prep = engine_prepare(s, ["x", "tabby"])
        assert prep.skip is None and prep.labels == (1,)
        np.testing.assert_array_equal(target_region(s.objects, W, H), rect_mask((2, 1, 7, 5)))

    def test_polygon_with_explicit_box_keeps_box(self, tmp_path):
        write_image(tmp_path / "a.png")
        p = write_json(tmp_path / "m.json", [{"path": "a.png", "objects": [
            {"label": "x", "box": [0, 0, 9, 8], "polygon": [[1, 1], [4, 1], [4, 4], [1, 4]]}]}])
        obj = load_manifest(p).samples[0].objects[0]
        assert obj.box == (0.0, 0.0, 9.0, 8.0)
        np.testing.assert_array_equal(target_region([obj], W, H), rect_mask((1, 1, 4, 4)))

    def test_integer_label_is_class_index(self, manifest):
        s = by_id(load_manifest(manifest))["img/c.png"]
        assert [(o.category, o.class_index) for o in s.objects] == [("281", 281), ("dog", None)]
        np.testing.assert_array_equal(region_of_size(s), rect_mask((0, 0, 10, 8)))

    def test_entry_without_objects(self, manifest):
        s = by_id(load_manifest(manifest))["d"]
        assert s.problem[0] == "empty-region" and "no object" in s.problem[1]
        assert engine_prepare(s).skip.code == "empty-region"

    def test_entry_without_path(self, manifest):
        s = by_id(load_manifest(manifest))["#4"]
        assert s.problem == ("bad-annotation", "entry 4 has no 'path'")

    def test_bare_list_equals_dict_form(self, manifest, tmp_path):
        bare = write_json(tmp_path / "bare.json", MANIFEST_ENTRIES)
        assert load_manifest(bare).samples == load_manifest(manifest).samples

    def test_images_dir_other_than_manifest_folder(self, tmp_path):
        write_image(tmp_path / "pics" / "x.png")
        entry = {"path": "x.png", "objects": [{"label": "a", "box": [0, 0, 2, 2]}]}
        p = write_json(tmp_path / "meta" / "m.json", [entry])
        ds = load_manifest(p, tmp_path / "pics")
        assert ds.root == str((tmp_path / "pics").resolve())
        assert engine_prepare(ds.samples[0], ["a"]).skip is None
        # Without images_dir the manifest's folder is the root and the image is not there.
        assert engine_prepare(load_manifest(p).samples[0], ["a"]).skip.code == "missing-file"

    @pytest.mark.parametrize(
        "obj,code,fragment",
        [
            ({"label": "x", "polygon": [[1, 1], [5, 5]]}, "empty-region", "2 points"),
            ({"box": [0, 0, 2, 2]}, "bad-annotation", "no 'label'"),
            ({"label": "x"}, "bad-annotation", "needs a 'box' or a 'polygon'"),
            ({"label": "x", "box": [0, 0, 2]}, "bad-box", "is not [x1, y1, x2, y2]"),
            ({"label": "x", "box": ["a", 0, 2, 2]}, "bad-box", "four numbers"),
            ({"label": "x", "polygon": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]}, "bad-annotation", "[x, y] points"),
            ("cat", "bad-annotation", "must be a JSON object"),
        ],
        ids=["polygon-2pts", "no-label", "no-geometry", "box-3", "box-text", "polygon-triples", "object-str"],
    )
    def test_bad_object(self, tmp_path, obj, code, fragment):
        write_image(tmp_path / "a.png")
        s = load_manifest(write_json(tmp_path / "m.json", [{"path": "a.png", "objects": [obj]}])).samples[0]
        assert s.problem is not None and s.problem[0] == code
        assert fragment in s.problem[1] and "a.png object 0" in s.problem[1]

    def test_box_outside_image_at_region_building(self, tmp_path):
        write_image(tmp_path / "a.png")
        s = load_manifest(write_json(tmp_path / "m.json", [{"path": "a.png", "objects": [
            {"label": "x", "box": [12, 0, 20, 5]}]}])).samples[0]
        assert s.problem is None
        assert engine_prepare(s, ["x"]).skip.code == "box-outside-image"

    @pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
    def test_path_escaping_root(self, tmp_path, kind):
        root = tmp_path / "root"
        root.mkdir()
        outside = write_image(tmp_path / "outside.png")
        os.symlink(outside, root / "link.png")
        path = {"dotdot": "../outside.png", "absolute": str(outside), "symlink": "link.png"}[kind]
        p = write_json(root / "m.json", [{"path": path, "objects": [{"label": "x", "box": [0, 0, 2, 2]}]}])
        s = load_manifest(p).samples[0]
        assert s.problem[0] == "path-escapes-root"
        assert not s.image_path.startswith(str(tmp_path / "outside"))
        assert engine_prepare(s, ["x"]).image is None

    @pytest.mark.parametrize(
        "content,fragment",
        [("{not json", "not valid JSON"), ('{"files": []}', "expected a list of images"),
         ("42", "expected a list of images"), ('{"images": "a.png"}', "expected a list of images")],
    )
    def test_bad_file(self, tmp_path, content, fragment):
        with pytest.raises(AnnotationError) as ei:
            load_manifest(write_text(tmp_path / "m.json", content))
        assert fragment in str(ei.value) and "m.json" in str(ei.value)

    def test_missing_file(self, tmp_path):
        with pytest.raises(AnnotationError, match="does not exist"):
            load_manifest(tmp_path / "none.json")


# =====================================================================================
# load_dataset / detect_format
# =====================================================================================


class TestDetectAndLoadDataset:
    """Format auto-detection and the load_dataset front door."""

    def test_detect_formats(self, coco, manifest, voc, tmp_path):
        xml_dir, root = voc
        xml = write_text(xml_dir / "a.xml", voc_xml("a.png", [("cat", (0, 0, 2, 2))]))
        assert detect_format(coco[0]) == "coco"
        assert detect_format(manifest) == "manifest"
        assert detect_format(write_json(tmp_path / "bare.json", MANIFEST_ENTRIES)) == "manifest"
        assert detect_format(xml) == "voc"
        assert detect_format(xml_dir) == "voc"
        assert detect_format(write_json(tmp_path / "cats_only.json", {"images": [], "categories": []})) == "coco"
        # A manifest also has an 'images' list, but no annotations/categories.
        assert detect_format(write_json(tmp_path / "m2.json", {"images": [{"path": "a.png"}]})) == "manifest"

    def test_detect_uppercase_suffix(self, tmp_path):
        assert detect_format(write_text(tmp_path / "A.XML", "<annotation/>")) == "voc"
        assert detect_format(write_json(tmp_path / "M.JSON", [])) == "manifest"

    def test_detect_unknown_suffix(self, tmp_path):
        with pytest.raises(AnnotationError, match="cannot tell the format"):
            detect_format(write_text(tmp_path / "a.csv", "x,y"))

    def test_detect_unreadable_json(self, tmp_path):
        with pytest.raises(AnnotationError, match="a.json is not valid JSON"):
            detect_format(write_text(tmp_path / "a.json", "{oops"))
        with pytest.raises(AnnotationError, match="missing.json does not exist"):
            detect_format(tmp_path / "missing.json")

    def test_auto_coco(self, coco):
        ann, root = coco
        ds = load_dataset(ann, root)
        assert ds.format == "coco" and [s.sample_id for s in ds] == ["1", "2", "3", "4", "5", "10"]
        ds = load_dataset(ann, root, category_map={"tripod": 872})
        assert by_id(ds)["3"].objects[0].class_index == 872

    def test_auto_coco_default_images_dir_is_annotation_folder(self, tmp_path):
        write_image(tmp_path / "a.png")
        ann = write_json(tmp_path / "c.json", {"images": [coco_image(1, "a.png")],
                                               "annotations": [coco_ann(1, 1, 1, [0, 0, 2, 2])],
                                               "categories": [CAT]})
        ds = load_dataset(ann)
        assert ds.root == str(tmp_path.resolve())
        assert engine_prepare(ds.samples[0]).skip is None

    def test_auto_manifest(self, manifest):
        ds = load_dataset(manifest)
        assert ds.format == "manifest" and len(ds) == len(MANIFEST_ENTRIES)

    def test_auto_voc_folder_with_options(self, voc, tmp_path):
        xml_dir, root = voc
        write_text(xml_dir / "a.xml", voc_xml("a.png", [("n02124075", (3, 3, 5, 5))]))  # 0-based (2, 2, 5, 5)
        syn = write_text(tmp_path / "syn.txt", SYNSETS)
        ds = load_dataset(xml_dir, root, padding=1, synset_mapping=str(syn))
        assert ds.format == "voc"
        obj = ds.samples[0].objects[0]
        assert (obj.category, obj.class_index, obj.box) == ("Egyptian cat", 2, (1.0, 1.0, 6.0, 6.0))

    def test_voc_folder_default_images_dir_is_the_folder(self, tmp_path):
        write_image(tmp_path / "a.png")
        write_text(tmp_path / "a.xml", voc_xml("a.png", [("cat", (0, 0, 2, 2))]))
        ds = load_dataset(tmp_path)
        assert ds.root == str(tmp_path.resolve())
        assert engine_prepare(ds.samples[0], ["cat"]).skip is None

    def test_explicit_format_overrides_detection(self, tmp_path):
        # COCO-looking JSON read as a manifest: its entries have no 'path'.
        write_image(tmp_path / "a.png")
        ann = write_json(tmp_path / "c.json", {"images": [coco_image(1, "a.png")], "annotations": []})
        ds = load_dataset(ann, tmp_path, fmt="manifest")
        assert ds.format == "manifest" and ds.samples[0].problem[0] == "bad-annotation"

    def test_unknown_format(self, manifest):
        with pytest.raises(ValueError, match="unknown dataset format 'yolo'"):
            load_dataset(manifest, fmt="yolo")

    def test_demo(self):
        ds = load_dataset("demo")
        declared = json.loads(DEMO_ANNOTATIONS.read_text(encoding="utf-8"))
        assert ds.format == "bundled" and ds.name == "demo"
        assert len(ds) == len(declared["images"]) > 0
        assert sorted(ds.categories) == sorted(c["name"] for c in declared["categories"])
        for s in ds:
            assert s.problem is None
            assert all(o.class_index is not None for o in s.objects)
            prep = engine_prepare(s)
            assert prep.skip is None, (s.sample_id, prep.skip)
            assert prep.image.shape[:2] == (s.height, s.width)
