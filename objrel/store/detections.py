"""Detection results in the store: typed records for units and verdicts, and every query on them.

Layout of a detection run (``runs.task == "detection"``):

* ``samples``: one row per image, ``sample_id`` = the dataset's image id.  ``status`` is ``tested`` when
  at least one unit of the image was tested, ``untested`` when none was, ``skipped`` (``skip_code``,
  ``skip_reason``) when the image could not be tested.  ``objects`` are the image's ground-truth objects
  whose label the detector reports (``TargetObject.to_dict``: box xyxy pixels, mask), ``gt_labels`` /
  ``gt_categories`` their label indices and names; the classifier columns ``predicted``, ``correct``,
  ``area_ratio`` and the scores stay empty (they belong to units).
* ``predictions``: one row per tested or untested image, mutation key ``"source"``: every record the
  detector gave on the source (``Detections.to_dict``: boxes xyxy pixels, labels, scores).
* ``detection_units`` (:class:`DetectionUnit`): one row per unit, the inference a detection run tests.
* ``detection_verdicts`` (:class:`DetectionVerdict`): one row per mutation of a tested unit, with the
  mutant's records and the compared record rcd'.
* ``votes``: one row per tested unit and vote group, ``sample_id`` = the unit's ``unit_id``.  A vote
  means the same for both tasks, so flagged lists (``Store.flagged_sample_ids``), judgments and review
  samples name a detection unit by its ``unit_id``.

Every image is committed in one transaction (:func:`write_image`), so a killed run never leaves half an
image and a resumed run skips the images already stored.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import and_, case, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from objrel.store import schema as S
from objrel.store.columns import FLAG_COLUMNS, FLAG_RELATIONS, INFERENCE_COLUMNS, LABEL_COLUMNS
from objrel.store.detection_records import (DETECTION_TASK, DetectionUnit, DetectionVerdict, ImageResult,
                                            OutcomeCount, SCHEMA_WITH_DETECTION_TABLES, SOURCE_KEY,
                                            UNIT_ID_SEP, UNIT_KINDS, UNIT_MISSED, UNIT_RECORD, _unit_row,
                                            _verdict_row, is_detection_run, make_unit_id, unit_kind)
from objrel.store.store import Store


def write_image(store: "Store", run_id: int, result: ImageResult) -> bool:
    """Commit one image of a detection run with all its rows in a single transaction.

    ``runs.n_done`` grows by one image, ``n_skipped`` by one for a skipped image, ``n_tested`` by the
    image's tested units.  Returns False and writes nothing when the image is already stored, so a
    resumed run never duplicates rows.
    """
    rid = int(run_id)
    image_id = result.sample.get("sample_id")
    if not image_id:
        raise ValueError(f"an image result needs the image id in sample['sample_id'], got {result.sample!r}")
    strays = sorted(({u.image_id for u in result.units} | {v.image_id for v in result.verdicts}) - {image_id})
    if strays:
        raise ValueError(f"the units and verdicts of image {image_id!r} must name it; got image ids {strays}")
    try:
        with store.engine.begin() as c:
            store.check_lease(c, rid)   # RunLeaseLost (nothing written) where the run is no longer ours
            c.execute(insert(S.samples).values(run_id=rid, **result.sample))
            if result.source is not None:
                c.execute(insert(S.predictions).values(run_id=rid, sample_id=image_id, mutation_key=SOURCE_KEY,
                                                       seed=None, prediction=result.source))
            if result.units:
                c.execute(insert(S.detection_units), [_unit_row(rid, u) for u in result.units])
            if result.verdicts:
                c.execute(insert(S.detection_verdicts), [_verdict_row(rid, v) for v in result.verdicts])
            if result.votes:
                c.execute(insert(S.votes), [{"run_id": rid, **v} for v in result.votes])
            c.execute(update(S.runs).where(S.runs.c.id == rid).values(
                n_done=S.runs.c.n_done + 1, n_skipped=S.runs.c.n_skipped + int(result.skipped),
                n_tested=S.runs.c.n_tested + result.tested, heartbeat_at=dt.datetime.now(dt.timezone.utc)))
    except IntegrityError:
        return False
    return True


# ---------------------------------------------------------------- reading


def _unit(row) -> DetectionUnit:
    m = row._mapping
    return DetectionUnit(
        image_id=m["image_id"], key=m["unit_key"], unit_id=m["unit_id"], kind=m["kind"],
        object_index=int(m["object_index"]), label=m["label"], label_index=int(m["label_index"]),
        object=dict(m["object"]), area_ratio=m["area_ratio"], t_source=int(m["t_source"]),
        iou_source=float(m["iou_source"]), record_index=m["record_index"], record_label=m["record_label"],
        record_score=m["record_score"], record_box=m["record_box"], tested=bool(m["tested"]),
        s_p=m["s_p"], s_r=m["s_r"], s=m["s"])


def _verdict(row) -> DetectionVerdict:
    m = dict(row._mapping)
    m.pop("id")
    m.pop("run_id")
    m["seed"] = None if m["seed"] is None else int(m["seed"])
    return DetectionVerdict(**m)


def units(store: "Store", run_id: int, *, image_id: str | None = None,
          tested: bool | None = None) -> list[DetectionUnit]:
    """The units of a run (of one image, only tested or untested ones), by image id then unit order."""
    t = S.detection_units
    q = select(t).where(t.c.run_id == int(run_id))
    if image_id is not None:
        q = q.where(t.c.image_id == str(image_id))
    if tested is not None:
        q = q.where(t.c.tested.is_(bool(tested)))
    with store.engine.connect() as c:
        return [_unit(r) for r in c.execute(q.order_by(t.c.image_id, t.c.id))]


def unit(store: "Store", run_id: int, unit_id: str) -> DetectionUnit:
    """The unit ``unit_id`` of a run; KeyError naming the run's first units when there is none."""
    t = S.detection_units
    with store.engine.connect() as c:
        row = c.execute(select(t).where(t.c.run_id == int(run_id), t.c.unit_id == str(unit_id))).first()
        if row is None:
            known = list(c.execute(select(t.c.unit_id).where(t.c.run_id == int(run_id))
                                   .order_by(t.c.image_id, t.c.id).limit(5)).scalars())
    if row is None:
        raise KeyError(f"run {run_id} has no detection unit {unit_id!r}; expected a unit id such as "
                       f"{known or ['<image id>/r0']}")
    return _unit(row)


def verdicts(store: "Store", run_id: int, *, image_id: str | None = None, unit_key: str | None = None,
             relation: str | None = None) -> list[DetectionVerdict]:
    """The verdicts of a run (of one image, of one unit, of one relation), in the order they were written."""
    t = S.detection_verdicts
    q = select(t).where(t.c.run_id == int(run_id))
    if unit_key is not None and image_id is None:
        raise ValueError(f"unit key {unit_key!r} names a unit only together with its image id")
    if image_id is not None:
        q = q.where(t.c.image_id == str(image_id))
    if unit_key is not None:
        q = q.where(t.c.unit_key == str(unit_key))
    if relation is not None:
        q = q.where(t.c.relation == relation)
    with store.engine.connect() as c:
        return [_verdict(r) for r in c.execute(q.order_by(t.c.image_id, t.c.id))]


def unit_verdicts(store: "Store", run_id: int, u: DetectionUnit) -> list[DetectionVerdict]:
    """The verdicts of one unit, in plan order."""
    return verdicts(store, run_id, image_id=u.image_id, unit_key=u.key)


def source_detections(store: "Store", run_id: int, image_id: str) -> dict | None:
    """Every record on the image's source (``Detections.to_dict``: boxes xyxy pixels, labels, scores);
    None for a skipped image or an image not stored."""
    t = S.predictions
    q = select(t.c.prediction).where(t.c.run_id == int(run_id), t.c.sample_id == str(image_id),
                                     t.c.mutation_key == SOURCE_KEY)
    with store.engine.connect() as c:
        return c.execute(q).scalar()


def outcome_counts(store: "Store", run_id: int) -> list[OutcomeCount]:
    """How many verdicts of each mutation had each (verdict, outcome) pair, over the whole run (one query)."""
    t = S.detection_verdicts
    q = (select(t.c.mutation_key, t.c.relation, t.c.verdict, t.c.outcome, func.count())
         .where(t.c.run_id == int(run_id))
         .group_by(t.c.mutation_key, t.c.relation, t.c.verdict, t.c.outcome))
    with store.engine.connect() as c:
        rows = c.execute(q).all()
    return sorted((OutcomeCount(k, rel, v, o, int(n)) for k, rel, v, o, n in rows),
                  key=lambda r: (r.mutation_key, r.verdict, r.outcome or ""))


def tested_unit_ids(store: "Store", run_id: int, limit: int | None = None) -> list[str]:
    """Unit ids of the run's tested units, by image id then unit order; the first ``limit`` when given."""
    t = S.detection_units
    q = select(t.c.unit_id).where(t.c.run_id == int(run_id), t.c.tested.is_(True)).order_by(t.c.image_id, t.c.id)
    if limit is not None:
        q = q.limit(int(limit))
    with store.engine.connect() as c:
        return list(c.execute(q).scalars())


def flagged_units(store: "Store", run_id: int, labels: bool = True) -> tuple[tuple[str, ...], list[tuple]]:
    """A detection run's inferences for the analyses, in the shape of
    ``objrel.store.inferences.flagged_inferences``: one row per unit and one per skipped image, by id.

    ``sample_id`` is the unit id (the image id of a skipped image), ``status`` tested | untested | skipped,
    ``correct`` test T on the source (True when 1), ``area_ratio`` the associated object's share of the
    image; with ``labels``, ``gt_labels`` is ``[label index]`` and ``predicted`` the same when T = 1, else
    ``[]``; ``mr1`` / ``mr2`` are 1 when the unit's primary MR-1 / MR-2 vote flagged it (0 without a vote).
    The units and their flags come from one LEFT JOIN with the votes.
    """
    rid = int(run_id)
    du, vt = S.detection_units, S.votes

    def flag(rel: str):
        hit = case((and_(vt.c.relation == rel, vt.c.flagged.is_(True)), 1), else_=0)
        return func.coalesce(func.max(hit), 0)

    q = (select(du.c.unit_id, du.c.tested, du.c.t_source, du.c.area_ratio, du.c.label_index,
                *(flag(rel).label(col) for col, rel in FLAG_RELATIONS.items()))
         .select_from(du.outerjoin(vt, and_(vt.c.run_id == du.c.run_id, vt.c.sample_id == du.c.unit_id,
                                            vt.c.is_primary.is_(True))))
         .where(du.c.run_id == rid).group_by(du.c.id))
    sq = select(S.samples.c.sample_id).where(S.samples.c.run_id == rid, S.samples.c.status == "skipped")
    with store.engine.connect() as c:
        found = c.execute(q).all()
        skipped = list(c.execute(sq).scalars())
    rows = []
    for unit_id, tested, t, ratio, label, *flags in found:
        head = (unit_id, "tested" if tested else "untested", bool(t), ratio)
        rows.append(head + (([label], [label] if t else []) if labels else ()) + tuple(flags))
    blank = ((None, None) if labels else ()) + (0,) * len(FLAG_COLUMNS)
    rows += [(image_id, "skipped", None, None) + blank for image_id in skipped]
    columns = INFERENCE_COLUMNS + (LABEL_COLUMNS if labels else ()) + FLAG_COLUMNS
    return columns, sorted(rows, key=lambda r: r[0])


# ---------------------------------------------------------------- schema 1 -> 2


# The records travel with their queries: readers import both from here.
__all__ = ['DETECTION_TASK', 'DetectionUnit', 'DetectionVerdict', 'ImageResult', 'OutcomeCount',
           'SCHEMA_WITH_DETECTION_TABLES', 'SOURCE_KEY', 'UNIT_ID_SEP', 'UNIT_KINDS', 'UNIT_MISSED', 'UNIT_RECORD',
           'flagged_units', 'is_detection_run', 'make_unit_id', 'outcome_counts', 'source_detections',
           'tested_unit_ids', 'unit', 'unit_kind', 'unit_verdicts', 'units', 'verdicts', 'write_image']
