"""The store's schema under Alembic: which revision a store is at, and bringing it to this objrel's head.

The revisions live in ``objrel/store/alembic/versions`` (the first creates schema 1; each later one is one
change) and run from code (``alembic.config.Config`` + ``alembic.command``), never from an ``alembic.ini``.

``Store`` calls ``ensure_current`` when it opens a store: a store at the head is left alone at the cost of
one read; an older one is upgraded on the spot (each upgrade is one transaction that holds the store's write
lock, so two processes opening an old store at once upgrade it once); an empty database gets the current
schema.  Stores made before Alembic (a ``schema_version`` in ``objrel_meta``, no ``alembic_version`` table)
are stamped with the revision of their schema version and upgraded from there.  A store at a revision this
objrel does not know (a newer objrel wrote it), and a database of another application, are refused with a
``StoreError`` and left untouched.  ``objrel store upgrade`` and ``objrel store version`` do the same by hand.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache, wraps
from pathlib import Path

from sqlalchemy import create_engine, event, inspect, select, text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from objrel.constants import SQLITE_BUSY_TIMEOUT_MS
from objrel.errors import StoreError, StoreTooNew
from objrel.store import schema as S

# The migration environment (env.py) and its versions/ folder.
SCRIPT_LOCATION = Path(__file__).resolve().parent / "alembic"
# The table in which Alembic records a store's revision.
VERSION_TABLE = "alembic_version"
# The revision that creates schema 1 (the oldest store objrel upgrades).
FIRST_REVISION = "0001"
# The revision a store made before Alembic is at, by the schema_version it records.
LEGACY_REVISIONS = {1: "0001", 2: "0002", 3: "0003"}
# The key of the schema number in objrel_meta (objrels before Alembic compare it with theirs).
SCHEMA_VERSION_KEY = "schema_version"
# PostgreSQL advisory lock key that serialises upgrades of one database ("objrel" in ASCII).
PG_UPGRADE_LOCK = 0x6F626A72656C


@dataclass(frozen=True)
class StoreVersion:
    """Where a store stands: ``revision`` (None: before Alembic, or empty), the ``schema_version`` it records,
    this objrel's ``head``, and whether the database is ``empty``."""

    revision: str | None
    schema_version: int | None
    head: str
    empty: bool

    @property
    def current(self) -> bool:
        """True when the store is at this objrel's head revision."""
        return self.revision == self.head

    def line(self) -> str:
        """The store's revision state in words, with what ``objrel store upgrade`` would do."""
        if self.empty:
            return f"an empty database; opening it creates the objrel schema at revision {self.head}"
        if self.revision is None:
            return (f"made before objrel used Alembic (schema_version {self.schema_version}); "
                    f"`objrel store upgrade` brings it to revision {self.head}")
        if self.current:
            return f"at revision {self.revision}, this objrel's head"
        return f"at revision {self.revision}; this objrel's head is {self.head} (`objrel store upgrade`)"


@dataclass(frozen=True)
class UpgradeResult:
    """What ``upgrade`` did: the revision before (None: before Alembic or empty), the one after, and how."""

    before: str | None
    after: str
    how: str   # created | stamped | upgraded | current

    def line(self) -> str:
        """What the upgrade did, in words."""
        if self.how == "created":
            return f"created the objrel schema at revision {self.after}"
        if self.how == "current":
            return f"already at revision {self.after}, this objrel's head; nothing to do"
        if self.how == "stamped":
            return (f"brought a store made before Alembic under it at revision {self.before} and upgraded it to "
                    f"{self.after}")
        return f"upgraded from revision {self.before} to {self.after}"


@lru_cache(maxsize=1)
def _script():
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(_config())


def _config(connection: Connection | None = None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPT_LOCATION))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    """This objrel's newest revision."""
    heads = _script().get_heads()
    if len(heads) != 1:
        raise RuntimeError(f"objrel's revisions must form one line; found heads {heads}")
    return heads[0]


def known(revision: str) -> bool:
    """True when ``revision`` is one of this objrel's schema revisions."""
    from alembic.util import CommandError

    try:
        return _script().get_revision(revision) is not None
    except CommandError:
        return False


def _name(url) -> str:
    return url.render_as_string(hide_password=True) if hasattr(url, "render_as_string") else str(url)


def _read(conn: Connection, url) -> StoreVersion:
    """The store's revision and schema_version, read on ``conn``; StoreError for a foreign database."""
    tables = set(inspect(conn).get_table_names())
    if not tables:
        return StoreVersion(None, None, head(), True)
    if S.meta.name not in tables:
        shown = ", ".join(sorted(tables)[:6]) + (", ..." if len(tables) > 6 else "")
        raise StoreError(f"{_name(url)} is not an objrel store: expected objrel's tables ({S.meta.name}, runs, "
                         f"...), found another application's tables ({shown}); give the path of an objrel store "
                         f"or of a new file")
    raw = conn.execute(select(S.meta.c.value).where(S.meta.c.key == SCHEMA_VERSION_KEY)).scalar()
    try:
        version = int(raw) if raw is not None else None
    except ValueError:
        raise StoreError(f"{_name(url)} records schema version {raw!r}; expected a whole number") from None
    revision = None
    if VERSION_TABLE in tables:
        revision = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    return StoreVersion(revision, version, head(), False)


def _refuse_unknown(state: StoreVersion, url) -> None:
    """StoreTooNew for a store newer than this objrel; StoreError for one it cannot place."""
    if state.schema_version is not None and state.schema_version > S.SCHEMA_VERSION:
        raise StoreTooNew(f"the store {_name(url)} has schema version {state.schema_version}, newer than this "
                          f"objrel supports ({S.SCHEMA_VERSION}); open it with the objrel that wrote it, or "
                          f"upgrade objrel")
    if state.revision is not None and not known(state.revision):
        raise StoreTooNew(f"the store {_name(url)} is at schema revision {state.revision!r}, which this objrel "
                          f"(head {state.head}) does not know: a newer objrel wrote it; upgrade objrel or open it "
                          f"with the objrel that wrote it")
    if state.revision is None and not state.empty and state.schema_version not in LEGACY_REVISIONS:
        raise StoreError(f"the store {_name(url)} records schema version {state.schema_version!r} and no "
                         f"revision; expected one of {sorted(LEGACY_REVISIONS)} (a store made before Alembic)")


def _one_line(fn):
    """Turn the database's own error (a file that is not a database, a damaged one) into one StoreError line
    naming the store, as opening a store does."""
    @wraps(fn)
    def guarded(engine: Engine, *args, **kwargs):
        try:
            return fn(engine, *args, **kwargs)
        except DBAPIError as exc:
            reason = str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(getattr(exc, "orig", exc)).strip() \
                else type(exc).__name__
            raise StoreError(f"{_name(engine.url)}: expected an objrel store, got a file that is not a usable objrel "
                             f"database ({reason})") from None
    return guarded


@_one_line
def version(engine: Engine) -> StoreVersion:
    """Where the store behind ``engine`` stands (read only); StoreError for a foreign or newer store."""
    with engine.connect() as conn:
        state = _read(conn, engine.url)
    _refuse_unknown(state, engine.url)
    return state


def ensure_current(engine: Engine) -> UpgradeResult | None:
    """What ``Store`` calls on opening: nothing more than one read for a store at the head; ``upgrade`` for
    an older or empty one.  StoreError (StoreTooNew) for a foreign or newer store."""
    state = version(engine)
    if state.current:
        return None
    return upgrade(engine)


def _migration_engine(engine: Engine) -> Engine:
    """An engine of its own for the upgrade: on SQLite the driver's own transaction handling is off, so the
    whole upgrade (DDL included) is one ``BEGIN IMMEDIATE`` transaction with foreign keys off (rebuilding a
    table must not cascade to the rows that refer to it)."""
    url = engine.url
    if url.get_backend_name() != "sqlite":
        return create_engine(url, poolclass=NullPool)
    mig = create_engine(url, poolclass=NullPool,
                        connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False})

    @event.listens_for(mig, "connect")
    def _connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cur.execute("PRAGMA foreign_keys=OFF")
        cur.close()

    @event.listens_for(mig, "begin")
    def _begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return mig


@_one_line
def upgrade(engine: Engine, target: str = "head") -> UpgradeResult:
    """Bring the store behind ``engine`` to ``target`` (a revision id or ``head``) in one transaction that
    holds the store's write lock.  An empty database gets the current schema (``schema.metadata``) stamped
    at the head; a store made before Alembic is stamped with its schema version's revision first.
    StoreError (StoreTooNew) for a foreign or newer store, which is left untouched."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    mig = _migration_engine(engine)
    try:
        with mig.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": PG_UPGRADE_LOCK})
            state = _read(conn, engine.url)
            _refuse_unknown(state, engine.url)
            cfg = _config(conn)
            if state.empty and target == "head":
                S.metadata.create_all(conn)
                conn.execute(S.meta.insert().values(key=SCHEMA_VERSION_KEY, value=str(S.SCHEMA_VERSION)))
                command.stamp(cfg, "head")
                return UpgradeResult(None, head(), "created")
            before, how = state.revision, "upgraded"
            if state.revision is None and not state.empty:
                before, how = LEGACY_REVISIONS[state.schema_version], "stamped"  # type: ignore[index]  # legacy: versioned
                command.stamp(cfg, before)
            command.upgrade(cfg, target)
            after = MigrationContext.configure(conn).get_current_revision()
            if how == "upgraded" and after == before:
                how = "current"
            return UpgradeResult(before, after, how)  # type: ignore[arg-type]  # upgraded: it has a revision
    finally:
        mig.dispose()
