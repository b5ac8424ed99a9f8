"""Planted-shortcut scenes: objects of K classes on backgrounds whose type goes with the class.

The ground truth the papers lacked (EMSE21 s7.3: recall was never measured,
because nobody knew which inferences truly relied on the background).  Here we
build the data, so we know the object's exact pixels and can redraw the scene
with any background: the counterfactuals of ``objrel.studies.shortcut.groundtruth``.

A scene is ``size`` x ``size`` RGB (64 x 64 by default):

* **objects**: class ``c`` is a shape (``SHAPES[c]``: disc, square, triangle, ...)
  filled with its own texture (``OBJECT_TEXTURES[c]``: dots, stripes, ...) in a random
  colour (colour is *not* a class cue), at a random position, size and rotation;
  masks are computed analytically on the pixel grid, so they are exact;
* **backgrounds**: type ``t`` is a texture (``BACKGROUNDS[t]``): random crops of the
  bundled photos (brick, grass, gravel, Hubble deep field; ``assets/backgrounds``)
  with a random tint, or procedural patterns (blobs, stripes, checker, waves) with
  random colours and frequencies; or, with ``backgrounds="colours"``, a flat field of
  ``FLAT_COLOURS[t]`` (a shortcut simple enough for a hand-written model to read);
* **the planted shortcut**: a scene of class ``c`` gets background type ``c`` with
  probability ``rho`` and one of the other ``K - 1`` types uniformly otherwise.
  ``rho = 1 / K`` makes the background independent of the class; ``rho = 0.95``
  makes it predict the class 95% of the time.

Multi-label scenes (``multi_label=True``) hold ``objects`` distinct classes placed
without overlap; the background goes with the first-drawn class at rate ``rho``.

Every scene is a pure function of ``(seed, split, index)``: one
``numpy.random.Generator`` per scene, so any subset renders the same bytes in any
order.  ``write_split`` writes PNGs and a COCO file (compressed RLE of the exact
masks, tight integer boxes) that ``objrel.data.load_dataset`` reads unchanged, plus
the background layer of every scene (``backgrounds/``), i.e. the scene without its
objects.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from objrel.data.region import encode_region

SHAPES = ("disc", "square", "triangle", "cross", "ring", "diamond", "star", "hexagon")
OBJECT_TEXTURES = ("dots", "stripes", "solid", "checker", "bands", "grid", "speckle", "zigzag")
BACKGROUNDS = ("brick", "blobs", "grass", "stripes", "gravel", "checker", "hubble", "waves")
PHOTO_BACKGROUNDS = {"brick": "brick.jpg", "grass": "grass.jpg", "gravel": "gravel.jpg",
                     "hubble": "hubble_deep_field.jpg"}
# The "colours" background kind: type t is a flat field of FLAT_COLOURS[t] with light noise.
# The first three are the nearest palette entries to black, gray 127 and white respectively.
FLAT_COLOURS = ((20, 24, 96), (120, 132, 110), (246, 214, 226), (236, 120, 16), (40, 160, 60), (140, 40, 160),
                (0, 150, 150), (230, 210, 40))
FLAT_COLOUR_NAMES = ("navy", "sage", "pink", "orange", "green", "purple", "teal", "yellow")
# Per-pixel noise of a flat background, +/- this many intensity levels.
FLAT_NOISE = 8
BACKGROUND_KINDS = ("textures", "colours")
MAX_CLASSES = len(SHAPES)
SPLITS = {"train": 1, "val": 2, "test": 3, "swapped": 4}

# Half-extent of a single-label object as a share of the image side: 0.22-0.32 makes
# the object cover roughly 12-30% of the image, so the background dominates the pixels.
SINGLE_SCALE = (0.22, 0.32)
# Half-extent range in multi-label scenes (2-3 objects must fit without overlap).
MULTI_SCALE = (0.13, 0.18)
# Objects are kept at least this many pixels apart in multi-label scenes.
MULTI_GAP_PX = 2
# Random rotation of an object, degrees either way.  Larger makes shapes harder to tell apart.
MAX_ROTATION_DEG = 30.0
# A photo background is a random square crop of this many image sides, resized to the image.
PHOTO_CROP_SIDES = (1.5, 4.0)
# Stream ids that keep a scene's counterfactual draws independent of its own RNG.
_COUNTERFACTUAL_STREAM = 7919
_SWAP_STREAM = 104729
# The counterfactual pool (``pool_background``): this many backgrounds per type and seed, each rendered from its own
# stream (seed, _POOL_STREAM, type, member), never from a scene's stream, so no member is the background of a
# training (or any other) scene.  4096 per type is more than the full benchmark's training split holds in all
# (1,000 scenes, about 250 per type); the photo types are fresh crops (position, scale, flip, tint) of the same photos.
POOL_PER_TYPE = 4096
_POOL_STREAM = 1299709
# A scene takes at most this many pool members per type (its first ``draws`` are its counterfactual backgrounds).
MAX_POOL_DRAWS = 32


@dataclass(frozen=True)
class SyntheticConfig:
    """What a synthetic split is made of.

    n_classes:   K, 2..8 object classes (and as many background types).
    size:        image side in pixels (square images), >= 32.
    rho:         probability that a scene's background type is its class's type, in [0, 1];
                 ``1 / n_classes`` = no shortcut.
    multi_label: several objects (distinct classes) per scene.
    objects:     (min, max) objects per multi-label scene.
    backgrounds: ``textures`` (photos and procedural patterns, the default) or ``colours``
                 (flat fields of ``FLAT_COLOURS``: a shortcut a hand-written model can read).
    seed:        every pixel derives from (seed, split, scene index).
    """

    n_classes: int = 4
    size: int = 64
    rho: float = 0.95
    multi_label: bool = False
    objects: tuple[int, int] = (2, 3)
    backgrounds: str = "textures"
    seed: int = 0

    def __post_init__(self):
        if self.backgrounds not in BACKGROUND_KINDS:
            raise ValueError(f"backgrounds must be one of {BACKGROUND_KINDS}, got {self.backgrounds!r}")
        if not 2 <= self.n_classes <= MAX_CLASSES:
            raise ValueError(f"n_classes must be in 2..{MAX_CLASSES}, got {self.n_classes}")
        if self.size < 32:
            raise ValueError(f"size must be >= 32 pixels, got {self.size}")
        if not 0.0 <= self.rho <= 1.0:
            raise ValueError(f"rho must be a probability in [0, 1], got {self.rho}")
        lo, hi = (int(v) for v in self.objects)
        if not 1 <= lo <= hi <= self.n_classes:
            raise ValueError(f"objects must be (min, max) with 1 <= min <= max <= n_classes={self.n_classes}, "
                             f"got {self.objects}")
        object.__setattr__(self, "objects", (lo, hi))

    @property
    def class_names(self) -> list[str]:
        """The shape names of the benchmark's classes."""
        return list(SHAPES[: self.n_classes])

    @property
    def background_types(self) -> list[str]:
        """The background names, one per class (textures or flat colours)."""
        names = BACKGROUNDS if self.backgrounds == "textures" else FLAT_COLOUR_NAMES
        return list(names[: self.n_classes])

    @property
    def task(self) -> str:
        """The task of the scenes: ``multi`` for multi-label scenes, else ``single``."""
        return "multi" if self.multi_label else "single"

    def replace(self, **changes) -> "SyntheticConfig":
        """A copy with ``changes`` applied."""
        return SyntheticConfig(**{**asdict(self), **changes})

    def to_dict(self) -> dict:
        """The config as a JSON-ready dict."""
        d = asdict(self)
        d["objects"] = list(self.objects)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "SyntheticConfig":
        """A config from a ``to_dict`` dict."""
        return cls(**{**d, "objects": tuple(d.get("objects", (2, 3)))})


@dataclass(frozen=True)
class SceneObject:
    """One object: its class, exact ``(H, W)`` bool mask and tight xyxy box (x2, y2 exclusive)."""

    label: int
    mask: np.ndarray = field(repr=False)
    box: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass(frozen=True)
class Scene:
    """A rendered scene: ``image = where(union mask, object pixels, background)``.

    image, background: ``(size, size, 3)`` uint8 RGB; ``background`` is the scene with no object.
    bg_type:           index into ``BACKGROUNDS`` of the background.
    """

    split: str
    index: int
    image: np.ndarray = field(repr=False)
    background: np.ndarray = field(repr=False)
    objects: tuple[SceneObject, ...] = ()
    bg_type: int = 0

    @property
    def labels(self) -> tuple[int, ...]:
        """The scene's object labels, sorted, each once."""
        return tuple(sorted({o.label for o in self.objects}))

    @property
    def mask(self) -> np.ndarray:
        """Union of the objects' masks, ``(H, W)`` bool."""
        m = np.zeros(self.image.shape[:2], dtype=bool)
        for o in self.objects:
            m |= o.mask
        return m


# ---------------------------------------------------------------- shapes (exact masks)


def shape_mask(shape: str, size: int, cx: float, cy: float, r: float, angle: float) -> np.ndarray:
    """Exact mask of ``shape`` centred at (cx, cy) with half-extent ``r`` pixels, rotated ``angle``
    radians: a pixel belongs to the object when its centre lies inside the shape."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    dx, dy = xx - cx, yy - cy
    c, s = np.cos(angle), np.sin(angle)
    u, v = (c * dx + s * dy) / r, (-s * dx + c * dy) / r   # object frame, unit half-extent
    rad = np.hypot(u, v)
    if shape == "disc":
        return rad <= 1.0
    if shape == "ring":
        return (rad <= 1.0) & (rad >= 0.55)
    if shape == "square":
        return (np.abs(u) <= 0.85) & (np.abs(v) <= 0.85)
    if shape == "diamond":
        return np.abs(u) + np.abs(v) <= 1.0
    if shape == "cross":
        return ((np.abs(u) <= 1.0) & (np.abs(v) <= 0.33)) | ((np.abs(v) <= 1.0) & (np.abs(u) <= 0.33))
    if shape == "triangle":  # apex up at v = -1, base at v = 0.7, half-width 1 at the base
        return (v <= 0.7) & (1.7 * np.abs(u) <= v + 1.0)
    if shape == "hexagon":
        a = np.abs(u)
        b = np.abs(v)
        return (b <= 0.87) & (0.87 * a + 0.5 * b <= 0.87)
    # star: five points, radius modulated by the angle
    theta = np.arctan2(v, u)
    edge = 0.5 + 0.5 * np.abs(np.cos(2.5 * theta))
    return rad <= edge


def object_texture(label: int, size: int, cx: float, cy: float, angle: float, rng: np.random.Generator) -> np.ndarray:
    """The class's texture over the whole image, ``(size, size, 3)`` uint8, in a random colour.

    The pattern (dots, stripes, checker, ...) is the class's; the colour is drawn from
    every hue, so colour alone does not name the class.
    """
    kind = OBJECT_TEXTURES[label]
    hue = rng.uniform(0, 180)
    main = _hsv(hue, rng.uniform(0.6, 1.0), rng.uniform(0.75, 1.0))
    dark = _hsv((hue + rng.uniform(-20, 20)) % 180, rng.uniform(0.6, 1.0), rng.uniform(0.2, 0.45))
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) + 0.5
    c, s = np.cos(angle), np.sin(angle)
    u, v = c * (xx - cx) + s * (yy - cy), -s * (xx - cx) + c * (yy - cy)
    period = rng.uniform(5.0, 7.0)
    if kind == "dots":
        on = (np.sin(2 * np.pi * u / period) * np.sin(2 * np.pi * v / period)) > 0.35
    elif kind == "stripes":
        on = np.sin(2 * np.pi * v / period) > 0
    elif kind == "bands":
        on = np.sin(2 * np.pi * np.hypot(u, v) / period) > 0
    elif kind == "checker":
        on = (np.floor(u / (period / 2 + 1)) + np.floor(v / (period / 2 + 1))) % 2 == 0
    elif kind == "grid":
        on = (np.abs(np.sin(np.pi * u / period)) < 0.3) | (np.abs(np.sin(np.pi * v / period)) < 0.3)
    elif kind == "speckle":
        on = rng.random(u.shape) < 0.3
    elif kind == "zigzag":
        on = np.sin(2 * np.pi * (v + 2.0 * np.abs(((u / period) % 2) - 1)) / period) > 0
    else:  # solid: a soft vertical shade
        on = np.zeros_like(u, dtype=bool)
        shade = np.clip(0.75 + 0.25 * v / (np.abs(v).max() + 1e-9), 0.5, 1.0)
        return np.clip(np.asarray(main)[None, None, :] * shade[:, :, None], 0, 255).astype(np.uint8)
    out = np.where(on[:, :, None], np.asarray(main, np.uint8), np.asarray(dark, np.uint8))
    return out.astype(np.uint8)


def _hsv(h: float, s: float, v: float) -> tuple[int, int, int]:
    """OpenCV HSV (h in 0..180, s and v in 0..1) to an RGB triple."""
    px = np.uint8([[[int(h) % 180, int(round(255 * s)), int(round(255 * v))]]])
    r, g, b = cv2.cvtColor(px, cv2.COLOR_HSV2RGB)[0, 0]
    return int(r), int(g), int(b)


# ---------------------------------------------------------------- backgrounds


@lru_cache(maxsize=8)
def _photo(name: str) -> np.ndarray:
    from objrel.data.bundled import BACKGROUNDS_DIR

    path = BACKGROUNDS_DIR / PHOTO_BACKGROUNDS[name]
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(f"background photo {path} is missing; the synthetic scenes need assets/backgrounds")
    img = cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
    img.setflags(write=False)
    return img


def draw_background(bg_type: int, size: int, rng: np.random.Generator, kind: str = "textures") -> np.ndarray:
    """One random background of type ``bg_type``, ``(size, size, 3)`` uint8: ``BACKGROUNDS[bg_type]``
    for ``kind='textures'``, a flat ``FLAT_COLOURS[bg_type]`` field with +/- FLAT_NOISE noise for ``'colours'``."""
    if not 0 <= bg_type < len(BACKGROUNDS):
        raise ValueError(f"bg_type must be in 0..{len(BACKGROUNDS) - 1}, got {bg_type}")
    if kind not in BACKGROUND_KINDS:
        raise ValueError(f"kind must be one of {BACKGROUND_KINDS}, got {kind!r}")
    if kind == "colours":
        noise = rng.integers(-FLAT_NOISE, FLAT_NOISE + 1, size=(size, size, 3))
        return np.clip(np.asarray(FLAT_COLOURS[bg_type])[None, None, :] + noise, 0, 255).astype(np.uint8)
    name = BACKGROUNDS[bg_type]
    if name in PHOTO_BACKGROUNDS:
        photo = _photo(name)
        h, w = photo.shape[:2]
        side = int(min(h, w, round(size * rng.uniform(*PHOTO_CROP_SIDES))))
        y0 = int(rng.integers(0, h - side + 1))
        x0 = int(rng.integers(0, w - side + 1))
        crop = cv2.resize(photo[y0 : y0 + side, x0 : x0 + side], (size, size), interpolation=cv2.INTER_AREA)
        if rng.random() < 0.5:
            crop = crop[:, ::-1]
        tint = rng.uniform(0.55, 1.15, size=3)
        return np.clip(crop.astype(np.float64) * tint[None, None, :], 0, 255).astype(np.uint8)
    a = np.asarray(_hsv(rng.uniform(0, 180), rng.uniform(0.2, 0.9), rng.uniform(0.5, 1.0)), np.float64)
    b = np.asarray(_hsv(rng.uniform(0, 180), rng.uniform(0.2, 0.9), rng.uniform(0.1, 0.5)), np.float64)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    theta = rng.uniform(0, np.pi)
    if name == "stripes":
        period = rng.uniform(6.0, 12.0)
        t = (np.sin(2 * np.pi * (xx * np.cos(theta) + yy * np.sin(theta)) / period + rng.uniform(0, 2 * np.pi)) > 0)
        t = t.astype(np.float64)
    elif name == "checker":
        cell = rng.uniform(5.0, 10.0)
        x0, y0 = rng.uniform(0, cell, size=2)
        t = ((np.floor((xx + x0) / cell) + np.floor((yy + y0) / cell)) % 2).astype(np.float64)
    elif name == "blobs":
        small = rng.random((6, 6))
        t = cv2.resize(small, (size, size), interpolation=cv2.INTER_CUBIC)
        t = np.clip((t - t.min()) / (np.ptp(t) + 1e-9), 0, 1)
    else:  # waves: concentric rings around a random centre
        cx, cy = rng.uniform(-size / 2, 1.5 * size, size=2)
        period = rng.uniform(5.0, 9.0)
        t = 0.5 + 0.5 * np.sin(2 * np.pi * np.hypot(xx - cx, yy - cy) / period)
    return np.clip(a * t[:, :, None] + b * (1 - t[:, :, None]), 0, 255).astype(np.uint8)


def background_type_for(label: int, cfg: SyntheticConfig, rng: np.random.Generator) -> int:
    """The class's own type with probability ``rho``, else one of the other types uniformly."""
    if rng.random() < cfg.rho:
        return int(label)
    others = [t for t in range(cfg.n_classes) if t != label]
    return int(others[int(rng.integers(0, len(others)))])


# ---------------------------------------------------------------- scenes


def scene_rng(cfg: SyntheticConfig, split: str, index: int, *stream: int) -> np.random.Generator:
    """The Generator of one scene (or of one of its counterfactual streams)."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    return np.random.default_rng([int(cfg.seed), SPLITS[split], int(index), *(int(s) for s in stream)])


def _place(cfg: SyntheticConfig, rng: np.random.Generator,
           labels: list[int]) -> list[tuple[float, float, float, float]]:
    """(cx, cy, r, angle) per object; multi-label objects keep MULTI_GAP_PX apart (rejection sampling)."""
    size = cfg.size
    lo, hi = MULTI_SCALE if cfg.multi_label else SINGLE_SCALE
    placed: list[tuple[float, float, float, float]] = []
    for _ in labels:
        for attempt in range(200):
            shrink = 1.0 if attempt < 100 else 0.8
            r = rng.uniform(lo, hi) * size * shrink
            cx = rng.uniform(r, size - r)
            cy = rng.uniform(r, size - r)
            angle = np.deg2rad(rng.uniform(-MAX_ROTATION_DEG, MAX_ROTATION_DEG))
            if all(np.hypot(cx - px, cy - py) > r + pr + MULTI_GAP_PX for px, py, pr, _ in placed):
                placed.append((cx, cy, r, angle))
                break
        else:
            raise RuntimeError(f"could not place {len(labels)} objects without overlap in a {size}x{size} scene")
    return placed


def tight_box(mask: np.ndarray) -> tuple[int, int, int, int]:
    """Smallest xyxy box (x2, y2 exclusive) holding every True pixel of ``mask``."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        raise ValueError("mask is empty; expected at least one object pixel")
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def render_scene(cfg: SyntheticConfig, split: str, index: int) -> Scene:
    """Scene ``index`` of ``split``: a pure function of (cfg, split, index)."""
    rng = scene_rng(cfg, split, index)
    k = cfg.n_classes
    if cfg.multi_label:
        n = int(rng.integers(cfg.objects[0], cfg.objects[1] + 1))
        labels = [int(v) for v in rng.permutation(k)[:n]]
    else:
        labels = [int(rng.integers(0, k))]
    bg_type = background_type_for(labels[0], cfg, rng)
    background = draw_background(bg_type, cfg.size, rng, cfg.backgrounds)
    image = background.copy()
    objects = []
    for label, (cx, cy, r, angle) in zip(labels, _place(cfg, rng, labels)):
        mask = shape_mask(SHAPES[label], cfg.size, cx, cy, r, angle)
        tex = object_texture(label, cfg.size, cx, cy, angle, rng)
        image[mask] = tex[mask]
        objects.append(SceneObject(label, mask, tight_box(mask)))
    return Scene(split, int(index), image, background, tuple(objects), bg_type)


def paste(objects_image: np.ndarray, mask: np.ndarray, background: np.ndarray) -> np.ndarray:
    """``objects_image``'s pixels where ``mask``, ``background`` elsewhere: a new ``(H, W, 3)`` uint8."""
    if objects_image.shape != background.shape or mask.shape != background.shape[:2]:
        raise ValueError(f"paste needs matching shapes, got image {objects_image.shape}, mask {mask.shape}, "
                         f"background {background.shape}")
    return np.where(mask[:, :, None], objects_image, background).astype(np.uint8)


def pool_background(cfg: SyntheticConfig, bg_type: int, member: int) -> np.ndarray:
    """Member ``member`` (0..POOL_PER_TYPE-1) of the counterfactual pool of ``bg_type``: a background rendered from
    its own stream (the config's seed, the type, the member), shared by every split and scene of that seed."""
    if not 0 <= member < POOL_PER_TYPE:
        raise ValueError(f"pool member must be in 0..{POOL_PER_TYPE - 1}, got {member}")
    rng = np.random.default_rng([int(cfg.seed), _POOL_STREAM, int(bg_type), int(member)])
    return draw_background(bg_type, cfg.size, rng, cfg.backgrounds)


def pool_members(cfg: SyntheticConfig, split: str, index: int, bg_type: int) -> np.ndarray:
    """The pool members of ``bg_type`` scene ``index`` takes, in draw order: MAX_POOL_DRAWS distinct members drawn
    by the scene's own counterfactual stream, so its first ``k`` draws are the same whatever ``k``."""
    rng = scene_rng(cfg, split, index, _COUNTERFACTUAL_STREAM, bg_type)
    return rng.choice(POOL_PER_TYPE, size=MAX_POOL_DRAWS, replace=False)


def counterfactual_background(cfg: SyntheticConfig, split: str, index: int, bg_type: int, draw: int = 0) -> np.ndarray:
    """Draw ``draw`` (0..MAX_POOL_DRAWS-1) of scene ``index``'s counterfactual backgrounds of ``bg_type``: a member of
    the pool (``pool_background``) picked by the scene's seeded stream, independent of the scene's own background."""
    if not 0 <= draw < MAX_POOL_DRAWS:
        raise ValueError(f"draw must be in 0..{MAX_POOL_DRAWS - 1}, got {draw}")
    return pool_background(cfg, bg_type, int(pool_members(cfg, split, index, bg_type)[draw]))


def swapped_scene(cfg: SyntheticConfig, split: str, index: int) -> Scene:
    """The scene with its background replaced by one of another class's type (uniform over the other
    ``K - 1`` types; for multi-label, a type of no class in the scene when one exists)."""
    scene = render_scene(cfg, split, index)
    rng = scene_rng(cfg, split, index, _SWAP_STREAM)
    avoid = set(scene.labels) if len(scene.labels) < cfg.n_classes else {scene.objects[0].label}
    choices = [t for t in range(cfg.n_classes) if t not in avoid]
    bg_type = int(choices[int(rng.integers(0, len(choices)))])
    background = draw_background(bg_type, cfg.size, rng, cfg.backgrounds)
    image = paste(scene.image, scene.mask, background)
    return Scene("swapped", scene.index, image, background, scene.objects, bg_type)


# ---------------------------------------------------------------- files


@dataclass(frozen=True)
class SyntheticSplit:
    """A split on disk.

    annotation: COCO JSON path (``load_dataset`` reads it); root: the folder holding it,
    ``images/`` and ``backgrounds/``.  ``source_split`` is the split whose scenes a
    ``swapped`` split re-draws.
    """

    name: str
    annotation: str
    root: str
    n: int
    config: SyntheticConfig
    source_split: str

    def to_dict(self) -> dict:
        """The rendered dataset's name, files, size, config and source split as a JSON-ready dict."""
        return {"name": self.name, "annotation": self.annotation, "root": self.root, "n": self.n,
                "config": self.config.to_dict(), "source_split": self.source_split}


def write_split(cfg: SyntheticConfig, root, split: str, n: int, swapped: bool = False) -> SyntheticSplit:
    """Render scenes ``0..n-1`` of ``split`` (or their background-swapped versions) to ``root``.

    Writes ``root/images/<name>_<i>.png``, ``root/backgrounds/<name>_<i>.png`` (the scene
    without objects) and ``root/<name>.json`` (COCO: one annotation per object, compressed
    RLE of its exact mask, integer ``[x, y, w, h]`` tight box; categories carry
    ``class_index``).  Image records carry ``scene`` = the source split and index and
    ``bg_type``.  Returns the split's description.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1 scenes, got {n}")
    name = "swapped" if swapped else split
    root = Path(root)
    (root / "images").mkdir(parents=True, exist_ok=True)
    (root / "backgrounds").mkdir(parents=True, exist_ok=True)
    images, anns = [], []
    for i in range(n):
        scene = swapped_scene(cfg, split, i) if swapped else render_scene(cfg, split, i)
        fname = f"images/{name}_{i:05d}.png"
        bname = f"backgrounds/{name}_{i:05d}.png"
        Image.fromarray(scene.image).save(root / fname, optimize=False, compress_level=1)
        Image.fromarray(scene.background).save(root / bname, optimize=False, compress_level=1)
        images.append({"id": i + 1, "file_name": fname, "width": cfg.size, "height": cfg.size,
                       "background_file": bname, "bg_type": scene.bg_type,
                       "scene": {"split": split, "index": i}})
        for o in scene.objects:
            x1, y1, x2, y2 = o.box
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": o.label + 1,
                         "bbox": [x1, y1, x2 - x1, y2 - y1], "area": int(o.mask.sum()),
                         "segmentation": encode_region(o.mask), "iscrowd": 0})
    cats = [{"id": c + 1, "name": nm, "class_index": c, "background": bg}
            for c, (nm, bg) in enumerate(zip(cfg.class_names, cfg.background_types))]
    coco = {"info": {"description": "objrel planted-shortcut scenes", "synthetic": cfg.to_dict(),
                     "split": split, "swapped": bool(swapped)},
            "images": images, "annotations": anns, "categories": cats}
    path = root / f"{name}.json"
    path.write_text(json.dumps(coco), encoding="utf-8")
    return SyntheticSplit(name, str(path.resolve()), str(root.resolve()), n, cfg, split)


def read_split(annotation) -> dict:
    """The COCO dict of a written split, with its ``SyntheticConfig`` under ``"config"``."""
    data = json.loads(Path(annotation).read_text(encoding="utf-8"))
    info = data.get("info", {})
    if "synthetic" not in info:
        raise ValueError(f"{annotation} is not an objrel synthetic split: its 'info' has no 'synthetic' config")
    data["config"] = SyntheticConfig.from_dict(info["synthetic"])
    return data


def load_arrays(annotation) -> tuple[np.ndarray, np.ndarray]:
    """Images ``(N, H, W, 3)`` uint8 and targets of a written split, in image-id order.

    Targets are ``(N,)`` int64 class indices (single-label) or ``(N, K)`` float32 0/1
    (multi-label).
    """
    data = read_split(annotation)
    root = Path(annotation).parent
    cfg: SyntheticConfig = data["config"]
    labels: dict[int, set[int]] = {}
    for a in data["annotations"]:
        labels.setdefault(a["image_id"], set()).add(a["category_id"] - 1)
    recs = sorted(data["images"], key=lambda r: r["id"])
    images = np.stack([np.asarray(Image.open(root / r["file_name"]).convert("RGB")) for r in recs])
    if cfg.multi_label:
        y = np.zeros((len(recs), cfg.n_classes), np.float32)
        for i, r in enumerate(recs):
            y[i, sorted(labels[r["id"]])] = 1.0
    else:
        y = np.asarray([min(labels[r["id"]]) for r in recs], np.int64)
    return images, y
