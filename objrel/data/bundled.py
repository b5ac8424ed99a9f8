"""The embedded demo: real photos with hand-drawn polygons and boxes, in assets/."""

from __future__ import annotations

from pathlib import Path

from objrel.data.coco import load_coco
from objrel.data.dataset import Dataset

# The bundled pictures: objrel/assets in an installed objrel (setup.py puts assets/ there), else assets/ beside
# the package in a checkout.
_INSTALLED_ASSETS = Path(__file__).resolve().parents[1] / "assets"
ASSETS = _INSTALLED_ASSETS if _INSTALLED_ASSETS.is_dir() else Path(__file__).resolve().parents[2] / "assets"
DEMO_DIR = ASSETS / "demo"
DEMO_ANNOTATIONS = DEMO_DIR / "annotations.json"
DEMO_IMAGES = DEMO_DIR / "images"
BACKGROUNDS_DIR = ASSETS / "backgrounds"


def load_demo() -> Dataset:
    """The bundled COCO-format demo set (ImageNet-1k labels on every category)."""
    ds = load_coco(DEMO_ANNOTATIONS, DEMO_IMAGES, name="demo")
    return Dataset("demo", "bundled", ds.root, ds.annotation, ds.samples, ds.categories)


def background_paths() -> list[Path]:
    """Background pictures used by MvObjToImg / BldObjToImg, sorted by name."""
    return sorted(p for p in BACKGROUNDS_DIR.glob("*") if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
