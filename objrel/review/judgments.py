"""Manual review of flagged inferences (seed 000 s5.1): accounts, blind judgments, agreement, consensus.

The workflow of seed 000 s5.1.2, in the store's ``reviewers``, ``judgments``,
``review_samples`` and ``consensus`` tables:

1. **Sample.** ``draw_review_sample`` draws ``cochran_sample_size(N)`` of the N inferences the
   primary vote flagged for one relation of one run (95% confidence, 5% margin, p = 0.5) and
   stores the draw, so every reviewer sees the same items in the same order.
2. **Judge, blind.** Each reviewer calls every item ``tp`` (the mutant was built as intended:
   object removed for MR-1, preserved for MR-2, so the inference really is unreliable),
   ``fp`` (it was not; reasons ``multiple-objects``, ``incomplete-removal``, ``other`` with a
   note) or ``uncertain``.  ``review_queue`` only ever shows a reviewer their own calls.
3. **Agree.** ``agreement`` computes Cohen's kappa (Landis & Koch bands) over the items both
   reviewers judged; ``disagreements`` lists the items that need discussion.
4. **Consensus.** An item is decided when an adjudicator recorded a verdict for it
   (``adjudicate``, stored in ``consensus``), or, without one, when at least two reviewers
   judged it and all of them agree on the verdict and, for ``fp``, on the reasons.  The
   agreed items are *computed on read*, never materialised, so a reviewer who changes a call
   later can never leave a stale consensus row behind; an adjudication always wins.
5. **Precision.** ``precision_table`` counts the consensus of the drawn items per run: seed 000
   Tables 1-3 (flagged total, sample size, true positives, false positives by reason, uncertain).

Writes are short transactions that retry when SQLite reports a lock, and every insert-or-update
is race-free: two reviewers (two processes) may write to one SQLite file at the same moment.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import math
import numbers
import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError, OperationalError

from objrel.constants import SQLITE_BUSY_TIMEOUT_MS
from objrel.store import Store
from objrel.store import schema as S
from objrel.store.store import now

if TYPE_CHECKING:  # pandas is imported lazily: the review workers do not need it
    import pandas as pd

# ---------------------------------------------------------------- vocabulary

RELATIONS = ("MR-1", "MR-2")
VERDICTS = ("tp", "fp", "uncertain")
# Reasons of a false positive (seed 000 s5.1.1): not every target object was corrupted; the
# annotation missed part of the object so part of it survived; anything else (needs a note).
FP_REASONS = ("multiple-objects", "incomplete-removal", "other")
VERDICT_LABELS = {"tp": "true positive", "fp": "false positive", "uncertain": "uncertain"}
REASON_LABELS = {"multiple-objects": "multiple target objects", "incomplete-removal": "incomplete removal",
                 "other": "other"}

# ---------------------------------------------------------------- accounts

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
# Memory OpenSSL may use for one hash; must exceed 128 * N * r * p bytes.
SCRYPT_MAXMEM = 2 ** 28
HASH_SCHEME = "scrypt"

# ---------------------------------------------------------------- writing

# A write that SQLite answers with "database is locked" is retried this many times in all ...
WRITE_ATTEMPTS = 6
# ... waiting this long times the attempt number (plus jitter) in between.  The store's busy
# timeout already waits for locks inside SQLite; these retries cover what it gives up on.
WRITE_RETRY_DELAY_S = 0.05
# A locked attempt is only retried when it failed within this share of the busy timeout: one
# that waited the whole timeout means a writer holds the lock for long, and retrying would only
# multiply the wait.
RETRY_ONLY_BELOW_BUSY_SHARE = 0.5

# ---------------------------------------------------------------- statistics

# Cochran's formula defaults (seed 000 s5.1.2): 95% confidence, +-5% margin, p = 0.5 (the
# most conservative proportion: it gives the largest sample).
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MARGIN = 0.05
DEFAULT_PROPORTION = 0.5
# Seed of the review draw when none is given; the draw is stored, so the seed only matters once.
DEFAULT_REVIEW_SEED = 0
# Confidence level of the kappa interval.
KAPPA_CI_LEVEL = 0.95
# Landis & Koch (1977): upper bound (inclusive) of each band; kappa < 0 is "poor".
LANDIS_KOCH_BANDS = ((0.20, "slight"), (0.40, "fair"), (0.60, "moderate"), (0.80, "substantial"),
                     (1.00, "almost perfect"))
POOR_BAND = "poor"
UNDEFINED_BAND = "undefined"
# Judgments needed before an unadjudicated item can count as agreed.
MIN_CONSENSUS_REVIEWERS = 2
# Floating-point slack for p_e == 1 and for band edges such as kappa = 0.2.
_EPS = 1e-12


# ================================================================ results


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class Reviewer:
    """A reviewer account; ``kind`` is ``password`` (scrypt hash stored) or ``oidc``."""

    name: str
    kind: str
    created_at: dt.datetime

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "created_at": _iso(self.created_at)}


@dataclass(frozen=True)
class Judgment:
    """One reviewer's call on one flagged inference (run, sample, relation).

    verdict: one of ``VERDICTS``; reasons: a subset of ``FP_REASONS`` in that order, empty
    unless the verdict is ``fp``; note: free text (required with the reason ``other``).
    """

    run_id: int
    sample_id: str
    relation: str
    reviewer: str
    verdict: str
    reasons: tuple[str, ...]
    note: str | None
    created_at: dt.datetime
    updated_at: dt.datetime

    def to_dict(self) -> dict:
        d = asdict(self)
        d["reasons"] = list(self.reasons)
        d["created_at"], d["updated_at"] = _iso(self.created_at), _iso(self.updated_at)
        return d


@dataclass(frozen=True)
class SampleDraw:
    """The stored review sample of one run and relation: ``sample_ids`` in draw order."""

    run_id: int
    relation: str
    seed: int
    population: int
    sample_ids: tuple[str, ...]

    @property
    def size(self) -> int:
        return len(self.sample_ids)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["sample_ids"] = list(self.sample_ids)
        return d


@dataclass(frozen=True)
class QueueItem:
    """One drawn item as one reviewer sees it: only their own call, never another reviewer's."""

    sample_id: str
    position: int
    judged_by_me: bool
    my_verdict: str | None
    my_reasons: tuple[str, ...] = ()
    my_note: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["my_reasons"] = list(self.my_reasons)
        return d


@dataclass(frozen=True)
class Kappa:
    """Cohen's kappa of two raters over ``n`` items.

    observed (p_o) and expected (p_e) agreement are fractions in [0, 1]; kappa =
    (p_o - p_e) / (1 - p_e); se is the large-sample standard error
    sqrt(p_o (1 - p_o) / (n (1 - p_e)^2)); ci_low/ci_high is kappa -+ z se at ``ci_level``,
    clipped to [-1, 1].  kappa, se and the interval are None (band ``undefined``) when
    p_e == 1, i.e. both raters used one and the same category for every item.
    confusion[i][j] counts items rater A called categories[i] and rater B categories[j].
    """

    kappa: float | None
    observed: float
    expected: float
    n: int
    se: float | None
    ci_low: float | None
    ci_high: float | None
    ci_level: float
    band: str
    categories: tuple[str, ...]
    confusion: tuple[tuple[int, ...], ...]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["categories"] = list(self.categories)
        d["confusion"] = [list(r) for r in self.confusion]
        return d

    def confusion_frame(self, name_a: str = "A", name_b: str = "B") -> pd.DataFrame:
        """The confusion table as a DataFrame: rows ``name_a``'s calls, columns ``name_b``'s."""
        import pandas as pd

        return pd.DataFrame([list(r) for r in self.confusion],
                            index=pd.Index([f"{name_a}: {c}" for c in self.categories]),
                            columns=[f"{name_b}: {c}" for c in self.categories])


@dataclass(frozen=True)
class Agreement:
    """Agreement of two reviewers on one run and relation.

    n_a / n_b: items each judged; n_both: items both judged (kappa's n); pairs: (sample_id,
    verdict_a, verdict_b) of those items, by sample id; kappa: None when n_both == 0.
    """

    run_id: int
    relation: str
    reviewer_a: str
    reviewer_b: str
    n_a: int
    n_b: int
    n_both: int
    pairs: tuple[tuple[str, str, str], ...]
    kappa: Kappa | None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["pairs"] = [list(p) for p in self.pairs]
        d["kappa"] = self.kappa.to_dict() if self.kappa else None
        return d

    def calls_frame(self) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame([{"sample": s, self.reviewer_a: a, self.reviewer_b: b, "agree": a == b}
                             for s, a, b in self.pairs],
                            columns=["sample", self.reviewer_a, self.reviewer_b, "agree"])


@dataclass(frozen=True)
class Consensus:
    """The decided call of one item.

    source: ``adjudicated`` (a row of the consensus table; ``adjudicator`` says who) or
    ``agreed`` (computed on read: every reviewer who judged it made the same call).
    """

    run_id: int
    sample_id: str
    relation: str
    verdict: str
    reasons: tuple[str, ...]
    note: str | None
    source: str
    adjudicator: str | None
    reviewers: tuple[str, ...]
    decided_at: dt.datetime | None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["reasons"], d["reviewers"] = list(self.reasons), list(self.reviewers)
        d["decided_at"] = _iso(self.decided_at)
        return d


@dataclass(frozen=True)
class Disagreement:
    """An item two reviewers called differently: ``kind`` is ``verdict`` or ``reasons``
    (both said fp, for different reasons).  ``resolved_*`` is the adjudication, if any."""

    sample_id: str
    position: int | None
    kind: str
    verdict_a: str
    reasons_a: tuple[str, ...]
    note_a: str | None
    verdict_b: str
    reasons_b: tuple[str, ...]
    note_b: str | None
    resolved_verdict: str | None
    resolved_reasons: tuple[str, ...]
    resolved_note: str | None
    resolved_by: str | None

    @property
    def resolved(self) -> bool:
        return self.resolved_verdict is not None

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("reasons_a", "reasons_b", "resolved_reasons"):
            d[k] = list(d[k])
        d["resolved"] = self.resolved
        return d


@dataclass(frozen=True)
class JudgedRun:
    """A run that has judgments: which relations, and who judged each."""

    run_id: int
    name: str
    model: str
    dataset: str
    task: str
    reviewers: tuple[tuple[str, tuple[str, ...]], ...]  # (relation, reviewers) pairs

    @property
    def relations(self) -> tuple[str, ...]:
        return tuple(r for r, _ in self.reviewers)

    def reviewers_of(self, relation: str) -> tuple[str, ...]:
        return dict(self.reviewers).get(relation, ())

    def to_dict(self) -> dict:
        d = asdict(self)
        d["reviewers"] = {r: list(names) for r, names in self.reviewers}
        return d


# ================================================================ checks


def _check_choice(what: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def _check_relation(relation: str) -> str:
    return _check_choice("relation", relation, RELATIONS)


def _check_name(name: Any, what: str = "reviewer name") -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"{what} must be a non-empty string; got {name!r}")
    name = name.strip()
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"{what} may have at most {MAX_NAME_LENGTH} characters; got {len(name)}")
    return name


def _check_run_id(run_id: Any) -> int:
    if isinstance(run_id, bool) or not isinstance(run_id, numbers.Integral):
        raise ValueError(f"run_id must be an integer; got {run_id!r}")
    return int(run_id)


def _check_sample_id(sample_id: Any) -> str:
    if not isinstance(sample_id, str) or not sample_id:
        raise ValueError(f"sample_id must be a non-empty string; got {sample_id!r}")
    return sample_id


def _clean_note(note: Any) -> str | None:
    if note is None:
        return None
    if not isinstance(note, str):
        raise ValueError(f"note must be text or None; got {type(note).__name__}")
    return note.strip() or None


def _check_call(verdict: str, reasons: Iterable[str] | str | None,
                note: Any) -> tuple[str, tuple[str, ...], str | None]:
    """Validate a verdict with its reasons and note; reasons come back in ``FP_REASONS`` order."""
    _check_choice("verdict", verdict, VERDICTS)
    if reasons is None:
        reasons = ()
    elif isinstance(reasons, str):
        reasons = (reasons,)
    reasons = tuple(reasons)
    for r in reasons:
        _check_choice("a false-positive reason", r, FP_REASONS)
    if len(set(reasons)) != len(reasons):
        raise ValueError(f"false-positive reasons repeat: {list(reasons)}")
    if reasons and verdict != "fp":
        raise ValueError(f"reasons are only for verdict 'fp' (false positive); verdict {verdict!r} came with "
                         f"{list(reasons)}")
    note = _clean_note(note)
    if "other" in reasons and not note:
        raise ValueError("the reason 'other' needs a note that says what the other reason is")
    return verdict, tuple(r for r in FP_REASONS if r in reasons), note


# ================================================================ writing with retries


def _is_lock_error(exc: OperationalError) -> bool:
    msg = str(exc.orig if exc.orig is not None else exc).lower()
    return "locked" in msg or "busy" in msg


def _write(store: Store, work: Callable[[Any], Any], *, retry_on_integrity: bool = False) -> Any:
    """Run ``work(connection)`` in one short transaction and return its result.

    Retried when SQLite reports "database is locked" *without* having waited out its busy
    timeout (a lock it would not wait for, e.g. a stale WAL snapshot); a lock that outlasted
    the busy timeout is raised at once instead of blocking the page for minutes.  With
    ``retry_on_integrity`` an IntegrityError (a concurrent insert of the same key won the
    race) repeats the transaction too.
    """
    for attempt in range(1, WRITE_ATTEMPTS + 1):
        t0 = time.monotonic()
        try:
            with store.engine.begin() as c:
                return work(c)
        except OperationalError as exc:
            waited = time.monotonic() - t0
            if (not _is_lock_error(exc) or attempt == WRITE_ATTEMPTS
                    or waited >= RETRY_ONLY_BELOW_BUSY_SHARE * SQLITE_BUSY_TIMEOUT_MS / 1000):
                raise
        except IntegrityError:
            if not retry_on_integrity or attempt == WRITE_ATTEMPTS:
                raise
        time.sleep(WRITE_RETRY_DELAY_S * attempt * (1 + secrets.randbelow(100) / 100))
    raise AssertionError("unreachable")  # pragma: no cover


def _upsert(c, table, key: dict, values: dict, created: dict) -> None:
    """Update the row with ``key``; insert it (with ``created`` columns) when there is none.

    On SQLite the UPDATE takes the write lock first, so no one can insert in between; on a
    server database a concurrent insert of the same key makes our INSERT fail with an
    IntegrityError, and ``_write(retry_on_integrity=True)`` repeats the whole transaction,
    whose UPDATE then finds the row.
    """
    where = and_(*(table.c[k] == v for k, v in key.items()))
    if c.execute(update(table).where(where).values(**values)).rowcount == 0:
        c.execute(insert(table).values(**key, **values, **created))


def _lock_run(c, run_id: int) -> None:
    """Serialise writers of one run's review draw: a no-op UPDATE of the run row holds SQLite's
    write lock / PostgreSQL's row lock until the transaction ends."""
    res = c.execute(update(S.runs).where(S.runs.c.id == run_id).values(cancel_requested=S.runs.c.cancel_requested))
    if res.rowcount == 0:
        raise ValueError(f"no run {run_id} in the store")


# ================================================================ reviewer accounts


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


def _reviewer_row(c, name: str):
    return c.execute(select(S.reviewers).where(S.reviewers.c.name == name)).first()


def _name_taken(c, name: str):
    """The existing account whose name equals ``name`` ignoring case, if any."""
    return c.execute(select(S.reviewers).where(func.lower(S.reviewers.c.name) == name.lower())).first()


def _reviewer(row) -> Reviewer:
    return Reviewer(name=row.name, kind="password" if row.pass_hash else "oidc", created_at=row.created_at)


def create_reviewer(store: Store, name: str, passphrase: str) -> Reviewer:
    """Create a password account.  The passphrase is stored only as a salted scrypt hash
    ``scrypt$n$r$p$salt_hex$hash_hex``.

    Raises ValueError for an empty or overlong name, a passphrase shorter than
    ``MIN_PASSPHRASE_LENGTH``, or a name already taken (compared ignoring case).
    """
    name = _check_name(name)
    if not isinstance(passphrase, str) or len(passphrase) < MIN_PASSPHRASE_LENGTH:
        got = len(passphrase) if isinstance(passphrase, str) else type(passphrase).__name__
        raise ValueError(f"the passphrase needs at least {MIN_PASSPHRASE_LENGTH} characters; got {got}")
    with store.engine.connect() as c:
        if _name_taken(c, name) is not None:
            raise ValueError(f"the reviewer name {name!r} is taken; choose another or sign in")
    pass_hash = _hash_passphrase(passphrase)  # slow on purpose: outside any transaction

    def work(c):
        if _name_taken(c, name) is not None:
            raise ValueError(f"the reviewer name {name!r} is taken; choose another or sign in")
        c.execute(insert(S.reviewers).values(name=name, pass_hash=pass_hash, oidc_subject=None, created_at=now()))
        return _reviewer(_reviewer_row(c, name))

    try:
        return _write(store, work)
    except IntegrityError:  # someone registered the same name a moment ago
        raise ValueError(f"the reviewer name {name!r} is taken; choose another or sign in") from None


# Compared against when the name is unknown, so a wrong name costs as long as a wrong passphrase.
_DUMMY_HASH: str | None = None


def verify_reviewer(store: Store, name: str, passphrase: str) -> bool:
    """True when ``name`` has a password account and ``passphrase`` matches it (constant-time
    comparison; unknown names and OIDC-only accounts take as long and return False)."""
    global _DUMMY_HASH
    if not isinstance(name, str) or not isinstance(passphrase, str):
        return False
    with store.engine.connect() as c:
        row = _reviewer_row(c, name.strip())
    if row is None or not row.pass_hash:
        if _DUMMY_HASH is None:
            _DUMMY_HASH = _hash_passphrase(secrets.token_hex(8))
        _check_passphrase(passphrase, _DUMMY_HASH)
        return False
    return _check_passphrase(passphrase, row.pass_hash)


def ensure_oidc_reviewer(store: Store, name: str, subject: str) -> Reviewer:
    """The account of an OIDC user (``subject``: the provider's stable ``sub``), created on first use.

    A known subject keeps its account whatever ``name`` now says.  Raises ValueError when the
    name belongs to a password account or to another subject (no account takeover by name).
    """
    name = _check_name(name)
    subject = _check_name(subject, "OIDC subject")

    def work(c):
        row = c.execute(select(S.reviewers).where(S.reviewers.c.oidc_subject == subject)).first()
        if row is not None:
            return _reviewer(row)
        taken = _name_taken(c, name)
        if taken is not None:
            raise ValueError(f"the reviewer name {name!r} belongs to another account; an OIDC sign-in "
                             "cannot take it over")
        c.execute(insert(S.reviewers).values(name=name, pass_hash=None, oidc_subject=subject, created_at=now()))
        return _reviewer(_reviewer_row(c, name))

    return _write(store, work, retry_on_integrity=True)


def reviewer_names(store: Store) -> list[str]:
    """Every reviewer's name, sorted."""
    with store.engine.connect() as c:
        return sorted(c.execute(select(S.reviewers.c.name)).scalars())


def _require_reviewer(c, name: Any, what: str = "reviewer") -> str:
    name = _check_name(name, f"{what} name")
    if _reviewer_row(c, name) is None:
        raise ValueError(f"no {what} account named {name!r}; create it (or sign in) on the Review page first")
    return name


# ================================================================ judgments


def _is_flagged(c, run_id: int, sample_id: str, relation: str) -> bool:
    q = select(S.votes.c.id).where(S.votes.c.run_id == run_id, S.votes.c.sample_id == sample_id,
                                   S.votes.c.relation == relation, S.votes.c.is_primary.is_(True),
                                   S.votes.c.flagged.is_(True))
    return c.execute(q.limit(1)).first() is not None


def _require_flagged(c, run_id: int, sample_id: str, relation: str) -> None:
    if not _is_flagged(c, run_id, sample_id, relation):
        raise ValueError(f"sample {sample_id!r} of run {run_id} is not flagged by the primary {relation} vote; "
                         "only flagged inferences are reviewed")


def _judgment(row) -> Judgment:
    return Judgment(run_id=int(row.run_id), sample_id=row.sample_id, relation=row.relation, reviewer=row.reviewer,
                    verdict=row.verdict, reasons=tuple(row.reasons or ()), note=row.note,
                    created_at=row.created_at, updated_at=row.updated_at)


def record_judgment(store: Store, run_id: int, sample_id: str, relation: str, reviewer: str, verdict: str,
                    reasons: Iterable[str] = (), note: str | None = None) -> Judgment:
    """Record (or change) ``reviewer``'s call on a flagged inference; returns the stored row.

    One row per (run, sample, relation, reviewer): a second call by the same reviewer updates
    verdict, reasons, note and ``updated_at``.  Raises ValueError when the verdict or a reason is
    not one of ``VERDICTS`` / ``FP_REASONS``, reasons come with a verdict other than ``fp``,
    ``other`` has no note, the reviewer has no account, or the sample is not flagged by the
    run's primary vote for ``relation``.  Safe to call from several processes at once.
    """
    rid = _check_run_id(run_id)
    relation = _check_relation(relation)
    sample_id = _check_sample_id(sample_id)
    verdict, reasons, note = _check_call(verdict, reasons, note)
    key = {"run_id": rid, "sample_id": sample_id, "relation": relation}

    def work(c):
        who = _require_reviewer(c, reviewer)
        _require_flagged(c, rid, sample_id, relation)
        ts = now()
        jkey = {**key, "reviewer": who}
        _upsert(c, S.judgments, jkey, {"verdict": verdict, "reasons": list(reasons), "note": note, "updated_at": ts},
                {"created_at": ts})
        return c.execute(select(S.judgments).where(*(S.judgments.c[k] == v for k, v in jkey.items()))).one()

    return _judgment(_write(store, work, retry_on_integrity=True))


def judgments(store: Store, run_id: int, relation: str | None = None, reviewer: str | None = None) -> list[Judgment]:
    """The judgments of a run, optionally of one relation and one reviewer, by sample id then reviewer."""
    rid = _check_run_id(run_id)
    q = select(S.judgments).where(S.judgments.c.run_id == rid)
    if relation is not None:
        q = q.where(S.judgments.c.relation == _check_relation(relation))
    if reviewer is not None:
        q = q.where(S.judgments.c.reviewer == _check_name(reviewer))
    with store.engine.connect() as c:
        rows = c.execute(q.order_by(S.judgments.c.sample_id, S.judgments.c.relation, S.judgments.c.reviewer)).all()
    return [_judgment(r) for r in rows]


def judged_runs(store: Store) -> list[JudgedRun]:
    """Runs with at least one judgment, with the reviewers of each relation (for the pages)."""
    q = select(S.judgments.c.run_id, S.judgments.c.relation, S.judgments.c.reviewer).distinct()
    by_run: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    with store.engine.connect() as c:
        for run_id, relation, who in c.execute(q):
            by_run[int(run_id)][relation].add(who)
        runs = {int(r.id): r for r in c.execute(select(S.runs).where(S.runs.c.id.in_(list(by_run))))}
    return [JudgedRun(run_id=rid, name=runs[rid].name, model=runs[rid].model, dataset=runs[rid].dataset,
                      task=runs[rid].task,
                      reviewers=tuple((rel, tuple(sorted(by_run[rid][rel])))
                                      for rel in RELATIONS if rel in by_run[rid]))
            for rid in sorted(by_run) if rid in runs]


# ================================================================ sampling


def cochran_sample_size(population: int, confidence: float = DEFAULT_CONFIDENCE, margin: float = DEFAULT_MARGIN,
                        p: float = DEFAULT_PROPORTION) -> int:
    """Cochran's (1963) sample size for a proportion, with the finite population correction.

    n0 = z^2 p (1 - p) / e^2 with z = Phi^-1(1 - (1 - confidence) / 2); n = n0 / (1 + (n0 - 1) / N),
    rounded up (never above N); 0 for an empty population.  Defaults (95%, e = 0.05, p = 0.5)
    give n0 = 384.15, e.g. N = 1,000 -> 278, N = 10,000 -> 370.
    """
    if isinstance(population, bool) or not isinstance(population, int) or population < 0:
        raise ValueError(f"population must be a non-negative integer; got {population!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1; got {confidence!r}")
    if not 0 < margin < 1:
        raise ValueError(f"margin must lie strictly between 0 and 1; got {margin!r}")
    if not 0 < p < 1:
        raise ValueError(f"p must lie strictly between 0 and 1; got {p!r}")
    if population == 0:
        return 0
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - confidence) / 2))
    n0 = z * z * p * (1 - p) / (margin * margin)
    n = n0 / (1 + (n0 - 1) / population)
    # the slack keeps an exact integer such as N = 1 (n = 1.0000000000000002) from rounding up
    return min(population, max(1, math.ceil(n - 1e-9)))


def _stored_draw(c, run_id: int, relation: str) -> SampleDraw | None:
    rows = c.execute(select(S.review_samples).where(S.review_samples.c.run_id == run_id,
                                                    S.review_samples.c.relation == relation)
                     .order_by(S.review_samples.c.position)).all()
    if not rows:
        return None
    return SampleDraw(run_id=run_id, relation=relation, seed=int(rows[0].seed), population=int(rows[0].population),
                      sample_ids=tuple(r.sample_id for r in rows))


def review_sample_info(store: Store, run_id: int, relation: str) -> SampleDraw | None:
    """The stored draw (seed, population N, ids in order), or None when none was drawn yet."""
    with store.engine.connect() as c:
        return _stored_draw(c, _check_run_id(run_id), _check_relation(relation))


def _flagged_ids(c, run_id: int, relation: str) -> list[str]:
    q = select(S.votes.c.sample_id).where(S.votes.c.run_id == run_id, S.votes.c.relation == relation,
                                          S.votes.c.is_primary.is_(True), S.votes.c.flagged.is_(True))
    return sorted(set(c.execute(q).scalars()))


def _seed_mismatch(draw: SampleDraw, seed: int) -> ValueError:
    return ValueError(f"run {draw.run_id} already has a {draw.relation} review sample drawn with seed {draw.seed} "
                      f"({draw.size} of {draw.population}); asked for seed {seed}. Pass redraw=True to replace it "
                      "(judgments stay; items outside the new draw leave the queue)")


def draw_review_sample(store: Store, run_id: int, relation: str, seed: int = DEFAULT_REVIEW_SEED,
                       redraw: bool = False) -> list[str]:
    """The review sample of a run's flagged inferences for ``relation``, drawn once and stored.

    The first call draws ``cochran_sample_size(N)`` of the N flagged sample ids (sorted, then
    ``numpy.random.default_rng(seed).choice(N, n, replace=False)``) and stores them with their
    positions; later calls return the stored draw in the same order, even when the flagged set
    has changed since (the stored ``population`` says what N was).  Concurrent first calls are
    serialised, so all of them get the one stored draw.  A seed other than the stored one raises
    ValueError unless ``redraw=True``, which replaces the draw.
    """
    rid = _check_run_id(run_id)
    relation = _check_relation(relation)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer; got {seed!r}")
    if not redraw:
        with store.engine.connect() as c:
            stored = _stored_draw(c, rid, relation)
        if stored is not None:
            if stored.seed != seed:
                raise _seed_mismatch(stored, seed)
            return list(stored.sample_ids)

    def work(c):
        import numpy as np

        _lock_run(c, rid)
        stored = _stored_draw(c, rid, relation)
        if stored is not None and not redraw:  # a concurrent caller drew first
            if stored.seed != seed:
                raise _seed_mismatch(stored, seed)
            return list(stored.sample_ids)
        if stored is not None:
            c.execute(delete(S.review_samples).where(S.review_samples.c.run_id == rid,
                                                     S.review_samples.c.relation == relation))
        population = _flagged_ids(c, rid, relation)
        n = cochran_sample_size(len(population))
        picks = np.random.default_rng(seed).choice(len(population), size=n, replace=False) if n else []
        ids = [population[int(i)] for i in picks]
        if ids:
            c.execute(insert(S.review_samples), [
                {"run_id": rid, "relation": relation, "sample_id": sid, "position": pos, "seed": seed,
                 "population": len(population)} for pos, sid in enumerate(ids)])
        return ids

    return _write(store, work, retry_on_integrity=True)


def review_queue(store: Store, run_id: int, relation: str, reviewer: str) -> list[QueueItem]:
    """The drawn items in draw order, each with ``reviewer``'s own call (if any).

    Blind by construction: only ``reviewer``'s judgments are read.  When nothing was drawn yet
    the sample is drawn with ``DEFAULT_REVIEW_SEED`` (and stored) first.
    """
    rid = _check_run_id(run_id)
    relation = _check_relation(relation)
    who = _check_name(reviewer)
    draw = review_sample_info(store, rid, relation)
    ids = list(draw.sample_ids) if draw else draw_review_sample(store, rid, relation, DEFAULT_REVIEW_SEED)
    mine = {j.sample_id: j for j in judgments(store, rid, relation, reviewer=who)}
    out = []
    for pos, sid in enumerate(ids):
        j = mine.get(sid)
        out.append(QueueItem(sample_id=sid, position=pos, judged_by_me=j is not None,
                             my_verdict=j.verdict if j else None, my_reasons=j.reasons if j else (),
                             my_note=j.note if j else None))
    return out


# ================================================================ agreement


def landis_koch_band(kappa: float | None) -> str:
    """Landis & Koch (1977): < 0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate,
    0.61-0.80 substantial, 0.81-1 almost perfect (upper bounds inclusive); None -> undefined."""
    if kappa is None or math.isnan(kappa):
        return UNDEFINED_BAND
    if kappa < -_EPS:
        return POOR_BAND
    for upper, name in LANDIS_KOCH_BANDS:
        if kappa <= upper + _EPS:
            return name
    return LANDIS_KOCH_BANDS[-1][1]


def cohen_kappa(calls_a: Sequence[str], calls_b: Sequence[str], categories: Sequence[str] = VERDICTS,
                ci_level: float = KAPPA_CI_LEVEL) -> Kappa:
    """Cohen's kappa of two raters who each called the same ``n`` items.

    p_o = share of items with the same call; p_e = sum over categories of the product of the
    two raters' marginal shares; kappa = (p_o - p_e) / (1 - p_e).  Standard error (the usual
    large-sample approximation, e.g. Cohen 1960):  se = sqrt(p_o (1 - p_o) / (n (1 - p_e)^2)),
    and the interval kappa -+ z se (z = Phi^-1(1 - (1 - ci_level) / 2) = 1.96 for 95%), clipped to
    [-1, 1].  When p_e == 1 (both raters used one and the same category throughout, so p_o == 1
    too) kappa is 0/0: kappa, se and the interval are None and the band is ``undefined``; we do
    not report 1, because such data cannot show agreement beyond chance.

    Raises ValueError for lists of different lengths, no items, or a call outside ``categories``.
    """
    a, b = list(calls_a), list(calls_b)
    cats = tuple(categories)
    if len(cats) < 2 or len(set(cats)) != len(cats):
        raise ValueError(f"categories must be at least two distinct values; got {list(cats)}")
    if len(a) != len(b):
        raise ValueError(f"both raters must call the same items: {len(a)} calls against {len(b)}")
    if not a:
        raise ValueError("kappa needs at least one item both raters called; got none")
    for who, calls in (("A", a), ("B", b)):
        bad = sorted({c for c in calls if c not in cats}, key=str)
        if bad:
            raise ValueError(f"rater {who} made calls outside the categories {list(cats)}: {bad}")
    if not 0 < ci_level < 1:
        raise ValueError(f"ci_level must lie strictly between 0 and 1; got {ci_level!r}")
    idx = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    table = [[0] * k for _ in range(k)]
    for x, y in zip(a, b):
        table[idx[x]][idx[y]] += 1
    n = len(a)
    p_o = sum(table[i][i] for i in range(k)) / n
    row = [sum(table[i]) / n for i in range(k)]
    col = [sum(table[i][j] for i in range(k)) / n for j in range(k)]
    p_e = sum(r * c for r, c in zip(row, col))
    confusion = tuple(tuple(r) for r in table)
    if 1 - p_e < _EPS:
        return Kappa(kappa=None, observed=p_o, expected=p_e, n=n, se=None, ci_low=None, ci_high=None,
                     ci_level=ci_level, band=UNDEFINED_BAND, categories=cats, confusion=confusion)
    from scipy.stats import norm

    kappa = (p_o - p_e) / (1 - p_e)
    se = math.sqrt(p_o * (1 - p_o) / (n * (1 - p_e) ** 2))
    z = float(norm.ppf(1 - (1 - ci_level) / 2))
    return Kappa(kappa=kappa, observed=p_o, expected=p_e, n=n, se=se, ci_low=max(-1.0, kappa - z * se),
                 ci_high=min(1.0, kappa + z * se), ci_level=ci_level, band=landis_koch_band(kappa),
                 categories=cats, confusion=confusion)


def _two_reviewers(reviewer_a: str, reviewer_b: str) -> tuple[str, str]:
    a, b = _check_name(reviewer_a), _check_name(reviewer_b)
    if a == b:
        raise ValueError(f"agreement needs two different reviewers; got {a!r} twice")
    return a, b


def agreement(store: Store, run_id: int, relation: str, reviewer_a: str, reviewer_b: str) -> Agreement:
    """Cohen's kappa of two reviewers' verdicts over the items both judged (any flagged item,
    drawn or not); ``kappa`` is None when they have no item in common."""
    rid = _check_run_id(run_id)
    relation = _check_relation(relation)
    a, b = _two_reviewers(reviewer_a, reviewer_b)
    ja = {j.sample_id: j.verdict for j in judgments(store, rid, relation, reviewer=a)}
    jb = {j.sample_id: j.verdict for j in judgments(store, rid, relation, reviewer=b)}
    both = sorted(ja.keys() & jb.keys())
    pairs = tuple((s, ja[s], jb[s]) for s in both)
    kappa = cohen_kappa([p[1] for p in pairs], [p[2] for p in pairs]) if pairs else None
    return Agreement(run_id=rid, relation=relation, reviewer_a=a, reviewer_b=b, n_a=len(ja), n_b=len(jb),
                     n_both=len(both), pairs=pairs, kappa=kappa)


# ================================================================ consensus


def _adjudicated(c, run_id: int, relation: str) -> dict[str, Any]:
    q = select(S.consensus).where(S.consensus.c.run_id == run_id, S.consensus.c.relation == relation)
    return {r.sample_id: r for r in c.execute(q)}


def _positions(c, run_id: int, relation: str) -> dict[str, int]:
    draw = _stored_draw(c, run_id, relation)
    return {sid: i for i, sid in enumerate(draw.sample_ids)} if draw else {}


def disagreements(store: Store, run_id: int, relation: str, reviewer_a: str, reviewer_b: str) -> list[Disagreement]:
    """Items both reviewers judged with different verdicts (``kind='verdict'``) or, both calling
    them fp, different reasons (``kind='reasons'``); resolved ones carry the adjudication.
    Ordered by draw position (items outside the draw last), then sample id."""
    rid = _check_run_id(run_id)
    relation = _check_relation(relation)
    a, b = _two_reviewers(reviewer_a, reviewer_b)
    ja = {j.sample_id: j for j in judgments(store, rid, relation, reviewer=a)}
    jb = {j.sample_id: j for j in judgments(store, rid, relation, reviewer=b)}
    with store.engine.connect() as c:
        adj = _adjudicated(c, rid, relation)
        pos = _positions(c, rid, relation)
    out = []
    for sid in sorted(ja.keys() & jb.keys(), key=lambda s: (pos.get(s, math.inf), s)):
        x, y = ja[sid], jb[sid]
        if x.verdict != y.verdict:
            kind = "verdict"
        elif x.reasons != y.reasons:
            kind = "reasons"
        else:
            continue
        r = adj.get(sid)
        out.append(Disagreement(sample_id=sid, position=pos.get(sid), kind=kind,
                                verdict_a=x.verdict, reasons_a=x.reasons, note_a=x.note,
                                verdict_b=y.verdict, reasons_b=y.reasons, note_b=y.note,
                                resolved_verdict=r.verdict if r else None,
                                resolved_reasons=tuple(r.reasons or ()) if r else (),
                                resolved_note=r.note if r else None, resolved_by=r.adjudicator if r else None))
    return out


def _consensus_row(row) -> Consensus:
    return Consensus(run_id=int(row.run_id), sample_id=row.sample_id, relation=row.relation, verdict=row.verdict,
                     reasons=tuple(row.reasons or ()), note=row.note, source="adjudicated",
                     adjudicator=row.adjudicator, reviewers=(), decided_at=row.created_at)


def adjudicate(store: Store, run_id: int, sample_id: str, relation: str, verdict: str, reasons: Iterable[str],
               note: str | None, adjudicator: str) -> Consensus:
    """Record (or replace) the decided call of a flagged item; it overrides the reviewers' calls.

    Same checks as ``record_judgment``; ``adjudicator`` must have an account.  A second call
    replaces verdict, reasons, note and adjudicator, and sets ``created_at`` to the new decision time.
    """
    rid = _check_run_id(run_id)
    relation = _check_relation(relation)
    sample_id = _check_sample_id(sample_id)
    verdict, reasons, note = _check_call(verdict, reasons, note)

    def work(c):
        who = _require_reviewer(c, adjudicator, "adjudicator")
        _require_flagged(c, rid, sample_id, relation)
        key = {"run_id": rid, "sample_id": sample_id, "relation": relation}
        _upsert(c, S.consensus, key, {"verdict": verdict, "reasons": list(reasons), "note": note,
                                      "adjudicator": who, "created_at": now()}, {})
        return c.execute(select(S.consensus).where(*(S.consensus.c[k] == v for k, v in key.items()))).one()

    return _consensus_row(_write(store, work, retry_on_integrity=True))


def _agreed(run_id: int, relation: str, calls: list[Judgment]) -> Consensus | None:
    """The computed consensus of one item's judgments, or None (too few, or they differ)."""
    if len(calls) < MIN_CONSENSUS_REVIEWERS:
        return None
    first = calls[0]
    if any(j.verdict != first.verdict or j.reasons != first.reasons for j in calls[1:]):
        return None
    notes = [f"{j.reviewer}: {j.note}" for j in calls if j.note]
    return Consensus(run_id=run_id, sample_id=first.sample_id, relation=relation, verdict=first.verdict,
                     reasons=first.reasons, note=" | ".join(notes) or None, source="agreed", adjudicator=None,
                     reviewers=tuple(j.reviewer for j in calls), decided_at=max(j.updated_at for j in calls))


def consensus(store: Store, run_id: int, relation: str) -> list[Consensus]:
    """Every decided item of a run and relation, by sample id.

    An adjudication (the consensus table) wins; otherwise an item is decided when at least
    ``MIN_CONSENSUS_REVIEWERS`` reviewers judged it and all of them made the same call
    (verdict, and for fp the same reasons).  The agreed items are computed on read, not stored.
    """
    rid = _check_run_id(run_id)
    relation = _check_relation(relation)
    by_item: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments(store, rid, relation):
        by_item[j.sample_id].append(j)
    with store.engine.connect() as c:
        adj = _adjudicated(c, rid, relation)
    out = {sid: _consensus_row(r) for sid, r in adj.items()}
    for sid, calls in by_item.items():
        if sid not in out:
            agreed = _agreed(rid, relation, calls)
            if agreed is not None:
                out[sid] = agreed
    return [out[s] for s in sorted(out)]


# ================================================================ precision (seed 000 Tables 1-3)

PRECISION_COLUMNS = (
    "run", "model", "dataset", "task", "relation",
    "flagged",                # Total: inferences the primary vote flagged
    "sample size",            # items drawn for review (Cochran); 0 when nothing was drawn
    "reviewed",               # items of the sample with a consensus (uncertain included)
    "true positive", "true positive %",
    "false positive", "false positive %",
    "multiple objects",       # fp items with this reason (shared ones included, as in Table 1)
    "incomplete removal",
    "multiple & incomplete",  # fp items with both reasons: Table 1's number in parentheses
    "other",
    "fp without reason",
    "uncertain",
    "unresolved",             # judged by two or more reviewers who disagree, not adjudicated yet
    "pending",                # not enough judgments yet
)


def _pct(k: int, n: int) -> float:
    return round(100.0 * k / n, 1) if n else math.nan


def _precision_row(store: Store, run_id: int, relation: str) -> dict:
    try:
        rec = store.get_run(run_id)
    except KeyError:
        raise ValueError(f"no run {run_id} in the store") from None
    with store.engine.connect() as c:
        flagged = _flagged_ids(c, run_id, relation)
        draw = _stored_draw(c, run_id, relation)
    universe = set(draw.sample_ids) if draw else set(flagged)
    decided = {x.sample_id: x for x in consensus(store, run_id, relation) if x.sample_id in universe}
    judged: dict[str, int] = defaultdict(int)
    for j in judgments(store, run_id, relation):
        if j.sample_id in universe:
            judged[j.sample_id] += 1
    open_items = universe - decided.keys()
    unresolved = sum(1 for s in open_items if judged[s] >= MIN_CONSENSUS_REVIEWERS)
    fps = [x for x in decided.values() if x.verdict == "fp"]
    has = lambda reason: sum(1 for x in fps if reason in x.reasons)  # noqa: E731
    tp = sum(1 for x in decided.values() if x.verdict == "tp")
    n = len(decided)
    return {
        "run": run_id, "model": rec.model, "dataset": rec.dataset, "task": rec.task, "relation": relation,
        "flagged": len(flagged), "sample size": draw.size if draw else 0, "reviewed": n,
        "true positive": tp, "true positive %": _pct(tp, n),
        "false positive": len(fps), "false positive %": _pct(len(fps), n),
        "multiple objects": has("multiple-objects"), "incomplete removal": has("incomplete-removal"),
        "multiple & incomplete": sum(1 for x in fps if {"multiple-objects", "incomplete-removal"} <= set(x.reasons)),
        "other": has("other"), "fp without reason": sum(1 for x in fps if not x.reasons),
        "uncertain": sum(1 for x in decided.values() if x.verdict == "uncertain"),
        "unresolved": unresolved, "pending": len(open_items) - unresolved,
    }


def precision_table(store: Store, run_ids: int | Iterable[int], relation: str) -> pd.DataFrame:
    """Seed 000 Tables 1-3 from consensus only: one row per run, plus a ``Total`` row for several.

    Counts are over the drawn review sample (over every flagged item when nothing was drawn):
    the random draw is what makes the precision an unbiased estimate.  Percentages (0-100, one
    decimal) divide by ``reviewed``, the decided items including uncertain ones, which equals the
    sample size once every drawn item is decided (the paper's denominator); NaN when nothing
    is decided.  Columns: ``PRECISION_COLUMNS``.
    """
    import pandas as pd

    relation = _check_relation(relation)
    ids = [run_ids] if isinstance(run_ids, numbers.Integral) else list(run_ids)
    rows = [_precision_row(store, _check_run_id(r), relation) for r in ids]
    if len(rows) > 1:
        total = {k: sum(r[k] for r in rows) for k in PRECISION_COLUMNS if k not in
                 ("run", "model", "dataset", "task", "relation", "true positive %", "false positive %")}
        total.update(run=None, model="Total", dataset="", task="", relation=relation,
                     **{"true positive %": _pct(total["true positive"], total["reviewed"]),
                        "false positive %": _pct(total["false positive"], total["reviewed"])})
        rows.append(total)
    return pd.DataFrame(rows, columns=list(PRECISION_COLUMNS))
