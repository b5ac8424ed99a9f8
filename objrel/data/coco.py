"""COCO-format annotation files, read through pycocotools.

Boxes (xywh in the file, converted to xyxy), polygons, uncompressed and
compressed RLE and crowd annotations are supported.  A category may name an
ImageNet-1k class so single-label classifiers can be tested on COCO-format data:
give it ``"imagenet_index": 285`` (or ``"class_index"``), or a name the model's
class list knows, or pass ``category_map``.
"""

from __future__ import annotations

import contextlib
import io
from collections import defaultdict
from pathlib import Path

from pycocotools.coco import COCO

from objrel.constants import MAX_ANNOTATION_FILE_BYTES
from objrel.errors import AnnotationError, BadSampleError
from objrel.data import box_limits
from objrel.data.bounded import parse_json, read_limited
from objrel.data.dataset import Dataset
from objrel.data.locate import ImageFinder
from objrel.data.region import clip_objects
from objrel.data.sample import Sample, TargetObject


def _read_json(path: Path) -> dict:
    """The parsed file; ``InputFileError`` (an ``AnnotationError``) when it is missing, over
    ``MAX_ANNOTATION_FILE_BYTES`` or ``MAX_NESTING_DEPTH``, or not JSON; ``AnnotationError`` when its bytes
    already show more than ``MAX_BOXES_TOTAL`` boxes (refused before it is parsed into memory)."""
    what = f"annotation file {path.name}"
    raw = read_limited(path, what, MAX_ANNOTATION_FILE_BYTES)
    box_limits.check_total(box_limits.count_box_keys(raw), what)
    return parse_json(raw, what, MAX_ANNOTATION_FILE_BYTES)


def _check_schema(data: dict, path: Path) -> None:
    """Raise ``AnnotationError`` naming the first record pycocotools could not index."""
    required = {"images": ("id",), "annotations": ("id", "image_id", "category_id"), "categories": ("id",)}
    for key, fields in required.items():
        records = data[key]
        if not isinstance(records, list):
            raise AnnotationError(
                f"{path} is not a COCO annotation file: '{key}' is {type(records).__name__}, expected a list"
            )
        for n, rec in enumerate(records):
            if not isinstance(rec, dict):
                raise AnnotationError(
                    f"{path}: {key}[{n}] is {type(rec).__name__}, expected a JSON object"
                )
            missing = [f for f in fields if f not in rec]
            if missing:
                raise AnnotationError(f"{path}: {key}[{n}] has no {', '.join(repr(f) for f in missing)}")


def _id_order(image: dict):
    """Sort key: integer ids numerically (2 before 10), then any other ids as text."""
    iid = image.get("id")
    if isinstance(iid, int) and not isinstance(iid, bool):
        return (0, iid, "")
    return (1, 0, str(iid))


def _category_index(cat: dict, category_map: dict | None) -> int | None:
    if category_map:
        for key in (cat.get("name"), cat.get("id"), str(cat.get("id"))):
            if key in category_map and isinstance(category_map[key], int):
                return int(category_map[key])
    for key in ("imagenet_index", "class_index"):
        if isinstance(cat.get(key), int):
            return int(cat[key])
    return None


def _dropped(ann: dict, category: str | None, code: str, reason: str, class_index: int | None = None) -> dict:
    """The record of one annotation the loader could not use (see ``Sample.dropped``)."""
    return {"annotation": ann.get("id"), "category": category, "class_index": class_index, "code": code,
            "reason": reason}


def load_coco(annotation_file, images_dir, category_map: dict | None = None, name: str | None = None) -> Dataset:
    """Load a COCO annotation file.

    annotation_file: path of the JSON file (``images``, ``annotations``, ``categories``).
    images_dir:      the dataset root; every ``file_name`` must resolve inside it (a name with no file there
                     is looked up by its trailing components: ``objrel.data.locate``).
    category_map:    optional ``{category name or id: model class index}``.

    Returns a ``Dataset`` with one ``Sample`` per image, sorted by image id.  An
    annotation the loader cannot use (unknown category id, a bbox that is not four
    numbers) goes to the sample's ``dropped`` list; the engine decides whether that
    skips the image (an invalid annotation of the tested class) or not.  An image
    with no usable object or a path escaping the root becomes a sample with
    ``problem`` set, so the run records it as skipped instead of failing.
    Raises ``AnnotationError`` when the file is not a COCO annotation at all.
    """
    ann_path = Path(annotation_file).resolve()
    data = _read_json(ann_path)
    if not isinstance(data, dict) or not isinstance(data.get("images"), list):
        raise AnnotationError(
            f"{ann_path} is not a COCO annotation file: expected a JSON object with an 'images' list, "
            f"got {type(data).__name__} with keys {sorted(data)[:8] if isinstance(data, dict) else '-'}"
        )
    data.setdefault("annotations", [])
    data.setdefault("categories", [])
    if isinstance(data["annotations"], list):
        box_limits.check_total(len(data["annotations"]), f"annotation file {ann_path.name}")
    _check_schema(data, ann_path)
    coco = COCO()
    coco.dataset = data
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints progress lines
            coco.createIndex()
    except (KeyError, TypeError) as exc:  # e.g. an id that is a list, not a number or string
        raise AnnotationError(f"{ann_path} is not a valid COCO annotation file: {type(exc).__name__}: {exc}") from exc

    cats = {c["id"]: c for c in data["categories"]}
    cat_index = {cid: _category_index(c, category_map) for cid, c in cats.items()}
    root = Path(images_dir).resolve()
    finder = ImageFinder(root)

    anns_by_image: dict = defaultdict(list)
    for ann in data["annotations"]:
        anns_by_image[ann.get("image_id")].append(ann)

    samples = []
    for img in sorted(data["images"], key=_id_order):
        sid = str(img.get("id"))
        rel = str(img.get("file_name", ""))
        width, height = img.get("width"), img.get("height")
        problem = None
        image_path = ""  # stays empty unless the path resolves inside the root
        objects: list[TargetObject] = []
        names: list[str] = []          # how a note names each object
        notes: tuple[str, ...] = ()
        dropped: list[dict] = []
        try:
            rel, found = finder.locate(rel)
            image_path = str(found)
            n_boxes = len(anns_by_image.get(img.get("id"), ()))
            if n_boxes > box_limits.MAX_BOXES_PER_IMAGE:
                raise BadSampleError(box_limits.TOO_MANY_BOXES, box_limits.per_image_reason(n_boxes))
            for ann in anns_by_image.get(img.get("id"), []):
                cid = ann.get("category_id")
                if cid not in cats:
                    dropped.append(_dropped(ann, None, "unknown-label",
                                            f"annotation {ann.get('id')} has category_id {cid!r}, which is not "
                                            f"among the file's categories {sorted(cats, key=str)[:20]}"))
                    continue
                category = str(cats[cid].get("name", cid))
                bbox = ann.get("bbox")
                try:
                    if not (isinstance(bbox, list) and len(bbox) == 4):
                        raise TypeError
                    x, y, w, h = (float(v) for v in bbox)
                except (TypeError, ValueError):
                    dropped.append(_dropped(ann, category, "bad-box",
                                            f"annotation {ann.get('id')} bbox {bbox!r} is not four numbers "
                                            f"[x, y, w, h]", cat_index[cid]))
                    continue
                seg = ann.get("segmentation")
                if seg in ([], {}, None):
                    seg = None
                objects.append(
                    TargetObject(
                        category=category,
                        class_index=cat_index[cid],
                        box=(x, y, x + w, y + h),
                        segmentation=seg,
                        iscrowd=bool(ann.get("iscrowd", 0)),
                    )
                )
                names.append(f"annotation {ann.get('id')}")
            clipped, notes = clip_objects(objects, width, height, names)
            objects = list(clipped)
            if not objects:
                if dropped:
                    raise BadSampleError(dropped[0]["code"], f"no usable annotation: {dropped[0]['reason']}")
                raise BadSampleError("empty-region", "image has no annotated object")
        except BadSampleError as exc:
            problem = (exc.code, exc.reason)
        samples.append(
            Sample(
                sample_id=sid,
                image_path=image_path,
                rel_path=rel,
                width=int(width) if isinstance(width, int) else None,
                height=int(height) if isinstance(height, int) else None,
                objects=tuple(objects),
                problem=problem,
                dropped=tuple(dropped),
                notes=notes,
            )
        )
    return Dataset(
        name=name or ann_path.stem,
        format="coco",
        root=str(root),
        annotation=str(ann_path),
        samples=tuple(samples),
        categories=tuple(str(c.get("name")) for c in data["categories"]),
    )
