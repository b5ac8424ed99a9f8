"""Results kept per run (``run_summaries``): one JSON text per (run, name), with the stamp of the runs' state it
was computed from.

This module only stores and reads the rows; what a name means, how a stamp is made and how a result is encoded
is ``objrel.store.kept``'s business.  A write replaces the row of the same (run, name), so a run has at most
one row per name whatever the number of states it went through.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select

from objrel.store import schema as S
from objrel.store.store import Store, now
from objrel.store.transactions import upsert, write

# Results kept per run at most: past this, the least recently computed go (names carry arguments a visitor
# chooses, such as the runs picked together, so their number is bounded here rather than by the choices).
MAX_KEPT_PER_RUN = 1000
# Characters of a summary's name and stamp (the columns' lengths).
NAME_LENGTH = 200
STAMP_LENGTH = 200


@dataclass(frozen=True)
class KeptRow:
    """A kept result as stored: its stamp, JSON text, how long it took to compute and when."""

    stamp: str
    payload: str
    seconds: float
    computed_at: datetime


def _check(name: str, stamp: str) -> None:
    if not name or len(name) > NAME_LENGTH:
        raise ValueError(f"a kept result's name has 1-{NAME_LENGTH} characters, got {len(name)}")
    if len(stamp) > STAMP_LENGTH:
        raise ValueError(f"a kept result's stamp has at most {STAMP_LENGTH} characters, got {len(stamp)}")


def read(store: Store, run_id: int, name: str) -> KeptRow | None:
    """The kept row of (``run_id``, ``name``), or None (one lookup through the unique index)."""
    t = S.run_summaries
    q = select(t.c.stamp, t.c.payload, t.c.seconds, t.c.computed_at).where(t.c.run_id == int(run_id),
                                                                           t.c.name == name)
    with store.engine.connect() as c:
        row = c.execute(q).first()
    return None if row is None else KeptRow(row.stamp, row.payload, float(row.seconds), row.computed_at)


def keep(store: Store, run_id: int, name: str, stamp: str, payload: str, seconds: float) -> None:
    """Store ``payload`` as the result ``name`` of ``run_id`` at ``stamp`` (replacing the one kept before).  A run
    deleted meanwhile keeps nothing (its rows went with it)."""
    _check(name, stamp)
    key = {"run_id": int(run_id), "name": name}

    def work(c) -> None:
        if c.execute(select(S.runs.c.id).where(S.runs.c.id == int(run_id))).first() is None:
            return
        upsert(c, S.run_summaries, key, {"stamp": stamp, "payload": payload, "seconds": float(seconds),
                                         "computed_at": now()}, {})
        t = S.run_summaries
        old = (select(t.c.id).where(t.c.run_id == int(run_id)).order_by(t.c.computed_at.desc(), t.c.id.desc())
               .offset(MAX_KEPT_PER_RUN))
        stale = list(c.execute(old).scalars())
        if stale:
            c.execute(delete(t).where(t.c.id.in_(stale)))

    write(store, work, retry_on_integrity=True)
