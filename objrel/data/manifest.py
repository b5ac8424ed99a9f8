"""A plain JSON manifest for a folder of the user's own images.

```json
{"images": [
  {"path": "cats/tom.jpg", "id": "tom",
   "objects": [{"label": "tabby", "box": [10, 20, 200, 180]},
               {"label": "tabby", "polygon": [[12, 30], [190, 25], [180, 170], [15, 160]]}]}
]}
```
``box`` is xyxy in pixels; ``polygon`` a list of ``[x, y]`` points (its box is
computed when ``box`` is absent).  ``label`` is a class name the model knows or
an integer class index.  A bare list of image entries is accepted too.
"""

from __future__ import annotations

from pathlib import Path

from objrel.constants import MAX_ANNOTATION_FILE_BYTES
from objrel.errors import AnnotationError, BadSampleError
from objrel.data.bounded import parse_json
from objrel.data.dataset import Dataset
from objrel.data.locate import ImageFinder
from objrel.data import box_limits
from objrel.data.region import clip_objects
from objrel.data.sample import Sample, TargetObject


def _object(entry: dict, where: str) -> TargetObject:
    if not isinstance(entry, dict):
        raise BadSampleError("bad-annotation", f"{where}: object must be a JSON object, got {type(entry).__name__}")
    label = entry.get("label")
    if label is None:
        raise BadSampleError("bad-annotation", f"{where}: object has no 'label'")
    class_index = label if isinstance(label, int) else None
    polygon = entry.get("polygon")
    segmentation = None
    if polygon is not None:
        try:
            pts = [(float(x), float(y)) for x, y in polygon]
        except (TypeError, ValueError) as exc:
            raise BadSampleError("bad-annotation", f"{where}: polygon must be a list of [x, y] points") from exc
        if len(pts) < 3:
            raise BadSampleError("empty-region", f"{where}: polygon has {len(pts)} points, expected at least 3")
        segmentation = [[c for p in pts for c in p]]
    box = entry.get("box")
    if box is None:
        if segmentation is None:
            raise BadSampleError("bad-annotation", f"{where}: object needs a 'box' or a 'polygon'")
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        box = [min(xs), min(ys), max(xs), max(ys)]
    if not (isinstance(box, list) and len(box) == 4):
        raise BadSampleError("bad-box", f"{where}: box {box!r} is not [x1, y1, x2, y2]")
    try:
        xyxy = tuple(float(v) for v in box)
    except (TypeError, ValueError) as exc:
        raise BadSampleError("bad-box", f"{where}: box {box!r} is not four numbers [x1, y1, x2, y2]") from exc
    return TargetObject(str(label), class_index, xyxy, segmentation)  # type: ignore[arg-type]


def load_manifest(manifest_file, images_dir=None, name: str | None = None) -> Dataset:
    """Load a manifest; ``images_dir`` defaults to the manifest's folder."""
    path = Path(manifest_file).resolve()
    data = parse_json(path, f"manifest {path}", MAX_ANNOTATION_FILE_BYTES)
    entries = data.get("images") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise AnnotationError(f"manifest {path}: expected a list of images or {{'images': [...]}}")
    box_limits.check_total(sum(len(e.get("objects") or ()) for e in entries
                               if isinstance(e, dict) and isinstance(e.get("objects"), list)),
                           f"manifest {path.name}")
    root = Path(images_dir).resolve() if images_dir else path.parent
    finder = ImageFinder(root)   # a path with no file there is looked up by its trailing components
    samples = []
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict) or "path" not in entry:
            samples.append(Sample(f"#{n}", "", "", None, None, problem=("bad-annotation", f"entry {n} has no 'path'")))
            continue
        rel = str(entry["path"])
        sid = str(entry.get("id", rel))
        image_path = ""  # stays empty unless the path resolves inside the root
        try:
            rel, found = finder.locate(rel)
            image_path = str(found)
            objs = entry.get("objects") or []
            if isinstance(objs, list) and len(objs) > box_limits.MAX_BOXES_PER_IMAGE:
                raise BadSampleError(box_limits.TOO_MANY_BOXES, box_limits.per_image_reason(len(objs)))
            objects = tuple(_object(o, f"{rel} object {i}") for i, o in enumerate(objs))
            if not objects:
                raise BadSampleError("empty-region", "entry has no object")
            width, height = entry.get("width"), entry.get("height")
            objects, notes = clip_objects(objects, width, height, [f"{rel} object {i}" for i in range(len(objects))])
            samples.append(Sample(sid, image_path, rel, width, height, objects, notes=notes))
        except BadSampleError as exc:
            samples.append(Sample(sid, image_path, rel, None, None, problem=(exc.code, exc.reason)))
    samples.sort(key=lambda s: s.sample_id)
    cats = sorted({o.category for s in samples for o in s.objects})
    return Dataset(name or path.stem, "manifest", str(root), str(path), tuple(samples), tuple(cats))
