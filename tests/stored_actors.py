"""Actors for tests, made the way the app makes them: an account in a real store, its roles granted there,
and the actor loaded by ``objrel.review.roles.actor_of`` (the gate trusts no other)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from objrel.access import Actor
from objrel.review.accounts import ensure_oidc_reviewer
from objrel.review.roles import actor_of, grant_as_operator
from objrel.store import Store

# The stored accounts of these tests sign in through a provider subject, so none needs a passphrase hash.
SUBJECT_PREFIX = "test-subject-"


def stored_actor(store: Store | str | Path, name: str, roles: Iterable[str] | str) -> Actor:
    """The actor of the account ``name`` holding ``roles`` in ``store`` (a Store, or the path of a SQLite file
    to open or create), the account created first when it is not there."""
    store = store if isinstance(store, Store) else Store(Path(store))
    ensure_oidc_reviewer(store, name, SUBJECT_PREFIX + name)
    grant_as_operator(store, name, roles)
    return actor_of(store, name)
