"""Datasets for detection runs, and target regions supplied by a detector where a dataset has none.

Seed 000 s4.2: the target objects "could be extracted from the dataset, or obtained using the
latest object localization techniques".  ``detector_regions`` does the second: each sample
without annotated objects gets the detector's records as its objects (boxes, label names) and
``region_source = "detector"``, which every run stores with the sample.  It serves classifier
runs (``Engine(..., dataset=detector_regions(...))``) and detection runs alike.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from objrel.data import Dataset, load_dataset, load_rgb
from objrel.data.bundled import DEMO_DIR, DEMO_IMAGES
from objrel.data.coco import load_coco
from objrel.data.sample import Sample, TargetObject
from objrel.errors import BadSampleError
from objrel.models.detector import Detector

DEMO_FACES = "demo-faces"
DEMO_FACES_ANNOTATIONS = DEMO_DIR / "faces.json"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")
# Images decoded and detected at once while supplying regions.
REGION_BATCH = 8


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


def _needs_regions(s: Sample, replace_all: bool) -> bool:
    if replace_all:
        return not s.problem or s.problem[0] == "empty-region"
    return not s.objects and (s.problem is None or s.problem[0] == "empty-region")


def detector_regions(dataset: Dataset, detector: Detector, replace_all: bool = False,
                     batch_size: int = REGION_BATCH) -> Dataset:
    """A copy of ``dataset`` whose samples without objects get the detector's records as objects.

    replace_all: give *every* sample the detector's objects, annotated or not.
    A sample whose image cannot be decoded keeps that problem (the run skips it with the reason); one
    on which the detector finds nothing keeps ``empty-region`` with a reason that says so.  Samples
    that get objects have ``region_source = "detector"`` and ``extra["region_detector"]``.
    """
    out = list(dataset.samples)
    todo = [i for i, s in enumerate(out) if _needs_regions(s, replace_all)]
    for start in range(0, len(todo), batch_size):
        chunk, images = [], []
        for i in todo[start:start + batch_size]:
            s = out[i]
            try:
                if not s.image_path:
                    raise BadSampleError("bad-path", "image path could not be resolved inside the dataset root")
                expected = (s.width, s.height) if s.width and s.height else None
                images.append(load_rgb(s.image_path, expected))
                chunk.append(i)
            except BadSampleError as exc:
                out[i] = replace(s, problem=(exc.code, exc.reason))
        for i, det in zip(chunk, detector.detect(images) if images else []):
            s = out[i]
            if not len(det):
                out[i] = replace(s, objects=(), problem=(
                    "empty-region", f"image has no annotated object and detector {detector.name} found none"))
                continue
            objects = tuple(TargetObject(lab, None, tuple(b)) for b, lab in zip(det.boxes, det.labels))
            out[i] = replace(s, objects=objects, problem=None, region_source="detector",
                             extra={**s.extra, "region_detector": detector.name})
    categories = tuple(sorted(set(dataset.categories) | {o.category for s in out for o in s.objects}))
    return Dataset(dataset.name, dataset.format, dataset.root, dataset.annotation, tuple(out), categories)
