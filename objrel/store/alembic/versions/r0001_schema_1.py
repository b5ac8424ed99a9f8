"""Schema 1: runs, samples, predictions, verdicts and votes of both tasks, and the review tables.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

from objrel.store.alembic import frozen as F
from objrel.store.alembic.steps import create_tables, refuse_downgrade, set_schema_version

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_tables(F.SCHEMA_1)
    set_schema_version(1)


def downgrade() -> None:
    refuse_downgrade(revision)
