"""Accounts: names, scrypt passphrase hashes, password and OIDC sign-in, invitations, throttling.

A passphrase is stored only as ``scrypt$n$r$p$salt_hex$hash_hex`` (salted, with its own cost
parameters, so raising the cost never breaks old accounts).  A new name is NFKC-normalised and
must use a narrow ASCII set (so a Cyrillic look-alike or a zero-width character cannot pose as
another account); names are unique ignoring case, enforced by a unique index in the store.  An
OIDC account is keyed by the provider's stable subject and can never take over a name.

Sign-in is throttled per (client, typed name) and per client, so no one can lock another person out: the
client is the app's random id of a browser session (``LOCAL_CLIENT`` for the CLI).  After
``THROTTLE_AFTER_FAILURES`` failures of one client at one name within ``FAILURE_WINDOW_S`` its further tries at
that name wait ``THROTTLE_BASE_S``, doubling per failure, at most ``THROTTLE_MAX_S``; a client with
``CLIENT_THROTTLE_AFTER_FAILURES`` failures at any names waits the same way at every name.  A client that never
failed at a name tries it at once, whatever strangers sent: the right passphrase from a fresh session is never
refused because others guessed.  Only a guess spread over ``NAME_THROTTLE_AFTER_CLIENTS`` distinct clients
throttles the name itself, for everyone, from then on (a wait doubling per further client).  A throttled try is
answered without hashing.  Each try is counted (stored as a failure until it succeeds) in the transaction that
checks the count, before any hashing, so guesses sent at the same moment count too; a success forgets that
client's failures at that name.  At most ``HASH_SLOTS`` scrypt hashes run at once in a process.  The rows live in
``objrel.store.accounts``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import os
import re
import secrets
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from objrel import access as A
from objrel.access import Actor
from objrel.review import roles as R
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
# At most this many scrypt hashes at once in this process (each takes ~128 MiB and a core): half the cores,
# so a burst of sign-ins always leaves the server cores to answer pages with.
HASH_SLOTS = max(1, (os.cpu_count() or 2) // 2)
_HASH_GATE = threading.BoundedSemaphore(HASH_SLOTS)
# A sign-in waits at most this long for a hash slot; then it is refused as "busy" (nothing counted against the
# name) and told to retry after SIGN_IN_BUSY_RETRY_S.  So a flood of sign-ins never builds a queue that makes
# the server, or a rightful sign-in, wait without end.
HASH_WAIT_S = 10.0
SIGN_IN_BUSY_RETRY_S = 2.0


class HashBusy(Exception):
    """Every hash slot stayed taken for ``HASH_WAIT_S``: the try was not checked."""

# A new account's name: 2-40 characters after NFKC normalisation, ASCII letters and digits, and
# ". _ - @" anywhere, spaces only inside.  Anything else (Cyrillic look-alikes, zero-width characters,
# control characters) is refused with the offending characters named.
NAME_MIN_LENGTH = 2
NAME_MAX_LENGTH = 40
NAME_EDGE_CHARS = "-A-Za-z0-9._@"  # "-" first: a literal hyphen
_NAME_RE = re.compile(rf"[{NAME_EDGE_CHARS}](?:[{NAME_EDGE_CHARS} ]*[{NAME_EDGE_CHARS}])?")
_NAME_CHAR_RE = re.compile(rf"[{NAME_EDGE_CHARS} ]")

# Sign-in throttling: failures older than the window are forgotten; after THROTTLE_AFTER_FAILURES
# failures of one client at one name the next try must wait THROTTLE_BASE_S after the last failure, doubling
# with every further failure, never more than THROTTLE_MAX_S.
THROTTLE_AFTER_FAILURES = 3
# A client with this many failures at any names waits the same way at every name (spraying names).
CLIENT_THROTTLE_AFTER_FAILURES = 20
# A name is throttled for everyone only once this many distinct clients failed at it in the window (a spread
# guess); below that, others' failures never make a client that has not failed at the name wait.
NAME_THROTTLE_AFTER_CLIENTS = 20
THROTTLE_BASE_S = 1.0
THROTTLE_MAX_S = 60.0
FAILURE_WINDOW_S = 3600.0
# The client of a sign-in that names none (the CLI, tests, one local user).
LOCAL_CLIENT = "local"
# A client key longer than this is cut (the ``sign_in_failures.client`` column holds 200).
MAX_CLIENT_LENGTH = 200


@dataclass(frozen=True)
class Reviewer:
    """A reviewer account; ``kind`` is ``password`` (scrypt hash stored) or ``oidc``."""

    name: str
    kind: str
    created_at: dt.datetime

    def to_dict(self) -> dict:
        """The account's name, kind and creation time as a JSON-ready dict."""
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


def normalise_name(name: Any, what: str = "account name") -> str:
    """A new account's name, NFKC-normalised and stripped; ValueError (naming the offending characters)
    unless it has ``NAME_MIN_LENGTH``-``NAME_MAX_LENGTH`` characters of the allowed ASCII set."""
    if not isinstance(name, str):
        raise ValueError(f"{what} must be text; got {type(name).__name__}")
    name = unicodedata.normalize("NFKC", name).strip()
    if not NAME_MIN_LENGTH <= len(name) <= NAME_MAX_LENGTH:
        raise ValueError(f"{what} must have {NAME_MIN_LENGTH} to {NAME_MAX_LENGTH} characters; got {len(name)}")
    bad = sorted({ch for ch in name if not _NAME_CHAR_RE.fullmatch(ch)})
    if bad:
        named = ", ".join(f"U+{ord(ch):04X} {unicodedata.name(ch, 'control character')}" for ch in bad)
        raise ValueError(f"{what} may use only ASCII letters, digits, '.', '_', '-', '@' and inner spaces; "
                         f"got {named}")
    if not _NAME_RE.fullmatch(name):
        raise ValueError(f"{what} may not begin or end with a space; got {name!r}")
    return name


def _scrypt(passphrase: str, salt: bytes, n: int, r: int, p: int, dklen: int, maxmem: int,
            wait_s: float | None = None) -> bytes:
    """One scrypt hash in one of the ``HASH_SLOTS``: waiting for a slot without limit (account creation), or
    at most ``wait_s`` seconds, then ``HashBusy`` (sign-in)."""
    if not _HASH_GATE.acquire(timeout=wait_s):
        raise HashBusy()
    try:
        return hashlib.scrypt(passphrase.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=dklen, maxmem=maxmem)
    finally:
        _HASH_GATE.release()


def _hash_passphrase(passphrase: str) -> str:
    salt = secrets.token_bytes(SCRYPT_SALT_BYTES)
    digest = _scrypt(passphrase, salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=SCRYPT_DKLEN,
                     maxmem=SCRYPT_MAXMEM)
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
    digest = _scrypt(passphrase, salt=salt, n=n, r=r, p=p, dklen=len(expected), maxmem=maxmem, wait_s=HASH_WAIT_S)
    return hmac.compare_digest(digest, expected)


def _reviewer(row: dict) -> Reviewer:
    return Reviewer(name=row["name"], kind="password" if row["pass_hash"] else "oidc", created_at=row["created_at"])


def _taken(name: str) -> ValueError:
    return ValueError(f"the account name {name!r} is taken (names are compared ignoring case); choose another")


def _check_passphrase_text(passphrase: Any) -> str:
    if not isinstance(passphrase, str) or len(passphrase) < MIN_PASSPHRASE_LENGTH:
        got = len(passphrase) if isinstance(passphrase, str) else type(passphrase).__name__
        raise ValueError(f"the passphrase needs at least {MIN_PASSPHRASE_LENGTH} characters; got {got}")
    return passphrase


def create_reviewer(store: Store, name: str, passphrase: str,
                    roles: Iterable[str] | str = (R.REVIEWER,), granted_by: str | None = None) -> Reviewer:
    """Create a password account holding ``roles`` (a reviewer unless told otherwise).  This is the
    server operator's call (CLI, demo build, tests); the app invites through ``invite``, which checks
    that an admin asks.  The passphrase is stored only as a salted scrypt hash.

    Raises ValueError for a name outside the allowed set (see ``normalise_name``), a passphrase
    shorter than ``MIN_PASSPHRASE_LENGTH``, an unknown role, or a name already taken (compared
    ignoring case; of two concurrent sign-ups of one name, exactly one succeeds).
    """
    name = normalise_name(name)
    _check_passphrase_text(passphrase)
    roles = R.check_roles(roles)
    if account_rows.name_taken(store, name):
        raise _taken(name)
    pass_hash = _hash_passphrase(passphrase)  # slow on purpose: outside any transaction
    try:
        return _reviewer(account_rows.add_password_reviewer(store, name, pass_hash, roles, granted_by))
    except account_rows.NameTaken:  # someone registered the same name a moment ago
        raise _taken(name) from None


def invite(actor: Actor, store: Store, name: str, passphrase: str, roles: Iterable[str] | str) -> Reviewer:
    """``actor`` (who must hold the admin role) creates the account ``name`` with ``roles``; the app's
    way to add people.  Raises NotAllowed for anyone else, ValueError as ``create_reviewer``."""
    A.authorize(actor, A.INVITE, f"{name!r}")
    return create_reviewer(store, name, passphrase, roles, granted_by=actor.name)


@dataclass(frozen=True)
class SignIn:
    """The answer to a sign-in: ``ok`` with the stored ``name``, or a refusal; ``wait_s`` > 0 when the
    try was throttled (and no passphrase was hashed).  True exactly when ``ok``."""

    ok: bool
    name: str | None = None
    wait_s: float = 0.0
    busy: bool = False     # refused because every hash slot was taken (the try was not counted)

    def __bool__(self) -> bool:
        return self.ok

    @property
    def message(self) -> str:
        """What the sign-in form says: signed in, busy, locked out for a while, or refused."""
        if self.ok:
            return f"signed in as {self.name}"
        if self.busy:
            return f"The server is busy with other sign-ins; try again in {max(1, round(self.wait_s))} s."
        if self.wait_s > 0:
            return f"Too many failed sign-ins; try again in {max(1, int(-(-self.wait_s // 1)))} s."
        return "Unknown name or wrong passphrase."


def throttle_wait(failures: list[dt.datetime], now_ts: dt.datetime, after: int | None = None) -> float:
    """Seconds still to wait after ``failures`` (times, oldest first, all inside the window): none before
    ``after`` of them (default ``THROTTLE_AFTER_FAILURES``); then ``THROTTLE_BASE_S`` after the last failure,
    doubling per further failure, at most ``THROTTLE_MAX_S``."""
    after = THROTTLE_AFTER_FAILURES if after is None else after
    if len(failures) < after:
        return 0.0
    delay = min(THROTTLE_MAX_S, THROTTLE_BASE_S * 2 ** min(64, len(failures) - after))
    return max(0.0, delay - (now_ts - failures[-1]).total_seconds())


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _aware(ts: dt.datetime) -> dt.datetime:
    return ts if ts.tzinfo is not None else ts.replace(tzinfo=dt.timezone.utc)


# Compared against when the name is unknown, so a wrong name costs as long as a wrong passphrase.
_DUMMY_HASH: str | None = None


def sign_in_wait(by_name: list[tuple[str, dt.datetime]], by_client: list[tuple[str, dt.datetime]], key: str,
                 client: str, now_ts: dt.datetime) -> float:
    """Seconds a try of the name ``key`` from ``client`` must wait, from the recent failures at that name
    (``by_name``: (client, time), oldest first, from anyone) and of the asking client (``by_client``: (name key,
    time), oldest first).

    The client's own failures at this name throttle it (``THROTTLE_AFTER_FAILURES``), and its failures at any
    names once there are ``CLIENT_THROTTLE_AFTER_FAILURES``.  Other clients' failures count only once
    ``NAME_THROTTLE_AFTER_CLIENTS`` distinct clients failed at the name: until then a client that has not failed
    at it is never made to wait, so a stranger's guesses cannot lock the rightful owner out."""
    pair = [_aware(t) for c, t in by_name if c == client]
    wait = throttle_wait(pair, now_ts)
    wait = max(wait, throttle_wait([_aware(t) for _, t in by_client], now_ts, CLIENT_THROTTLE_AFTER_FAILURES))
    first_failures: dict[str, dt.datetime] = {}
    for c, t in by_name:
        first_failures.setdefault(c, _aware(t))
    spread = sorted(first_failures.values())
    return max(wait, throttle_wait(spread, now_ts, NAME_THROTTLE_AFTER_CLIENTS))


def verify_reviewer(store: Store, name: str, passphrase: str, client: str = LOCAL_CLIENT) -> SignIn:
    """Check a password sign-in of ``name`` (NFKC-normalised, compared ignoring case) from ``client``
    (the app passes a random id of the browser session, which no one else can share).

    Returns a ``SignIn``: ok with the stored name when the passphrase matches (constant-time
    comparison; unknown names and OIDC-only accounts take as long and fail).  A try that must wait
    (``sign_in_wait``) is refused with ``wait_s`` before any hashing.  Otherwise the try is stored as a
    failure *before* the passphrase is hashed, in the transaction that counted the earlier ones, so
    tries sent at the same moment count each other and at most ``THROTTLE_AFTER_FAILURES`` of them are
    checked; a success forgets this client's failures at the name (a stranger's stay counted).
    """
    global _DUMMY_HASH
    if not isinstance(name, str) or not isinstance(passphrase, str):
        return SignIn(False)
    typed = unicodedata.normalize("NFKC", name).strip()
    key = typed.lower()[:MAX_NAME_LENGTH]
    client = str(client)[:MAX_CLIENT_LENGTH] or LOCAL_CLIENT
    now_ts = _now()
    since = now_ts - dt.timedelta(seconds=FAILURE_WINDOW_S)
    reservation, wait = account_rows.reserve_sign_in(
        store, key, client, since, now_ts,
        lambda by_name, by_client: sign_in_wait(by_name, by_client, key, client, now_ts))
    if reservation is None:
        return SignIn(False, wait_s=wait)
    row = account_rows.reviewer_by_key(store, typed) if typed else None
    try:
        if row is None or not row["pass_hash"]:
            if _DUMMY_HASH is None:
                _DUMMY_HASH = _hash_passphrase(secrets.token_hex(8))
            _check_passphrase(passphrase, _DUMMY_HASH)
            ok = False
        else:
            ok = _check_passphrase(passphrase, row["pass_hash"])
    except HashBusy:   # not checked, so not a failure of this name: its reservation goes
        account_rows.release_sign_in(store, reservation)
        return SignIn(False, wait_s=SIGN_IN_BUSY_RETRY_S, busy=True)
    if not ok:
        account_rows.record_sign_in_failure(store, reservation, _now())
        return SignIn(False)
    account_rows.clear_sign_in_failures(store, key, client)
    return SignIn(True, name=row["name"])


def ensure_oidc_reviewer(store: Store, name: str, subject: str) -> Reviewer:
    """The account of an OIDC user (``subject``: the provider's stable ``sub``), created on first use.

    A known subject keeps its account whatever ``name`` now says.  Raises ValueError when the
    name belongs to a password account or to another subject (no account takeover by name).
    """
    name = normalise_name(name)
    subject = check_name(subject, "OIDC subject")
    try:
        return _reviewer(account_rows.oidc_reviewer(store, name, subject))
    except account_rows.NameTaken:
        raise ValueError(f"the reviewer name {name!r} belongs to another account; an OIDC sign-in "
                         "cannot take it over") from None


def reviewer_names(store: Store) -> list[str]:
    """Every reviewer's name, sorted."""
    return account_rows.reviewer_names(store)


def list_accounts(store: Store) -> list[dict]:
    """Every account with its roles: ``{"name", "kind", "roles", "created_at"}``, by name."""
    return account_rows.accounts(store)
