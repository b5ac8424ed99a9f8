"""A reviewer's way through the flagged inferences of one run and relation.

Two queues: the review sample (drawn once per run and relation with Cochran's formula, in draw
order) or every flagged inference (sorted by sample id).  A position is an index into the
queue's sample ids; moving stops at both ends.  A deep link (``?run=&relation=&queue=&item=``)
names where to start.  No Streamlit here: the Review page keeps the position in its session.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from objrel.access import Actor
from objrel import review
from objrel.review.gold import gold_ids, mix_gold
from objrel.store import Store

REVIEW_SAMPLE = "sample"
ALL_FLAGGED = "all"
QUEUE_MODES = (REVIEW_SAMPLE, ALL_FLAGGED)
QUEUE_LABELS = {REVIEW_SAMPLE: "Review sample (Cochran)", ALL_FLAGGED: "All flagged"}
# The relation a review opens on when the link names none: MR-2 flags are the background shortcuts.
DEFAULT_RELATION = "MR-2"
FALSE_POSITIVE = "fp"
@dataclass(frozen=True)
class ReviewLink:
    """Where a review starts: run, relation, queue and item; what a link does not name validly falls back
    to the newest run, DEFAULT_RELATION, the review sample and the reviewer's first open item."""

    run_id: int
    relation: str = DEFAULT_RELATION
    mode: str = REVIEW_SAMPLE
    item: str | None = None
    unknown_run: str | None = None      # the run the link named when no reviewable run has that id

    @classmethod
    def parse(cls, params: Mapping[str, str], run_ids: Sequence[int],
              n_flagged: Callable[[int, str], int] | None = None) -> ReviewLink:
        """Read query parameters (strings); ``run_ids`` are the runs that can be reviewed (newest last).

        ``n_flagged(run_id, relation)`` counts a run's flagged inferences: with it, what the link leaves open
        is filled with something to review, the newest run and then the relation (DEFAULT_RELATION first)
        that has flagged inferences; without it (or when nothing is flagged anywhere), the newest run and
        DEFAULT_RELATION."""
        if not run_ids:
            raise ValueError("no run can be reviewed: the link has nothing to point at")
        run = str(params.get("run", ""))
        # ASCII digits only, and few of them: str.isdigit() says yes to "²", which int() refuses
        named_run = int(run) if re.fullmatch(r"[0-9]{1,18}", run) and int(run) in run_ids else None
        relation = params.get("relation")
        named_relation = relation if relation in review.RELATIONS else None
        run_id, relation = _with_flags(named_run, named_relation, run_ids, n_flagged)
        return cls(run_id=run_id, relation=relation,
                   mode=ALL_FLAGGED if params.get("queue") == ALL_FLAGGED else REVIEW_SAMPLE,
                   item=params.get("item") or None, unknown_run=run if run and named_run is None else None)


def _relation_order(named: str | None) -> tuple[str, ...]:
    if named is not None:
        return (named,)
    return (DEFAULT_RELATION, *(r for r in review.RELATIONS if r != DEFAULT_RELATION))


def _with_flags(run_id: int | None, relation: str | None, run_ids: Sequence[int],
                n_flagged: Callable[[int, str], int] | None) -> tuple[int, str]:
    """The run and relation to open: the named ones, what is left open filled with flagged inferences."""
    fallback = (run_ids[-1] if run_id is None else run_id, relation or DEFAULT_RELATION)
    if n_flagged is None:
        return fallback
    runs = [run_id] if run_id is not None else list(reversed(run_ids))
    for r in runs:
        for rel in _relation_order(relation):
            if n_flagged(r, rel) > 0:
                return r, rel
    return fallback


def is_new_link(params: Mapping[str, str], last_written: Mapping[str, str] | None) -> bool:
    """Whether the page's query parameters are a link to follow: they name a run and are not the ones the
    Review page wrote itself on its last run (those only echo the reviewer's own choice)."""
    if not params.get("run"):
        return False
    keys = ("run", "relation", "item", "queue")
    return {k: params.get(k) for k in keys} != {k: (last_written or {}).get(k) for k in keys}


def link_params(run_id: int, relation: str, sample_id: str) -> dict[str, str]:
    """The query parameters that reopen this item (the queue stays as chosen)."""
    return {"run": str(run_id), "relation": relation, "item": str(sample_id)}


REVIEW_URL_PATH = "review"      # app.py's url_path of the Review page


def review_url(run_id: int, relation: str, sample_id: str, mode: str = ALL_FLAGGED) -> str:
    """A relative link (``review?run=..&relation=..&item=..&queue=..``) that opens the item in Review from any
    page of the app, whatever characters its sample id holds."""
    from urllib.parse import urlencode

    return f"{REVIEW_URL_PATH}?{urlencode({**link_params(run_id, relation, sample_id), 'queue': mode})}"


@dataclass(frozen=True)
class Queue:
    """The sample ids a reviewer walks through and their own calls so far (never another reviewer's)."""

    sample_ids: tuple[str, ...]
    mine: Mapping[str, str] = field(default_factory=dict)   # sample id -> this reviewer's verdict
    n_flagged: int = 0
    mode: str = REVIEW_SAMPLE
    my_reasons: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # sample id -> stored fp reasons
    my_notes: Mapping[str, str] = field(default_factory=dict)               # sample id -> stored note
    my_validity: Mapping[str, str] = field(default_factory=dict)            # sample id -> stored validity call

    def __len__(self) -> int:
        return len(self.sample_ids)

    @property
    def n_judged(self) -> int:
        """How many of the queue's items the reviewer judged."""
        return len(self.mine)

    @property
    def judged_share(self) -> float:
        """Share of the queue this reviewer has judged, in [0, 1]."""
        return min(1.0, self.n_judged / len(self)) if self.sample_ids else 0.0

    def start(self, goto: str | None = None) -> int:
        """Where to open: ``goto`` when it is in the queue, else the first item not yet judged, else 0."""
        if goto in self.sample_ids:
            return self.sample_ids.index(goto)
        return next((i for i, sid in enumerate(self.sample_ids) if sid not in self.mine), 0)

    def clamp(self, position: int) -> int:
        """``position`` pulled into the queue (a queue can shrink between two visits)."""
        return max(0, min(len(self) - 1, int(position)))

    def step(self, position: int, delta: int) -> int:
        """The position ``delta`` items on, stopping at the first and the last item."""
        return self.clamp(int(position) + int(delta))

    def at(self, position: int) -> str:
        """The sample id at ``position`` (held inside the queue)."""
        return self.sample_ids[self.clamp(position)]

    def is_first(self, position: int) -> bool:
        """True when ``position`` is the queue's first item."""
        return self.clamp(position) == 0

    def is_last(self, position: int) -> bool:
        """True when ``position`` is the queue's last item."""
        return self.clamp(position) >= len(self) - 1

    def my_call(self, sample_id: str) -> str | None:
        """The reviewer's call on ``sample_id``, or None."""
        return self.mine.get(sample_id)

    def my_saved(self, sample_id: str) -> tuple[tuple[str, ...], str]:
        """The reasons and note stored with this reviewer's call on ``sample_id`` (empty when none)."""
        return tuple(self.my_reasons.get(sample_id, ())), self.my_notes.get(sample_id) or ""

    def my_validity_call(self, sample_id: str) -> str | None:
        """This reviewer's stored answer to "is the mutant a valid test?" on ``sample_id``, or None."""
        return self.my_validity.get(sample_id)

    @property
    def n_open(self) -> int:
        """Items of the queue this reviewer has not judged yet."""
        return sum(sid not in self.mine for sid in self.sample_ids)

    @property
    def done(self) -> bool:
        """Every item judged by this reviewer (an empty queue is not done: there was nothing to do)."""
        return bool(self.sample_ids) and self.n_open == 0

    def next_open(self, position: int) -> int | None:
        """The first item after ``position`` not yet judged, else the first one before it; None when none is."""
        order = [*range(self.clamp(position) + 1, len(self)), *range(0, self.clamp(position) + 1)]
        return next((i for i in order if self.sample_ids[i] not in self.mine), None)


def open_queue(actor: Actor, store: Store, run_id: int, relation: str, mode: str = REVIEW_SAMPLE,
               flagged: Iterable[str] | None = None, draw: bool = True) -> Queue:
    """The queue of ``mode`` for ``actor`` (a reviewer); ``flagged`` are the run's flagged ids for ``relation``
    (read from the store when not given).  The review sample is drawn and stored on first use, unless ``draw``
    is False (someone who only looks): then ValueError while none was drawn."""
    if mode not in QUEUE_MODES:
        raise ValueError(f"queue mode must be one of {QUEUE_MODES}, got {mode!r}")
    if flagged is None:
        flagged = store.flagged_sample_ids(run_id, relation)
    elif not isinstance(flagged, (list, tuple)):
        flagged = list(flagged)      # a shared tuple of a million ids is used as it is, not copied
    if mode == REVIEW_SAMPLE:
        items = review.review_queue(actor, store, run_id, relation, draw=draw)
        judged = [q for q in items if q.judged_by_me]
        # gold items join the sample unannounced, at places fixed by their ids (objrel.review.gold)
        gold = set(gold_ids(store, run_id, relation)) - {q.sample_id for q in items}
        extra = [j for j in review.judgments(store, run_id, relation, reviewer=actor.name)
                 if j.sample_id in gold] if gold else []
        return Queue(mix_gold([q.sample_id for q in items], gold),
                     {**{q.sample_id: q.my_verdict for q in judged}, **{j.sample_id: j.verdict for j in extra}},
                     len(flagged), mode, {**{q.sample_id: tuple(q.my_reasons) for q in judged},
                                          **{j.sample_id: tuple(j.reasons) for j in extra}},
                     {**{q.sample_id: q.my_note for q in judged if q.my_note},
                      **{j.sample_id: j.note for j in extra if j.note}},
                     {**{q.sample_id: q.my_validity for q in judged if q.my_validity},
                      **{j.sample_id: j.validity for j in extra if j.validity}})
    mine = review.judgments(store, run_id, relation, reviewer=actor.name)
    if mine:
        in_queue = set(flagged)
        mine = [j for j in mine if j.sample_id in in_queue]
    return Queue(tuple(flagged), {j.sample_id: j.verdict for j in mine}, len(flagged), mode,
                 {j.sample_id: tuple(j.reasons) for j in mine}, {j.sample_id: j.note for j in mine if j.note},
                 {j.sample_id: j.validity for j in mine if j.validity})


def record_call(actor: Actor, store: Store, run_id: int, sample_id: str, relation: str, verdict: str,
                reasons: Iterable[str] = (), note: str | None = None, validity: str | None = None):
    """Record a reviewer's call: false-positive reasons count only with a false positive, an empty note is
    none; ``validity`` (the call on the mutant, one of ``review.VALIDITY``, or None) is passed through.
    Raises ValueError (from the judgment checks) for a call that cannot be recorded."""
    return review.record_judgment(actor, store, run_id, sample_id, relation, verdict,
                                  reasons=tuple(reasons) if verdict == FALSE_POSITIVE else (),
                                  note=(note or "").strip() or None, validity=validity)
