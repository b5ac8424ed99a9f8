"""The review day: app sessions that survive a reload (a random token's hash, expiring, revocable), background
review jobs (LIME for a review sample, computed ahead), a validity call on the mutant beside each judgment,
version and adjudication, and per-account settings.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, String

from objrel.store.alembic import frozen as F
from objrel.store.alembic.steps import add_columns, create_tables, refuse_downgrade

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

# Characters of a validity call (objrel.review: valid | invalid | unsure).
VALIDITY_LENGTH = 12


def upgrade() -> None:
    create_tables(F.SCHEMA_7)
    for table in ("judgments", "judgment_versions", "consensus"):
        add_columns(table, [Column("validity", String(VALIDITY_LENGTH))])
    add_columns("reviewers", [Column("settings", JSON)])


def downgrade() -> None:
    refuse_downgrade(revision)
