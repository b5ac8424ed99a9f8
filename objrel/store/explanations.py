"""Cached LIME explanations: the ``explanations`` table.

A row is keyed by (run, sample, mutation key, label, settings) and holds what
``objrel.explain.Explanation.to_row`` gives: ``label``, ``settings``, ``segments_png`` (16-bit
PNG bytes of the superpixel ids), ``weights`` ({segment id as text: weight}) and
``object_share`` (float in [0, 1] or None).  Rows come back as dicts with those columns plus
``id``, ``run_id``, ``sample_id``, ``mutation_key`` and ``created_at``.
"""

from __future__ import annotations

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from objrel.store import schema as S
from objrel.store.store import Store, now


def stored_explanation(store: Store, run_id: int, sample_id: str, mutation_key: str, label: int,
                       settings: str) -> dict | None:
    """The cached row of (run, sample, mutation key, label, settings), or None."""
    e = S.explanations.c
    q = select(S.explanations).where(e.run_id == int(run_id), e.sample_id == str(sample_id),
                                     e.mutation_key == str(mutation_key), e.label == int(label),
                                     e.settings == str(settings))
    with store.engine.connect() as c:
        row = c.execute(q).first()
    return dict(row._mapping) if row is not None else None


def add_explanation(store: Store, run_id: int, sample_id: str, mutation_key: str, row: dict) -> dict | None:
    """Cache one explanation; ``row`` holds the columns ``Explanation.to_row`` gives.

    Returns None when this row was stored.  When another session stored the same key first,
    that session's row comes back instead (ours is dropped).  An insert that fails for any other
    reason (e.g. the run was deleted) raises the IntegrityError.
    """
    try:
        with store.engine.begin() as c:
            c.execute(insert(S.explanations).values(run_id=int(run_id), sample_id=str(sample_id),
                                                    mutation_key=str(mutation_key), created_at=now(), **row))
    except IntegrityError:
        theirs = stored_explanation(store, run_id, sample_id, mutation_key, row["label"], row["settings"])
        if theirs is None:  # the conflict was not our key: report it
            raise
        return theirs
    return None
