"""Roles: who may do what in the shared app, checked here (server-side), never only by a page.

An account holds any of ``ROLES`` (several at once).  Every write of the review workflow and every
run started from the app asks ``require`` first; it raises ``objrel.errors.NotAllowed`` naming who
asked, which roles would do, and which they hold.  The rows live in ``objrel.store.accounts``.
"""

from __future__ import annotations

from collections.abc import Iterable

from objrel.errors import NotAllowed
from objrel.store import Store
from objrel.store import accounts as account_rows

REVIEWER = "reviewer"          # judges flagged inferences (blind)
ADJUDICATOR = "adjudicator"    # sees both reviewers' calls, decides their disagreements
RUN_OPERATOR = "run-operator"  # starts, cancels and resumes runs from the app, reads their logs
ADMIN = "admin"                # invites accounts, grants roles, allows models
ROLES = (REVIEWER, ADJUDICATOR, RUN_OPERATOR, ADMIN)
ROLE_LABELS = {REVIEWER: "reviewer", ADJUDICATOR: "adjudicator", RUN_OPERATOR: "run operator", ADMIN: "admin"}

# Which roles permit what (any one of them is enough).
JUDGE = (REVIEWER,)                              # record one's own call on a flagged inference
ADJUDICATE = (ADJUDICATOR, ADMIN)                # decide a disagreement (never as one of its parties)
SEE_PAIR = (ADJUDICATOR, ADMIN)                  # both reviewers' calls, kappa details, disagreements
INSPECT = (REVIEWER, ADJUDICATOR, ADMIN)         # LIME explanations and box re-tests (they write the store)
OPERATE = (RUN_OPERATOR, ADMIN)                  # start, cancel, resume runs; read their logs
MANAGE = (ADMIN,)                                # invite accounts, grant and revoke roles, allow models


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


def has_role(store: Store, who: str | None, allowed: Iterable[str]) -> bool:
    """True when ``who`` holds at least one of ``allowed``."""
    return bool(set(roles_of(store, who)) & set(allowed))


def require(store: Store, who: str | None, allowed: Iterable[str], action: str) -> tuple[str, ...]:
    """The roles of ``who`` when one of them is in ``allowed``; NotAllowed (saying who, what
    ``action`` needs and what they hold) otherwise."""
    allowed = tuple(allowed)
    held = roles_of(store, who)
    if not set(held) & set(allowed):
        raise NotAllowed(who if isinstance(who, str) and who else None, action, allowed, held)
    return held


def grant_roles(store: Store, admin: str, name: str, roles: Iterable[str] | str) -> tuple[str, ...]:
    """``admin`` (who must hold ``admin``) gives ``name`` the ``roles``; returns ``name``'s roles."""
    roles = check_roles(roles)
    require(store, admin, MANAGE, f"grant roles to {name!r}")
    return account_rows.grant_roles(store, name, roles, granted_by=admin)


def revoke_role(store: Store, admin: str, name: str, role: str) -> tuple[str, ...]:
    """``admin`` takes ``role`` from ``name``; an admin cannot take their own admin role (someone must
    stay able to manage the app).  Returns ``name``'s roles."""
    (role,) = check_roles(role)
    require(store, admin, MANAGE, f"revoke a role of {name!r}")
    if name == admin and role == ADMIN:
        raise NotAllowed(admin, "revoke their own admin role", MANAGE, roles_of(store, admin),
                         reason="another admin must do it, so the app never loses its last admin by accident")
    return account_rows.revoke_role(store, name, role)


def grant_as_operator(store: Store, name: str, roles: Iterable[str] | str) -> tuple[str, ...]:
    """The server operator (the ``objrel users`` command, the demo build) gives ``name`` the ``roles``."""
    return account_rows.grant_roles(store, name, check_roles(roles), granted_by=None)


def revoke_as_operator(store: Store, name: str, role: str) -> tuple[str, ...]:
    """The server operator takes ``role`` from ``name``; returns ``name``'s roles."""
    (role,) = check_roles(role)
    return account_rows.revoke_role(store, name, role)
