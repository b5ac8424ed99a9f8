"""Schema steps the revisions share.  Each step is safe on a store that already has what it adds: a store
made before objrel used Alembic is stamped with the revision its ``schema_version`` names, and may hold
tables and columns that later objrels added without a version number (the tables ``create_all`` made, the
run progress columns).
"""

from __future__ import annotations

import re
from collections import defaultdict

from alembic import op
from sqlalchemy import Column, delete, insert, inspect, select, text, update

from objrel.store.alembic import frozen as F
from objrel.store.detection_records import DETECTION_TASK, SOURCE_KEY, unit_kind

# The key of the store's schema number in ``objrel_meta`` (objrels before Alembic read it to refuse newer stores).
SCHEMA_VERSION_KEY = "schema_version"


def create_tables(tables) -> list[str]:
    """Create those of ``tables`` (frozen definitions) the store lacks, with their indexes; returns their names."""
    conn = op.get_bind()
    have = set(inspect(conn).get_table_names())
    missing = [t for t in tables if t.name not in have]
    F.schema_1.create_all(conn, tables=missing, checkfirst=False)
    return [t.name for t in missing]


def add_columns(table: str, columns: list[Column]) -> list[str]:
    """Add those of ``columns`` that ``table`` lacks (nullable columns only); returns their names."""
    have = {c["name"] for c in inspect(op.get_bind()).get_columns(table)}
    added = []
    for col in columns:
        if col.name not in have:
            op.add_column(table, col)
            added.append(col.name)
    return added


def widen_verdicts(tables: tuple[str, ...], length: int) -> list[str]:
    """Widen ``verdict`` of ``tables`` to VARCHAR(``length``) where it is shorter.  PostgreSQL enforces the
    length (a lazy run's 'not evaluated' would not fit); SQLite does not, but its tables are rebuilt too, so
    that an upgraded store declares what a new one does.  Returns the tables altered."""
    from sqlalchemy import String

    conn = op.get_bind()
    altered = []
    for table in tables:
        cols = {c["name"]: c for c in inspect(conn).get_columns(table)}
        have = getattr(cols["verdict"]["type"], "length", None)
        if have is None or have >= length:
            continue
        if conn.dialect.name == "postgresql":
            op.execute(text(f"ALTER TABLE {table} ALTER COLUMN verdict TYPE VARCHAR({length})"))
        else:
            with op.batch_alter_table(table) as batch:
                batch.alter_column("verdict", type_=String(length), existing_nullable=False)
        altered.append(table)
    return altered


def set_schema_version(value: int) -> None:
    """Record ``value`` as the store's ``schema_version`` (what objrels before Alembic compare)."""
    conn = op.get_bind()
    row = conn.execute(select(F.meta.c.value).where(F.meta.c.key == SCHEMA_VERSION_KEY)).first()
    if row is None:
        conn.execute(insert(F.meta).values(key=SCHEMA_VERSION_KEY, value=str(value)))
    else:
        conn.execute(update(F.meta).where(F.meta.c.key == SCHEMA_VERSION_KEY).values(value=str(value)))


def create_name_index(table: str, name: str) -> bool:
    """The unique index on ``lower(name)`` of reviewers; a store that already holds two names differing only
    in case cannot get it (``objrel.store.accounts`` checks names in its transactions as well).  Returns
    whether the index exists afterwards."""
    conn = op.get_bind()
    lowered = text(f"SELECT lower(name) FROM {table} GROUP BY lower(name) HAVING count(*) > 1")
    if conn.execute(lowered).first() is not None:
        return False
    op.execute(text(f"CREATE UNIQUE INDEX IF NOT EXISTS {name} ON {table} (lower(name))"))
    return True


# ---------------------------------------------------------------- schema 1 -> 2: detection runs move

_OLD_UNIT_ID = re.compile(r"^(?P<image>.+)/(?P<key>[ro]\d+)$")  # schema 1 stored units as samples "<image>/<key>"


def move_detection_runs() -> int:
    """Move detection runs written with schema 1 (units as ``samples`` rows ``"<image>/<key>"``, IoUs in the
    verdicts' certainty columns, outcomes in their notes) into the detection tables.  Votes keep their rows:
    schema 1 already keyed them by the unit id.  Returns the number of runs moved."""
    conn = op.get_bind()
    run_ids = list(conn.execute(select(F.runs.c.id).where(F.runs.c.task == DETECTION_TASK)).scalars())
    return sum(_move_run(conn, int(rid)) for rid in run_ids)


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
    from objrel.relations.detect import OUTCOMES  # only a schema-1 store needs it

    rows = [dict(r._mapping) for r in c.execute(select(F.samples).where(F.samples.c.run_id == rid))]
    by_image: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for r in rows:
        m = _OLD_UNIT_ID.match(r["sample_id"]) if r["status"] != "skipped" else None
        if m is not None:
            by_image[m.group("image")].append((m.group("key"), r))
    if not by_image:
        return 0
    preds: dict[str, dict[str, dict]] = defaultdict(dict)
    for p in c.execute(select(F.predictions).where(F.predictions.c.run_id == rid)):
        preds[p.sample_id][p.mutation_key] = dict(p._mapping)
    checks: dict[str, list[dict]] = defaultdict(list)
    for v in c.execute(select(F.verdicts).where(F.verdicts.c.run_id == rid).order_by(F.verdicts.c.id)):
        checks[v.sample_id].append(dict(v._mapping))
    old_ids = []
    for image_id, members in sorted(by_image.items()):
        members.sort(key=lambda kr: (kr[0][0] != "r", int(kr[0][1:])))
        objects = _place_objects([(k, (r["objects"] or [{}])[0]) for k, r in members])
        first = members[0][1]
        src_pred = (preds[first["sample_id"]].get(SOURCE_KEY) or {}).get("prediction") or {}
        statuses = {r["status"] for _, r in members}
        c.execute(insert(F.samples).values(
            run_id=rid, sample_id=image_id, rel_path=first["rel_path"], region_source=first["region_source"],
            status="tested" if "tested" in statuses else "untested", width=first["width"], height=first["height"],
            gt_labels=[o.get("class_index") for o in objects], gt_categories=[o.get("category") for o in objects],
            objects=objects, elapsed_ms=sum(r["elapsed_ms"] or 0.0 for _, r in members)))
        c.execute(insert(F.predictions).values(run_id=rid, sample_id=image_id, mutation_key=SOURCE_KEY, seed=None,
                                               prediction=src_pred.get("detections") or {}))
        for key, r in members:
            sid = r["sample_id"]
            old_ids.append(sid)
            mine = preds[sid]
            src = (mine.get(SOURCE_KEY) or {}).get("prediction") or {}
            rec = src.get("record") or {}
            obj = (r["objects"] or [{}])[0]
            c.execute(insert(F.detection_units).values(
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
                c.execute(insert(F.detection_verdicts).values(
                    run_id=rid, image_id=image_id, unit_key=key, mutation_key=v["mutation_key"],
                    operator=v["operator"], relation=v["relation"], verdict=v["verdict"],
                    outcome=v["note"] if known else None, t_source=int(src.get("t", 0)),
                    t_mutant=p.get("t") if p else None, iou_source=float(v["source_certainty"] or 0.0),
                    iou_mutant=v["mutant_certainty"], label_changed=v["label_changed"], distance=v["distance"],
                    seed=stored.get("seed"), record_index=mrec.get("index"), record_label=mrec.get("label"),
                    record_score=mrec.get("score"), record_box=mrec.get("box"), detections=p.get("detections"),
                    note=None if known else v["note"]))
    for table in (F.samples, F.predictions, F.verdicts):
        c.execute(delete(table).where(table.c.run_id == rid, table.c.sample_id.in_(old_ids)))
    return 1


# ---------------------------------------------------------------- run ids

def sqlite_autoincrement(table: str) -> bool:
    """On SQLite, rebuild ``table`` with ``INTEGER PRIMARY KEY AUTOINCREMENT`` (its rows, ids and the tables
    that refer to it kept) so that the id of a deleted newest row is never handed out again; a no-op on
    other databases and on a table that has it.  The caller's connection runs with foreign keys off
    (``objrel.store.revisions``): dropping the old table must not cascade to the rows that refer to it.
    Returns whether the table was rebuilt."""
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return False
    sql = conn.execute(text("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :t"), {"t": table}).scalar()
    if sql is None or "AUTOINCREMENT" in sql.upper():
        return False
    if conn.execute(text("PRAGMA foreign_keys")).scalar():
        raise RuntimeError(f"rebuilding {table} needs foreign keys off, or deleting the old table deletes every "
                           f"row that refers to it")
    with op.batch_alter_table(table, recreate="always", table_kwargs={"sqlite_autoincrement": True}):
        pass
    return True


def refuse_downgrade(revision: str) -> None:
    """Refuse to downgrade a store past ``revision``: stores only move forward."""
    raise NotImplementedError(f"objrel stores are only upgraded; revision {revision} has no way back (restore a "
                              f"copy of the store made before the upgrade instead)")
