"""Typed records of detection runs (units and verdicts), their constants and their table rows.

Pure values: no query and no store here (``objrel.store.detections`` reads and writes them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from objrel.constants import DETECTION_TASK
from objrel.data.sample import Box

UNIT_RECORD = "record"             # unit kind: a source record tied to its Associated Object (key r<j>)
UNIT_MISSED = "missed"             # unit kind: an object no source record is tied to (key o<k>)
UNIT_KINDS = (UNIT_RECORD, UNIT_MISSED)
SOURCE_KEY = "source"              # predictions.mutation_key of an image's source records
UNIT_ID_SEP = "/"                  # unit_id = image id + UNIT_ID_SEP + unit key; an id, never split again
SCHEMA_WITH_DETECTION_TABLES = 2   # the first schema version that keeps units and verdicts in their own tables


def is_detection_run(run) -> bool:
    """True for a stored run (``RunRecord``) of the detection task."""
    return getattr(run, "task", None) == DETECTION_TASK


def make_unit_id(image_id: str, key: str) -> str:
    """The id a unit goes by in votes, judgments and the review queue: ``"<image id>/<unit key>"``."""
    return f"{image_id}{UNIT_ID_SEP}{key}"


def unit_kind(key: str) -> str:
    """``record`` for a key ``r<j>``, ``missed`` for ``o<k>``."""
    if key[:1] == "r" and key[1:].isdigit():
        return UNIT_RECORD
    if key[:1] == "o" and key[1:].isdigit():
        return UNIT_MISSED
    raise ValueError(f"a unit key is r<record index> or o<object index>, got {key!r}")


def _box(value) -> Box | None:
    return None if value is None else tuple(float(v) for v in value)  # type: ignore[return-value]


def _list_box(value) -> list | None:
    return None if value is None else [float(v) for v in value]


@dataclass(frozen=True)
class DetectionUnit:
    """One unit of a detection run: what is tested, and test T on the source.

    image_id:     ``samples.sample_id`` of the image.
    key:          ``r<j>`` (source record j of the score-sorted records, tied to its Associated Object) or
                  ``o<k>`` (ground-truth object k that no source record is tied to).
    unit_id:      ``make_unit_id(image_id, key)``; votes, judgments and review rows name the unit by it.
    kind:         ``record`` or ``missed`` (``UNIT_KINDS``).
    object_index: the associated object's index in the image's ``samples.objects``.
    label:        the object's category, which is the record's label; ``label_index`` its index in the
                  run's class names.
    object:       the associated object, ``TargetObject.to_dict()`` (box xyxy pixels, mask): every mutant's
                  target region.
    area_ratio:   the object's region pixels / image pixels, in [0, 1].
    t_source:     test T on the source (0 or 1); ``iou_source`` the IoU in [0, 1] of rcd with the object
                  (0 when there is no rcd).
    record_*:     rcd, the source record compared (index in the source's records, label, score, box xyxy
                  pixels); all None for a missed object.
    tested:       the unit's mutants were checked (False for a missed object in a ``detected_only`` run).
    s_p, s_r, s:  object-relevancy scores (ORMR); None when no distance was defined.
    """

    image_id: str
    key: str
    unit_id: str
    kind: str
    object_index: int
    label: str
    label_index: int
    object: dict
    area_ratio: float | None
    t_source: int
    iou_source: float
    record_index: int | None
    record_label: str | None
    record_score: float | None
    record_box: Box | None
    tested: bool
    s_p: float | None = None
    s_r: float | None = None
    s: float | None = None

    def __post_init__(self):
        if self.kind not in UNIT_KINDS:
            raise ValueError(f"unit kind must be one of {UNIT_KINDS}, got {self.kind!r}")
        if self.t_source not in (0, 1):
            raise ValueError(f"test T on the source is 0 or 1, got {self.t_source!r}")
        object.__setattr__(self, "record_box", _box(self.record_box))

    @property
    def object_box(self) -> Box:
        """The associated object's box, xyxy pixels."""
        return _box(self.object["box"])  # type: ignore[return-value]

    @property
    def detected(self) -> bool:
        """T = 1 on the source: the correct inferences of a detection run."""
        return self.t_source == 1

    def to_dict(self) -> dict:
        """The unit as a JSON-ready dict."""
        d = asdict(self)
        d["record_box"] = _list_box(self.record_box)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DetectionUnit":
        """A unit from a dict (keys that are not fields are left out)."""
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


@dataclass(frozen=True)
class DetectionVerdict:
    """One relation check of one unit on one mutant.

    verdict:        holds | violated | n/a.
    outcome:        ``objrel.relations.detect.OUTCOMES`` (removed, still detected, kept, still missed,
                    missing detection, incorrect detection, not detected on the source); None when the
                    operator could not make the mutant (``note`` says why).
    t_source, t_mutant: test T on the source and on the mutant (0 or 1; ``t_mutant`` None when not checked).
    iou_source, iou_mutant: IoU in [0, 1] of rcd / rcd' with the associated object.
    label_changed:  rcd' has another label than rcd (None when either is missing).
    distance:       ORMR's D for this mutant (None where the source has no record).
    seed:           the mutation's derived seed; None when no mutant was attempted (MR-1 on a unit not
                    detected on the source).
    record_*:       rcd', the mutant's record compared (index in ``detections``, label, score, box xyxy
                    pixels); None when no mutant record overlaps the object.
    detections:     every record on the mutant (``Detections.to_dict``); None when no mutant was made.
    """

    image_id: str
    unit_key: str
    mutation_key: str
    operator: str
    relation: str
    verdict: str
    outcome: str | None
    t_source: int
    t_mutant: int | None
    iou_source: float
    iou_mutant: float | None
    label_changed: bool | None
    distance: float | None
    seed: int | None
    record_index: int | None = None
    record_label: str | None = None
    record_score: float | None = None
    record_box: Box | None = None
    detections: dict | None = None
    note: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "record_box", _box(self.record_box))
        if self.seed is not None:
            object.__setattr__(self, "seed", int(self.seed))

    @property
    def unit_id(self) -> str:
        """The unit id: the image id and unit key joined."""
        return make_unit_id(self.image_id, self.unit_key)

    def to_dict(self) -> dict:
        """The verdict as a JSON-ready dict."""
        d = asdict(self)
        d["record_box"] = _list_box(self.record_box)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "DetectionVerdict":
        """A verdict from a dict (keys that are not fields are left out)."""
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


@dataclass(frozen=True)
class ImageResult:
    """Everything one image of a detection run writes, in one transaction (:func:`write_image`).

    sample:   the image's ``samples`` row (without ``run_id``).
    source:   every record on the source (``Detections.to_dict``); None for a skipped image.
    units, verdicts: the image's units and their checks.
    votes:    ``votes`` rows (without ``run_id``), ``sample_id`` = the unit's ``unit_id``.
    """

    sample: dict
    source: dict | None = None
    units: tuple[DetectionUnit, ...] = ()
    verdicts: tuple[DetectionVerdict, ...] = ()
    votes: tuple[dict, ...] = ()

    @property
    def skipped(self) -> bool:
        """True when the image was skipped."""
        return self.sample.get("status") == "skipped"

    @property
    def tested(self) -> int:
        """Tested units of the image."""
        return sum(u.tested for u in self.units)


@dataclass(frozen=True)
class OutcomeCount:
    """``n`` verdicts of one mutation with one (verdict, outcome) pair, over a whole run."""

    mutation_key: str
    relation: str
    verdict: str
    outcome: str | None
    n: int

    def to_dict(self) -> dict:
        """The outcome count as a dict."""
        return asdict(self)


# ---------------------------------------------------------------- writing


def _unit_row(run_id: int, u: DetectionUnit) -> dict:
    d = u.to_dict()
    return {"run_id": run_id, "image_id": d.pop("image_id"), "unit_key": d.pop("key"), **d}


def _verdict_row(run_id: int, v: DetectionVerdict) -> dict:
    d = v.to_dict()
    d["seed"] = None if v.seed is None else str(v.seed)
    return {"run_id": run_id, **d}
