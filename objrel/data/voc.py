"""Pascal VOC / ImageNet (ILSVRC) bounding-box XML files.

One XML per image: ``<filename>``, ``<size><width/><height/></size>`` and one
``<object>`` per box with ``<name>`` and ``<bndbox><xmin/><ymin/><xmax/><ymax/>``.
ILSVRC names objects by WordNet id (``n02123597``); pass a synset mapping (the
``LOC_synset_mapping.txt`` format: one ``wnid name, synonyms`` line per class, in
class-index order) to turn them into class indices.  The region is the union of
the boxes, optionally padded by ``padding`` pixels (the EMSE21 code padded 5).
Coordinates in the files are 1-based and inclusive; they are converted to
objrel's 0-based, end-exclusive xyxy.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from objrel.constants import MAX_XML_FILE_BYTES
from objrel.errors import AnnotationError, BadSampleError, InputFileError
from objrel.data import box_limits
from objrel.data.bounded import parse_xml
from objrel.data.dataset import Dataset
from objrel.data.locate import ImageFinder
from objrel.data.region import clip_objects
from objrel.data.sample import Sample, TargetObject

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png", ".JPEG", ".JPG", ".PNG")


def read_synset_mapping(path) -> dict[str, tuple[int, str]]:
    """``{wnid: (class index, first name)}`` from a LOC_synset_mapping-style file."""
    mapping: dict[str, tuple[int, str]] = {}
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise AnnotationError(f"cannot read synset mapping {path}: {exc}") from exc
    for index, line in enumerate(s for s in lines if s.strip()):
        wnid, _, names = line.strip().partition(" ")
        mapping[wnid] = (index, names.split(",")[0].strip() or wnid)
    return mapping


def _text(node, tag: str, xml_path: Path) -> str:
    child = node.find(tag)
    if child is None or child.text is None:
        raise BadSampleError("bad-annotation", f"missing <{tag}> in {xml_path.name}")
    return child.text.strip()


def _stem_suffix(filename: str, images_dir: Path, finder: ImageFinder) -> str:
    """An ILSVRC ``<filename>`` (the stem only) with the suffix of the image found for it: beside it first, then
    anywhere under the root (``ImageFinder``); ``.JPEG`` when none is found."""
    for suffix in IMAGE_SUFFIXES:
        if (images_dir / (filename + suffix)).exists():
            return filename + suffix
    for suffix in IMAGE_SUFFIXES:
        if finder.match(filename + suffix) is not None:
            return filename + suffix
    return filename + ".JPEG"


def _parse(xml_path: Path, root: Path, images_dir: Path, synsets, padding: int,
           finder: ImageFinder | None = None) -> Sample:
    sid = xml_path.stem
    rel = sid
    image_path = str(images_dir / sid)
    try:
        node = parse_xml(xml_path, xml_path.name, MAX_XML_FILE_BYTES)
    except ET.ParseError as exc:
        return Sample(sid, image_path, rel, None, None,
                      problem=("bad-annotation", f"{xml_path.name}: invalid XML: {exc}"))
    except InputFileError as exc:
        return Sample(sid, image_path, rel, None, None, problem=("bad-annotation", str(exc)))
    try:
        filename = _text(node, "filename", xml_path)
        finder = finder or ImageFinder(root)
        if not Path(filename).suffix:
            # ILSVRC files give the stem only; find the image for it.
            filename = _stem_suffix(filename, images_dir, finder)
        rel = str((images_dir / filename).relative_to(root)) if images_dir != root else filename
        # a <filename> with no file there is looked up under the root by its trailing components
        rel, found = finder.locate(rel)
        image_path = str(found)
        size = node.find("size")
        width = int(_text(size, "width", xml_path)) if size is not None else None
        height = int(_text(size, "height", xml_path)) if size is not None else None
        objects = []
        found_objects = node.findall("object")
        if len(found_objects) > box_limits.MAX_BOXES_PER_IMAGE:
            raise BadSampleError(box_limits.TOO_MANY_BOXES, box_limits.per_image_reason(len(found_objects)))
        for obj in found_objects:
            name = _text(obj, "name", xml_path)
            bnd = obj.find("bndbox")
            if bnd is None:
                raise BadSampleError("bad-annotation", f"object {name!r} in {xml_path.name} has no <bndbox>")
            xmin, ymin, xmax, ymax = (float(_text(bnd, t, xml_path)) for t in ("xmin", "ymin", "xmax", "ymax"))
            # VOC and ILSVRC count pixels from 1 and include xmax/ymax; objrel boxes are
            # 0-based with exclusive x2/y2, so only the minimum corner moves.
            x1, y1, x2, y2 = xmin - 1, ymin - 1, xmax, ymax
            if padding:
                # Padding grows the box but never pushes it off the image.
                x1, y1, x2, y2 = max(x1 - padding, 0), max(y1 - padding, 0), x2 + padding, y2 + padding
                if width is not None and height is not None:
                    x2, y2 = min(x2, width), min(y2, height)
            class_index = None
            category = name
            if synsets is not None:
                if name not in synsets:
                    raise BadSampleError(
                        "unknown-label", f"object name {name!r} is not in the synset mapping ({len(synsets)} classes)"
                    )
                class_index, category = synsets[name]
            objects.append(TargetObject(category=category, class_index=class_index, box=(x1, y1, x2, y2)))
        if not objects:
            raise BadSampleError("empty-region", "annotation has no <object>")
        clipped, notes = clip_objects(objects, width, height,
                                      [f"{xml_path.name} object {i}" for i in range(len(objects))])
        return Sample(sid, image_path, rel, width, height, clipped, notes=notes)
    except BadSampleError as exc:
        return Sample(sid, image_path, rel, None, None, problem=(exc.code, exc.reason))
    except ValueError as exc:
        return Sample(sid, image_path, rel, None, None, problem=("bad-annotation", f"{xml_path.name}: {exc}"))


def load_voc(annotations, images_dir, synset_mapping=None, padding: int = 0, name: str | None = None) -> Dataset:
    """Load one VOC XML file or every ``*.xml`` in a folder.

    annotations:    an XML file or a folder of them.
    images_dir:     the dataset root; images are looked up there by ``<filename>``.
    synset_mapping: optional LOC_synset_mapping-style file for ILSVRC wnids.
    padding:        pixels added on every side of every box (clipped to the image).
    """
    ann = Path(annotations).resolve()
    if ann.is_dir():
        files = sorted(ann.glob("*.xml"))
    elif ann.is_file():
        files = [ann]
    else:
        raise AnnotationError(f"VOC annotation path {ann} does not exist; expected an .xml file or a folder of them")
    if not files:
        raise AnnotationError(f"no .xml files in {ann}")
    if padding < 0:
        raise ValueError(f"padding must be >= 0 pixels, got {padding}")
    root = Path(images_dir).resolve()
    synsets = read_synset_mapping(synset_mapping) if synset_mapping else None
    finder = ImageFinder(root)
    samples = tuple(_parse(f, root, root, synsets, padding, finder) for f in files)
    cats = sorted({o.category for s in samples for o in s.objects})
    return Dataset(name or ann.stem, "voc", str(root), str(ann), samples, tuple(cats))
