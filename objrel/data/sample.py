"""The one sample type every loader yields.

Boxes are ``(x1, y1, x2, y2)`` in pixels of the decoded, upright image (xyxy,
x to the right, y down, x2/y2 exclusive).  Masks are computed lazily from the
annotation (COCO polygon list or RLE dict) so a 50,000-image dataset costs no
pixel memory until a sample is tested.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Box = tuple[float, float, float, float]


@dataclass(frozen=True)
class TargetObject:
    """One annotated object.

    category:     the dataset's name for it (``"Egyptian cat"``).
    class_index:  index into the model's outputs, or ``None`` when the loader could
                  not resolve it; the engine then looks ``category`` up in the
                  model's class names and skips the sample if that fails.
    box:          xyxy in pixels.
    segmentation: COCO polygon list ``[[x, y, x, y, ...], ...]``, COCO RLE dict, or
                  ``None`` (the box is then the object's region).
    iscrowd:      COCO crowd flag; crowd regions count as target pixels.
    """

    category: str
    class_index: int | None
    box: Box
    segmentation: Any = None
    iscrowd: bool = False

    def to_dict(self) -> dict:
        return {
            "category": self.category,
            "class_index": self.class_index,
            "box": list(self.box),
            "segmentation": self.segmentation,
            "iscrowd": self.iscrowd,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TargetObject":
        return cls(
            category=d["category"],
            class_index=d.get("class_index"),
            box=tuple(float(v) for v in d["box"]),  # type: ignore[arg-type]
            segmentation=d.get("segmentation"),
            iscrowd=bool(d.get("iscrowd", False)),
        )


@dataclass(frozen=True)
class Sample:
    """One source image and its target objects.

    sample_id:  stable id within the dataset (COCO image id, file stem, ...).
    image_path: absolute path, already checked to lie inside the dataset root
                (empty when the path could not be resolved inside it; see ``problem``).
    rel_path:   path relative to the dataset root, as stored in runs.
    width, height: size the annotation declares, or ``None`` when it declares none.
    objects:    the target objects; their union is the target region.
    problem:    ``(code, reason)`` when the annotation itself is unusable; the
                engine records the sample as skipped with that reason.
    region_source: ``"annotation"`` or ``"detector"`` (regions proposed by a model).
    """

    sample_id: str
    image_path: str
    rel_path: str
    width: int | None
    height: int | None
    objects: tuple[TargetObject, ...] = ()
    problem: tuple[str, str] | None = None
    region_source: str = "annotation"
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def categories(self) -> tuple[str, ...]:
        """Sorted unique category names of the target objects (the multi-label truth)."""
        return tuple(sorted({o.category for o in self.objects}))
