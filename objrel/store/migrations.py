"""Schema upgrades of older stores, run once when a store is opened."""

from __future__ import annotations

import re
from collections import defaultdict

from sqlalchemy import delete, insert, inspect, select, text, update
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from objrel.relations.detect import OUTCOMES
from objrel.store import schema as S
from objrel.store.detection_records import (DETECTION_TASK, SCHEMA_WITH_DETECTION_TABLES, SOURCE_KEY, unit_kind)


# The first schema with samples.dropped, samples.notes and the attempts table.
SCHEMA_WITH_SAMPLE_NOTES = 3
# Columns schema 3 appended to ``samples`` (create_all makes new tables but never adds columns to old ones).
ADDED_SAMPLE_COLUMNS = ("dropped", "notes")
# Progress columns appended to ``runs`` (nullable, so stores without them read the same; no version bump).
ADDED_RUN_COLUMNS = ("passes_done", "passes_expected", "progress_at")


class SchemaVersionError(ValueError):
    """A store written by a newer objrel (or not an objrel store): opening it would misread its rows."""


def stored_version(engine) -> int | None:
    """The store's ``schema_version``, or None when it records none."""
    with engine.connect() as c:
        raw = c.execute(select(S.meta.c.value).where(S.meta.c.key == "schema_version")).scalar()
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise SchemaVersionError(f"the store records schema version {raw!r}; expected a whole number") from exc


def upgrade_all(engine) -> None:
    """Bring an opened store to ``S.SCHEMA_VERSION``: schema 1 -> 2 moves detection runs, 2 -> 3 adds the
    samples columns.  Raises ``SchemaVersionError`` for a store newer than this objrel."""
    version = stored_version(engine)
    if version is not None and version > S.SCHEMA_VERSION:
        raise SchemaVersionError(
            f"the store has schema version {version}, newer than this objrel supports ({S.SCHEMA_VERSION}); "
            f"open it with the objrel that wrote it, or upgrade objrel")
    upgrade(engine)
    add_sample_columns(engine)
    add_run_columns(engine)
    widen_verdict_columns(engine)


def widen_verdict_columns(engine) -> list[str]:
    """PostgreSQL enforces VARCHAR lengths (SQLite does not): widen the verdict columns of stores made
    before 'not evaluated' existed, so lazy runs can write it.  Returns the tables altered."""
    if engine.dialect.name != "postgresql":
        return []
    altered = []
    for table in (S.verdicts, S.detection_verdicts):
        cols = {c["name"]: c for c in inspect(engine).get_columns(table.name)}
        length = getattr(cols.get("verdict", {}).get("type"), "length", None)
        if length is not None and length < S.VERDICT_LENGTH:
            with engine.begin() as c:
                c.execute(text(f"ALTER TABLE {table.name} ALTER COLUMN verdict TYPE VARCHAR({S.VERDICT_LENGTH})"))
            altered.append(table.name)
    return altered


def add_missing_columns(engine, table, names) -> list[str]:
    """Add ``table``'s columns ``names`` that the stored table lacks (``ALTER TABLE ... ADD COLUMN``); returns
    the names added.  A column another process added meanwhile is fine."""
    have = {c["name"] for c in inspect(engine).get_columns(table.name)}
    added = []
    for name in names:
        if name in have:
            continue
        col_type = table.c[name].type.compile(dialect=engine.dialect)
        try:
            with engine.begin() as c:
                c.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {name} {col_type}"))
            added.append(name)
        except (OperationalError, ProgrammingError):  # added meanwhile by another process
            if name not in {c["name"] for c in inspect(engine).get_columns(table.name)}:
                raise
    return added


def add_run_columns(engine) -> list[str]:
    """Add the progress columns (``ADDED_RUN_COLUMNS``) to an older store's ``runs``; returns the names added."""
    return add_missing_columns(engine, S.runs, ADDED_RUN_COLUMNS)


def add_sample_columns(engine) -> list[str]:
    """Add the columns schema 3 appended to ``samples`` when they are missing, and record schema 3.

    Returns the names added.  Two processes opening the same old store at once are fine: the one that
    loses the race finds the column there.
    """
    have = {c["name"] for c in inspect(engine).get_columns("samples")}
    added = []
    for name in ADDED_SAMPLE_COLUMNS:
        if name in have:
            continue
        col_type = S.samples.c[name].type.compile(dialect=engine.dialect)
        try:
            with engine.begin() as c:
                c.execute(text(f"ALTER TABLE samples ADD COLUMN {name} {col_type}"))
            added.append(name)
        except (OperationalError, ProgrammingError):  # added meanwhile by another process
            if name not in {c["name"] for c in inspect(engine).get_columns("samples")}:
                raise
    with engine.begin() as c:
        older = [str(v) for v in range(SCHEMA_WITH_SAMPLE_NOTES)]
        c.execute(update(S.meta).where(S.meta.c.key == "schema_version", S.meta.c.value.in_(older))
                  .values(value=str(SCHEMA_WITH_SAMPLE_NOTES)))
    return added


_OLD_UNIT_ID = re.compile(r"^(?P<image>.+)/(?P<key>[ro]\d+)$")  # schema 1 stored units as samples "<image>/<key>"


def upgrade(engine) -> int:
    """Move detection runs written with schema 1 (units as ``samples`` rows ``"<image>/<key>"``, IoUs in the
    verdicts' certainty columns, outcomes in their notes) into the detection tables, and record schema 2.

    Votes keep their rows: schema 1 already keyed them by the unit id.  Each run moves in one transaction;
    returns the number of runs moved.  A store already at schema 2 or later is left alone.
    """
    with engine.connect() as c:
        raw = c.execute(select(S.meta.c.value).where(S.meta.c.key == "schema_version")).scalar()
        version = int(raw) if raw is not None else SCHEMA_WITH_DETECTION_TABLES
        if version >= SCHEMA_WITH_DETECTION_TABLES:
            return 0
        run_ids = list(c.execute(select(S.runs.c.id).where(S.runs.c.task == DETECTION_TASK)).scalars())
    moved = 0
    for rid in run_ids:
        try:
            with engine.begin() as c:
                moved += _move_run(c, int(rid))
        except IntegrityError:  # another process opening the same store moved this run first
            continue
    with engine.begin() as c:
        c.execute(update(S.meta).where(S.meta.c.key == "schema_version").values(
            value=str(SCHEMA_WITH_DETECTION_TABLES)))
    return moved


def _place_objects(unit_objects: list[tuple[str, dict]]) -> list[dict]:
    """The image's object list rebuilt from its units' objects: ``o<k>`` objects at index k, the objects of
    record units (schema 1 did not keep their index) in the free places, in record order."""
    distinct: list[dict] = []
    for _, obj in unit_objects:
        if obj not in distinct:
            distinct.append(obj)
    slots: list[dict | None] = [None] * len(distinct)
    for key, obj in unit_objects:
        k = int(key[1:])
        if key.startswith("o") and k < len(slots) and slots[k] is None:
            slots[k] = obj
    rest = iter(o for o in distinct if o not in slots)
    return [s if s is not None else next(rest) for s in slots]


def _move_run(c, rid: int) -> int:
    rows = [dict(r._mapping) for r in c.execute(select(S.samples).where(S.samples.c.run_id == rid))]
    by_image: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for r in rows:
        m = _OLD_UNIT_ID.match(r["sample_id"]) if r["status"] != "skipped" else None
        if m is not None:
            by_image[m.group("image")].append((m.group("key"), r))
    if not by_image:
        return 0
    preds: dict[str, dict[str, dict]] = defaultdict(dict)
    for p in c.execute(select(S.predictions).where(S.predictions.c.run_id == rid)):
        preds[p.sample_id][p.mutation_key] = dict(p._mapping)
    checks: dict[str, list[dict]] = defaultdict(list)
    for v in c.execute(select(S.verdicts).where(S.verdicts.c.run_id == rid).order_by(S.verdicts.c.id)):
        checks[v.sample_id].append(dict(v._mapping))
    old_ids = []
    for image_id, members in sorted(by_image.items()):
        members.sort(key=lambda kr: (kr[0][0] != "r", int(kr[0][1:])))
        objects = _place_objects([(k, (r["objects"] or [{}])[0]) for k, r in members])
        first = members[0][1]
        src_pred = (preds[first["sample_id"]].get(SOURCE_KEY) or {}).get("prediction") or {}
        statuses = {r["status"] for _, r in members}
        c.execute(insert(S.samples).values(
            run_id=rid, sample_id=image_id, rel_path=first["rel_path"], region_source=first["region_source"],
            status="tested" if "tested" in statuses else "untested", width=first["width"], height=first["height"],
            gt_labels=[o.get("class_index") for o in objects], gt_categories=[o.get("category") for o in objects],
            objects=objects, elapsed_ms=sum(r["elapsed_ms"] or 0.0 for _, r in members)))
        c.execute(insert(S.predictions).values(run_id=rid, sample_id=image_id, mutation_key=SOURCE_KEY, seed=None,
                                               prediction=src_pred.get("detections") or {}))
        for key, r in members:
            sid = r["sample_id"]
            old_ids.append(sid)
            mine = preds[sid]
            src = (mine.get(SOURCE_KEY) or {}).get("prediction") or {}
            rec = src.get("record") or {}
            obj = (r["objects"] or [{}])[0]
            c.execute(insert(S.detection_units).values(
                run_id=rid, image_id=image_id, unit_key=key, unit_id=sid, kind=unit_kind(key),
                object_index=objects.index(obj), label=(r["gt_categories"] or [obj.get("category")])[0],
                label_index=(r["gt_labels"] or [obj.get("class_index")])[0], object=obj, area_ratio=r["area_ratio"],
                t_source=int(src.get("t", bool(r["correct"]))), iou_source=float(rec.get("iou") or 0.0),
                record_index=rec.get("index"), record_label=rec.get("label"), record_score=rec.get("score"),
                record_box=rec.get("box"), tested=r["status"] == "tested", s_p=r["s_p"], s_r=r["s_r"], s=r["s"]))
            for v in checks[sid]:
                stored = mine.get(v["mutation_key"]) or {}
                p = stored.get("prediction") or {}
                mrec = p.get("record") or {}
                known = v["note"] in OUTCOMES
                c.execute(insert(S.detection_verdicts).values(
                    run_id=rid, image_id=image_id, unit_key=key, mutation_key=v["mutation_key"],
                    operator=v["operator"], relation=v["relation"], verdict=v["verdict"],
                    outcome=v["note"] if known else None, t_source=int(src.get("t", 0)),
                    t_mutant=p.get("t") if p else None, iou_source=float(v["source_certainty"] or 0.0),
                    iou_mutant=v["mutant_certainty"], label_changed=v["label_changed"], distance=v["distance"],
                    seed=stored.get("seed"), record_index=mrec.get("index"), record_label=mrec.get("label"),
                    record_score=mrec.get("score"), record_box=mrec.get("box"), detections=p.get("detections"),
                    note=None if known else v["note"]))
    for table in (S.samples, S.predictions, S.verdicts):
        c.execute(delete(table).where(table.c.run_id == rid, table.c.sample_id.in_(old_ids)))
    return 1
