"""Reviewer rows: the ``reviewers`` table.

A row is a dict ``{"id", "name", "pass_hash", "oidc_subject", "created_at"}``: ``pass_hash`` is
the stored scrypt string (None for an OIDC account), ``oidc_subject`` the provider's stable
``sub`` (None for a password account), ``created_at`` a timezone-aware datetime.  Names are
unique ignoring case.  Hashing and checking passphrases is ``objrel.review.accounts``'s job;
this module only stores what it is given.
"""

from __future__ import annotations

from sqlalchemy import func, insert, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from objrel.store import schema as S
from objrel.store.store import Store, now
from objrel.store.transactions import write


class NameTaken(ValueError):
    """A reviewer name is already in use (compared ignoring case); ``name`` is the one asked for."""

    def __init__(self, name: str):
        super().__init__(f"a reviewer named {name!r} (ignoring case) already exists")
        self.name = name


def _row(c: Connection, name: str) -> dict | None:
    row = c.execute(select(S.reviewers).where(S.reviewers.c.name == name)).first()
    return dict(row._mapping) if row is not None else None


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


def name_taken(store: Store, name: str) -> bool:
    """True when an account's name equals ``name`` ignoring case."""
    with store.engine.connect() as c:
        return _taken(c, name)


def add_password_reviewer(store: Store, name: str, pass_hash: str) -> dict:
    """Insert a password account and return its row; raises NameTaken when the name (ignoring
    case) is in use, including when another writer registered it a moment ago."""

    def work(c: Connection) -> dict:
        if _taken(c, name):
            raise NameTaken(name)
        c.execute(insert(S.reviewers).values(name=name, pass_hash=pass_hash, oidc_subject=None, created_at=now()))
        return _row(c, name)

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

    def work(c: Connection) -> dict:
        row = c.execute(select(S.reviewers).where(S.reviewers.c.oidc_subject == subject)).first()
        if row is not None:
            return dict(row._mapping)
        if _taken(c, name):
            raise NameTaken(name)
        c.execute(insert(S.reviewers).values(name=name, pass_hash=None, oidc_subject=subject, created_at=now()))
        return _row(c, name)

    return write(store, work, retry_on_integrity=True)


def reviewer_names(store: Store) -> list[str]:
    """Every account's name, sorted."""
    with store.engine.connect() as c:
        return sorted(c.execute(select(S.reviewers.c.name)).scalars())
