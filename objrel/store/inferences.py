"""Reads for the analyses: each stored sample with its primary-vote flags, and the votes of one relation.

Both are single queries over the ``samples`` and ``votes`` tables, so a 50,000-sample run reads
at once; ``objrel.analysis.flag_tables`` turns the rows into tables.
"""

from __future__ import annotations

from sqlalchemy import and_, case, func, select

from objrel.store import schema as S
from objrel.store.columns import FLAG_COLUMNS, FLAG_RELATIONS, INFERENCE_COLUMNS, LABEL_COLUMNS
from objrel.store.store import Store, in_rows



def flagged_inferences(store: Store, run_id: int, labels: bool = True,
                       rows: tuple[int, int] | None = None) -> tuple[tuple[str, ...], list[tuple]]:
    """Every stored sample of ``run_id`` with its primary-vote flags, by sample id; only the samples whose row
    id lies in ``rows`` = (after, upto] when given (what a run added since a result was kept).

    Returns ``(columns, rows)``: columns are ``INFERENCE_COLUMNS``, then ``LABEL_COLUMNS`` when
    ``labels`` (lists of class indices; False skips decoding their JSON), then ``FLAG_COLUMNS``
    (0 or 1: the primary MR-1 / MR-2 vote flagged the sample; 0 without a vote).  Each row is a
    tuple in that order; ``correct`` may be None and ``area_ratio`` None for skipped samples.
    The flags come from one LEFT JOIN with the votes.
    """
    rid = int(run_id)
    sm, vt = S.samples, S.votes

    def flag(rel: str):
        hit = case((and_(vt.c.relation == rel, vt.c.flagged.is_(True)), 1), else_=0)
        return func.coalesce(func.max(hit), 0)

    label_cols = [sm.c[name] for name in LABEL_COLUMNS] if labels else []
    q = (select(*(sm.c[name] for name in INFERENCE_COLUMNS), *label_cols,
                *(flag(rel).label(col) for col, rel in FLAG_RELATIONS.items()))
         .select_from(sm.outerjoin(vt, and_(vt.c.run_id == sm.c.run_id, vt.c.sample_id == sm.c.sample_id,
                                            vt.c.is_primary.is_(True))))
         .where(sm.c.run_id == rid, in_rows(sm.c.id, rows)).group_by(sm.c.id).order_by(sm.c.sample_id))
    columns = INFERENCE_COLUMNS + (LABEL_COLUMNS if labels else ()) + FLAG_COLUMNS
    with store.engine.connect() as c:
        found = [tuple(r) for r in c.execute(q).all()]
    return columns, found


def relation_votes(store: Store, run_id: int, relation: str) -> tuple[list[tuple[str, str, bool, bool]], set[str]]:
    """Every vote of one relation in a run, and the ids of the run's tested samples.

    Returns ``(votes, tested)``: votes are ``(sample_id, group_name, is_primary, flagged)`` tuples;
    ``tested`` the sample ids with status ``tested``.  Both come from one connection.
    """
    rid = int(run_id)
    q = select(S.votes.c.sample_id, S.votes.c.group_name, S.votes.c.is_primary, S.votes.c.flagged).where(
        S.votes.c.run_id == rid, S.votes.c.relation == relation)
    tq = select(S.samples.c.sample_id).where(S.samples.c.run_id == rid, S.samples.c.status == "tested")
    with store.engine.connect() as c:
        votes = [tuple(r) for r in c.execute(q).all()]
        tested = set(c.execute(tq).scalars())
    return votes, tested
