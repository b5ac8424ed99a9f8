"""Results kept per run: a page's tables over a run computed once for each state of the run (``run_summaries``),
and the index that finds a run's newest sample row in one step (the state's stamp).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import inspect

from objrel.store.alembic import frozen as F
from objrel.store.alembic.steps import create_tables, refuse_downgrade

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


# (table, index name, columns) of the indexes this revision adds.
ROW_INDEXES = (("samples", "ix_samples_run_row", ["run_id", "id"]),)


def upgrade() -> None:
    create_tables(F.SCHEMA_8)
    conn = op.get_bind()
    for table, name, columns in ROW_INDEXES:
        if name not in {ix["name"] for ix in inspect(conn).get_indexes(table)}:
            op.create_index(name, table, columns)


def downgrade() -> None:
    refuse_downgrade(revision)
