"""IoU, the Associated Object of ORMR s V-B, and the units a detection run tests.

* ``iou``: area of intersection over area of union of two xyxy pixel boxes (DetReport s2.2).
* Associated Object: for a detection record, the ground-truth object *of the record's label*
  with the highest IoU with the record's box.  Several objects of one label in one image are
  the normal case: each record is tied to the one it overlaps most, and only that object's
  region is mutated for it.
* After mutation two records of the mutant are looked at (``mutant_records``): rcd', the record
  with the highest IoU with the associated object of *any* label (ORMR s V-B: it is compared
  with rcd in the distance D, where a label change gives D = 0 for preserving mutations), and
  the record of the *unit's label* with the highest IoU with the object, on which DetReport
  s4.4's test T is taken ("whether the generated bounding box indeed contains the expected
  object").  They differ only with a detector that reports several labels at one place.
* A *unit* is what a detection run tests: each source record with an associated object
  (``r<j>``), plus each ground-truth object no record is associated with (``o<k>``): the
  detector missed it on the source, and DetReport's "incorrect detection" (Tables 3-4) is that
  object found after mutation.

Choosing the highest IoU is a comparison too: IoUs within ``TIE_TOLERANCE`` of the highest are a tie (float
noise of the runtimes), and a tie goes to the earlier record or the lower object index, as an exact tie does.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np

from objrel.constants import TIE_TOLERANCE
from objrel.data.detections import Box, Detections


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """IoU of two xyxy boxes in pixels, in [0, 1]; 0 when they do not overlap or a box has no area."""
    ax1, ay1, ax2, ay2 = (float(v) for v in a)
    bx1, by1, bx2, by2 = (float(v) for v in b)
    iw = min(ax2, bx2) - max(ax1, bx1)
    ih = min(ay2, by2) - max(ay1, by1)
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return float(inter / union) if union > 0 else 0.0


def iou_matrix(a, b) -> np.ndarray:
    """``(N, M)`` IoU of every box of ``a`` (N x 4 xyxy) with every box of ``b`` (M x 4)."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 4)
    iw = np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0])
    ih = np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1])
    inter = np.clip(iw, 0, None) * np.clip(ih, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    union = area_a[:, None] + area_b[None, :] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    return out


@dataclass(frozen=True)
class Association:
    """Record ``record`` of an image is tied to ground-truth object ``object`` with IoU ``iou`` (> 0)."""

    record: int
    object: int
    iou: float


def associated_objects(detections: Detections, objects: Sequence) -> list[Association | None]:
    """The Associated Object of every record (ORMR s V-B), in record order.

    ``objects`` are ground-truth objects with ``category`` and ``box`` (``TargetObject``).  Only objects
    whose category equals the record's label compete; the highest IoU wins, the lower object index
    on a tie (IoUs within ``TIE_TOLERANCE``).  A record that overlaps no object of its label (IoU 0 with
    all of them, or no such object) has no associated object (``None``): it is a false positive, not a tested inference.
    """
    out: list[Association | None] = []
    if not len(detections):
        return out
    gt = np.asarray([o.box for o in objects], dtype=np.float64).reshape(-1, 4)
    m = iou_matrix(detections.box_array(), gt)
    cats = [o.category for o in objects]
    for j, label in enumerate(detections.labels):
        best, best_iou = None, 0.0
        for k, cat in enumerate(cats):
            if cat == label and m[j, k] > 0 and (best is None or m[j, k] - best_iou > TIE_TOLERANCE):
                best, best_iou = k, float(m[j, k])
        out.append(Association(j, best, best_iou) if best is not None else None)
    return out


@dataclass(frozen=True)
class RecordMatch:
    """The record compared for one unit on one image (rcd on the source, rcd' on a mutant).

    index: index of the record in that image's ``Detections``; ``None`` when no record overlaps the
           associated object (then ``label``, ``score`` and ``box`` are None and ``iou`` is 0).
    iou:   IoU of the record's box with the associated object's box, in [0, 1].
    """

    index: int | None = None
    label: str | None = None
    score: float | None = None
    iou: float = 0.0
    box: Box | None = None

    @property
    def found(self) -> bool:
        """True when a detection matched (the match has an index)."""
        return self.index is not None

    def to_dict(self) -> dict:
        """The match as a JSON-ready dict."""
        d = asdict(self)
        d["box"] = list(self.box) if self.box is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RecordMatch":
        """A match from a ``to_dict`` dict."""
        box = d.get("box")
        x1, y1, x2, y2 = (float(v) for v in box) if box is not None else (0.0, 0.0, 0.0, 0.0)
        return cls(d.get("index"), d.get("label"), d.get("score"), float(d.get("iou", 0.0)),
                   (x1, y1, x2, y2) if box is not None else None)


def record_of(detections: Detections, index: int, iou_value: float) -> RecordMatch:
    """The match of detection ``index`` at ``iou_value``: its label, score and box."""
    return RecordMatch(index, detections.labels[index], detections.scores[index], float(iou_value),
                       detections.boxes[index])


def match_record(detections: Detections, object_box: Sequence[float], label: str | None = None) -> RecordMatch:
    """The record with the highest IoU with ``object_box``: of any label (rcd' of ORMR s V-B) when
    ``label`` is None, else among the records of ``label`` only (the record DetReport's test T reads).

    Ties (IoUs within ``TIE_TOLERANCE`` of the highest) go to the earlier record (``Detections`` come sorted
    by descending score, so the surer one).  No (such) record overlapping the box gives an empty
    ``RecordMatch`` (IoU 0).
    """
    if not len(detections):
        return RecordMatch()
    ious = iou_matrix(detections.box_array(), [object_box])[:, 0]
    if label is not None:
        ious = np.where([lab == label for lab in detections.labels], ious, 0.0)
    near = np.flatnonzero((ious > 0) & (ious >= ious.max() - TIE_TOLERANCE))
    if not near.size:
        return RecordMatch()
    j = int(near[0])
    return record_of(detections, j, ious[j])


@dataclass(frozen=True)
class MutantRecords:
    """The two records of a mutant that a detection check reads.

    nearest: rcd', the record of any label with the highest IoU with the associated object (ORMR
             s V-B): the distance D compares it with rcd (IoU drop; D = 0 on a label change).
    own:     the record *of the unit's label* with the highest IoU with the object: DetReport s4.4's
             test T asks whether the object is still detected as what it is, so another label's record
             overlapping it a little better (a "face" box over a "cat face") must not hide it.
    With a single-label detector, or when rcd' has the unit's label, the two are the same record.
    """

    nearest: RecordMatch = RecordMatch()
    own: RecordMatch = RecordMatch()

    @classmethod
    def only(cls, record: RecordMatch, label: str) -> "MutantRecords":
        """A mutant whose one overlapping record is ``record``: it is ``own`` only when it has ``label``."""
        return cls(record, record if record.label == label else RecordMatch())


def mutant_records(detections: Detections, object_box: Sequence[float], label: str) -> MutantRecords:
    """rcd' (any label) and the best record of ``label`` on a mutant's detections (see ``MutantRecords``)."""
    nearest = match_record(detections, object_box)
    own = nearest if nearest.label == label else match_record(detections, object_box, label)
    return MutantRecords(nearest, own)


@dataclass(frozen=True)
class Unit:
    """One tested inference of a detection run.

    key:    ``r<j>`` for source record j (index in the score-sorted source detections) with an
            associated object, ``o<k>`` for ground-truth object k that no record is associated with.
    object: index of the associated ground-truth object (the target region of every mutant).
    label:  the record's label, which is the object's category.
    source: rcd on the source image (empty for an ``o`` unit).
    """

    key: str
    object: int
    label: str
    source: RecordMatch


def detection_units(detections: Detections, objects: Sequence) -> list[Unit]:
    """Every record with an associated object (in record order), then every object left without one."""
    units = []
    covered = set()
    for a in associated_objects(detections, objects):
        if a is None:
            continue
        covered.add(a.object)
        units.append(Unit(f"r{a.record}", a.object, objects[a.object].category,
                          record_of(detections, a.record, a.iou)))
    for k, obj in enumerate(objects):
        if k not in covered:
            units.append(Unit(f"o{k}", k, obj.category, RecordMatch()))
    return units
