"""The store: runs, samples, predictions, verdicts and votes behind one URL.

``Store(url)`` takes any SQLAlchemy URL; a plain path means a SQLite file.  The
default comes from ``OBJREL_STORE`` or is ``sqlite:///objrel.db`` in the working
directory.  SQLite runs in WAL mode with a busy timeout so the app can read while
a run writes.  Every write is one short transaction;
a sample's rows are committed together, so a killed run never leaves half a sample.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Text, and_, cast, create_engine, delete, event, func, insert, or_, select, true, update
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DatabaseError, IntegrityError, OperationalError

from objrel.constants import SQLITE_BUSY_TIMEOUT_MS, STORE_POOL_KEPT, STORE_POOL_SIZE
from objrel.errors import RunLeaseLost, StoreError
from objrel.store import schema as S
from objrel.store.revisions import ensure_current

ENV_VAR = "OBJREL_STORE"
DEFAULT_URL = "sqlite:///objrel.db"
RUN_STATUSES = ("pending", "running", "finished", "failed", "cancelled")
# Sample ids bound per query when rows of many samples are read at once (``Store.rows_of``).
ROWS_OF_CHUNK = 500


def _has_issue():
    """The condition of a sample ``Store.sample_issues`` lists: not tested, or with annotations dropped."""
    dropped = func.coalesce(cast(S.samples.c.dropped, Text), "null")
    return or_(S.samples.c.status != "tested", dropped.not_in(["null", "[]"]))


def in_rows(column, rows: tuple[int, int] | None):
    """The condition that ``column`` (a sample row id) lies in ``rows`` = (after, upto]; always true for None.
    A run only ever adds sample rows, so the rows after a kept result's newest are what the run added since."""
    return true() if rows is None else and_(column > int(rows[0]), column <= int(rows[1]))


def resolve_url(url: str | os.PathLike | None = None) -> str:
    """``url`` > ``$OBJREL_STORE`` > ``sqlite:///objrel.db``; a bare path becomes a SQLite URL."""
    raw = str(url) if url else os.environ.get(ENV_VAR) or DEFAULT_URL
    if "://" not in raw:
        raw = f"sqlite:///{Path(raw).expanduser().resolve()}"
    return raw


# The store cannot be opened (a missing folder, a file that is not a database, another application's
# database, an unknown schema): objrel.errors.StoreError, by its older name.
StoreOpenError = StoreError
# What SQLite says of a file that is not a database or is damaged (truncated, overwritten): any statement
# that meets one raises a StoreError naming the store instead of an SQL error.
SQLITE_DAMAGE = ("file is not a database", "database disk image is malformed", "no such table")


def lease_lost(run_id: int) -> RunLeaseLost:
    """The error a write raises when this process no longer holds run ``run_id``'s lease."""
    return RunLeaseLost(f"run {run_id} is no longer this process's to write: it was deleted, or another process "
                        f"took its lease over after this one stopped beating (objrel.store.leases); stopped "
                        f"without writing more")


def now() -> dt.datetime:
    """The current time, timezone-aware in UTC (what the store writes)."""
    return dt.datetime.now(dt.timezone.utc)


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


# How often, and how far apart (seconds), switching a SQLite file to WAL is tried again while another
# connection holds its lock: SQLite answers a journal-mode change at once, without its busy handler, so
# a second process that opens a store while the first upgrades it would otherwise fail "database is locked".
WAL_SWITCH_PAUSE_S = 0.05
WAL_SWITCH_ATTEMPTS = int(SQLITE_BUSY_TIMEOUT_MS / 1000 / WAL_SWITCH_PAUSE_S)


def _use_wal(engine: Engine) -> None:
    """Put the SQLite file behind ``engine`` in WAL mode (a setting of the file, kept once made); a file
    already in WAL costs one read.  A lock held by another connection is waited out, up to the busy
    timeout, like any other write."""
    for attempt in range(1, WAL_SWITCH_ATTEMPTS + 1):
        try:
            with engine.connect() as c:
                if c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal":
                    return
                c.exec_driver_sql("PRAGMA journal_mode=WAL")
                return
        except OperationalError as exc:
            if "locked" not in str(exc.orig).lower() or attempt == WAL_SWITCH_ATTEMPTS:
                raise
            time.sleep(WAL_SWITCH_PAUSE_S)


@dataclass(frozen=True)
class RunRecord:
    id: int
    name: str
    status: str
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    model: str
    model_config: dict
    task: str
    dataset: str
    dataset_config: dict
    plan: dict
    config: dict
    seed: int
    n_total: int
    n_done: int
    n_skipped: int
    n_tested: int
    error: str | None
    timings: dict | None
    cancel_requested: bool = False
    pid: int | None = None
    heartbeat_at: dt.datetime | None = None
    passes_done: int | None = None        # forward passes of the current invocation (objrel.engine.loop)
    passes_expected: int | None = None    # the loop's running estimate of that invocation's passes
    progress_at: dt.datetime | None = None
    lease_host: str | None = None         # the host of the process holding the run (objrel.store.leases)

    def to_dict(self) -> dict:
        """The run record as a JSON-ready dict (times as ISO text)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        for k in ("created_at", "started_at", "finished_at", "heartbeat_at", "progress_at"):
            d[k] = d[k].isoformat() if d[k] else None
        return d


def database_name(url: str) -> tuple[str, str]:
    """``(the SQLite file's stem or the database's name, the URL without its password)`` of a store URL: what
    may name the store in a folder or on a page (no password; the caller decides about paths)."""
    parsed = make_url(url)
    name = Path(parsed.database or "store").stem if parsed.get_backend_name() == "sqlite" else (parsed.database
                                                                                               or "store")
    return name, parsed.set(password=None).render_as_string(hide_password=False)


class Store:
    def __init__(self, url: str | os.PathLike | None = None, create: bool = True, make_parents: bool = False):
        """Open (and with ``create`` make or upgrade) the store at ``url``.

        A new SQLite file is created only in an existing folder unless ``make_parents``: a mistyped path
        is refused instead of leaving folders and an empty database behind.  With ``create`` an empty
        database gets the schema and an older store is upgraded to this objrel's revision
        (``objrel.store.revisions.ensure_current``).  Raises ``StoreError`` (one line: what was expected,
        what arrived) for a missing folder, a file that is not a database or is damaged, another
        application's database, or a store newer than this objrel (``StoreTooNew``).
        """
        self.url = resolve_url(url)
        parsed = make_url(self.url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        if self.is_sqlite and parsed.database and parsed.database != ":memory:":
            parent = Path(parsed.database).parent
            if make_parents:
                parent.mkdir(parents=True, exist_ok=True)
            elif not parent.is_dir():
                raise StoreOpenError(f"cannot open store {parsed.database}: its folder {parent} does not exist; "
                                     f"expected a path in an existing folder (is the --store path mistyped?)")
        kwargs: dict[str, Any] = {"future": True}
        if self.is_sqlite:
            kwargs["connect_args"] = {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
        else:
            kwargs["pool_pre_ping"] = True
        if not self.is_sqlite or (parsed.database or ":memory:") != ":memory:":   # a pool (not one shared memory db)
            kwargs.update(pool_size=STORE_POOL_KEPT, max_overflow=STORE_POOL_SIZE - STORE_POOL_KEPT)
        self.engine: Engine = create_engine(self.url, **kwargs)
        self._leases: dict[int, str] = {}  # run id -> token of the leases this process holds (leases.acquire)
        if self.is_sqlite:
            event.listen(self.engine, "connect", _sqlite_pragmas)
            event.listen(self.engine, "handle_error", self._damaged)
        if create:
            try:
                ensure_current(self.engine)
                if self.is_sqlite:  # WAL is a setting of the file: made only once the file is known to be ours
                    _use_wal(self.engine)
            except StoreError:
                self.engine.dispose()
                raise
            except DatabaseError as exc:
                self.engine.dispose()
                msg = _first_line(exc)
                if msg.startswith(SQLITE_DAMAGE[0]):
                    raise self._not_a_database(msg) from None
                raise StoreError(f"cannot open store {self!r}: expected an objrel store it can read, got an error "
                                 f"from the database ({msg})") from None

    def _damaged(self, context) -> None:
        """SQLAlchemy's ``handle_error`` hook: a damaged SQLite file met after opening becomes one StoreError
        line (never the SQL statement)."""
        msg = _first_line(context.original_exception)
        if msg.startswith(SQLITE_DAMAGE[0]):
            raise self._not_a_database(msg) from None
        if any(m in msg for m in SQLITE_DAMAGE):
            raise StoreError(f"the store {self!r} is damaged ({msg}); expected an intact objrel database: restore "
                             f"it from a copy, or give the path of another store") from None

    def _not_a_database(self, msg: str) -> StoreError:
        return StoreError(f"cannot open store {self!r}: expected an objrel store (a SQLite database or a new "
                          f"file), got a file that is not a usable objrel database ({msg})")

    def __repr__(self) -> str:
        return f"Store({make_url(self.url).render_as_string(hide_password=True)!r})"

    def dispose(self) -> None:
        """Close the store's pooled database connections."""
        self.engine.dispose()

    # ------------------------------------------------------------ leases (objrel.store.leases)

    def hold(self, run_id: int, token: str) -> None:
        """Remember that this process holds run ``run_id``'s lease ``token``: its writes of the run check it."""
        self._leases[int(run_id)] = token

    def let_go(self, run_id: int) -> None:
        """Forget run ``run_id``'s lease: this process's writes of the run no longer check it."""
        self._leases.pop(int(run_id), None)

    def lease(self, run_id: int) -> str | None:
        """The token of run ``run_id``'s lease this process holds, or None."""
        return self._leases.get(int(run_id))

    def check_lease(self, conn, run_id: int) -> None:
        """Inside a write's transaction: where this process holds run ``run_id``'s lease, beat it and raise
        RunLeaseLost (rolling the write back) when the run row is gone or carries another token.  Also takes
        SQLite's write lock / PostgreSQL's row lock first."""
        token = self._leases.get(int(run_id))
        if token is None:
            return
        n = conn.execute(update(S.runs).where(S.runs.c.id == int(run_id), S.runs.c.lease_token == token)
                         .values(heartbeat_at=now())).rowcount
        if n != 1:
            raise lease_lost(run_id)

    # ------------------------------------------------------------ runs

    def create_run(self, *, name: str, model: str, model_config: dict, task: str, class_names: list[str],
                   dataset: str, dataset_config: dict, plan: dict, config: dict, seed: int, n_total: int) -> int:
        """Insert a new pending run with its settings and return its id."""
        with self.engine.begin() as c:
            res = c.execute(insert(S.runs).values(
                name=name, status="pending", created_at=now(), model=model, model_config=model_config, task=task,
                class_names=class_names, dataset=dataset, dataset_config=dataset_config, plan=plan, config=config,
                seed=int(seed), n_total=n_total, n_done=0, n_skipped=0, n_tested=0, cancel_requested=False,
            ))
            return int(res.inserted_primary_key[0])  # type: ignore[index]  # an INSERT's result has its key

    def _record(self, row) -> RunRecord:
        m = row._mapping
        return RunRecord(**{k: m[k] for k in RunRecord.__dataclass_fields__})

    def get_run(self, run_id: int) -> RunRecord:
        """The record of run ``run_id``; KeyError when the store has no such run."""
        with self.engine.connect() as c:
            row = c.execute(select(S.runs).where(S.runs.c.id == int(run_id))).first()
        if row is None:
            raise KeyError(f"no run {run_id} in {self!r}; `objrel runs` lists them")
        return self._record(row)

    def list_runs(self) -> list[RunRecord]:
        """Every run of the store, by id."""
        with self.engine.connect() as c:
            rows = c.execute(select(S.runs).order_by(S.runs.c.id)).all()
        return [self._record(r) for r in rows]

    def class_names(self, run_id: int) -> list[str]:
        """The class names run ``run_id`` was tested with."""
        with self.engine.connect() as c:
            return list(c.execute(select(S.runs.c.class_names).where(S.runs.c.id == int(run_id))).scalar_one())

    def update_run(self, run_id: int, **values) -> None:
        """Set columns of run ``run_id`` (checking its lease); ValueError for an unknown status."""
        if "status" in values and values["status"] not in RUN_STATUSES:
            raise ValueError(f"run status must be one of {RUN_STATUSES}, got {values['status']!r}")
        with self.engine.begin() as c:
            self.check_lease(c, run_id)
            c.execute(update(S.runs).where(S.runs.c.id == int(run_id)).values(**values))

    def set_progress(self, run_id: int, passes_done: int, passes_expected: int | None) -> None:
        """Record the current invocation's forward passes done and expected (and when), for the live view.
        A process that lost the run's lease writes nothing (its loop stops at the next commit)."""
        q = update(S.runs).where(S.runs.c.id == int(run_id))
        token = self.lease(run_id)
        if token is not None:
            q = q.where(S.runs.c.lease_token == token)
        with self.engine.begin() as c:
            c.execute(q.values(passes_done=int(passes_done),
                               passes_expected=None if passes_expected is None else int(passes_expected),
                               progress_at=now()))

    def rename_run(self, run_id: int, name: str) -> None:
        """Give run ``run_id`` a new name (KeyError for an unknown run).  Callers check the actor's role."""
        with self.engine.begin() as c:
            n = c.execute(update(S.runs).where(S.runs.c.id == int(run_id)).values(name=str(name))).rowcount
        if not n:
            raise KeyError(f"no run {run_id} in {self!r}; expected the id of a stored run")

    def delete_run(self, run_id: int) -> dict[str, int]:
        """Delete run ``run_id`` and every row that belongs to it, in one transaction; returns the rows deleted
        by table.  The schema's ``ON DELETE CASCADE`` would do it too (SQLite with ``foreign_keys=ON``,
        PostgreSQL); deleting the children explicitly first also covers a store whose tables lack it."""
        rid = int(run_id)
        counts: dict[str, int] = {}
        with self.engine.begin() as c:
            if c.execute(select(S.runs.c.id).where(S.runs.c.id == rid)).first() is None:
                raise KeyError(f"no run {run_id} in {self!r}; expected the id of a stored run")
            for table in reversed(S.metadata.sorted_tables):
                if table is not S.runs and "run_id" in table.c:
                    counts[table.name] = c.execute(delete(table).where(table.c.run_id == rid)).rowcount
            counts[S.runs.name] = c.execute(delete(S.runs).where(S.runs.c.id == rid)).rowcount
        return counts

    def sample_issues(self, run_id: int, offset: int = 0, limit: int | None = None) -> list[dict]:
        """Run ``run_id``'s samples that were skipped or left untested, and those with dropped annotations:
        ``{sample_id, status, skip_code, skip_reason, correct, dropped}`` each, by sample id; from the
        ``offset``-th such sample on, at most ``limit`` of them (all when None): the page is cut in the query."""
        cols = [S.samples.c[k] for k in ("sample_id", "status", "skip_code", "skip_reason", "correct", "dropped")]
        q = (select(*cols).where(S.samples.c.run_id == int(run_id), _has_issue())
             .order_by(S.samples.c.sample_id).offset(int(offset)))
        if limit is not None:
            q = q.limit(int(limit))
        with self.engine.connect() as c:
            rows = [dict(r._mapping) for r in c.execute(q)]
        return [r for r in rows if r["status"] != "tested" or r["dropped"]]

    def issue_total(self, run_id: int, rows: tuple[int, int] | None = None) -> int:
        """How many samples ``sample_issues`` lists for ``run_id`` in all (of the sample rows in ``rows`` =
        (after, upto] when given)."""
        q = select(func.count()).where(S.samples.c.run_id == int(run_id), in_rows(S.samples.c.id, rows), _has_issue())
        with self.engine.connect() as c:
            return int(c.execute(q).scalar_one())

    def request_cancel(self, run_id: int) -> None:
        """Ask run ``run_id`` to stop (its loop reads the flag between chunks)."""
        self.update_run(run_id, cancel_requested=True)

    def cancel_requested(self, run_id: int) -> bool:
        """True when someone asked run ``run_id`` to stop."""
        with self.engine.connect() as c:
            return bool(c.execute(select(S.runs.c.cancel_requested).where(S.runs.c.id == int(run_id))).scalar())

    # ------------------------------------------------------------ samples

    def done_sample_ids(self, run_id: int) -> set[str]:
        """The ids of the samples run ``run_id`` has written."""
        with self.engine.connect() as c:
            return set(c.execute(select(S.samples.c.sample_id).where(S.samples.c.run_id == int(run_id))).scalars())

    def write_sample(self, run_id: int, sample_row: dict, predictions: list[dict], verdicts: list[dict],
                     votes: list[dict]) -> bool:
        """Commit one sample and all its rows in a single transaction.

        Returns False (and writes nothing) when the sample is already stored, so a
        resumed run never duplicates rows; any other integrity error (a row the schema refuses, a run
        deleted meanwhile) raises, so no sample is dropped without a word.
        """
        rid = int(run_id)
        try:
            with self.engine.begin() as c:
                self.check_lease(c, rid)
                _insert_samples(c, rid, [(sample_row, predictions, verdicts, votes)])
        except IntegrityError:
            if self._stored(rid, sample_row["sample_id"]):
                return False
            raise
        return True

    def _stored(self, run_id: int, sample_id: str) -> bool:
        with self.engine.connect() as c:
            return c.execute(select(S.samples.c.id).where(S.samples.c.run_id == int(run_id),
                                                          S.samples.c.sample_id == str(sample_id))).first() is not None

    def write_samples(self, run_id: int, results: list[tuple[dict, list[dict], list[dict], list[dict]]]) -> list[bool]:
        """Commit several samples (an engine chunk), each ``(sample_row, predictions, verdicts, votes)``, and
        all their rows in one transaction; returns, per sample, whether it was written.

        Where one of them is already stored, each is written on its own instead (``write_sample``): the
        others still land and none is duplicated; a row the schema refuses raises there, after the samples
        before it have landed."""
        rid = int(run_id)
        if not results:
            return []
        try:
            with self.engine.begin() as c:
                self.check_lease(c, rid)
                _insert_samples(c, rid, results)
        except IntegrityError:
            return [self.write_sample(run_id, *r) for r in results]
        return [True] * len(results)

    def sample(self, run_id: int, sample_id: str) -> dict:
        """The sample row of (run, sample) as a dict; KeyError when there is none."""
        with self.engine.connect() as c:
            row = c.execute(select(S.samples).where(S.samples.c.run_id == int(run_id),
                                                    S.samples.c.sample_id == str(sample_id))).first()
        if row is None:
            raise KeyError(f"run {run_id} has no sample {sample_id!r}")
        return dict(row._mapping)

    def samples(self, run_id: int, status: str | None = None) -> list[dict]:
        """The run's sample rows as dicts, by sample id, only those of ``status`` when given."""
        q = select(S.samples).where(S.samples.c.run_id == int(run_id))
        if status:
            q = q.where(S.samples.c.status == status)
        with self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(q.order_by(S.samples.c.sample_id))]

    def sample_states(self, run_id: int, status: str | None = None,
                      rows: tuple[int, int] | None = None) -> list[dict]:
        """The run's samples as ``{sample_id, rel_path, status, correct, s}`` dicts (no JSON column decoded), by
        sample id, only those of ``status`` when given and those whose row id lies in ``rows`` = (after, upto]
        when given: what counts and rankings over a run need."""
        cols = [S.samples.c[k] for k in ("sample_id", "rel_path", "status", "correct", "s")]
        q = select(*cols).where(S.samples.c.run_id == int(run_id), in_rows(S.samples.c.id, rows))
        if status:
            q = q.where(S.samples.c.status == status)
        with self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(q.order_by(S.samples.c.sample_id))]

    def issue_counts(self, run_id: int) -> list[tuple[str, str | None, bool | None, int]]:
        """How many of the run's samples are in each (status, skip_code, correct) state: one GROUP BY."""
        c_ = S.samples.c
        q = (select(c_.status, c_.skip_code, c_.correct, func.count()).where(c_.run_id == int(run_id))
             .group_by(c_.status, c_.skip_code, c_.correct))
        with self.engine.connect() as c:
            return [(r[0], r[1], None if r[2] is None else bool(r[2]), int(r[3])) for r in c.execute(q)]

    def predictions(self, run_id: int, sample_id: str) -> dict[str, dict]:
        """The sample's prediction rows, keyed by mutation key ("source" for the source image)."""
        q = select(S.predictions).where(S.predictions.c.run_id == int(run_id),
                                        S.predictions.c.sample_id == str(sample_id))
        with self.engine.connect() as c:
            return {r.mutation_key: dict(r._mapping) for r in c.execute(q)}

    def verdicts(self, run_id: int, sample_id: str | None = None) -> list[dict]:
        """The run's verdict rows as dicts, of one sample when ``sample_id`` is given."""
        q = select(S.verdicts).where(S.verdicts.c.run_id == int(run_id))
        if sample_id is not None:
            q = q.where(S.verdicts.c.sample_id == str(sample_id))
        with self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(q.order_by(S.verdicts.c.sample_id, S.verdicts.c.id))]

    def votes(self, run_id: int, sample_id: str | None = None) -> list[dict]:
        """The run's vote rows as dicts, of one sample when ``sample_id`` is given."""
        q = select(S.votes).where(S.votes.c.run_id == int(run_id))
        if sample_id is not None:
            q = q.where(S.votes.c.sample_id == str(sample_id))
        with self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(q.order_by(S.votes.c.sample_id, S.votes.c.id))]

    def skip_counts(self, run_id: int) -> dict[str, int]:
        """How many of the run's samples were skipped, per skip code."""
        q = (select(S.samples.c.skip_code, func.count()).where(S.samples.c.run_id == int(run_id),
             S.samples.c.status == "skipped").group_by(S.samples.c.skip_code))
        with self.engine.connect() as c:
            return {code: int(n) for code, n in c.execute(q)}

    def flagged_sample_ids(self, run_id: int, relation: str, primary_only: bool = True,
                           limit: int | None = None) -> list[str]:
        """The sorted ids of the samples flagged by a ``relation`` vote (only primary votes by default); the first
        ``limit`` of them when given (sorted and cut in the query)."""
        q = select(S.votes.c.sample_id).where(S.votes.c.run_id == int(run_id), S.votes.c.relation == relation,
                                              S.votes.c.flagged.is_(True))
        if primary_only:
            q = q.where(S.votes.c.is_primary.is_(True))
        if limit is not None:
            q = q.distinct().order_by(S.votes.c.sample_id).limit(int(limit))
        with self.engine.connect() as c:
            return sorted(set(c.execute(q).scalars()))

    def samples_after(self, run_id: int, after: str | None, limit: int, status: str | None = None) -> list[dict]:
        """Up to ``limit`` sample rows of the run (of ``status`` when given) whose ids follow ``after`` (from the
        first when None), by sample id: a run read a page at a time through the (run_id, sample_id) index."""
        q = select(S.samples).where(S.samples.c.run_id == int(run_id))
        if status:
            q = q.where(S.samples.c.status == status)
        if after is not None:
            q = q.where(S.samples.c.sample_id > after)
        with self.engine.connect() as c:
            return [dict(r._mapping) for r in c.execute(q.order_by(S.samples.c.sample_id).limit(int(limit)))]

    def rows_of(self, table: str, run_id: int, sample_ids) -> dict[str, list[dict]]:
        """The ``votes``, ``verdicts`` or ``predictions`` rows of the given samples of a run, per sample id, each
        sample's rows in the order they were written."""
        t = {"votes": S.votes, "verdicts": S.verdicts, "predictions": S.predictions}[table]
        ids = [str(i) for i in sample_ids]
        out: dict[str, list[dict]] = {i: [] for i in ids}
        with self.engine.connect() as c:
            for start in range(0, len(ids), ROWS_OF_CHUNK):
                q = (select(t).where(t.c.run_id == int(run_id), t.c.sample_id.in_(ids[start:start + ROWS_OF_CHUNK]))
                     .order_by(t.c.sample_id, t.c.id))
                for r in c.execute(q):
                    out[r.sample_id].append(dict(r._mapping))
        return out

    def first_seen(self, table: str, column: str, run_id: int) -> list[str]:
        """The distinct values of ``column`` (``group_name`` of ``votes``, ``mutation_key`` of ``verdicts``) in a
        run, in the order they were first written: the columns of a run's export."""
        t = {"votes": S.votes, "verdicts": S.verdicts}[table]
        col = t.c[column]
        q = select(col, func.min(t.c.id)).where(t.c.run_id == int(run_id)).group_by(col).order_by(func.min(t.c.id))
        with self.engine.connect() as c:
            return [r[0] for r in c.execute(q)]

    def flagged_count(self, run_id: int, relation: str, rows: tuple[int, int] | None = None) -> int:
        """How many samples the primary ``relation`` vote flags in run ``run_id`` (one COUNT); of the sample rows
        in ``rows`` = (after, upto] when given."""
        v = S.votes.c
        q = select(func.count(func.distinct(v.sample_id))).where(v.run_id == int(run_id), v.relation == relation,
                                                                 v.flagged.is_(True), v.is_primary.is_(True))
        if rows is not None:
            sm = S.samples.c
            q = q.where(select(sm.id).where(sm.run_id == v.run_id, sm.sample_id == v.sample_id,
                                            in_rows(sm.id, rows)).exists())
        with self.engine.connect() as c:
            return int(c.execute(q).scalar_one())

    # ------------------------------------------------------------ crash bookkeeping

    def record_attempts(self, run_id: int, sample_ids, alone: bool = False) -> None:
        """Record that the samples start (before their chunk runs); ``clear_attempts`` forgets them once they
        are committed.  A sample with a row is retried alone on resume.  ``alone`` (one sample, nothing worked
        ahead) counts one more start of it; a start among other samples counts none, so a process that died
        of another sample or of a kill never brings an innocent sample nearer to 'crashed-twice'."""
        rid = int(run_id)
        ids = list(dict.fromkeys(str(i) for i in sample_ids))
        if not ids:
            return
        with self.engine.begin() as c:
            self.check_lease(c, rid)
            have = dict(c.execute(select(S.attempts.c.sample_id, S.attempts.c.count).where(
                S.attempts.c.run_id == rid, S.attempts.c.sample_id.in_(ids))).all())
            again = [sid for sid in ids if sid in have]
            if again and alone:
                c.execute(update(S.attempts).where(S.attempts.c.run_id == rid, S.attempts.c.sample_id.in_(again))
                          .values(count=S.attempts.c.count + 1))
            fresh = [{"run_id": rid, "sample_id": sid, "count": int(alone)} for sid in ids if sid not in have]
            if fresh:  # one statement for the chunk's samples (a chunk of 16 took 1.2 ms one insert at a time)
                c.execute(insert(S.attempts), fresh)

    def clear_attempts(self, run_id: int, sample_ids) -> None:
        """Delete the recorded attempts of ``sample_ids`` in run ``run_id`` (checking its lease)."""
        ids = [str(i) for i in sample_ids]
        if ids:
            with self.engine.begin() as c:
                self.check_lease(c, run_id)
                c.execute(delete(S.attempts).where(S.attempts.c.run_id == int(run_id), S.attempts.c.sample_id.in_(ids)))

    def attempts(self, run_id: int) -> dict[str, int]:
        """``{sample id: starts alone not followed by a commit}`` of ``run_id``: every sample a process started
        and did not commit (0: it only ran among others)."""
        with self.engine.connect() as c:
            return dict(c.execute(select(S.attempts.c.sample_id, S.attempts.c.count).where(
                S.attempts.c.run_id == int(run_id))).all())


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)
    lines = str(orig if orig is not None else exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _insert_samples(conn, run_id: int, results: list[tuple[dict, list[dict], list[dict], list[dict]]]) -> None:
    """Insert samples, each ``(sample_row, predictions, verdicts, votes)``, with all their rows, and add them
    to the run's counters, inside the caller's transaction."""
    _insert_in_order(conn, S.samples, [{"run_id": run_id, **r[0]} for r in results])
    for table, at in ((S.predictions, 1), (S.verdicts, 2), (S.votes, 3)):
        _insert_in_order(conn, table, [{"run_id": run_id, **row} for r in results for row in r[at]])
    statuses = [r[0]["status"] for r in results]
    conn.execute(update(S.runs).where(S.runs.c.id == run_id).values(
        n_done=S.runs.c.n_done + len(results),
        n_skipped=S.runs.c.n_skipped + statuses.count("skipped"),
        n_tested=S.runs.c.n_tested + statuses.count("tested"),
        heartbeat_at=now(),
    ))


def _insert_in_order(conn, table, rows: list[dict]) -> None:
    """Insert ``rows`` in their order with as few ``executemany`` as the columns allow.  One statement takes
    one set of columns: a row that leaves out a column without a default gets None there (the column's
    value when left out), so the rows of a chunk go in one statement; otherwise one statement per run of
    rows with the same columns."""
    if not rows:
        return
    columns = set().union(*rows)
    no_default = {c.name for c in table.columns if c.default is None and c.server_default is None}
    if all(columns - row.keys() <= no_default for row in rows):
        conn.execute(insert(table), [{**dict.fromkeys(columns), **row} for row in rows])
        return
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i].keys() != rows[start].keys():
            conn.execute(insert(table), rows[start:i])
            start = i
