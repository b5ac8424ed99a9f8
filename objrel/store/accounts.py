"""Reviewer rows: the ``reviewers`` table.

A row is a dict ``{"id", "name", "pass_hash", "oidc_subject", "created_at"}``: ``pass_hash`` is
the stored scrypt string (None for an OIDC account), ``oidc_subject`` the provider's stable
``sub`` (None for a password account), ``created_at`` a timezone-aware datetime.  Names are
unique ignoring case.  Hashing and checking passphrases is ``objrel.review.accounts``'s job;
this module only stores what it is given.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError

from objrel.store import schema as S
from objrel.store.store import Store, now
from objrel.store.transactions import write


class NameTaken(ValueError):
    """A reviewer name is already in use (compared ignoring case); ``name`` is the one asked for."""

    def __init__(self, name: str):
        super().__init__(f"a reviewer named {name!r} (ignoring case) already exists")
        self.name = name


# Engines whose store has the case-insensitive unique name index (stores made before it get it here).
_INDEXED: set[int] = set()


def ensure_name_index(store: Store) -> None:
    """Create the unique index on ``lower(name)`` when the store predates it (once per engine).  A store
    that already holds two names differing only in case cannot get it; the check in ``_taken`` remains."""
    engine: Engine = store.engine
    if id(engine) in _INDEXED:
        return
    try:
        with engine.begin() as c:
            c.execute(text(f"CREATE UNIQUE INDEX IF NOT EXISTS {S.reviewers_name_key.name} "
                           f"ON {S.reviewers.name} (lower(name))"))
    except (IntegrityError, OperationalError, ProgrammingError):
        pass  # duplicate legacy names, or a concurrent creator: the in-transaction check still holds
    _INDEXED.add(id(engine))


def _row(c: Connection, name: str) -> dict | None:
    row = c.execute(select(S.reviewers).where(S.reviewers.c.name == name)).first()
    return dict(row._mapping) if row is not None else None


def _written_row(c: Connection, name: str) -> dict:
    """The row of the account just inserted under ``name`` in this transaction."""
    row = _row(c, name)
    if row is None:
        raise LookupError(f"account {name!r} was inserted in this transaction, but no row of that name was found")
    return row


def _taken(c: Connection, name: str) -> bool:
    q = select(S.reviewers.c.id).where(func.lower(S.reviewers.c.name) == name.lower())
    return c.execute(q.limit(1)).first() is not None


def has_reviewer(c: Connection, name: str) -> bool:
    """Inside another module's transaction: is there an account named exactly ``name``?"""
    return _row(c, name) is not None


def reviewer(store: Store, name: str) -> dict | None:
    """The row of the account named exactly ``name``, or None."""
    with store.engine.connect() as c:
        return _row(c, name)


def _key_row(c: Connection, name: str) -> dict | None:
    row = c.execute(select(S.reviewers).where(func.lower(S.reviewers.c.name) == name.lower()).limit(1)).first()
    return dict(row._mapping) if row is not None else None


def reviewer_by_key(store: Store, name: str) -> dict | None:
    """The row of the account whose name equals ``name`` ignoring case, or None."""
    with store.engine.connect() as c:
        return _key_row(c, name)


def name_taken(store: Store, name: str) -> bool:
    """True when an account's name equals ``name`` ignoring case."""
    with store.engine.connect() as c:
        return _taken(c, name)


def add_password_reviewer(store: Store, name: str, pass_hash: str, roles: Iterable[str] = (),
                          granted_by: str | None = None) -> dict:
    """Insert a password account with ``roles`` and return its row; raises NameTaken when the name
    (ignoring case) is in use, including when another writer registered it a moment ago (the unique
    index on ``lower(name)`` decides such a race)."""
    ensure_name_index(store)

    def work(c: Connection) -> dict:
        if _taken(c, name):
            raise NameTaken(name)
        c.execute(insert(S.reviewers).values(name=name, pass_hash=pass_hash, oidc_subject=None, created_at=now()))
        row = _written_row(c, name)
        _grant(c, row["id"], roles, granted_by)
        return row

    try:
        return write(store, work)
    except IntegrityError:  # the unique name: a concurrent insert won
        raise NameTaken(name) from None


def oidc_reviewer(store: Store, name: str, subject: str) -> dict:
    """The row of the account with OIDC ``subject``; created as ``name`` when there is none.

    A known subject keeps its row whatever ``name`` now says.  Raises NameTaken when a new
    subject's ``name`` (ignoring case) belongs to another account.  Concurrent first sign-ins of
    one subject end with one row: the losing insert is retried and then finds it.
    """

    ensure_name_index(store)

    def work(c: Connection) -> dict:
        row = c.execute(select(S.reviewers).where(S.reviewers.c.oidc_subject == subject)).first()
        if row is not None:
            return dict(row._mapping)
        if _taken(c, name):
            raise NameTaken(name)
        c.execute(insert(S.reviewers).values(name=name, pass_hash=None, oidc_subject=subject, created_at=now()))
        return _written_row(c, name)

    return write(store, work, retry_on_integrity=True)


def reviewer_names(store: Store) -> list[str]:
    """Every account's name, sorted."""
    with store.engine.connect() as c:
        return sorted(c.execute(select(S.reviewers.c.name)).scalars())


# ---------------------------------------------------------------- roles


def _grant(c: Connection, reviewer_id: int, roles: Iterable[str], granted_by: str | None) -> None:
    have = set(c.execute(select(S.account_roles.c.role).where(S.account_roles.c.reviewer_id == reviewer_id)).scalars())
    for role in sorted(set(roles) - have):
        c.execute(insert(S.account_roles).values(reviewer_id=reviewer_id, role=role, granted_by=granted_by,
                                                 created_at=now()))


def roles_in(c: Connection, name: str) -> tuple[str, ...]:
    """Inside another module's transaction: the roles of the account named exactly ``name`` (sorted)."""
    q = (select(S.account_roles.c.role).join(S.reviewers, S.reviewers.c.id == S.account_roles.c.reviewer_id)
         .where(S.reviewers.c.name == name))
    return tuple(sorted(c.execute(q).scalars()))


def roles(store: Store, name: str) -> tuple[str, ...]:
    """The roles of the account named exactly ``name`` (sorted; empty for an unknown name)."""
    with store.engine.connect() as c:
        return roles_in(c, name)


def grant_roles(store: Store, name: str, roles: Iterable[str], granted_by: str | None) -> tuple[str, ...]:
    """Add ``roles`` to the account named exactly ``name``; returns its roles.  KeyError for an unknown name."""
    roles = tuple(roles)

    def work(c: Connection) -> tuple[str, ...]:
        row = _row(c, name)
        if row is None:
            raise KeyError(f"no account named {name!r}")
        _grant(c, row["id"], roles, granted_by)
        return roles_in(c, name)

    return write(store, work, retry_on_integrity=True)


def revoke_role(store: Store, name: str, role: str) -> tuple[str, ...]:
    """Take ``role`` from the account named exactly ``name``; returns its roles.  KeyError for an unknown name."""

    def work(c: Connection) -> tuple[str, ...]:
        row = _row(c, name)
        if row is None:
            raise KeyError(f"no account named {name!r}")
        c.execute(delete(S.account_roles).where(S.account_roles.c.reviewer_id == row["id"],
                                                S.account_roles.c.role == role))
        return roles_in(c, name)

    return write(store, work)


def accounts(store: Store) -> list[dict]:
    """Every account by name: ``{"name", "kind" (password | oidc), "roles" (sorted tuple), "created_at"}``."""
    with store.engine.connect() as c:
        by_id: dict[int, list[str]] = {}
        for rid, role in c.execute(select(S.account_roles.c.reviewer_id, S.account_roles.c.role)):
            by_id.setdefault(int(rid), []).append(role)
        rows = c.execute(select(S.reviewers).order_by(S.reviewers.c.name)).all()
    return [{"name": r.name, "kind": "password" if r.pass_hash else "oidc", "roles": tuple(sorted(by_id.get(r.id, ()))),
             "created_at": r.created_at} for r in rows]


# ---------------------------------------------------------------- failed sign-ins (throttling)


def _lock_failures(c: Connection) -> None:
    """Shut out every other sign-in reservation until this transaction ends.  On PostgreSQL a table lock
    that conflicts with itself and with inserts; SQLite has one writer at a time, and the reservation's
    INSERT (the transaction's first statement) takes that lock before anything is counted."""
    if c.dialect.name == "postgresql":
        c.execute(text(f"LOCK TABLE {S.sign_in_failures.name} IN SHARE ROW EXCLUSIVE MODE"))


def reserve_sign_in(store: Store, name_key: str, client: str, since: dt.datetime, at: dt.datetime,
                    wait_for: Callable[[list[tuple[str, dt.datetime]], list[tuple[str, dt.datetime]]], float]
                    ) -> tuple[int | None, float]:
    """Count and reserve one sign-in try of ``name_key`` (the casefolded typed name) from ``client`` atomically.

    In one transaction that no other reservation can interleave with: the failures after ``since`` are read
    (``(client, time)`` of ``name_key``'s, oldest first, and ``(name_key, time)`` of ``client``'s), and
    ``wait_for(by_name, by_client)`` says how long the try must wait.  When it must wait, nothing is stored and
    ``(None, wait)`` comes back; otherwise a failure row dated ``at`` is stored *before* the passphrase is checked and
    ``(its id, 0.0)`` comes back, so tries sent at the same moment count each other.  The caller settles it:
    ``record_sign_in_failure`` (it stays a failure) or ``clear_sign_in_failures`` (a success)."""
    t = S.sign_in_failures

    def work(c: Connection) -> tuple[int | None, float]:
        _lock_failures(c)
        res = c.execute(insert(t).values(name_key=name_key, client=client, at=at))
        own = res.inserted_primary_key[0]  # type: ignore[index]  # an INSERT's result has its key
        others = (t.c.id != own, t.c.at > since)
        by_name = [(k, ts) for k, ts in c.execute(select(t.c.client, t.c.at).where(t.c.name_key == name_key, *others)
                                                 .order_by(t.c.at))]
        by_client = [(k, ts) for k, ts in c.execute(select(t.c.name_key, t.c.at).where(t.c.client == client, *others)
                                                   .order_by(t.c.at))]
        wait = wait_for(by_name, by_client)
        if wait > 0:
            c.execute(delete(t).where(t.c.id == own))
            return None, wait
        return int(own), 0.0

    return write(store, work)


def release_sign_in(store: Store, reservation: int) -> None:
    """The reserved try was never checked (the server was busy): its row goes, it counts as nothing."""
    t = S.sign_in_failures
    write(store, lambda c: c.execute(delete(t).where(t.c.id == reservation)))


def record_sign_in_failure(store: Store, reservation: int, at: dt.datetime) -> None:
    """The reserved try failed: its row stays a failure, dated ``at`` (when the check ended)."""
    t = S.sign_in_failures
    write(store, lambda c: c.execute(update(t).where(t.c.id == reservation).values(at=at)))


def clear_sign_in_failures(store: Store, name_key: str, client: str) -> None:
    """Forget ``client``'s failures at ``name_key`` (after its successful sign-in; the try's own reservation
    with them).  Other clients' failures at the name stay counted (a success must not reset a stranger's
    guessing), and so do ``client``'s failures at other names."""
    t = S.sign_in_failures
    write(store, lambda c: c.execute(delete(t).where(t.c.name_key == name_key, t.c.client == client)))


# ---------------------------------------------------------------- models an admin allows the app to run


def add_allowed_model(store: Store, task: str, name: str, added_by: str) -> None:
    """Allow the app to run model ``name`` for ``task`` (a second add of the same model is a no-op)."""

    def work(c: Connection) -> None:
        t = S.allowed_models
        if c.execute(select(t.c.id).where(t.c.task == task, t.c.name == name)).first() is None:
            c.execute(insert(t).values(task=task, name=name, added_by=added_by, created_at=now()))

    write(store, work, retry_on_integrity=True)


def allowed_models(store: Store, task: str) -> list[str]:
    """The models an admin allowed for ``task``, sorted."""
    t = S.allowed_models
    with store.engine.connect() as c:
        return sorted(c.execute(select(t.c.name).where(t.c.task == task)).scalars())


# ---------------------------------------------------------------- per-account settings (revision 0007)


def settings(store: Store, name: str) -> dict:
    """The account's settings (a JSON object; {} when none were saved or there is no such account)."""
    with store.engine.connect() as c:
        value = c.execute(select(S.reviewers.c.settings).where(S.reviewers.c.name == name)).scalar()
    return dict(value) if isinstance(value, dict) else {}


def set_setting(store: Store, name: str, key: str, value) -> dict:
    """Set one setting of the account named exactly ``name`` (the others stay); returns every setting.
    Raises KeyError when there is no such account."""
    def work(c: Connection) -> dict:
        row = c.execute(select(S.reviewers.c.id, S.reviewers.c.settings).where(S.reviewers.c.name == name)
                        .with_for_update()).first()
        if row is None:
            raise KeyError(f"no account named {name!r}")
        merged = {**(row.settings if isinstance(row.settings, dict) else {}), key: value}
        c.execute(update(S.reviewers).where(S.reviewers.c.id == row.id).values(settings=merged))
        return merged

    return write(store, work)
