"""Schema 2: detection units and verdicts in their own tables; detection runs of schema 1 move there.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from objrel.store.alembic import frozen as F
from objrel.store.alembic.steps import create_tables, move_detection_runs, refuse_downgrade, set_schema_version

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_tables(F.SCHEMA_2)
    move_detection_runs()
    set_schema_version(2)


def downgrade() -> None:
    refuse_downgrade(revision)
