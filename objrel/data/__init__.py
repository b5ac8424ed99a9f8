"""Dataset loaders.  Every loader returns a ``Dataset`` of ``Sample``s.

``load_dataset`` picks the loader from the file: a ``.json`` with an ``images``
list of COCO image records is COCO; other JSON is a manifest; an ``.xml`` file
or a folder of them is VOC / ImageNet box XML.
"""

from __future__ import annotations

from pathlib import Path

from objrel.constants import MAX_ANNOTATION_FILE_BYTES
from objrel.errors import AnnotationError
from objrel.data.bounded import parse_json
from objrel.data.bundled import load_demo
from objrel.data.coco import load_coco
from objrel.data.dataset import Dataset
from objrel.data.images import load_rgb, resolve_inside
from objrel.data.manifest import load_manifest
from objrel.data.region import area_ratio, target_region
from objrel.data.sample import Sample, TargetObject
from objrel.data.voc import load_voc

FORMATS = ("auto", "coco", "voc", "manifest")


def detect_format(annotation) -> str:
    """The format of an annotation path: "voc" (an .xml file or folder), "coco" or "manifest" (a .json file)."""
    path = Path(annotation)
    if not path.exists():
        raise AnnotationError(f"annotation {path} does not exist; expected a COCO or manifest .json, a VOC .xml "
                              f"or a folder of .xml files")
    if path.is_dir() or path.suffix.lower() == ".xml":
        return "voc"
    if path.suffix.lower() != ".json":
        raise AnnotationError(f"cannot tell the format of {path}: expected a .json file, an .xml file or a folder "
                              "of .xml")
    from objrel.data import box_limits
    from objrel.data.bounded import read_limited

    what = f"annotation file {path.name}"
    raw = read_limited(path, what, MAX_ANNOTATION_FILE_BYTES)
    box_limits.check_total(box_limits.count_box_keys(raw), what)   # before a file of millions is parsed
    head = parse_json(raw, what, MAX_ANNOTATION_FILE_BYTES)
    del raw
    if isinstance(head, dict) and isinstance(head.get("images"), list) and (
        "annotations" in head or "categories" in head
    ):
        return "coco"
    return "manifest"


def load_dataset(annotation, images_dir=None, fmt: str = "auto", **options) -> Dataset:
    """Load any supported annotation; ``annotation='demo'`` gives the bundled set."""
    if str(annotation) == "demo":
        return load_demo()
    if fmt not in FORMATS:
        raise ValueError(f"unknown dataset format {fmt!r}; expected one of {FORMATS}")
    if fmt == "auto":
        fmt = detect_format(annotation)
    if images_dir is None:
        images_dir = Path(annotation).parent if Path(annotation).is_file() else annotation
    if fmt == "coco":
        return load_coco(annotation, images_dir, category_map=options.get("category_map"))
    if fmt == "voc":
        return load_voc(annotation, images_dir, synset_mapping=options.get("synset_mapping"),
                        padding=int(options.get("padding", 0)))
    return load_manifest(annotation, images_dir)


__all__ = [
    "Dataset", "Sample", "TargetObject", "load_coco", "load_voc", "load_manifest", "load_demo",
    "load_dataset", "load_rgb", "resolve_inside", "target_region", "area_ratio", "detect_format", "FORMATS",
]
