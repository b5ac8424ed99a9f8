"""Persistence: SQLite by default, any SQLAlchemy URL (PostgreSQL) for teams.

The only code that speaks SQL.  Everything else calls these modules with Python values and
gets dicts or dataclasses back:

* ``store``:        ``Store`` (engine, runs, samples, predictions, verdicts, votes) and ``RunRecord``
* ``schema``:       the tables (the head revision's schema)
* ``revisions``:    the schema under Alembic (``alembic/``): a store's revision, upgrades, refusals
* ``leases``:       one live process per run (lease, heartbeat, take-over)
* ``transactions``: retry-on-lock writes, race-free upserts, the run lock
* ``accounts``:     reviewer rows
* ``reviews``:      judgments, adjudications, review samples, re-tests
* ``explanations``: the LIME cache
* ``inferences``:   samples with their primary-vote flags, votes of one relation (for the analyses)
* ``detections``:   detection units and verdicts
"""

from objrel.store.store import DEFAULT_URL, ENV_VAR, RUN_STATUSES, RunRecord, Store, resolve_url

__all__ = ["Store", "RunRecord", "resolve_url", "DEFAULT_URL", "ENV_VAR", "RUN_STATUSES"]
