"""LIME explanations of single inferences, for reviewing flagged ones (ORMR s VI).

``explain(model, image)`` runs LIME (``lime.lime_image``) on one ``(H, W, 3)`` uint8
RGB image and returns an :class:`Explanation`: the superpixel segmentation of the
image (``(H, W)`` int32, ids ``0..n-1``), LIME's weight for every superpixel
(``{id: float}``; positive weights support the explained label) and, when a target
region is given, :func:`object_share`: the share of the positive weight that falls
inside the target object.  ``object_share`` is a second signal of background
reliance, independent of the metamorphic relations: a model that looks at the
object puts most of its positive weight inside the region.

How LIME is run here (every choice is part of the ``settings`` string, so a change
never returns an explanation computed under other settings from the cache):

* **Segmentation**: skimage ``quickshift`` (``kernel_size=4, max_dist=200, ratio=0.2``,
  LIME's own default) or ``slic`` (``n_segments=50, compactness=20``), through
  ``lime.wrappers.scikit_image.SegmentationAlgorithm`` with a *fixed* segmentation
  seed (:data:`SEGMENTATION_SEED`), so every LIME seed sees the same superpixels.
  Labels are renumbered ``0..n-1`` (SLIC starts at 1, which LIME's sampler would
  otherwise silently mis-handle).  Quickshift is made for photos: on a small flat
  synthetic image it can return a single superpixel, and then ``object_share`` is
  just the region's share of the image; use ``"slic"`` for such images.
* **Hiding**: a switched-off superpixel is painted black (``hide_color=0``,
  :data:`HIDE_COLOR`).  LIME's alternative, the superpixel's own mean colour, leaves a
  flat superpixel unchanged, so it cannot explain models that rely on colour.
* **Size**: an image whose longer side exceeds :data:`EXPLAIN_MAX_SIDE` pixels is
  explained on a copy downscaled (antialiased bilinear) to that side; the model sees
  the downscaled perturbations, and the segments are scaled back to the full size
  with nearest-neighbour sampling, so ``segments.shape == image.shape[:2]`` always.
  The default label is still the model's top-1 on the *full-size* image.
* **Sampling**: ``LimeImageExplainer(random_state=seed)``; the neighbourhood is drawn
  exactly as LIME draws it (same random numbers), but the perturbed images are
  built in vectorised batches, sent to ``model.predict`` ``batch_size`` at a time and
  reported to ``progress(done, total)``; LIME's own tqdm bar is not used (lime
  0.2.0.1 has no switch for it).

``objrel.review.explanations.explanation_for(store, model, run_id, sample_id, mutation_key)``
explains a stored inference's source or mutant image (rebuilt from its recipe) and caches the
result in the store's ``explanations`` table; this module reads no store.
"""

from __future__ import annotations

import functools
import io
import json
from dataclasses import dataclass
from typing import Callable

import numpy as np
from PIL import Image

# Default number of perturbed images LIME classifies per explanation.  More samples
# give more stable weights; time grows linearly (the model runs once per sample).
LIME_SAMPLES = 1000
# Images per model.predict call while explaining.  On 2 CPU cores EfficientNet-Lite0
# runs 30 images/s at 16 but 10 at 32 (cache effects); results do not depend on it.
LIME_BATCH_SIZE = 16
# Longer side, in pixels, of the copy that is explained.  Smaller is faster (both
# segmentation and perturbation scale with the pixel count) but gives coarser
# superpixels; classifiers resize to ~224 px anyway.
EXPLAIN_MAX_SIDE = 320
# Colour of a switched-off superpixel (an int for all channels).  0 = black.
HIDE_COLOR = 0
# Seed of the segmentation algorithm (quickshift's tie-breaking noise); fixed so that
# explanations with different LIME seeds share their superpixels.
SEGMENTATION_SEED = 0
# Segmentation algorithms and their parameters (quickshift: LIME's default).  SLIC's
# compactness 20 gives close to n_segments superpixels that follow colour edges;
# at 10 it merges noisy regions into superpixels that straddle the object boundary.
# The settings string names only the algorithm: when you change a parameter here,
# rename the entry (e.g. "slic2") so cached explanations are not reused.
SEGMENTERS = {
    "quickshift": {"kernel_size": 4, "max_dist": 200, "ratio": 0.2},
    "slic": {"n_segments": 50, "compactness": 20.0},
}
# Overlay colours (RGB).
POSITIVE_RGB = (0, 255, 0)
NEGATIVE_RGB = (255, 0, 0)
BOUNDARY_RGB = (255, 255, 0)
# The target region's contour over an overlay: magenta stands out against the green, red and yellow above.
TARGET_OUTLINE_RGB = (255, 0, 255)
TARGET_OUTLINE_PX = 2  # one pixel inside the region and one outside (region_outline)
# A 16-bit PNG holds segment ids up to this value.
MAX_SEGMENT_ID = 65535

ProgressFn = Callable[[int, int], None]


# ---------------------------------------------------------------- the result


@dataclass(frozen=True, eq=False)
class Explanation:
    """One LIME explanation.

    label:        the explained class index.
    segments:     ``(H, W)`` int32 superpixel ids ``0..n-1`` at the image's full size
                  (read-only).
    weights:      ``{segment id: LIME weight}``; positive supports ``label``.
    settings:     how it was computed, e.g. ``"lime:n=1000:seg=quickshift:seed=0:side=320:hide=0"``.
    object_share: positive weight inside the target region / all positive weight, in
                  [0, 1]; ``None`` without a region or without positive weight.
    """

    label: int
    segments: np.ndarray
    weights: dict
    settings: str
    object_share: float | None = None

    def __post_init__(self):
        seg = np.asarray(self.segments)
        if seg.ndim != 2 or not np.issubdtype(seg.dtype, np.integer):
            raise ValueError(f"segments must be an (H, W) integer array, got {seg.shape} {seg.dtype}")
        seg = seg.astype(np.int32, copy=True)
        seg.setflags(write=False)
        object.__setattr__(self, "segments", seg)
        object.__setattr__(self, "weights", {int(k): float(v) for k, v in dict(self.weights).items()})
        object.__setattr__(self, "label", int(self.label))
        if self.object_share is not None:
            object.__setattr__(self, "object_share", float(self.object_share))

    def __eq__(self, other):
        if not isinstance(other, Explanation):
            return NotImplemented
        return (self.label == other.label and self.settings == other.settings and self.weights == other.weights
                and self.object_share == other.object_share and self.segments.shape == other.segments.shape
                and bool(np.array_equal(self.segments, other.segments)))

    __hash__ = None

    def ranked(self, positive: bool = True) -> list[tuple[int, float]]:
        """``(segment id, weight)`` with weight > 0 (``positive``) or < 0, strongest first."""
        items = [(k, w) for k, w in self.weights.items() if (w > 0 if positive else w < 0)]
        return sorted(items, key=lambda kv: (-abs(kv[1]), kv[0]))

    def to_row(self) -> dict:
        """The ``explanations`` table's columns (without keys): segments as 16-bit PNG bytes, weights as JSON."""
        return {"label": self.label, "settings": self.settings, "segments_png": segments_to_png(self.segments),
                "weights": {str(k): v for k, v in sorted(self.weights.items())}, "object_share": self.object_share}

    @classmethod
    def from_row(cls, row) -> "Explanation":
        """Inverse of :meth:`to_row`; ``row`` is a mapping (a store row works); weights may be JSON text."""
        m = dict(getattr(row, "_mapping", row))
        missing = [k for k in ("label", "settings", "segments_png", "weights") if k not in m]
        if missing:
            raise ValueError(f"explanation row lacks {missing}; it has {sorted(m)}")
        weights = m["weights"]
        if isinstance(weights, (str, bytes)):
            weights = json.loads(weights)
        if not isinstance(weights, dict):
            raise ValueError(f"weights must be a JSON object {{segment id: weight}}, got {type(weights).__name__}")
        return cls(label=m["label"], segments=segments_from_png(m["segments_png"]),
                   weights={int(k): float(v) for k, v in weights.items()}, settings=m["settings"],
                   object_share=m.get("object_share"))


def segments_to_png(segments: np.ndarray) -> bytes:
    """``(H, W)`` integer ids in ``[0, 65535]`` -> lossless 16-bit grayscale PNG bytes (PIL mode ``I;16``)."""
    seg = np.asarray(segments)
    if seg.ndim != 2 or not np.issubdtype(seg.dtype, np.integer):
        raise ValueError(f"segments must be an (H, W) integer array, got {seg.shape} {seg.dtype}")
    if seg.size and (seg.min() < 0 or seg.max() > MAX_SEGMENT_ID):
        raise ValueError(f"segment ids must lie in [0, {MAX_SEGMENT_ID}] for a 16-bit PNG, "
                         f"got [{seg.min()}, {seg.max()}]")
    img = Image.fromarray(np.ascontiguousarray(seg, dtype=np.uint16))
    if img.mode != "I;16":  # pragma: no cover - every Pillow in range maps uint16 to I;16
        raise RuntimeError(f"Pillow made a {img.mode} image from uint16 segments; expected I;16")
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def segments_from_png(data: bytes) -> np.ndarray:
    """Inverse of :func:`segments_to_png`: ``(H, W)`` int32."""
    with Image.open(io.BytesIO(bytes(data))) as img:
        if img.format != "PNG" or img.mode not in ("I;16", "I;16B", "I", "L"):
            raise ValueError(f"segments must be a 16-bit grayscale PNG, got {img.format} {img.mode}")
        return np.asarray(img).astype(np.int32)


# ---------------------------------------------------------------- object share


def object_share(segments: np.ndarray, weights: dict, region: np.ndarray) -> float | None:
    """Pixel-weighted share of positive LIME weight inside ``region``.

    ``sum_px max(w[seg(px)], 0) * region[px] / sum_px max(w[seg(px)], 0)``; segments
    without a weight count as 0.  ``segments`` and ``region`` are ``(H, W)`` (region
    bool).  Returns ``None`` when no pixel carries positive weight.
    """
    seg = np.asarray(segments)
    reg = np.asarray(region)
    if seg.ndim != 2 or not np.issubdtype(seg.dtype, np.integer):
        raise ValueError(f"segments must be an (H, W) integer array, got {seg.shape} {seg.dtype}")
    if reg.shape != seg.shape or reg.dtype != bool:
        raise ValueError(f"region must be an (H, W) bool mask of the segments' shape {seg.shape}, "
                         f"got {reg.shape} {reg.dtype}")
    ids, inverse = np.unique(seg, return_inverse=True)
    positive = np.array([max(float(weights.get(int(i), 0.0)), 0.0) for i in ids], dtype=np.float64)
    per_pixel = positive[inverse.reshape(seg.shape)]
    total = float(per_pixel.sum())
    if not total > 0.0:
        return None
    return float(per_pixel[reg].sum() / total)


# ---------------------------------------------------------------- overlay


def overlay(image: np.ndarray, explanation: Explanation, top_k: int = 5, positive_only: bool = True,
            alpha: float = 0.5, outline: np.ndarray | None = None) -> np.ndarray:
    """The image with the ``top_k`` strongest positive superpixels tinted green and,
    when ``positive_only`` is False, the ``top_k`` strongest negative ones red; the
    tinted superpixels' inner boundaries are drawn in yellow.  With ``outline`` (an
    ``(H, W)`` bool target region) the region's contour is drawn last, in
    :data:`TARGET_OUTLINE_RGB`, :data:`TARGET_OUTLINE_PX` pixels wide (:func:`region_outline`).

    ``image`` is ``(H, W, 3)`` uint8 of the explanation's size; returns a new
    ``(H, W, 3)`` uint8 array.  Pixels outside the tinted superpixels (and the outline)
    are unchanged.
    """
    from skimage.segmentation import find_boundaries

    _check_image(image)
    seg = explanation.segments
    if seg.shape != image.shape[:2]:
        raise ValueError(f"image {image.shape[:2]} and explanation segments {seg.shape} differ in size")
    if top_k < 0:
        raise ValueError(f"top_k must be >= 0, got {top_k}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    out = image.astype(np.float64)
    shown = np.zeros(seg.shape, dtype=np.int64)  # 0 = not shown, else segment id + 1
    groups = [(explanation.ranked(True)[:top_k], POSITIVE_RGB)]
    if not positive_only:
        groups.append((explanation.ranked(False)[:top_k], NEGATIVE_RGB))
    for ranked, rgb in groups:
        for sid, _w in ranked:
            m = seg == sid
            out[m] = (1.0 - alpha) * out[m] + alpha * np.asarray(rgb, dtype=np.float64)
            shown[m] = sid + 1
    out = np.clip(np.rint(out), 0, 255).astype(np.uint8)
    out[find_boundaries(shown, mode="inner", background=0)] = BOUNDARY_RGB
    if outline is not None:
        out[region_outline(outline)] = TARGET_OUTLINE_RGB
    return out


def region_outline(region: np.ndarray) -> np.ndarray:
    """The ``(H, W)`` bool line along a region's contour: the pixels whose 3x3 neighbourhood holds both
    region and non-region pixels, i.e. one pixel inside and one outside every edge
    (:data:`TARGET_OUTLINE_PX` = 2 px wide).  The image border does not count as an edge."""
    import cv2

    reg = np.asarray(region)
    if reg.ndim != 2 or reg.dtype != bool:
        raise ValueError(f"an outline needs an (H, W) bool region, got {reg.shape} {reg.dtype}")
    m = reg.astype(np.uint8)
    kernel = np.ones((3, 3), np.uint8)
    # Border pixels replicate outwards, so a region that reaches the image's edge has no line there.
    grown = cv2.dilate(m, kernel, borderType=cv2.BORDER_REPLICATE)
    shrunk = cv2.erode(m, kernel, borderType=cv2.BORDER_REPLICATE)
    return grown != shrunk


def resized(explanation: Explanation, shape: tuple[int, int]) -> Explanation:
    """The same explanation with its segments resampled (nearest neighbour) to ``shape`` = (H, W): for
    drawing it over a thumbnail, so the overlay's lines keep their width in the browser."""
    return Explanation(label=explanation.label, segments=_upscale_nearest(explanation.segments, tuple(shape)),
                       weights=explanation.weights, settings=explanation.settings,
                       object_share=explanation.object_share)


# ---------------------------------------------------------------- explaining


def settings_string(num_samples: int = LIME_SAMPLES, segmenter: str = "quickshift", seed: int = 0) -> str:
    """The cache key part that names how an explanation was computed."""
    return f"lime:n={int(num_samples)}:seg={segmenter}:seed={int(seed)}:side={EXPLAIN_MAX_SIDE}:hide={HIDE_COLOR}"


def explain(model, image: np.ndarray, label: int | None = None, region: np.ndarray | None = None,
            num_samples: int = LIME_SAMPLES, seed: int = 0, segmenter: str = "quickshift",
            batch_size: int = LIME_BATCH_SIZE, progress: ProgressFn | None = None) -> Explanation:
    """LIME explanation of ``model``'s output for ``label`` on one image.

    model:       a Classifier (``predict(list of (H, W, 3) uint8) -> (N, C)``).
    image:       ``(H, W, 3)`` uint8 RGB.
    label:       class index to explain; default the model's top-1 on ``image``.
    region:      optional ``(H, W)`` bool target region; gives ``object_share``.
    num_samples: perturbed images LIME classifies (the model runs ``num_samples`` images,
                 plus one for the default label).
    seed:        LIME's random state; same seed, same weights.
    segmenter:   ``"quickshift"`` or ``"slic"`` (:data:`SEGMENTERS`).
    progress:    called as ``progress(done, total)`` after each batch of perturbed images.
    """
    from lime.wrappers.scikit_image import SegmentationAlgorithm

    _check_image(image)
    if segmenter not in SEGMENTERS:
        raise ValueError(f"unknown segmenter {segmenter!r}; expected one of {sorted(SEGMENTERS)}")
    if int(num_samples) < 2:
        raise ValueError(f"num_samples must be at least 2, got {num_samples}")
    if int(batch_size) < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    if region is not None:
        region = np.asarray(region)
        if region.shape != image.shape[:2] or region.dtype != bool:
            raise ValueError(f"region must be an (H, W) bool mask of the image's size {image.shape[:2]}, "
                             f"got {region.shape} {region.dtype}")
    n_classes = getattr(model, "num_classes", None)
    if label is None:
        label = int(np.argmax(model.predict([image])[0]))
    label = int(label)
    if label < 0 or (n_classes is not None and label >= n_classes):
        raise ValueError(f"label {label} is not a class index of the model (0..{n_classes - 1})")

    small = _downscale(image, EXPLAIN_MAX_SIDE)
    total = int(num_samples)
    done = [0]

    def classifier_fn(batch) -> np.ndarray:
        imgs = [_to_uint8(im) for im in batch]
        probs = np.asarray(model.predict(imgs), dtype=np.float64)
        done[0] += len(imgs)
        if progress is not None:
            progress(min(done[0], total), total)
        return probs

    # LIME's wrapper keeps only the arguments the installed skimage function takes:
    # quickshift's seed is `rng` in skimage >= 0.22 (`random_seed` before); SLIC takes neither.
    algo = SegmentationAlgorithm(segmenter, **SEGMENTERS[segmenter],
                                 random_seed=SEGMENTATION_SEED, rng=SEGMENTATION_SEED)

    def segmentation_fn(img):
        return _relabel(algo(img))

    explainer = _explainer_class()(random_state=int(seed))
    result = explainer.explain_instance(
        small, classifier_fn, labels=(label,), hide_color=HIDE_COLOR, top_labels=None,
        num_features=100_000, num_samples=total, batch_size=int(batch_size),
        segmentation_fn=segmentation_fn, random_seed=SEGMENTATION_SEED,
    )
    weights = {int(k): float(w) for k, w in result.local_exp[label]}
    segments = _upscale_nearest(np.asarray(result.segments, dtype=np.int32), image.shape[:2])
    share = object_share(segments, weights, region) if region is not None else None
    return Explanation(label=label, segments=segments, weights=weights,
                       settings=settings_string(total, segmenter, seed), object_share=share)


@functools.lru_cache(maxsize=None)
def _explainer_class():
    """Built on first use, so importing objrel.explain does not import LIME (and scikit-learn)."""
    from lime.lime_image import LimeImageExplainer

    class Explainer(LimeImageExplainer):
        """LIME's image explainer with a vectorised, silent neighbourhood sampler.

        Draws the same random on/off matrix as ``LimeImageExplainer.data_labels``
        (same ``random_state`` calls), builds each batch's perturbed images with one
        ``np.where`` instead of a Python loop per superpixel, and never shows tqdm.
        Segments must be numbered ``0..n-1`` (``_relabel``).
        """

        def data_labels(self, image, fudged_image, segments, classifier_fn, num_samples, batch_size=10,
                        progress_bar=False, **_ignored):
            n_features = np.unique(segments).shape[0]
            data = self.random_state.randint(0, 2, num_samples * n_features).reshape((num_samples, n_features))
            data[0, :] = 1
            labels = []
            for start in range(0, num_samples, batch_size):
                keep = data[start:start + batch_size][:, segments].astype(bool)   # (b, H, W)
                imgs = np.where(keep[..., None], image[None], fudged_image[None])
                labels.extend(classifier_fn(imgs))
            return data, np.array(labels)

    return Explainer


# ---------------------------------------------------------------- helpers


def _check_image(image) -> None:
    if not (isinstance(image, np.ndarray) and image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3):
        got = f"{image.shape} {image.dtype}" if isinstance(image, np.ndarray) else type(image).__name__
        raise ValueError(f"image must be an (H, W, 3) uint8 RGB array, got {got}")
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f"image must not be empty, got {image.shape}")


def _to_uint8(im) -> np.ndarray:
    """A perturbed image from LIME -> ``(H, W, 3)`` uint8.

    LIME keeps the dtype of the image it is given (uint8 here), but a float array on
    the 0..255 scale (LIME's own mean-colour hiding makes doubles) is rounded and
    clipped rather than truncated or wrapped.
    """
    a = np.asarray(im)
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    return np.clip(np.rint(a), 0, 255).astype(np.uint8)


def _relabel(segments: np.ndarray) -> np.ndarray:
    """Renumber segment ids to ``0..n-1`` in order of their old ids."""
    _ids, inverse = np.unique(np.asarray(segments), return_inverse=True)
    return inverse.reshape(np.shape(segments)).astype(np.int32)


def _downscale(image: np.ndarray, max_side: int) -> np.ndarray:
    h, w = image.shape[:2]
    if max(h, w) <= max_side:
        return image
    scale = max_side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(image).resize(size, Image.Resampling.BILINEAR))


def _upscale_nearest(segments: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Nearest-neighbour resize of a label image to ``shape`` (pixel centres mapped)."""
    h, w = segments.shape
    H, W = shape
    if (h, w) == (H, W):
        return segments
    rows = np.minimum(((np.arange(H) + 0.5) * h / H).astype(np.int64), h - 1)
    cols = np.minimum(((np.arange(W) + 0.5) * w / W).astype(np.int64), w - 1)
    return segments[rows[:, None], cols[None, :]]
