"""Comment threads and gold items: ``item_comments`` (an item's thread: comments and resolve/reopen events,
never changed) and ``gold_items`` (an item's known call, set by an admin and mixed into reviewers' queues).

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from objrel.store.alembic import frozen as F
from objrel.store.alembic.steps import create_tables, refuse_downgrade

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    create_tables(F.SCHEMA_10)


def downgrade() -> None:
    refuse_downgrade(revision)
