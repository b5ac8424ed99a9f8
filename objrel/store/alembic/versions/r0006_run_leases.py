"""Runs own their process: a lease per run (a random token and the host that holds it; the holder's pid and
its last beat stay in ``runs.pid`` and ``runs.heartbeat_at``), taken atomically by the process that works on the
run and checked by each of its commits (``objrel.store.leases``).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from sqlalchemy import Column, String

from objrel.store.alembic.steps import add_columns, refuse_downgrade

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    add_columns("runs", [Column("lease_token", String(64)), Column("lease_host", String(255))])


def downgrade() -> None:
    refuse_downgrade(revision)
