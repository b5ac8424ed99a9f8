"""What a signed-in person has left to do: a reviewer's queues, an adjudicator's open disagreements.

A queue is a drawn review sample as one reviewer has it: every drawn item, or, when an admin assigned the
sample to teams of k (``objrel.review.teams``), only the items on the reviewer's teams; a reviewer on none of
an assigned sample's teams has no queue there.

``my_work(actor, store)`` reads only what ``actor`` may see: a reviewer's own calls (never another
reviewer's: blind review), and disagreements only for an account the gate lets see reviewers' calls.  A
visitor (or an account without either role) gets empty lists.  The Home page draws it, and Review and
Agreement open on its first open entry.  No Streamlit here.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import urlencode

from objrel import access as A
from objrel import review
from objrel.access import Actor
from objrel.review.agreement import drawn_items
from objrel.review.sampling import assigned_to
from objrel.store import Store
from objrel.store import reviews as review_rows
from objrel.store.reviews import adjudications

REVIEW_URL_PATH = "review"          # app.py's url_path of the Review page
AGREEMENT_URL_PATH = "agreement"    # app.py's url_path of the Agreement page
SAMPLE_QUEUE = "sample"             # objrel.review.queue.REVIEW_SAMPLE (queue imports this stage's siblings)


@dataclass(frozen=True)
class QueueWork:
    """One drawn review sample (run x relation) as one reviewer sees it: how many of its items they judged,
    and the first item still waiting for their call (None when every item is judged)."""

    run_id: int
    run_name: str
    relation: str
    judged: int
    total: int
    next_item: str | None
    k: int = 2                  # reviewers per item of the sample
    assigned: bool = False      # the items were assigned to the reviewer (a team), not the whole draw

    @property
    def done(self) -> bool:
        """True when the reviewer judged every item of the queue."""
        return self.total > 0 and self.judged >= self.total

    @property
    def link(self) -> str:
        """A relative link that opens the next open item (the first item once all are judged) in Review."""
        params = {"run": self.run_id, "relation": self.relation, "queue": SAMPLE_QUEUE}
        if self.next_item is not None:
            params["item"] = self.next_item
        return f"{REVIEW_URL_PATH}?{urlencode(params)}"


@dataclass(frozen=True)
class DisputeWork:
    """The disagreements of one run x relation an adjudicator may decide: open and decided ones."""

    run_id: int
    run_name: str
    relation: str
    open: int
    decided: int

    @property
    def link(self) -> str:
        """The Agreement page's address for this run and relation."""
        return f"{AGREEMENT_URL_PATH}?{urlencode({'run': self.run_id, 'relation': self.relation})}"


@dataclass(frozen=True)
class MyWork:
    """A person's work: their review queues (reviewers) and the disagreements they may decide (adjudicators
    and admins), runs oldest first."""

    name: str | None
    queues: tuple[QueueWork, ...] = ()
    disputes: tuple[DisputeWork, ...] = ()

    @property
    def open_queues(self) -> tuple[QueueWork, ...]:
        """The queues with items left to judge."""
        return tuple(q for q in self.queues if not q.done)

    @property
    def open_disputes(self) -> tuple[DisputeWork, ...]:
        """The disagreements still open."""
        return tuple(d for d in self.disputes if d.open)

    @property
    def first_open_queue(self) -> QueueWork | None:
        """The first queue with items left, or None."""
        return next(iter(self.open_queues), None)

    @property
    def first_open_dispute(self) -> DisputeWork | None:
        """The first open disagreement, or None."""
        return next(iter(self.open_disputes), None)


def _queues(actor: Actor, store: Store, runs) -> list[QueueWork]:
    out = []
    for run in runs:
        for relation in review.RELATIONS:
            draw = review.review_sample_info(store, run.id, relation)
            if draw is None:
                continue        # never drawn: listing it would draw it
            assigned = bool(assigned_to(store, run.id, relation, actor.name))
            if not assigned and review_rows.assignments(store, run.id, relation):
                continue        # assigned to teams the actor is not on: nothing of it is theirs to judge
            items = review.review_queue(actor, store, run.id, relation)    # the actor's own calls only
            nxt = next((q.sample_id for q in items if not q.judged_by_me), None)
            out.append(QueueWork(run.id, run.name, relation, sum(q.judged_by_me for q in items), len(items), nxt,
                                 draw.k, assigned))
    return out


def _disputed(calls) -> bool:
    """Do two of one item's calls disagree (``review.disagreements``: a different verdict, or both fp with
    different reasons)?"""
    return len({(j.verdict, j.reasons) for j in calls}) > 1


def _disputes(actor: Actor, store: Store, runs) -> list[DisputeWork]:
    """The items of each judged run and relation that two reviewers (neither of them ``actor``) called
    differently, open or decided.  Each run and relation's judgments are read once and grouped by item: an
    item is a disagreement of some pair exactly when its calls (without ``actor``'s) are not all alike, so no
    pair of reviewers is looked at on its own."""
    names = {r.id: r.name for r in runs}
    out = []
    for judged in review.judged_runs(store):
        for relation in judged.relations:
            if actor.name in judged.reviewers_of(relation) and not review.sample_state(
                    store, judged.run_id, relation).closed:
                continue     # a party to an open sample sees no other calls on it (review.blind_target)
            drawn = set(drawn_items(store, judged.run_id, relation))   # blindness follows the draw
            by_item: dict[str, list] = defaultdict(list)
            for j in review.judgments(store, judged.run_id, relation):
                # an adjudicator never decides items they judged themselves: their own calls are not their work
                if j.reviewer != actor.name and j.sample_id in drawn:
                    by_item[j.sample_id].append(j)
            disputed = {sid for sid, calls in by_item.items() if _disputed(calls)}
            if not disputed:
                continue
            A.authorize(actor, A.SEE_CALLS, f"the disagreements of run {judged.run_id} ({relation})")
            decided = disputed & set(adjudications(store, judged.run_id, relation))
            out.append(DisputeWork(judged.run_id, names.get(judged.run_id, judged.name), relation,
                                   len(disputed - decided), len(decided)))
    return out


def my_work(actor: Actor, store: Store) -> MyWork:
    """``actor``'s review queues (with the reviewer role) and the disagreements they may decide (with a role
    that may see reviewers' calls); empty for a visitor.  Nothing is drawn or written."""
    if not actor.signed_in:
        return MyWork(None)
    runs = store.list_runs()
    queues = _queues(actor, store, runs) if A.permits(actor, A.JUDGE) else []
    disputes = _disputes(actor, store, runs) if A.permits(actor, A.SEE_CALLS) else []
    return MyWork(actor.name, tuple(queues), tuple(disputes))
