"""Persistence: SQLite by default, any SQLAlchemy URL (PostgreSQL) for teams."""

from objrel.store.store import DEFAULT_URL, ENV_VAR, RUN_STATUSES, RunRecord, Store, resolve_url

__all__ = ["Store", "RunRecord", "resolve_url", "DEFAULT_URL", "ENV_VAR", "RUN_STATUSES"]
