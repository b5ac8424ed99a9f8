"""Judgments: one reviewer's call on one flagged inference, and the vocabulary of calls.

A call is a verdict (``tp``: the mutant was built as intended, object removed for MR-1 or
preserved for MR-2, so the inference really is unreliable; ``fp``: it was not; ``uncertain``)
with, for ``fp`` only, reasons from ``FP_REASONS`` and an optional note (required with
``other``).  There is one judgment per (run, sample, relation, reviewer); a second call by the
same reviewer changes it.  Only items the run's primary vote flagged can be judged.  The rows
live in ``objrel.store.reviews``.
"""

from __future__ import annotations

import datetime as dt
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from objrel import access as A
from objrel.access import Actor, Target
from objrel.review.accounts import check_name
from objrel.store import Store
from objrel.store import reviews as review_rows

RELATIONS = ("MR-1", "MR-2")
VERDICTS = ("tp", "fp", "uncertain")
# Reasons of a false positive (EMSE21 s5.1.1): not every target object was corrupted; the
# annotation missed part of the object so part of it survived; anything else (needs a note).
FP_REASONS = ("multiple-objects", "incomplete-removal", "other")
VERDICT_LABELS = {"tp": "true positive", "fp": "false positive", "uncertain": "uncertain"}
REASON_LABELS = {"multiple-objects": "multiple target objects", "incomplete-removal": "incomplete removal",
                 "other": "other"}
# The second question of an item, on the mutant itself: is it a valid test (object really removed for MR-1,
# background really replaced for MR-2, no artefact that alone explains the change)?  Optional beside the
# verdict; an item whose decided validity is ``invalid`` leaves the precision's denominator.
VALIDITY = ("valid", "invalid", "unsure")
VALIDITY_LABELS = {"valid": "valid test", "invalid": "invalid mutant", "unsure": "unsure"}
INVALID = "invalid"


def iso(value: dt.datetime | None) -> str | None:
    """ISO 8601 text of a timestamp, None for None."""
    return value.isoformat() if value is not None else None


@dataclass(frozen=True)
class Judgment:
    """One reviewer's call on one flagged inference (run, sample, relation).

    verdict: one of ``VERDICTS``; reasons: a subset of ``FP_REASONS`` in that order, empty
    unless the verdict is ``fp``; note: free text (required with the reason ``other``); validity: the
    call on the mutant (one of ``VALIDITY``), None when the reviewer gave none.
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
    validity: str | None = None

    def to_dict(self) -> dict:
        """The judgment as a JSON-ready dict."""
        d = asdict(self)
        d["reasons"] = list(self.reasons)
        d["created_at"], d["updated_at"] = iso(self.created_at), iso(self.updated_at)
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
        """The relations that have reviewers."""
        return tuple(r for r, _ in self.reviewers)

    def reviewers_of(self, relation: str) -> tuple[str, ...]:
        """The reviewers of ``relation`` (none when it has none)."""
        return dict(self.reviewers).get(relation, ())

    def to_dict(self) -> dict:
        """The run's reviewers per relation as a JSON-ready dict."""
        d = asdict(self)
        d["reviewers"] = {r: list(names) for r, names in self.reviewers}
        return d


# ---------------------------------------------------------------- checks


def _check_choice(what: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{what} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


def check_relation(relation: str) -> str:
    """``relation`` when it is one of ``RELATIONS``; ValueError otherwise."""
    return _check_choice("relation", relation, RELATIONS)


def check_run_id(run_id: Any) -> int:
    """``run_id`` as an int; ValueError unless it is an integer (bool is not)."""
    if isinstance(run_id, bool) or not isinstance(run_id, numbers.Integral):
        raise ValueError(f"run_id must be an integer; got {run_id!r}")
    return int(run_id)


def check_sample_id(sample_id: Any) -> str:
    """``sample_id`` when it is non-empty text; ValueError otherwise."""
    if not isinstance(sample_id, str) or not sample_id:
        raise ValueError(f"sample_id must be a non-empty string; got {sample_id!r}")
    return sample_id


def _clean_note(note: Any) -> str | None:
    if note is None:
        return None
    if not isinstance(note, str):
        raise ValueError(f"note must be text or None; got {type(note).__name__}")
    return note.strip() or None


def check_validity(validity: Any) -> str | None:
    """``validity`` when it is None or one of ``VALIDITY``; ValueError otherwise."""
    return None if validity is None else _check_choice("validity", validity, VALIDITY)


def check_call(verdict: str, reasons: Iterable[str] | str | None,
               note: Any) -> tuple[str, tuple[str, ...], str | None]:
    """Validate a verdict with its reasons and note; returns (verdict, reasons in ``FP_REASONS``
    order, note stripped or None)."""
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


# ---------------------------------------------------------------- recording and listing


def _judgment(row: dict) -> Judgment:
    return Judgment(run_id=int(row["run_id"]), sample_id=row["sample_id"], relation=row["relation"],
                    reviewer=row["reviewer"], verdict=row["verdict"], reasons=tuple(row["reasons"] or ()),
                    note=row["note"], created_at=row["created_at"], updated_at=row["updated_at"],
                    validity=row.get("validity"))


def record_judgment(actor: Actor, store: Store, run_id: int, sample_id: str, relation: str, verdict: str,
                    reasons: Iterable[str] = (), note: str | None = None, *, validity: str | None = None) -> Judgment:
    """Record (or change) ``actor``'s own call on a flagged inference; returns the stored row.

    One current call per (run, sample, relation, reviewer): a second call by the same reviewer
    becomes its current verdict, reasons, note and ``updated_at``, and every call is also kept as a
    numbered version with its time (``judgment_history``), marked when made after the review sample
    closed; the same call again (a double press) is no change and adds no version.  ``validity`` is the
    call on the mutant itself (one of ``VALIDITY``, or None for none; a later call without one clears it).
    Raises NotAllowed unless ``actor`` holds the reviewer role and has not adjudicated the item (an
    adjudicator is never a party to the decision they made).  Raises ValueError when the verdict or a reason
    is not one of ``VERDICTS`` / ``FP_REASONS``, reasons come with a verdict other than ``fp``, ``other`` has
    no note, the reviewer has no account, or the sample is not flagged by the run's primary vote for
    ``relation``.  Safe to call from several processes at once.
    """
    rid = check_run_id(run_id)
    relation = check_relation(relation)
    sample_id = check_sample_id(sample_id)
    verdict, reasons, note = check_call(verdict, reasons, note)
    validity = check_validity(validity)
    adjudicator = review_rows.adjudicator_of(store, rid, sample_id, relation)
    A.authorize(actor, A.JUDGE, judge_target(store, rid, sample_id, relation, actor.name, adjudicator))
    who = check_name(actor.name, "reviewer name")
    return _judgment(review_rows.save_judgment(store, run_id=rid, sample_id=sample_id, relation=relation,
                                               reviewer=who, verdict=verdict, reasons=reasons, note=note,
                                               validity=validity))


# Why a reviewer may not judge an item assigned to a team they are not on.
NOT_ON_TEAM = "this item of the review sample is assigned to other reviewers ({team}), and only they judge it"


def judge_target(store: Store, run_id: int, sample_id: str, relation: str, who: str | None,
                 adjudicator: str | None) -> Target:
    """The gate's target for ``who`` judging one item: its adjudicator may not (never a party to what they
    decided), and when the item's review sample is assigned, nobody outside the item's team may."""
    what = f"{relation} item {sample_id!r} of run {run_id}"
    if adjudicator is not None and who == adjudicator:
        return Target(what, excluded=frozenset({adjudicator}),
                      excluded_because="they adjudicated this item, so they cannot also judge it")
    team = review_rows.item_team(store, run_id, sample_id, relation)
    if team and who not in team:
        return Target(what, excluded=frozenset({who} if who else ()),
                      excluded_because=NOT_ON_TEAM.format(team=", ".join(team)))
    return Target(what, excluded=frozenset({adjudicator} if adjudicator else ()),
                  excluded_because="they adjudicated this item, so they cannot also judge it")


def judgments(store: Store, run_id: int, relation: str | None = None, reviewer: str | None = None, *,
              sample_id: str | None = None) -> list[Judgment]:
    """The judgments of a run, optionally of one relation, one reviewer and one sample (item), by sample id then
    reviewer."""
    rid = check_run_id(run_id)
    relation = check_relation(relation) if relation is not None else None
    reviewer = check_name(reviewer) if reviewer is not None else None
    sample_id = check_sample_id(sample_id) if sample_id is not None else None
    return [_judgment(r) for r in review_rows.judgment_rows(store, rid, relation, reviewer, sample_id=sample_id)]


def judged_runs(store: Store) -> list[JudgedRun]:
    """Runs with at least one judgment, with the reviewers of each relation (for the pages)."""
    return [JudgedRun(run_id=r["run_id"], name=r["name"], model=r["model"], dataset=r["dataset"], task=r["task"],
                      reviewers=tuple((rel, tuple(sorted(r["reviewers"][rel])))
                                      for rel in RELATIONS if rel in r["reviewers"]))
            for r in review_rows.judged_runs(store)]


def utc(ts: dt.datetime) -> dt.datetime:
    """A stored time as timezone-aware UTC (SQLite hands back naive datetimes; they were written in UTC)."""
    return ts.astimezone(dt.timezone.utc) if ts.tzinfo is not None else ts.replace(tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class JudgmentVersion:
    """One version of a reviewer's call; the highest ``version`` is the current call."""

    version: int
    verdict: str
    reasons: tuple[str, ...]
    note: str | None
    after_close: bool     # made after the review sample closed (all k reviewers of every drawn item judged it)
    created_at: dt.datetime
    validity: str | None = None

    def to_dict(self) -> dict:
        """The version as a JSON-ready dict."""
        d = asdict(self)
        d["reasons"], d["created_at"] = list(self.reasons), iso(self.created_at)
        return d


# Why a party to an open sample may not see the other calls on it.
PARTY_OF_OPEN_SAMPLE = ("they judge this review sample, or hold the reviewer role and may still judge it, and it "
                        "is still open: a party never sees another reviewer's calls on it before it closes, "
                        "whatever other roles they hold")


def closed_sample(drawn: int, closers: int, k: int = review_rows.CLOSING_REVIEWERS) -> bool:
    """True when a review sample of ``drawn`` items open to every reviewer is closed: ``k`` reviewers per item
    (``review_rows.CLOSING_REVIEWERS`` unless the draw says otherwise) have each judged every drawn item
    (``closers``).  Until then review stays blind.  An assigned draw closes when every team member has judged
    every item assigned to them (``review_rows.sample_closure``)."""
    return drawn > 0 and closers >= k


def parties(store: Store, run_id: int, relation: str) -> frozenset[str]:
    """The reviewers who judged at least one item of (``run_id``, ``relation``): the parties to its review."""
    return frozenset(j.reviewer for j in judgments(store, run_id, relation))


def may_still_judge(store: Store) -> frozenset[str]:
    """The accounts holding the reviewer role: while a sample is open, each of them may yet become a party."""
    from objrel.store import accounts as account_rows

    return frozenset(a["name"] for a in account_rows.accounts(store) if A.REVIEWER in a["roles"])


def blind_target(store: Store, run_id: int, relation: str, what: str) -> Target:
    """The gate's target for seeing other reviewers' calls on (``run_id``, ``relation``): while its review
    sample is open, every party to it, and every account that may still judge it (the reviewer role), is
    excluded (``PARTY_OF_OPEN_SAMPLE``), whatever other roles they hold: a reviewer who is also an adjudicator
    reads no call before she has made hers and the sample has closed."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    closed = review_rows.sample_closure(store, rid, relation)["closed"]   # all k of every item, or every team member
    excluded = frozenset() if closed else parties(store, rid, relation) | may_still_judge(store)
    return Target(what, excluded=excluded, excluded_because=PARTY_OF_OPEN_SAMPLE)


def judgment_history(actor: Actor, store: Store, run_id: int, sample_id: str, relation: str,
                     reviewer: str) -> list[JudgmentVersion]:
    """Every version of ``reviewer``'s call on one item, oldest first.  ``actor`` sees their own
    history; another reviewer's only as an adjudicator or admin who is not a party to the run's open review
    sample of ``relation`` (a party never sees another's calls before it closes; NotAllowed otherwise)."""
    rid, relation, sample_id = check_run_id(run_id), check_relation(relation), check_sample_id(sample_id)
    who = check_name(reviewer)
    A.authorize(actor, A.SEE_CALLS, Target(f"{who}'s calls", owner=who) if who == actor.name else
                blind_target(store, rid, relation, f"{who}'s calls"))
    return [JudgmentVersion(int(r["version"]), r["verdict"], tuple(r["reasons"] or ()), r["note"],
                            bool(r["after_close"]), utc(r["created_at"]), r.get("validity"))
            for r in review_rows.judgment_versions(store, rid, sample_id, relation, who)]


def my_history(actor: Actor, store: Store, run_id: int, sample_id: str, relation: str) -> list[JudgmentVersion]:
    """Every version of the signed-in ``actor``'s own call on one item, oldest first (empty when they never
    judged it).  Only the owner: the gate is asked with ``actor`` as the owner, so no name can be passed in;
    NotAllowed for a visitor with no account."""
    if actor.name is None:
        A.authorize(actor, A.SEE_CALLS, "their own version history")  # refuses: nobody signed in owns calls
    return judgment_history(actor, store, run_id, sample_id, relation, actor.name)
