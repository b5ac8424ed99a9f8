"""Metamorphic relations for detection records (DetReport s4.4, ORMR s V-B).

Test T (DetReport s4.4): ``T = 1`` when a record of the unit's label has IoU >= ``iou_threshold``
(Delta_c, default 0.3, YOLOv3's default) with the associated ground-truth object; else ``T = 0``.
T is one function of (an image's records, the object) and is taken the same way on the source and on
every mutant (``object_test``): on the best record *of that label* for the object (``MutantRecords.own``),
not on rcd' (the best record of any label), so a multi-class detector's overlapping record of another
label does not hide the object; rcd' serves ORMR's distance D only (``MutantRecords.nearest``).
On the source that best record is the unit's own record in the usual case; it is another record when a
record of the label tied to a neighbouring object overlaps this one better (or is the only one to overlap
an object no record is tied to, an ``o`` unit).  Reading the unit's own record on the source and the best
record on the mutant would let a detector that returns the same records for every image "find" such an
object after every mutation (an "incorrect detection" that nothing caused).

* MR-1, object-corrupting mutation: T should flip.  It is checked only where the source was
  detected (``T = 1``, the correct inferences of EMSE21 s4.1): it holds when the object is no
  longer detected (``removed``) and is violated when it still is (``still detected``).  Where
  the source was not detected there is nothing to remove: verdict ``n/a``.
* MR-2, object-preserving mutation: T should stay.  A violation is a *missing detection*
  (T 1 -> 0: found on the source, lost on the mutant) or an *incorrect detection* (T 0 -> 1:
  missed on the source, found on the mutant), the two columns of DetReport Tables 3-4.

Ties: DetReport s4.4 compares IoU >= Delta_c strictly; objrel counts an IoU within ``TIE_TOLERANCE`` below
Delta_c as reaching it (the strict comparison's answer for an IoU equal to Delta_c), so float noise in the
IoU cannot turn T, and a check whose T read such an IoU carries ``tie`` (``objrel.relations.common``).

DetReport s4.4.1 writes D = 1 when T(source) = T(mutant) but says in the prose that D = 1 means the
results differ and satisfies MR-1; we implement the prose (the relation's stated meaning).

Continuous distances (ORMR s V-B), with IoU = IoU(rcd, associated object) on the source and
IoU' = IoU(rcd', associated object) on the mutant (rcd' of any label, as s V-B selects it).  rcd is
chosen on the source the way s V-B chooses rcd' on the mutant: the record of any label nearest the
associated object (``MutantRecords.nearest`` of the source).  It is the unit's own record unless another
record overlaps the object better; then the paper's reading (the unit's record against the best one)
would call an unchanged output changed:

* preserving: ``D = 1 - max(0, IoU - IoU') / IoU`` when rcd' has rcd's label, else 0;
* removing:   ``D = max(0, IoU - IoU') / IoU``.

Both are defined only where the source has a record (IoU > 0).  The unit's S_p, S_r and S are
their weighted averages with weights 1 / (H_n N), as for classifiers (``objrel.relations.classify``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from objrel.constants import TIE_TOLERANCE
from objrel.relations import common as C
from objrel.relations.associate import MutantRecords, RecordMatch, match_record

# Delta_c of DetReport s4.4: a record "contains" the object when its IoU with the ground truth is at
# least this.  Raise it and fewer source records count as detected (fewer units tested by MR-1)
# and small box shifts on a mutant flip T more easily.
DEFAULT_IOU_THRESHOLD = 0.3

# Outcomes (detection_verdicts.outcome in the store).
REMOVED = "removed"                          # MR-1 holds: T 1 -> 0
STILL_DETECTED = "still detected"            # MR-1 violated: T 1 -> 1
KEPT = "kept"                                # MR-2 holds: T 1 -> 1
STILL_MISSED = "still missed"                # MR-2 holds: T 0 -> 0
MISSING_DETECTION = "missing detection"      # MR-2 violated: T 1 -> 0 (DetReport Tables 3-4)
INCORRECT_DETECTION = "incorrect detection"  # MR-2 violated: T 0 -> 1 (DetReport Tables 3-4)
NOT_DETECTED = "not detected on the source"  # MR-1 not applicable: T 0 on the source
OUTCOMES = (REMOVED, STILL_DETECTED, KEPT, STILL_MISSED, MISSING_DETECTION, INCORRECT_DETECTION, NOT_DETECTED)


def check_threshold(threshold: float) -> float:
    """The IoU threshold as a float; ValueError unless it is in (0, 1]."""
    t = float(threshold)
    if not 0.0 < t <= 1.0:
        raise ValueError(f"IoU threshold must be in (0, 1], got {threshold!r}")
    return t


def iou_test(match: RecordMatch, label: str, threshold: float = DEFAULT_IOU_THRESHOLD) -> int:
    """DetReport's T: 1 when ``match`` is a record of ``label`` with IoU >= ``threshold`` less ``TIE_TOLERANCE``
    (an IoU within the tolerance of the threshold reaches it), else 0."""
    t = check_threshold(threshold)
    return int(match.found and match.label == label and match.iou >= t - TIE_TOLERANCE)


def iou_tie(match: RecordMatch, label: str, threshold: float = DEFAULT_IOU_THRESHOLD) -> bool:
    """True when ``iou_test`` read an IoU within ``TIE_TOLERANCE`` of ``threshold`` (decided as reaching it)."""
    return bool(match.found and match.label == label and C.tied(match.iou - check_threshold(threshold)))


def object_test(detections, object_box, label: str, threshold: float = DEFAULT_IOU_THRESHOLD) -> int:
    """DetReport's T of one image's records for one object: 1 when the best record of ``label`` for
    ``object_box`` (``match_record``) has IoU >= ``threshold``, else 0.  The engine takes it this way on the
    source and on every mutant."""
    return iou_test(match_record(detections, object_box, label), label, threshold)


def distance_preserving(iou_source: float, iou_mutant: float, same_label: bool) -> float | None:
    """``1 - max(0, IoU - IoU') / IoU`` if the label stayed, else 0 (ORMR s V-B); None when IoU = 0.

    1 when the mutant's record overlaps the object at least as well as the source record did."""
    if iou_source <= 0:
        return None
    if not same_label:
        return 0.0
    return 1.0 - max(0.0, iou_source - iou_mutant) / iou_source


def distance_removing(iou_source: float, iou_mutant: float) -> float | None:
    """``max(0, IoU - IoU') / IoU`` (ORMR s V-B); None when IoU = 0.  1 when nothing overlaps the
    object any more, 0 when the mutant's record overlaps it at least as well as before."""
    if iou_source <= 0:
        return None
    return max(0.0, iou_source - iou_mutant) / iou_source


@dataclass(frozen=True)
class DetectionCheck:
    """One relation check of one unit: source record vs the mutant's records.

    t_source, t_mutant: test T on each (0 or 1; on the mutant over the records of the unit's label);
    iou_source, iou_mutant: IoU of rcd and rcd' (any label) with the associated object; label_changed:
    rcd' has another label than rcd (None when either is missing); distance: ORMR's D for this
    mutant (None when the source has no record); outcome: one of ``OUTCOMES``; iou_own: IoU of the
    mutant's best record of the unit's label (the one T reads), None when the check did not run.
    """

    relation: str
    verdict: str
    outcome: str
    t_source: int
    t_mutant: int | None
    iou_source: float
    iou_mutant: float | None
    label_changed: bool | None
    distance: float | None
    iou_own: float | None = None
    tie: bool = False

    def to_dict(self) -> dict:
        """The check as a dict."""
        return asdict(self)


def _label_changed(src: RecordMatch, mut: RecordMatch) -> bool | None:
    return (mut.label != src.label) if (src.found and mut.found) else None


def _records(mut: MutantRecords | RecordMatch, label: str) -> MutantRecords:
    # a bare RecordMatch stands for a mutant whose only record near the object is that one
    return mut if isinstance(mut, MutantRecords) else MutantRecords.only(mut, label)


def check_mr1(src: MutantRecords | RecordMatch, mut: MutantRecords | RecordMatch, label: str,
              threshold: float = DEFAULT_IOU_THRESHOLD) -> DetectionCheck:
    """Object corrupted: a detected object should no longer be detected (T 1 -> 0).

    T reads ``.own`` on both sides (the unit's label, DetReport s4.4); D reads ``.nearest`` on both
    (rcd and rcd', ORMR s V-B).  A bare ``RecordMatch`` stands for a side whose only record near the
    object is that one."""
    s = _records(src, label)
    ts = iou_test(s.own, label, threshold)
    if ts == 0:
        return DetectionCheck("MR-1", C.NOT_APPLICABLE, NOT_DETECTED, 0, None, s.nearest.iou, None, None, None)
    m = _records(mut, label)
    tm = iou_test(m.own, label, threshold)
    return DetectionCheck("MR-1", C.HOLDS if tm == 0 else C.VIOLATED, REMOVED if tm == 0 else STILL_DETECTED,
                          ts, tm, s.nearest.iou, m.nearest.iou, _label_changed(s.nearest, m.nearest),
                          distance_removing(s.nearest.iou, m.nearest.iou), m.own.iou,
                          iou_tie(s.own, label, threshold) or iou_tie(m.own, label, threshold))


def check_mr2(src: MutantRecords | RecordMatch, mut: MutantRecords | RecordMatch, label: str,
              threshold: float = DEFAULT_IOU_THRESHOLD) -> DetectionCheck:
    """Background corrupted: T should stay; 1 -> 0 is a missing detection, 0 -> 1 an incorrect one.

    T reads ``.own`` on both sides (the unit's label, DetReport s4.4); D reads ``.nearest`` on both
    (rcd and rcd', ORMR s V-B: 0 when rcd' carries another label than rcd)."""
    s, m = _records(src, label), _records(mut, label)
    src = s.nearest
    ts, tm = iou_test(s.own, label, threshold), iou_test(m.own, label, threshold)
    if ts == tm:
        verdict, outcome = C.HOLDS, (KEPT if ts else STILL_MISSED)
    else:
        verdict, outcome = C.VIOLATED, (MISSING_DETECTION if ts else INCORRECT_DETECTION)
    same = src.found and m.nearest.found and m.nearest.label == src.label
    return DetectionCheck("MR-2", verdict, outcome, ts, tm, src.iou, m.nearest.iou, _label_changed(src, m.nearest),
                          distance_preserving(src.iou, m.nearest.iou, same), m.own.iou,
                          iou_tie(s.own, label, threshold) or iou_tie(m.own, label, threshold))


def check(relation: str, src: MutantRecords | RecordMatch, mut: MutantRecords | RecordMatch, label: str,
          threshold: float = DEFAULT_IOU_THRESHOLD) -> DetectionCheck:
    """The detection check of ``relation`` (MR-1 or MR-2) on one unit's source record and mutant records."""
    if relation == "MR-1":
        return check_mr1(src, mut, label, threshold)
    if relation == "MR-2":
        return check_mr2(src, mut, label, threshold)
    raise ValueError(f"no detection relation {relation!r}; expected MR-1 or MR-2")
