"""ORMR's mutation set (s V-A, Table I): its six functions with the paper's 38 operations, as a plan.

The paper's operations per function, H_n (12 + 12 + 1 preserving, 9 + 2 + 2 removing), and how objrel runs each:

* MvObjToImg (``move_to_background``) and BldObjToImg (``blend_to_background``), 12 each: the paper used
  "top 12 different images by search 'background'" and does not list them, so nobody can use the same
  pictures.  objrel uses its 4 bundled photos (``assets/backgrounds``) and 8 pictures it paints itself
  (``assets/backgrounds/seed002``, made by ``make_backgrounds``: sky, sea, sand, clouds, wood, tiles,
  foliage, dusk): 12 object-free backgrounds, so H_n is the paper's 12.
* PsvObj (``gray_background_blur``), 1: as in the paper.
* RmvObjByRGB (``fill_object_blur``), 9: the paper's "9 common RGB colors" (unnamed); objrel's nine are
  black, gray, white, red, lime, blue, yellow, aqua, fuchsia.
* RmvObjByTool (``inpaint``), 2: OpenCV's INPAINT_NS and INPAINT_TELEA, as in the paper.
* RmvObjByMM (``margin_fill``), 2: mean and median of the box-minus-mask margin, as in the paper; not
  applicable without a mask (box-only data), where ORMR's weights count it as distance 0.

So S over this plan has the paper's functions and H_n (``objrel.relations.votes.ScoringBasis.paper_counts``);
its ingredients differ where the paper's are unpublished (``INGREDIENT_NOTES``).  Each function is one
vote group with a majority vote (the paper only scores; objrel's flags need votes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from objrel.mutations.colours import NINE_COLOURS

SEED002 = "seed002"
# Sub-folder of assets/backgrounds holding the backgrounds objrel paints for this plan (not in the other plans'
# background grids, which list only the top folder).
PAINTED_DIR = "seed002"
# The painted backgrounds, made by ``make_backgrounds``: name -> painter.
PAINTED_NAMES = ("clouds.png", "dusk.png", "foliage.png", "sand.png", "sea.png", "sky.png", "tiles.png", "wood.png")
PAINTED_SIZE = (320, 240)      # width, height in pixels; operators resize a background to the image
PAINTED_SEED = 2002            # the painter's numpy seed: the same files on every machine
# ORMR Table I: paper name, objrel operator, H_n; preserving functions first, as the paper lists them.
FUNCTIONS = (
    ("MvObjToImg", "move_to_background", 12), ("BldObjToImg", "blend_to_background", 12),
    ("PsvObj", "gray_background_blur", 1),
    ("RmvObjByRGB", "fill_object_blur", 9), ("RmvObjByTool", "inpaint", 2), ("RmvObjByMM", "margin_fill", 2),
)
PAPER_OPERATIONS = sum(h for _, _, h in FUNCTIONS)  # 38
# Where objrel's ingredients cannot be the paper's, and why.
INGREDIENT_NOTES = {
    "MvObjToImg": "the paper's 12 backgrounds are unlisted web-search results; objrel uses 4 bundled photos and "
                  "8 painted pictures",
    "BldObjToImg": "the same 12 backgrounds as MvObjToImg",
    "RmvObjByRGB": "the paper does not name its 9 colours; objrel's: " + ", ".join(NINE_COLOURS),
    "RmvObjByMM": "needs a mask: distance 0 on box-only data under ORMR's weights",
}


def seed002_backgrounds() -> tuple[str, ...]:
    """The 12 background names of MvObjToImg / BldObjToImg: the bundled photos, then the painted ones."""
    from objrel.data.bundled import BACKGROUNDS_DIR
    from objrel.mutations.pixels import background_names

    names = tuple(background_names()) + tuple(f"{PAINTED_DIR}/{n}" for n in PAINTED_NAMES)
    missing = [n for n in names if not (BACKGROUNDS_DIR / n).is_file()]
    if missing or len(names) != 12:
        raise ValueError(f"the seed002 plan needs 12 background pictures under {BACKGROUNDS_DIR.name}/; found "
                         f"{len(names) - len(missing)} ({len(missing)} missing: {missing})")
    return names


def _params(operator: str) -> list[dict]:
    if operator in ("move_to_background", "blend_to_background"):
        return [{"background": b} for b in seed002_backgrounds()]
    if operator == "fill_object_blur":
        return [{"colour": c} for c in NINE_COLOURS]
    if operator == "inpaint":
        return [{"method": "ns"}, {"method": "telea"}]
    if operator == "margin_fill":
        return [{"stat": "mean"}, {"stat": "median"}]
    return [{}]


def seed002_specs(k: int | None = None) -> list[tuple[str, tuple[tuple[str, dict], ...], int]]:
    """One vote group per function of Table I as (name, its H_n (operator, parameters), vote threshold);
    removing (MR-1) functions first, so RmvObjByRGB and MvObjToImg are the primary votes.  ``k``: the vote
    threshold of every group (capped at the group's size), a majority by default.  ``objrel.mutations.plan``
    makes them vote groups (this module stays below the plan)."""
    specs = []
    for paper_name, operator, h in FUNCTIONS[3:] + FUNCTIONS[:3]:
        ops = tuple((operator, p) for p in _params(operator))
        if len(ops) != h:
            raise ValueError(f"{paper_name}: {len(ops)} operations, ORMR has {h}")
        specs.append((paper_name, ops, min(k, h) if k else h // 2 + 1))
    return specs


# ---------------------------------------------------------------- the painted backgrounds


def _smooth_noise(rng: np.random.Generator, h: int, w: int, scale: int) -> np.ndarray:
    """Noise in [0, 1] that varies over about ``scale`` pixels (coarse random grid, bilinear upscale)."""
    import cv2

    coarse = rng.random((h // scale + 2, w // scale + 2)).astype(np.float32)
    return cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC).clip(0, 1)


def _paint(name: str, rng: np.random.Generator, w: int, h: int) -> np.ndarray:
    y = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
    x = np.linspace(0, 1, w, dtype=np.float32)[None, :, None]
    c = lambda *rgb: np.asarray(rgb, np.float32)[None, None, :]  # noqa: E731
    n = _smooth_noise(rng, h, w, 24)[:, :, None]
    if name == "sky.png":
        img = c(90, 150, 230) * (1 - y) + c(200, 225, 250) * y
    elif name == "dusk.png":
        img = c(60, 40, 110) * (1 - y) + c(250, 150, 80) * y
    elif name == "sea.png":
        img = (c(20, 70, 130) + 40 * np.sin(40 * y + 6 * n)) * np.ones_like(x)
    elif name == "sand.png":
        img = c(215, 190, 140) + 40 * (n - 0.5) + 12 * (rng.random((h, w, 1)) - 0.5)
    elif name == "clouds.png":
        big = _smooth_noise(rng, h, w, 60)[:, :, None]
        img = c(110, 160, 225) * (1 - big * n) + c(245, 245, 245) * big * n
    elif name == "wood.png":
        img = c(150, 100, 55) + 35 * np.sin(60 * x + 8 * n) * np.ones_like(y)
    elif name == "tiles.png":
        yy, xx = np.mgrid[0:h, 0:w]
        grout = ((yy % 40) < 3) | ((xx % 40) < 3)
        img = np.where(grout[:, :, None], c(200, 200, 195), c(70, 110, 120) + 30 * (n - 0.5))
    elif name == "foliage.png":
        img = c(40, 110, 40) + 70 * (_smooth_noise(rng, h, w, 6)[:, :, None] - 0.5) + 20 * (n - 0.5)
    else:
        raise ValueError(f"no painted background {name!r}; expected one of {PAINTED_NAMES}")
    return np.ascontiguousarray(np.broadcast_to(np.clip(img, 0, 255), (h, w, 3)).astype(np.uint8))


def painted_background(name: str) -> np.ndarray:
    """Painted background ``name`` as ``(H, W, 3)`` uint8 RGB, the same on every machine (one seed per name)."""
    w, h = PAINTED_SIZE
    rng = np.random.default_rng([PAINTED_SEED, PAINTED_NAMES.index(name) if name in PAINTED_NAMES else -1])
    return _paint(name, rng, w, h)


def make_backgrounds(folder: Path) -> list[Path]:
    """Write every painted background as a PNG into ``folder`` (``assets/backgrounds/seed002`` in the repository)."""
    from PIL import Image

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name in PAINTED_NAMES:
        Image.fromarray(painted_background(name)).save(folder / name)
        out.append(folder / name)
    return out
