"""Review rows: judgments, adjudications (``consensus``), the stored review sample and who reviews which of its
items (``review_assignments``), re-tests.

Every function takes plain Python values and returns dicts of column -> value (datetimes are
timezone-aware; ``reasons`` lists of strings).  Checking verdicts, reasons and names is
``objrel.review``'s job; what only the database can answer is checked here, inside the write's
own transaction: that the reviewer has an account and that the item is flagged by the run's
primary vote.  Writes go through ``transactions.write``, so two reviewers (two processes)
writing to one SQLite file at the same moment lose no judgment.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence

from sqlalchemy import delete, func, insert, select, text
from sqlalchemy.engine import Connection

from objrel.errors import NotAllowed
from objrel.store import schema as S
from objrel.store.accounts import has_reviewer, roles_in
from objrel.store.store import ROWS_OF_CHUNK, Store, now
from objrel.store.transactions import lock_run, touch_run, upsert, write

# ---------------------------------------------------------------- checks inside a transaction


def _require_reviewer(c: Connection, name: str, what: str) -> None:
    if not has_reviewer(c, name):
        raise ValueError(f"no {what} account named {name!r}; create it (or sign in) on the Review page first")


def _flagged_ids(c: Connection, run_id: int, relation: str) -> list[str]:
    q = select(S.votes.c.sample_id).where(S.votes.c.run_id == run_id, S.votes.c.relation == relation,
                                          S.votes.c.is_primary.is_(True), S.votes.c.flagged.is_(True))
    return sorted(set(c.execute(q).scalars()))


def _flagged_in(c: Connection, run_id: int, sample_id: str, relation: str) -> bool:
    """Is the sample flagged by the run's primary ``relation`` vote?  The sample's few votes (one per vote
    group) are found through the unique index ``uq_vote`` (run, sample, group) and checked here: with the
    relation and the flag in the WHERE clause SQLite's planner prefers ``ix_votes_flagged`` (run, relation,
    flagged), which walks every flagged vote of the run."""
    q = select(S.votes.c.relation, S.votes.c.is_primary, S.votes.c.flagged).where(
        S.votes.c.run_id == run_id, S.votes.c.sample_id == sample_id)
    return any(rel == relation and primary and flagged for rel, primary, flagged in c.execute(q))


def _require_flagged(c: Connection, run_id: int, sample_id: str, relation: str) -> None:
    if not _flagged_in(c, run_id, sample_id, relation):
        raise ValueError(f"sample {sample_id!r} of run {run_id} is not flagged by the primary {relation} vote; "
                         "only flagged inferences are reviewed")


def is_flagged(store: Store, run_id: int, sample_id: str, relation: str) -> bool:
    """True when (run, sample) is flagged by the run's primary ``relation`` vote (one sample's votes read)."""
    with store.engine.connect() as c:
        return _flagged_in(c, run_id, sample_id, relation)


def _lock_item(c: Connection, run_id: int, sample_id: str, relation: str) -> None:
    """Serialise the writes on one item (run, sample, relation) before anything of it is read, so a judgment
    and an adjudication of the same item by one account cannot both pass their checks: on PostgreSQL a
    transaction-scoped advisory lock on the item; on SQLite the database's write lock, taken by a write that
    changes nothing (``touch_run``: a transaction that starts with a write reads the newest data).  Neither
    touches a key, so the lock costs the same whatever the size of the run."""
    if c.dialect.name == "postgresql":
        import hashlib

        digest = hashlib.blake2b(f"objrel-item:{run_id}:{sample_id}:{relation}".encode(), digest_size=8).digest()
        c.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": int.from_bytes(digest, "big", signed=True)})
    else:
        touch_run(c, run_id)


# ---------------------------------------------------------------- judgments


def save_judgment(store: Store, *, run_id: int, sample_id: str, relation: str, reviewer: str, verdict: str,
                  reasons: Sequence[str], note: str | None, validity: str | None = None) -> dict:
    """Insert or update ``reviewer``'s judgment of (run, sample, relation) and return its row.

    A new row gets ``created_at`` = ``updated_at`` = now; an update keeps ``created_at``.  ``validity`` (the
    call on the mutant itself, or None) is written to the judgment and to its new version.  A call equal to the
    current one (verdict, reasons, note, validity) writes nothing: no version, no new ``updated_at``.
    Raises ValueError when ``reviewer`` has no account or the item is not flagged by the run's
    primary ``relation`` vote.  Safe to call from several processes at once.
    """
    key = {"run_id": run_id, "sample_id": sample_id, "relation": relation, "reviewer": reviewer}
    mine = select(S.judgments).where(*(S.judgments.c[k] == val for k, val in key.items()))   # the current call

    def work(c: Connection) -> dict:
        _lock_item(c, run_id, sample_id, relation)
        _require_reviewer(c, reviewer, "reviewer")
        _require_flagged(c, run_id, sample_id, relation)
        decided = c.execute(select(S.consensus.c.adjudicator).where(
            S.consensus.c.run_id == run_id, S.consensus.c.sample_id == sample_id,
            S.consensus.c.relation == relation)).scalar()
        if decided == reviewer:  # the gate checked this too; here it holds against a concurrent adjudication
            raise NotAllowed(reviewer, f"judge {sample_id!r} ({relation}, run {run_id})", (), roles_in(c, reviewer),
                             reason="they adjudicated this item, so they cannot also judge it")
        current = c.execute(mine).first()
        if current is not None and (current.verdict, list(current.reasons or []), current.note, current.validity) \
                == (verdict, list(reasons), note, validity):
            return dict(current._mapping)   # the same call again (a double press, a re-save): nothing to record
        ts = now()
        v = S.judgment_versions
        last = c.execute(select(func.max(v.c.version)).where(*(v.c[k] == val for k, val in key.items()))).scalar()
        c.execute(insert(v).values(**key, version=int(last or 0) + 1, verdict=verdict, reasons=list(reasons),
                                   note=note, after_close=_closure(c, run_id, relation)["closed"],
                                   created_at=ts, validity=validity))
        upsert(c, S.judgments, key, {"verdict": verdict, "reasons": list(reasons), "note": note, "updated_at": ts,
                                     "validity": validity},
               {"created_at": ts})
        return dict(c.execute(mine).one()._mapping)

    return write(store, work, retry_on_integrity=True)


# Reviewers per drawn item (k) of a draw that names none (one made before review teams) and of a new draw by
# default.  A draw open to every reviewer is *closed* once k reviewers have each judged every drawn item; an
# assigned draw once each item's k assigned reviewers have judged it.  From then on their calls may be
# compared, and every change is marked as made after closing.
CLOSING_REVIEWERS = 2
# The fewest reviewers per item a draw may ask for: one call alone cannot disagree with anything.
MIN_REVIEWERS_PER_ITEM = 2


def _closers(c: Connection, run_id: int, relation: str) -> list[str]:
    """Reviewers who have judged every item of the stored draw (none when nothing was drawn).

    One aggregate that reads only the drawn items' judgments: a reviewer has closed when they have as many
    judgments of drawn items as there are drawn items (both keys are unique, so no item counts twice).
    SQLite looks each drawn item's judgments up through ``uq_judgment`` (run, sample, relation); PostgreSQL
    chooses by its statistics between those lookups and one hash join over the relation's judgments."""
    rs, j = S.review_samples, S.judgments
    of_draw = (rs.c.run_id == run_id, rs.c.relation == relation)
    drawn = select(rs.c.sample_id).where(*of_draw)
    size = select(func.count()).select_from(rs).where(*of_draw).scalar_subquery()
    q = (select(j.c.reviewer).where(j.c.run_id == run_id, j.c.relation == relation, j.c.sample_id.in_(drawn))
         .group_by(j.c.reviewer).having(func.count() == size))
    return sorted(c.execute(q).scalars())


def _team_progress(c: Connection, run_id: int, relation: str) -> dict[str, tuple[int, int]]:
    """Each assigned reviewer of the draw: (items assigned to them, those they judged); empty for a draw
    open to every reviewer.  One aggregate over the draw's assignments joined to their judgments."""
    a, j = S.review_assignments, S.judgments
    joined = a.outerjoin(j, (j.c.run_id == a.c.run_id) & (j.c.relation == a.c.relation)
                         & (j.c.sample_id == a.c.sample_id) & (j.c.reviewer == a.c.reviewer))
    q = (select(a.c.reviewer, func.count(a.c.id), func.count(j.c.id)).select_from(joined)
         .where(a.c.run_id == run_id, a.c.relation == relation).group_by(a.c.reviewer))
    return {who: (int(n), int(done)) for who, n, done in c.execute(q)}


def _closure(c: Connection, run_id: int, relation: str) -> dict:
    """Whether the review sample of (run, relation) is closed: ``{"drawn", "k", "team", "closed_by", "closed"}``.

    ``team``: the assigned reviewers (sorted; empty for a draw open to everyone); ``closed_by``: for an assigned
    draw the team members who judged every item assigned to them, otherwise the reviewers who judged every drawn
    item.  Closed: something was drawn and every team member finished, or, without a team, k reviewers did."""
    drawn = c.execute(select(func.count()).select_from(S.review_samples).where(
        S.review_samples.c.run_id == run_id, S.review_samples.c.relation == relation)).scalar() or 0
    k = _draw_k(c, run_id, relation)
    progress = _team_progress(c, run_id, relation)
    if progress:
        closers = sorted(who for who, (n, done) in progress.items() if done >= n)
        closed = drawn > 0 and len(closers) == len(progress)
    else:
        closers = _closers(c, run_id, relation)
        closed = drawn > 0 and len(closers) >= k
    return {"drawn": int(drawn), "k": k, "team": tuple(sorted(progress)), "closed_by": closers, "closed": closed}


def sample_closure(store: Store, run_id: int, relation: str) -> dict:
    """The closing state of the run's ``relation`` review sample (``_closure``'s dict)."""
    with store.engine.connect() as c:
        return _closure(c, run_id, relation)


def closing_reviewers(store: Store, run_id: int, relation: str) -> list[str]:
    """The reviewers (sorted) who have closed the run's ``relation`` review sample: without assignments those
    who judged every drawn item; with them, the assigned reviewers who judged every item assigned to them."""
    with store.engine.connect() as c:
        return _closure(c, run_id, relation)["closed_by"]


def judgment_versions(store: Store, run_id: int, sample_id: str, relation: str, reviewer: str) -> list[dict]:
    """Every version of one reviewer's call on one item, oldest first (the last is the current call)."""
    v = S.judgment_versions
    q = select(v).where(v.c.run_id == run_id, v.c.sample_id == sample_id, v.c.relation == relation,
                        v.c.reviewer == reviewer).order_by(v.c.version)
    with store.engine.connect() as c:
        return [dict(r._mapping) for r in c.execute(q)]


def current_versions(store: Store, run_id: int) -> dict[tuple[str, str, str], int]:
    """The number of the current (highest) version of every call of a run: (sample id, relation, reviewer) ->
    version.  A judgment written before versions were kept has none (absent here)."""
    v = S.judgment_versions
    q = (select(v.c.sample_id, v.c.relation, v.c.reviewer, func.max(v.c.version)).where(v.c.run_id == run_id)
         .group_by(v.c.sample_id, v.c.relation, v.c.reviewer))
    with store.engine.connect() as c:
        return {(sid, rel, who): int(ver) for sid, rel, who, ver in c.execute(q)}


def item_files(store: Store, run_id: int, items: Sequence[str]) -> dict[str, str]:
    """The file (``samples.rel_path``) of each of ``items`` (ids a call can name: a sample, or a detection
    run's unit by ``unit_id``, the file of the unit's image); ids with no such row are left out.  Reads only
    those rows, through the unique indexes, whatever the size of the run."""
    smp, u = S.samples, S.detection_units
    wanted = sorted({str(i) for i in items})
    out: dict[str, str] = {}
    with store.engine.connect() as c:
        for start in range(0, len(wanted), ROWS_OF_CHUNK):
            chunk = wanted[start:start + ROWS_OF_CHUNK]
            out.update(c.execute(select(smp.c.sample_id, smp.c.rel_path)
                                 .where(smp.c.run_id == run_id, smp.c.sample_id.in_(chunk))).all())
            rest = [i for i in chunk if i not in out]
            if rest:
                q = (select(u.c.unit_id, smp.c.rel_path)
                     .join(smp, (smp.c.run_id == u.c.run_id) & (smp.c.sample_id == u.c.image_id))
                     .where(u.c.run_id == run_id, u.c.unit_id.in_(rest)))
                out.update(c.execute(q).all())
    return out


def judgment_rows(store: Store, run_id: int, relation: str | None = None, reviewer: str | None = None, *,
                  sample_id: str | None = None) -> list[dict]:
    """The judgment rows of a run, optionally of one relation, one reviewer and one sample, ordered by
    sample id, relation, reviewer."""
    q = select(S.judgments).where(S.judgments.c.run_id == run_id)
    if sample_id is not None:
        q = q.where(S.judgments.c.sample_id == sample_id)
    if relation is not None:
        q = q.where(S.judgments.c.relation == relation)
    if reviewer is not None:
        q = q.where(S.judgments.c.reviewer == reviewer)
    with store.engine.connect() as c:
        rows = c.execute(q.order_by(S.judgments.c.sample_id, S.judgments.c.relation, S.judgments.c.reviewer)).all()
    return [dict(r._mapping) for r in rows]


def judged_runs(store: Store) -> list[dict]:
    """Every stored run with at least one judgment, by run id:
    ``{"run_id", "name", "model", "dataset", "task", "reviewers": {relation: set of reviewer names}}``."""
    q = select(S.judgments.c.run_id, S.judgments.c.relation, S.judgments.c.reviewer).distinct()
    by_run: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    with store.engine.connect() as c:
        for run_id, relation, who in c.execute(q):
            by_run[int(run_id)][relation].add(who)
        runs = {int(r.id): r for r in c.execute(select(S.runs).where(S.runs.c.id.in_(list(by_run))))}
    return [{"run_id": rid, "name": runs[rid].name, "model": runs[rid].model, "dataset": runs[rid].dataset,
             "task": runs[rid].task, "reviewers": dict(by_run[rid])}
            for rid in sorted(by_run) if rid in runs]


# ---------------------------------------------------------------- adjudications


def save_adjudication(store: Store, *, run_id: int, sample_id: str, relation: str, verdict: str,
                      reasons: Sequence[str], note: str | None, adjudicator: str, validity: str | None = None) -> dict:
    """Insert or replace the decided call of (run, sample, relation), with the decided ``validity`` of its
    mutant (or None), and return its row (``created_at`` = the time of this decision).  Raises ValueError
    when ``adjudicator`` has no account or the item is not flagged by the run's primary ``relation`` vote;
    NotAllowed when ``adjudicator`` judged the item (checked in the same transaction as the write)."""
    key = {"run_id": run_id, "sample_id": sample_id, "relation": relation}

    def work(c: Connection) -> dict:
        _lock_item(c, run_id, sample_id, relation)
        _require_reviewer(c, adjudicator, "adjudicator")
        _require_flagged(c, run_id, sample_id, relation)
        party = c.execute(select(S.judgments.c.id).where(
            S.judgments.c.run_id == run_id, S.judgments.c.sample_id == sample_id, S.judgments.c.relation == relation,
            S.judgments.c.reviewer == adjudicator).limit(1)).first()
        if party is not None:
            raise NotAllowed(adjudicator, f"adjudicate {sample_id!r} ({relation}, run {run_id})", (),
                             roles_in(c, adjudicator),
                             reason="they judged this item themselves; an adjudicator is never a party to the "
                                    "disagreement")
        upsert(c, S.consensus, key, {"verdict": verdict, "reasons": list(reasons), "note": note,
                                     "adjudicator": adjudicator, "created_at": now(), "validity": validity}, {})
        return dict(c.execute(select(S.consensus).where(*(S.consensus.c[k] == v for k, v in key.items())))
                    .one()._mapping)

    return write(store, work, retry_on_integrity=True)


def adjudicator_of(store: Store, run_id: int, sample_id: str, relation: str) -> str | None:
    """Who adjudicated (run, sample, relation), or None."""
    q = select(S.consensus.c.adjudicator).where(S.consensus.c.run_id == run_id, S.consensus.c.sample_id == sample_id,
                                                S.consensus.c.relation == relation)
    with store.engine.connect() as c:
        return c.execute(q).scalar()


def adjudications(store: Store, run_id: int, relation: str) -> dict[str, dict]:
    """The adjudicated items of a run and relation: sample id -> consensus row."""
    q = select(S.consensus).where(S.consensus.c.run_id == run_id, S.consensus.c.relation == relation)
    with store.engine.connect() as c:
        return {r.sample_id: dict(r._mapping) for r in c.execute(q)}


# ---------------------------------------------------------------- the review sample


def _stored_draw(c: Connection, run_id: int, relation: str) -> dict | None:
    rows = c.execute(select(S.review_samples).where(S.review_samples.c.run_id == run_id,
                                                    S.review_samples.c.relation == relation)
                     .order_by(S.review_samples.c.position)).all()
    if not rows:
        return None
    return {"seed": int(rows[0].seed), "population": int(rows[0].population),
            "sample_ids": tuple(r.sample_id for r in rows), "k": int(rows[0].k or CLOSING_REVIEWERS)}


def _draw_k(c: Connection, run_id: int, relation: str) -> int:
    """Reviewers per item of the stored draw (``CLOSING_REVIEWERS`` for a draw that names none, or none drawn)."""
    k = c.execute(select(S.review_samples.c.k).where(S.review_samples.c.run_id == run_id,
                                                     S.review_samples.c.relation == relation).limit(1)).scalar()
    return int(k or CLOSING_REVIEWERS)


def review_sample(store: Store, run_id: int, relation: str) -> dict | None:
    """The stored draw ``{"seed", "population", "sample_ids" (tuple, in draw order), "k"}``, or None."""
    with store.engine.connect() as c:
        return _stored_draw(c, run_id, relation)


def store_review_sample(store: Store, run_id: int, relation: str, seed: int,
                        pick: Callable[[list[str]], list[str]], *, replace: bool, k: int = CLOSING_REVIEWERS) -> dict:
    """Draw the review sample of a run and relation once, under the run's lock; return the stored draw.

    In one transaction that holds the run's lock (so concurrent first draws are serialised):
    when a draw is stored and ``replace`` is False, that draw comes back untouched, whatever
    its seed (the caller compares it).  Otherwise the old draw is deleted, ``pick`` is called
    with the run's flagged sample ids (primary vote, sorted) and must return the chosen ids in
    draw order, and those are stored with their positions, ``seed``, the population size and ``k`` (reviewers
    per item); a replaced draw's assignments go with it (its items may be others).
    Returns ``{"seed", "population", "sample_ids", "k"}``.  Raises ValueError for an unknown run.
    """

    def work(c: Connection) -> dict:
        lock_run(c, run_id)
        stored = _stored_draw(c, run_id, relation)
        if stored is not None and not replace:  # drawn before, or by a concurrent caller just now
            return stored
        if stored is not None:
            c.execute(delete(S.review_samples).where(S.review_samples.c.run_id == run_id,
                                                     S.review_samples.c.relation == relation))
            c.execute(delete(S.review_assignments).where(S.review_assignments.c.run_id == run_id,
                                                         S.review_assignments.c.relation == relation))
        population = _flagged_ids(c, run_id, relation)
        ids = list(pick(population))
        if ids:
            c.execute(insert(S.review_samples), [
                {"run_id": run_id, "relation": relation, "sample_id": sid, "position": pos, "seed": seed,
                 "population": len(population), "k": int(k)} for pos, sid in enumerate(ids)])
        return {"seed": seed, "population": len(population), "sample_ids": tuple(ids), "k": int(k)}

    return write(store, work, retry_on_integrity=True)


# ---------------------------------------------------------------- review teams: who judges which drawn item


def _assignments(c: Connection, run_id: int, relation: str) -> dict[str, tuple[str, ...]]:
    a = S.review_assignments
    out: dict[str, list[str]] = defaultdict(list)
    for sid, who in c.execute(select(a.c.sample_id, a.c.reviewer).where(a.c.run_id == run_id, a.c.relation == relation)
                              .order_by(a.c.sample_id, a.c.reviewer)):
        out[sid].append(who)
    return {sid: tuple(names) for sid, names in out.items()}


def assignments(store: Store, run_id: int, relation: str) -> dict[str, tuple[str, ...]]:
    """Who judges each drawn item of (run, relation): sample id -> reviewers (sorted); empty for a draw open to
    every reviewer."""
    with store.engine.connect() as c:
        return _assignments(c, run_id, relation)


def item_team(store: Store, run_id: int, sample_id: str, relation: str) -> tuple[str, ...]:
    """The reviewers assigned to one item (sorted); empty when the item is not assigned (its draw is open to
    every reviewer, or it is not drawn)."""
    a = S.review_assignments
    q = select(a.c.reviewer).where(a.c.run_id == run_id, a.c.relation == relation, a.c.sample_id == sample_id)
    with store.engine.connect() as c:
        return tuple(sorted(c.execute(q).scalars()))


def save_assignments(store: Store, run_id: int, relation: str, plan: Mapping[str, Sequence[str]],
                     assigned_by: str | None) -> dict[str, tuple[str, ...]]:
    """Give the drawn items of ``plan`` (sample id -> reviewers) those reviewers, under the run's lock, and
    return every item's team.  Items the plan does not name keep theirs; afterwards every drawn item must have
    exactly the draw's k distinct reviewers (a draw open to everyone is assigned whole, in one plan).  Raises
    ValueError, writing nothing, when nothing is drawn, the plan names an item outside the draw, a name has no
    account, an item would have other than k reviewers, or a reviewer who already judged an item would leave
    its team (their call is part of it).  ``assigned_by``: the admin, or None for the draw's even spread."""

    def work(c: Connection) -> dict[str, tuple[str, ...]]:
        lock_run(c, run_id)
        stored = _stored_draw(c, run_id, relation)
        if stored is None:
            raise ValueError(f"no {relation} review sample of run {run_id} has been drawn: draw it before "
                             "assigning reviewers")
        drawn, k = stored["sample_ids"], stored["k"]
        outside = sorted(set(plan) - set(drawn))
        if outside:
            raise ValueError(f"{len(outside)} item(s) of the plan are not in the drawn {relation} sample of run "
                             f"{run_id}, e.g. {outside[0]!r}")
        teams = {**_assignments(c, run_id, relation), **{sid: tuple(sorted(set(names))) for sid, names in plan.items()}}
        for name in sorted({n for names in teams.values() for n in names}):
            _require_reviewer(c, name, "reviewer")
        short = [sid for sid in drawn if len(teams.get(sid, ())) != k]
        if short:
            sid = short[0]
            raise ValueError(f"every drawn item needs exactly {k} different reviewers; {len(short)} item(s) would "
                             f"have another number, e.g. {sid!r} with {len(teams.get(sid, ()))}")
        j = S.judgments
        for sid, who in c.execute(select(j.c.sample_id, j.c.reviewer).where(
                j.c.run_id == run_id, j.c.relation == relation, j.c.sample_id.in_(list(plan)))):
            if who not in teams[sid]:
                raise ValueError(f"{who!r} already judged {sid!r}, so they stay on its team; the plan leaves them "
                                 f"out ({', '.join(teams[sid])})")
        a = S.review_assignments
        changed = [sid for sid in drawn if sid in plan]   # a drawn review sample holds a few hundred items at most
        c.execute(delete(a).where(a.c.run_id == run_id, a.c.relation == relation, a.c.sample_id.in_(changed)))
        ts = now()
        c.execute(insert(a), [{"run_id": run_id, "relation": relation, "sample_id": sid, "reviewer": who,
                               "assigned_by": assigned_by, "created_at": ts}
                              for sid in changed for who in teams[sid]])
        return {sid: teams[sid] for sid in drawn}

    return write(store, work, retry_on_integrity=True)


def set_draw_k(store: Store, run_id: int, relation: str, k: int) -> int:
    """Set the reviewers per item of the stored draw to ``k``; returns it.  ValueError when nothing is drawn or
    the draw is assigned (its teams have the old k: assign it again after a redraw)."""

    def work(c: Connection) -> int:
        lock_run(c, run_id)
        rs = S.review_samples
        if _stored_draw(c, run_id, relation) is None:
            raise ValueError(f"no {relation} review sample of run {run_id} has been drawn")
        if _assignments(c, run_id, relation):
            raise ValueError(f"the {relation} review sample of run {run_id} is assigned to teams of "
                             f"{_draw_k(c, run_id, relation)}; its k changes only with a redraw")
        c.execute(rs.update().where(rs.c.run_id == run_id, rs.c.relation == relation).values(k=int(k)))
        return int(k)

    return write(store, work, retry_on_integrity=True)


# ---------------------------------------------------------------- re-tests with a redrawn box


def add_retest(store: Store, run_id: int, sample_id: str, reviewer: str, box: Sequence[int], result: dict) -> None:
    """Keep one re-test: ``box`` the redrawn xyxy pixels, ``result`` its votes and verdicts (JSON-able)."""
    with store.engine.begin() as c:
        c.execute(insert(S.retests).values(run_id=int(run_id), sample_id=str(sample_id), reviewer=reviewer,
                                           box=list(box), result=result, created_at=now()))


def retests(store: Store, run_id: int, sample_id: str) -> list[dict]:
    """The re-tests of one sample, oldest first: rows ``{"id", "run_id", "sample_id", "reviewer",
    "box", "result", "created_at"}``."""
    q = (select(S.retests).where(S.retests.c.run_id == int(run_id), S.retests.c.sample_id == str(sample_id))
         .order_by(S.retests.c.id))
    with store.engine.connect() as c:
        return [dict(r._mapping) for r in c.execute(q)]
