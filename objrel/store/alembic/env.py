"""Alembic's environment for the objrel store: run the revisions on the connection objrel hands over.

``objrel.store.revisions.upgrade`` opens one transaction (SQLite: ``BEGIN IMMEDIATE``, so a second
process opening the same old store waits; PostgreSQL: an advisory lock as well) and passes its
connection as ``config.attributes["connection"]``; Alembic then runs inside that transaction, so an
upgrade lands whole or not at all.
"""

from __future__ import annotations

from alembic import context



def run_migrations(config) -> None:
    """Run Alembic's migrations on the connection objrel passes in; RuntimeError without one."""
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("the objrel store's migrations run through objrel.store.revisions, which passes a "
                           "connection; `alembic` on the command line is not supported")
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():
        context.run_migrations()


if hasattr(context, "config"):  # run by Alembic (imported on its own, the module only defines the function)
    run_migrations(context.config)
