"""Live progress columns of runs (forward passes done and expected, when last written); verdict columns
wide enough for 'not evaluated' (PostgreSQL enforces the length; SQLite's tables are rebuilt to declare it too).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from sqlalchemy import Column, DateTime, Integer

from objrel.store.alembic.steps import add_columns, refuse_downgrade, widen_verdicts

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# Characters of a verdict from this revision on ('not evaluated').
VERDICT_LENGTH = 16


def upgrade() -> None:
    add_columns("runs", [Column("passes_done", Integer), Column("passes_expected", Integer),
                         Column("progress_at", DateTime(timezone=True))])
    widen_verdicts(("verdicts", "detection_verdicts"), VERDICT_LENGTH)


def downgrade() -> None:
    refuse_downgrade(revision)
