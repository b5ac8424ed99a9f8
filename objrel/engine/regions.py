"""Target regions supplied by a detector where a dataset has none.

EMSE21 s4.2: the target objects "could be extracted from the dataset, or obtained using the
latest object localization techniques".  ``detector_regions`` does the second: each sample
without annotated objects gets the detector's records as its objects (boxes, label names) and
``region_source = "detector"``, which every run stores with the sample.  It serves classifier
runs (``Engine(..., dataset=detector_regions(...))``) and detection runs alike.  It runs a model,
so it lives in the engine; the datasets it fills are ``objrel.data.detector_regions``'s.
"""

from __future__ import annotations

from dataclasses import replace

from objrel.data import Dataset, load_rgb
from objrel.data.sample import Sample, TargetObject
from objrel.errors import BadSampleError
from objrel.models.detector import Detector

# Images decoded and detected at once while supplying regions.
REGION_BATCH = 8


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
