"""The store's Alembic migration environment (``env.py``) and revisions (``versions/``).

Driven from code only (``objrel.store.revisions``): no ``alembic.ini``.  The revisions build on the frozen
table definitions of ``frozen.py`` and the schema steps of ``steps.py``.
"""
