"""Stores for the store's tests: a fresh database on either backend, and a store made at the first revision."""

from __future__ import annotations

import datetime as dt
import secrets

from sqlalchemy import create_engine, inspect, insert, text
from sqlalchemy.engine import make_url

from objrel.store import revisions
from objrel.store.alembic import frozen as F

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def new_database(kind: str, tmp_path, pg_url: str | None = None) -> str:
    """The URL of an empty database: a new SQLite file, or a new database on the test PostgreSQL server."""
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / f'store-{secrets.token_hex(4)}.db'}"
    name = f"objrel_{secrets.token_hex(6)}"
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return make_url(pg_url).set(database=name).render_as_string(hide_password=False)


def run_row(**over) -> dict:
    row = dict(name="old run", status="finished", created_at=T0, model="efficientnet-lite0", model_config={},
               task="single", class_names=["red", "blue"], dataset="demo", dataset_config={},
               plan={"mutations": []}, config={"model": "efficientnet-lite0"}, seed=7, n_total=2, n_done=2,
               n_skipped=0, n_tested=2, cancel_requested=False)
    row.update(over)
    return row


def fill_schema_1(url: str) -> None:
    """Rows a store at revision 0001 (schema 1) held: a classifier run with samples, predictions, verdicts,
    votes, a reviewer's judgment, a consensus and a review sample; a detection run whose units are
    ``samples`` rows ``"<image>/<key>"`` (what revision 0002 moves)."""
    eng = create_engine(url)
    box = {"category": "red", "class_index": 0, "box": [1.0, 1.0, 9.0, 9.0]}
    with eng.begin() as c:
        c.execute(insert(F.runs).values(**run_row()))
        c.execute(insert(F.runs).values(**run_row(name="old detection run", task="detection", n_total=1,
                                                          n_done=1, n_tested=1)))
        for sid, flagged in (("a", True), ("b", False)):
            c.execute(insert(F.samples).values(run_id=1, sample_id=sid, rel_path=f"{sid}.png", status="tested",
                                               width=10, height=10, gt_labels=[0], predicted=[0], correct=True,
                                               objects=[box], area_ratio=0.5, s_p=0.25, s_r=0.5, s=0.375))
            c.execute(insert(F.predictions).values(run_id=1, sample_id=sid, mutation_key="source",
                                                   prediction={"top": [[0, 0.9]]}))
            c.execute(insert(F.verdicts).values(run_id=1, sample_id=sid, mutation_key="erase:black",
                                                operator="erase", relation="MR-1",
                                                verdict="violated" if flagged else "holds"))
            c.execute(insert(F.votes).values(run_id=1, sample_id=sid, group_name="MR-1 black", relation="MR-1",
                                             is_primary=True, k=1, n=1, applicable=1, violations=int(flagged),
                                             flagged=flagged))
        c.execute(insert(F.reviewers).values(name="carol", pass_hash=None, created_at=T0))
        c.execute(insert(F.judgments).values(run_id=1, sample_id="a", relation="MR-1", reviewer="carol",
                                             verdict="tp", reasons=[], note="clearly the object", created_at=T0,
                                             updated_at=T0))
        c.execute(insert(F.consensus).values(run_id=1, sample_id="a", relation="MR-1", verdict="tp", reasons=[],
                                             adjudicator="carol", created_at=T0))
        c.execute(insert(F.review_samples).values(run_id=1, relation="MR-1", sample_id="a", position=0, seed=3,
                                                  population=1))
        # schema 1's detection run: the unit "1/r0" (source record 0 of image 1) as a samples row
        c.execute(insert(F.samples).values(run_id=2, sample_id="1/r0", rel_path="1.png", status="tested", width=10,
                                           height=10, gt_labels=[0], gt_categories=["red"], correct=True,
                                           objects=[box], area_ratio=0.64, s_p=1.0, s_r=0.0, s=0.5))
        rec = {"index": 0, "label": "red", "score": 0.9, "box": [1, 1, 9, 9], "iou": 1.0}
        c.execute(insert(F.predictions).values(run_id=2, sample_id="1/r0", mutation_key="source",
                                               prediction={"detections": [rec], "record": rec, "t": 1}))
        c.execute(insert(F.verdicts).values(run_id=2, sample_id="1/r0", mutation_key="erase:black", operator="erase",
                                            relation="MR-1", verdict="violated", source_certainty=1.0,
                                            mutant_certainty=1.0, note="still detected"))
        c.execute(insert(F.votes).values(run_id=2, sample_id="1/r0", group_name="MR-1 black", relation="MR-1",
                                         is_primary=True, k=1, n=1, applicable=1, violations=1, flagged=True))
    eng.dispose()


def store_at_first_revision(url: str) -> str:
    """Make the store at ``url`` at revision 0001 with ``fill_schema_1``'s rows in it; returns ``url``."""
    eng = create_engine(url)
    assert revisions.upgrade(eng, revisions.FIRST_REVISION).after == revisions.FIRST_REVISION
    eng.dispose()
    fill_schema_1(url)
    return url


def index_names(eng) -> set[tuple[str, str]]:
    """(table, index) of every index, expression indexes included (inspect skips those on SQLite)."""
    with eng.connect() as c:
        if eng.dialect.name == "sqlite":
            rows = c.execute(text("SELECT tbl_name, name FROM sqlite_master WHERE type = 'index' "
                                  "AND name NOT LIKE 'sqlite_autoindex%'"))
        else:
            rows = c.execute(text("SELECT tablename, indexname FROM pg_indexes WHERE schemaname = 'public'"))
        return {(t, n) for t, n in rows}


def described(url: str) -> dict:
    """The schema of the store at ``url`` as plain values: per table its columns (name, type, nullable),
    primary key, unique constraints and foreign keys, and every index."""
    import warnings

    eng = create_engine(url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "skipped expression-based index" (compared by name below)
        i = inspect(eng)
        out: dict = {}
        for t in sorted(i.get_table_names()):
            out[t] = {
                "columns": [(c["name"], str(c["type"]), c["nullable"]) for c in i.get_columns(t)],
                "pk": i.get_pk_constraint(t)["constrained_columns"],
                "unique": sorted((u["name"], tuple(u["column_names"])) for u in i.get_unique_constraints(t)),
                "fks": sorted((tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]),
                               (f.get("options") or {}).get("ondelete")) for f in i.get_foreign_keys(t)),
            }
    out["indexes"] = sorted(index_names(eng))
    if eng.dialect.name == "sqlite":  # AUTOINCREMENT is only in the table's SQL
        with eng.connect() as c:
            out["autoincrement"] = sorted(c.execute(text(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%AUTOINCREMENT%'")).scalars())
    eng.dispose()
    return out
