"""Comment threads on a review item: any party writes; the others read it only once the sample closes.

A thread hangs on one item (run, relation, sample id): comments, and resolve or reopen events, oldest first
(``objrel.store.comments`` keeps them, never changed).  Who writes: any account with a reviewing role (the
reviewers who judge the item, the adjudicator who decides it, an admin), through the gate's ``COMMENT`` and
``RESOLVE_THREAD``.  Who reads what (``SEE_COMMENTS``, then blindness):

* an account that may see reviewers' calls on the sample now (``SEE_CALLS`` on ``blind_target``: an adjudicator
  or admin) and judged none of its items reads the whole thread at once;
* a reviewer (or any party) who closed the review sample reads the whole thread of a drawn item once the sample
  is closed (what calibration shows them anyway), never of a flagged item outside the draw, which they may still
  judge blind;
* anyone else reads only their own entries: a comment can say what its author called, so while the sample is
  open another reviewer's words stay hidden like their calls.

The thread is resolved when the newest resolve or reopen event the reader may see is a resolve.  No Streamlit.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from objrel import access as A
from objrel.access import Actor
from objrel.review.agreement import drawn_items, sample_state
from objrel.review.judgments import blind_target, check_relation, check_run_id, check_sample_id, parties, utc
from objrel.store import Store
from objrel.store import comments as rows
from objrel.store.reviews import is_flagged

# The longest comment kept, in characters (a thread is a few lines of discussion, not a document).
MAX_COMMENT_LENGTH = 2000
COMMENT, RESOLVE, REOPEN = rows.COMMENT, rows.RESOLVE, rows.REOPEN
OPEN, RESOLVED = "open", "resolved"
EVENT_WORDS = {RESOLVE: "resolved the thread", REOPEN: "reopened the thread"}


@dataclass(frozen=True)
class Entry:
    """One entry of a thread: ``kind`` is comment, resolve or reopen; ``body`` the comment's text (None for
    an event); ``at`` when it was written (UTC)."""

    author: str
    kind: str
    body: str | None
    at: dt.datetime

    def to_dict(self) -> dict:
        """The entry as a JSON-ready dict (``at`` as ISO 8601 text)."""
        return {"author": self.author, "kind": self.kind, "body": self.body, "at": self.at.isoformat()}


@dataclass(frozen=True)
class Thread:
    """An item's thread as one reader may see it: ``entries`` oldest first; ``withheld``: how many entries of
    other parties stay hidden from this reader until the sample closes (their words are never shown, only
    that there are some)."""

    run_id: int
    relation: str
    sample_id: str
    entries: tuple[Entry, ...] = ()
    withheld: int = 0

    @property
    def comments(self) -> tuple[Entry, ...]:
        """The comments (no resolve or reopen events)."""
        return tuple(e for e in self.entries if e.kind == COMMENT)

    @property
    def resolved(self) -> bool:
        """True when the newest resolve or reopen event shown is a resolve."""
        events = [e.kind for e in self.entries if e.kind != COMMENT]
        return bool(events) and events[-1] == RESOLVE

    @property
    def state(self) -> str:
        """``resolved`` or ``open``."""
        return RESOLVED if self.resolved else OPEN

    def lines(self) -> tuple[str, ...]:
        """The thread as plain lines, ``author: text`` or ``author resolved`` / ``author reopened``."""
        return tuple(f"{e.author}: {e.body}" if e.kind == COMMENT else f"{e.author} {EVENT_WORDS[e.kind]}"
                     for e in self.entries)


def _entry(row: dict) -> Entry:
    return Entry(author=row["author"], kind=row["kind"], body=row["body"], at=utc(row["created_at"]))


def _what(run_id: int, relation: str, sample_id: str) -> str:
    return f"the thread of {sample_id!r} ({relation}, run {run_id})"


def _reader_scope(actor: Actor, store: Store, run_id: int, relation: str) -> tuple[bool, frozenset[str]]:
    """(reads every item's whole thread, the drawn items whose whole thread this reader reads as a closer)."""
    if A.permits(actor, A.SEE_CALLS, blind_target(store, run_id, relation, "comment threads")) and \
            actor.name not in parties(store, run_id, relation):
        return True, frozenset()     # no party: a party reads what a reviewer reads, as in the export
    state = sample_state(store, run_id, relation)
    if state.closed and actor.name in state.closed_by:
        return False, frozenset(drawn_items(store, run_id, relation))
    return False, frozenset()


def _visible(actor: Actor, sample_rows: list[dict], whole: bool) -> tuple[tuple[Entry, ...], int]:
    shown = [r for r in sample_rows if whole or r["author"] == actor.name]
    return tuple(_entry(r) for r in shown), len(sample_rows) - len(shown)


def thread(actor: Actor, store: Store, run_id: int, relation: str, sample_id: str) -> Thread:
    """The item's thread as ``actor`` may read it (see the module's docstring).  NotAllowed without a reviewing
    role; ValueError for a malformed run, relation or sample id."""
    rid, relation, sid = check_run_id(run_id), check_relation(relation), check_sample_id(sample_id)
    A.authorize(actor, A.SEE_COMMENTS, _what(rid, relation, sid))
    everything, drawn = _reader_scope(actor, store, rid, relation)
    entries, withheld = _visible(actor, rows.entries(store, rid, relation, sid), everything or sid in drawn)
    return Thread(rid, relation, sid, entries, withheld)


def threads(actor: Actor, store: Store, run_id: int, relation: str) -> dict[str, Thread]:
    """Every thread of a run and relation as ``actor`` may read it: sample id -> Thread (items whose thread
    holds nothing this reader may see are left out).  Read in one query."""
    rid, relation = check_run_id(run_id), check_relation(relation)
    A.authorize(actor, A.SEE_COMMENTS, f"the comment threads of run {rid} ({relation})")
    everything, drawn = _reader_scope(actor, store, rid, relation)
    by_item: dict[str, list[dict]] = {}
    for row in rows.entries(store, rid, relation):
        by_item.setdefault(row["sample_id"], []).append(row)
    out = {}
    for sid, sample_rows in by_item.items():
        entries, withheld = _visible(actor, sample_rows, everything or sid in drawn)
        if entries:
            out[sid] = Thread(rid, relation, sid, entries, withheld)
    return out


def _check_item(store: Store, run_id: int, relation: str, sample_id: str) -> tuple[int, str, str]:
    rid, relation, sid = check_run_id(run_id), check_relation(relation), check_sample_id(sample_id)
    if not is_flagged(store, rid, sid, relation):
        raise ValueError(f"sample {sid!r} of run {rid} is not flagged by the primary {relation} vote; threads hang "
                         "on items under review")
    return rid, relation, sid


def write_comment(actor: Actor, store: Store, run_id: int, relation: str, sample_id: str, text: str) -> Entry:
    """Add ``actor``'s comment to the item's thread and return it.  NotAllowed without a reviewing role;
    ValueError for an empty comment, one over ``MAX_COMMENT_LENGTH`` characters, or an item that is not
    under review (not flagged by the run's primary vote)."""
    rid, relation, sid = check_run_id(run_id), check_relation(relation), check_sample_id(sample_id)
    A.authorize(actor, A.COMMENT, _what(rid, relation, sid))
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"a comment is non-empty text; got {text!r}")
    body = text.strip()
    if len(body) > MAX_COMMENT_LENGTH:
        raise ValueError(f"a comment holds at most {MAX_COMMENT_LENGTH} characters; this one has {len(body)}")
    _check_item(store, rid, relation, sid)
    return _entry(rows.add_entry(store, run_id=rid, relation=relation, sample_id=sid, author=actor.name,
                                 kind=COMMENT, body=body))


def set_resolved(actor: Actor, store: Store, run_id: int, relation: str, sample_id: str, resolved: bool) -> Thread:
    """Resolve (``resolved`` True) or reopen the item's thread as ``actor`` sees it, and return it as they see it
    afterwards.  A thread already in that state gets no entry.  NotAllowed without a reviewing role;
    ValueError when the reader sees no comment on the item (there is nothing to resolve)."""
    rid, relation, sid = check_run_id(run_id), check_relation(relation), check_sample_id(sample_id)
    A.authorize(actor, A.RESOLVE_THREAD, _what(rid, relation, sid))
    _check_item(store, rid, relation, sid)
    now = thread(actor, store, rid, relation, sid)
    if not now.comments:
        raise ValueError(f"{_what(rid, relation, sid)} has no comment you can see, so there is nothing to "
                         f"{'resolve' if resolved else 'reopen'}")
    if now.resolved == bool(resolved):
        return now
    rows.add_entry(store, run_id=rid, relation=relation, sample_id=sid, author=actor.name,
                   kind=RESOLVE if resolved else REOPEN)
    return thread(actor, store, rid, relation, sid)
