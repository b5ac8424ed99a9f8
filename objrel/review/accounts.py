"""Reviewer accounts: names, scrypt passphrase hashes, password and OIDC sign-in.

A passphrase is stored only as ``scrypt$n$r$p$salt_hex$hash_hex`` (salted, with its own cost
parameters, so raising the cost never breaks old accounts).  Names are unique ignoring case;
an OIDC account is keyed by the provider's stable subject and can never take over a name.
The rows live in ``objrel.store.accounts``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

from objrel.store import Store
from objrel.store import accounts as account_rows

# Passphrases shorter than this are refused.  Longer minimums resist guessing better.
MIN_PASSPHRASE_LENGTH = 8
# Reviewer names longer than this are refused (the ``reviewers.name`` column holds 100).
MAX_NAME_LENGTH = 100
# scrypt cost (OWASP's minimum: N = 2**17, r = 8, p = 1; about 0.45 s and 128 MiB per hash here).
# Each stored hash records its own parameters, so raising these never breaks old accounts.
SCRYPT_N = 2 ** 17
SCRYPT_R = 8
SCRYPT_P = 1
SCRYPT_DKLEN = 32
SCRYPT_SALT_BYTES = 16
# Memory OpenSSL may use for one hash, in bytes; must exceed 128 * N * r * p.
SCRYPT_MAXMEM = 2 ** 28
HASH_SCHEME = "scrypt"


@dataclass(frozen=True)
class Reviewer:
    """A reviewer account; ``kind`` is ``password`` (scrypt hash stored) or ``oidc``."""

    name: str
    kind: str
    created_at: dt.datetime

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind,
                "created_at": self.created_at.isoformat() if self.created_at is not None else None}


def check_name(name: Any, what: str = "reviewer name") -> str:
    """``name`` without surrounding blanks; ValueError unless it is non-empty text of at most
    ``MAX_NAME_LENGTH`` characters (``what`` names it in the message)."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{what} must be a non-empty string; got {name!r}")
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{what} may have at most {MAX_NAME_LENGTH} characters; got {len(name)}")
    return name


def _hash_passphrase(passphrase: str) -> str:
    salt = secrets.token_bytes(SCRYPT_SALT_BYTES)
    digest = hashlib.scrypt(passphrase.encode("utf-8"), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P,
                            dklen=SCRYPT_DKLEN, maxmem=SCRYPT_MAXMEM)
    return f"{HASH_SCHEME}${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def _check_passphrase(passphrase: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt_hex, hash_hex = stored.split("$")
        if scheme != HASH_SCHEME:
            return False
        n, r, p = int(n), int(r), int(p)
        salt, expected = bytes.fromhex(salt_hex), bytes.fromhex(hash_hex)
    except ValueError:
        return False
    maxmem = max(SCRYPT_MAXMEM, 2 * 128 * n * r * p)
    digest = hashlib.scrypt(passphrase.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=len(expected),
                            maxmem=maxmem)
    return hmac.compare_digest(digest, expected)


def _reviewer(row: dict) -> Reviewer:
    return Reviewer(name=row["name"], kind="password" if row["pass_hash"] else "oidc", created_at=row["created_at"])


def _taken(name: str) -> ValueError:
    return ValueError(f"the reviewer name {name!r} is taken; choose another or sign in")


def create_reviewer(store: Store, name: str, passphrase: str) -> Reviewer:
    """Create a password account.  The passphrase is stored only as a salted scrypt hash
    ``scrypt$n$r$p$salt_hex$hash_hex``.

    Raises ValueError for an empty or overlong name, a passphrase shorter than
    ``MIN_PASSPHRASE_LENGTH``, or a name already taken (compared ignoring case).
    """
    name = check_name(name)
    if not isinstance(passphrase, str) or len(passphrase) < MIN_PASSPHRASE_LENGTH:
        got = len(passphrase) if isinstance(passphrase, str) else type(passphrase).__name__
        raise ValueError(f"the passphrase needs at least {MIN_PASSPHRASE_LENGTH} characters; got {got}")
    if account_rows.name_taken(store, name):
        raise _taken(name)
    pass_hash = _hash_passphrase(passphrase)  # slow on purpose: outside any transaction
    try:
        return _reviewer(account_rows.add_password_reviewer(store, name, pass_hash))
    except account_rows.NameTaken:  # someone registered the same name a moment ago
        raise _taken(name) from None


# Compared against when the name is unknown, so a wrong name costs as long as a wrong passphrase.
_DUMMY_HASH: str | None = None


def verify_reviewer(store: Store, name: str, passphrase: str) -> bool:
    """True when ``name`` has a password account and ``passphrase`` matches it (constant-time
    comparison; unknown names and OIDC-only accounts take as long and return False)."""
    global _DUMMY_HASH
    if not isinstance(name, str) or not isinstance(passphrase, str):
        return False
    row = account_rows.reviewer(store, name.strip())
    if row is None or not row["pass_hash"]:
        if _DUMMY_HASH is None:
            _DUMMY_HASH = _hash_passphrase(secrets.token_hex(8))
        _check_passphrase(passphrase, _DUMMY_HASH)
        return False
    return _check_passphrase(passphrase, row["pass_hash"])


def ensure_oidc_reviewer(store: Store, name: str, subject: str) -> Reviewer:
    """The account of an OIDC user (``subject``: the provider's stable ``sub``), created on first use.

    A known subject keeps its account whatever ``name`` now says.  Raises ValueError when the
    name belongs to a password account or to another subject (no account takeover by name).
    """
    name = check_name(name)
    subject = check_name(subject, "OIDC subject")
    try:
        return _reviewer(account_rows.oidc_reviewer(store, name, subject))
    except account_rows.NameTaken:
        raise ValueError(f"the reviewer name {name!r} belongs to another account; an OIDC sign-in "
                         "cannot take it over") from None


def reviewer_names(store: Store) -> list[str]:
    """Every reviewer's name, sorted."""
    return account_rows.reviewer_names(store)
