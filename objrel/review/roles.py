"""Roles held in the store, and the actor a request acts as.

An account holds any of ``objrel.access.ROLES`` (several at once).  What each role permits is declared in
``objrel.access.ACTIONS`` and checked by ``objrel.access.authorize``; this module reads and changes the
stored roles (``objrel.store.accounts``) and turns a signed-in name into the ``Actor`` the gate checks.
It is the only place such actors are made: it claims the gate's issuer at import
(``objrel.access.claim_actor_loader``), and ``actor_of`` issues an actor only for an account the store holds,
with the roles the store holds for it; the gate refuses actors built any other way.

Every change of an account's roles ends that account's sign-in sessions (``objrel.review.sessions``, because
``role-change``): whoever holds them signs in again and starts afresh with the new roles.  A grant of roles the
account already holds, or a revoke of one it does not hold, changes nothing and ends nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from objrel import access as A
from objrel.access import ADJUDICATOR, ADMIN, REVIEWER, ROLE_LABELS, ROLES, RUN_OPERATOR, Actor
from objrel.errors import NotAllowed
from objrel.review import sessions
from objrel.store import Store
from objrel.store import accounts as account_rows

__all__ = ["ADJUDICATOR", "ADMIN", "REVIEWER", "ROLE_LABELS", "ROLES", "RUN_OPERATOR", "actor_of", "check_roles",
           "grant_as_operator", "grant_roles", "revoke_as_operator", "revoke_role", "roles_of"]


def check_roles(roles: Iterable[str] | str) -> tuple[str, ...]:
    """``roles`` as a sorted tuple; ValueError for one outside ``ROLES`` or for none at all."""
    roles = (roles,) if isinstance(roles, str) else tuple(roles)
    bad = [r for r in roles if r not in ROLES]
    if bad:
        raise ValueError(f"roles must be among {', '.join(ROLES)}; got {', '.join(map(repr, bad))}")
    if not roles:
        raise ValueError(f"give at least one role of {', '.join(ROLES)}")
    return tuple(sorted(set(roles)))


def roles_of(store: Store, who: str | None) -> tuple[str, ...]:
    """The roles of the account named exactly ``who`` (empty for None or an unknown name)."""
    if not isinstance(who, str) or not who:
        return ()
    return account_rows.roles(store, who)


# Issues the actors the gate trusts; this module alone holds it (claimed once, here).
_issue = A.claim_actor_loader(__name__)


def actor_of(store: Store, who: str | None) -> Actor:
    """The actor the signed-in name ``who`` acts as, with the roles the store holds for it now; a visitor
    (``objrel.access.ANONYMOUS``) for None or a name with no account."""
    if not isinstance(who, str) or not who or not account_rows.reviewer(store, who):
        return A.ANONYMOUS
    return _issue(who, frozenset(account_rows.roles(store, who)))


def _changed(store: Store, name: str, change: Callable[[], tuple[str, ...]]) -> tuple[str, ...]:
    """Run ``change`` (it returns ``name``'s roles after it); when the roles differ from before, end every
    sign-in session of ``name``."""
    before = account_rows.roles(store, name)
    after = change()
    if after != before:
        sessions.end_sessions(store, name, sessions.ROLE_CHANGE)
    return after


def grant_roles(actor: Actor, store: Store, name: str, roles: Iterable[str] | str) -> tuple[str, ...]:
    """``actor`` (an admin) gives ``name`` the ``roles``; returns ``name``'s roles."""
    roles = check_roles(roles)
    A.authorize(actor, A.GRANT_ROLE, f"to {name!r}")
    return _changed(store, name, lambda: account_rows.grant_roles(store, name, roles, granted_by=actor.name))


def revoke_role(actor: Actor, store: Store, name: str, role: str) -> tuple[str, ...]:
    """``actor`` (an admin) takes ``role`` from ``name``; an admin cannot take their own admin role (someone must
    stay able to manage the app).  Returns ``name``'s roles."""
    (role,) = check_roles(role)
    A.authorize(actor, A.REVOKE_ROLE, f"from {name!r}")
    if name == actor.name and role == ADMIN:
        raise NotAllowed(actor.name, "revoke their own admin role", A.MANAGE_ROLES, tuple(sorted(actor.roles)),
                         reason="another admin must do it, so the app never loses its last admin by accident")
    return _changed(store, name, lambda: account_rows.revoke_role(store, name, role))


def grant_as_operator(store: Store, name: str, roles: Iterable[str] | str) -> tuple[str, ...]:
    """The server operator (the ``objrel users`` command, the demo build) gives ``name`` the ``roles``."""
    roles = check_roles(roles)
    return _changed(store, name, lambda: account_rows.grant_roles(store, name, roles, granted_by=None))


def revoke_as_operator(store: Store, name: str, role: str) -> tuple[str, ...]:
    """The server operator takes ``role`` from ``name``; returns ``name``'s roles."""
    (role,) = check_roles(role)
    return _changed(store, name, lambda: account_rows.revoke_role(store, name, role))
