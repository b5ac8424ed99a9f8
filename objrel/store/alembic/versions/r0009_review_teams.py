"""Review teams: k reviewers per drawn item.  ``review_samples.k`` is how many reviewers judge each item of a
draw (null: 2, a draw made before teams), and ``review_assignments`` says who judges which drawn item (an
admin's choice, or the draw's even spread over a pool; a draw without rows is open to every reviewer, as
before).

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from sqlalchemy import Column, Integer

from objrel.store.alembic import frozen as F
from objrel.store.alembic.steps import add_columns, create_tables, refuse_downgrade

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_tables(F.SCHEMA_9)
    add_columns("review_samples", [Column("k", Integer)])


def downgrade() -> None:
    refuse_downgrade(revision)
