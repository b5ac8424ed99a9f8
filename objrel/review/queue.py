"""A reviewer's way through the flagged inferences of one run and relation.

Two queues: the review sample (drawn once per run and relation with Cochran's formula, in draw
order) or every flagged inference (sorted by sample id).  A position is an index into the
queue's sample ids; moving stops at both ends.  A deep link (``?run=&relation=&queue=&item=``)
names where to start.  No Streamlit here: the Review page keeps the position in its session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from objrel import review
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

    @classmethod
    def parse(cls, params: Mapping[str, str], run_ids: Sequence[int]) -> ReviewLink:
        """Read query parameters (strings); ``run_ids`` are the runs that can be reviewed (newest last)."""
        if not run_ids:
            raise ValueError("no run can be reviewed: the link has nothing to point at")
        run = params.get("run", "")
        run_id = int(run) if run.isdigit() and int(run) in run_ids else run_ids[-1]
        relation = params.get("relation")
        return cls(run_id=run_id, relation=relation if relation in review.RELATIONS else DEFAULT_RELATION,
                   mode=ALL_FLAGGED if params.get("queue") == ALL_FLAGGED else REVIEW_SAMPLE,
                   item=params.get("item") or None)


def link_params(run_id: int, relation: str, sample_id: str) -> dict[str, str]:
    """The query parameters that reopen this item (the queue stays as chosen)."""
    return {"run": str(run_id), "relation": relation, "item": str(sample_id)}


@dataclass(frozen=True)
class Queue:
    """The sample ids a reviewer walks through and their own calls so far (never another reviewer's)."""

    sample_ids: tuple[str, ...]
    mine: Mapping[str, str] = field(default_factory=dict)   # sample id -> this reviewer's verdict
    n_flagged: int = 0
    mode: str = REVIEW_SAMPLE

    def __len__(self) -> int:
        return len(self.sample_ids)

    @property
    def n_judged(self) -> int:
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
        return self.sample_ids[self.clamp(position)]

    def is_first(self, position: int) -> bool:
        return self.clamp(position) == 0

    def is_last(self, position: int) -> bool:
        return self.clamp(position) >= len(self) - 1

    def my_call(self, sample_id: str) -> str | None:
        return self.mine.get(sample_id)


def open_queue(store: Store, run_id: int, relation: str, reviewer: str, mode: str = REVIEW_SAMPLE,
               flagged: Iterable[str] | None = None) -> Queue:
    """The queue of ``mode`` for ``reviewer``; ``flagged`` are the run's flagged ids for ``relation``
    (read from the store when not given).  The review sample is drawn and stored on first use."""
    if mode not in QUEUE_MODES:
        raise ValueError(f"queue mode must be one of {QUEUE_MODES}, got {mode!r}")
    flagged = list(store.flagged_sample_ids(run_id, relation) if flagged is None else flagged)
    if mode == REVIEW_SAMPLE:
        items = review.review_queue(store, run_id, relation, reviewer)
        return Queue(tuple(q.sample_id for q in items), {q.sample_id: q.my_verdict for q in items if q.judged_by_me},
                     len(flagged), mode)
    in_queue = set(flagged)
    mine = {j.sample_id: j.verdict for j in review.judgments(store, run_id, relation, reviewer=reviewer)
            if j.sample_id in in_queue}
    return Queue(tuple(flagged), mine, len(flagged), mode)


def record_call(store: Store, run_id: int, sample_id: str, relation: str, reviewer: str, verdict: str,
                reasons: Iterable[str] = (), note: str | None = None):
    """Record a reviewer's call: false-positive reasons count only with a false positive, an empty note is
    none.  Raises ValueError (from the judgment checks) for a call that cannot be recorded."""
    return review.record_judgment(store, run_id, sample_id, relation, reviewer, verdict,
                                  reasons=tuple(reasons) if verdict == FALSE_POSITIVE else (),
                                  note=(note or "").strip() or None)
