"""Comment threads on review items and gold items: their rows (revision 0010).

A thread hangs on one item (run, relation, sample id) and is a list of entries, oldest first: a comment
(``body``), or a resolve or reopen event (no body); the thread is resolved when its newest such event is a
resolve.  Entries are never changed or deleted.  A gold item is an item with a known call an admin set
(``gold_items``: one row per item, replaced when marked again, deleted when unmarked).

Who may write or read which entries is ``objrel.review.comments`` and ``objrel.review.gold``'s job; here only
what the database can answer is checked, inside the write's transaction: that the author has an account.
"""

from __future__ import annotations

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection

from objrel.store import schema as S
from objrel.store.accounts import has_reviewer
from objrel.store.store import Store, now
from objrel.store.transactions import upsert, write

# The kinds of a thread entry.
COMMENT = "comment"
RESOLVE = "resolve"
REOPEN = "reopen"
ENTRY_KINDS = (COMMENT, RESOLVE, REOPEN)


def _require_account(c: Connection, name: str) -> None:
    if not has_reviewer(c, name):
        raise ValueError(f"no account named {name!r}; sign in to write on a thread")


def add_entry(store: Store, *, run_id: int, relation: str, sample_id: str, author: str, kind: str,
              body: str | None = None) -> dict:
    """Append one entry to the item's thread and return its row (``id``, ``run_id``, ``relation``,
    ``sample_id``, ``author``, ``kind``, ``body``, ``created_at``).  ValueError for an unknown kind or an author
    with no account."""
    if kind not in ENTRY_KINDS:
        raise ValueError(f"a thread entry is one of {', '.join(ENTRY_KINDS)}; got {kind!r}")
    t = S.item_comments

    def work(c: Connection) -> dict:
        _require_account(c, author)
        res = c.execute(insert(t).values(run_id=run_id, relation=relation, sample_id=sample_id, author=author,
                                         kind=kind, body=body, created_at=now()))
        new_id = res.inserted_primary_key[0]  # type: ignore[index]  # an INSERT's result has its key
        return dict(c.execute(select(t).where(t.c.id == new_id)).one()._mapping)

    return write(store, work)


def entries(store: Store, run_id: int, relation: str, sample_id: str | None = None) -> list[dict]:
    """The thread entries of a run and relation (of one item when ``sample_id`` is given), by item, oldest
    first within an item."""
    t = S.item_comments
    q = select(t).where(t.c.run_id == run_id, t.c.relation == relation)
    if sample_id is not None:
        q = q.where(t.c.sample_id == sample_id)
    with store.engine.connect() as c:
        return [dict(r._mapping) for r in c.execute(q.order_by(t.c.sample_id, t.c.id))]


# ---------------------------------------------------------------- gold items


def set_gold(store: Store, *, run_id: int, relation: str, sample_id: str, call: str, marked_by: str) -> dict:
    """Mark the item gold with the known ``call`` (replacing an earlier mark) and return its row."""
    g = S.gold_items
    key = {"run_id": run_id, "relation": relation, "sample_id": sample_id}

    def work(c: Connection) -> dict:
        _require_account(c, marked_by)
        upsert(c, g, key, {"call": call, "marked_by": marked_by, "created_at": now()}, {})
        return dict(c.execute(select(g).where(*(g.c[k] == v for k, v in key.items()))).one()._mapping)

    return write(store, work, retry_on_integrity=True)


def drop_gold(store: Store, *, run_id: int, relation: str, sample_id: str) -> bool:
    """Unmark the item; True when it was gold."""
    g = S.gold_items
    with store.engine.begin() as c:
        return c.execute(delete(g).where(g.c.run_id == run_id, g.c.relation == relation,
                                         g.c.sample_id == sample_id)).rowcount > 0


def gold(store: Store, run_id: int, relation: str) -> dict[str, dict]:
    """The gold items of a run and relation: sample id -> row (``call``, ``marked_by``, ``created_at``)."""
    g = S.gold_items
    q = select(g).where(g.c.run_id == run_id, g.c.relation == relation).order_by(g.c.sample_id)
    with store.engine.connect() as c:
        return {r.sample_id: dict(r._mapping) for r in c.execute(q)}
