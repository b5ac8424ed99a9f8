"""Datasets for detection runs: the bundled face boxes, an annotation file, or a bare folder of images whose
target regions a detector supplies (``objrel.engine.regions.detector_regions``, which runs the model)."""

from __future__ import annotations

from pathlib import Path

from objrel.data import Dataset, load_dataset
from objrel.data.bundled import DEMO_DIR, DEMO_IMAGES
from objrel.data.coco import load_coco
from objrel.data.sample import Sample

DEMO_FACES = "demo-faces"
DEMO_FACES_ANNOTATIONS = DEMO_DIR / "faces.json"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


def load_demo_faces() -> Dataset:
    """The bundled photos with every visible human face ("face") and cat face ("cat face") boxed by hand
    (``assets/demo/faces.json``); photos without a face have no object."""
    ds = load_coco(DEMO_FACES_ANNOTATIONS, DEMO_IMAGES, name=DEMO_FACES)
    return Dataset(DEMO_FACES, "bundled", ds.root, ds.annotation, ds.samples, ds.categories)


def image_folder(root) -> Dataset:
    """Every image file under ``root`` (recursively, sorted), with no objects: a dataset without boxes."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise FileNotFoundError(f"images folder {base} does not exist")
    samples = []
    for p in sorted(q for q in base.rglob("*") if q.is_file() and q.suffix.lower() in IMAGE_SUFFIXES):
        rel = p.relative_to(base).as_posix()
        samples.append(Sample(rel, str(p), rel, None, None, (), ("empty-region", "image has no annotated object")))
    return Dataset(base.name, "folder", str(base), str(base), tuple(samples), ())


def load_detection_dataset(dataset: str | None, images: str | None = None, fmt: str = "auto",
                           **options) -> Dataset:
    """``demo-faces``, an annotation file / folder (as ``objrel.data.load_dataset``), or with ``dataset``
    None a plain folder of images."""
    if dataset == DEMO_FACES:
        return load_demo_faces()
    if not dataset:
        if not images:
            raise ValueError("expected a dataset (annotation file or 'demo-faces') or an images folder, got neither")
        return image_folder(images)
    return load_dataset(dataset, images, fmt, **options)
