"""Schema 3: samples.dropped and samples.notes, the attempts table (crash bookkeeping), the trust tables
(account roles, sign-in failures, judgment versions, allowed models) and reviewers' names unique ignoring case.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from sqlalchemy import JSON, Column

from objrel.store.alembic import frozen as F
from objrel.store.alembic.steps import (add_columns, create_name_index, create_tables, refuse_downgrade,
                                        set_schema_version)

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("samples", [Column("dropped", JSON), Column("notes", JSON)])
    create_tables(F.SCHEMA_3)
    create_name_index("reviewers", "uq_reviewers_name_key")
    set_schema_version(3)


def downgrade() -> None:
    refuse_downgrade(revision)
