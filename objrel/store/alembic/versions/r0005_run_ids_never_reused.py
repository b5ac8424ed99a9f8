"""Run ids are never reused: on SQLite ``runs.id`` becomes ``INTEGER PRIMARY KEY AUTOINCREMENT`` (without it
SQLite hands the id of a deleted newest run to the next one, and caches keyed by run id show the deleted run's
rows).  PostgreSQL's sequence never gives an id twice already.  From here on the store records
``schema_version`` 4, which objrels from before Alembic refuse as newer than theirs.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from objrel.store.alembic.steps import refuse_downgrade, set_schema_version, sqlite_autoincrement

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# The schema_version of stores under Alembic (objrels before Alembic refuse a number above 3).
SCHEMA_VERSION_UNDER_ALEMBIC = 4


def upgrade() -> None:
    sqlite_autoincrement("runs")
    set_schema_version(SCHEMA_VERSION_UNDER_ALEMBIC)


def downgrade() -> None:
    refuse_downgrade(revision)
