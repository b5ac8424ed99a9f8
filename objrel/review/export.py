"""Judgments export: one row per item and reviewer, with the adjudication, as CSV or JSON.

Who gets which rows (the gate's ``EXPORT_JUDGMENTS``, then ``SEE_CALLS``):

* adjudicators, admins and the server operator (``objrel judgments export``): every call, except on a run and
  relation they judged themselves: a party to a review sample gets a reviewer's rows there, whatever other
  roles she holds (``objrel.review.agreement.blind_target``);
* a reviewer: their own calls everywhere, and on a review sample they closed (judged every drawn item, with
  the sample closed) the calls of the other reviewers who closed it too, which calibration shows them anyway.
  A sample that is still open shows a reviewer nothing of anyone else: no other call and no adjudication,
  since an adjudication says that the two calls differed.

Each row carries its item's comment thread (``thread``, ``comments``) as the exporter may read it
(``objrel.review.comments``: another party's entries only once the sample closes).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, fields

from objrel import access as A
from objrel.access import Actor
from objrel.csvsafe import safe_cell
from objrel.review.agreement import sample_state
from objrel.review.comments import threads
from objrel.review.judgments import RELATIONS, check_relation, check_run_id, judged_runs, judgments, utc
from objrel.store import Store
from objrel.store import reviews as review_rows

# How the reasons of one call are joined in a CSV cell.
REASON_SEPARATOR = "; "
EXPORT_FORMATS = ("csv", "json")


@dataclass(frozen=True)
class ExportRow:
    """One reviewer's current call on one item, with the item's adjudication (None/empty when there is none).

    item: the sample id (a detection unit's id in a detection run); file: the item's file (``rel_path``);
    call: the verdict; time: when the call was last changed (ISO 8601, UTC); version: its version number
    (``judgment_history``; None for a call stored before versions were kept)."""

    run: int
    run_name: str
    relation: str
    item: str
    file: str | None
    reviewer: str
    call: str
    reasons: tuple[str, ...]
    note: str | None
    validity: str | None
    time: str
    version: int | None
    adjudicator: str | None
    adjudicated_call: str | None
    adjudication_reasons: tuple[str, ...]
    adjudication_note: str | None
    adjudication_validity: str | None
    thread: str | None = None           # the item's comment thread: open | resolved (None: no thread shown)
    comments: tuple[str, ...] = ()      # its entries the exporter may read, oldest first ("author: text")

    def to_dict(self) -> dict:
        """The exported call as a JSON-ready dict."""
        d = asdict(self)
        d["reasons"], d["adjudication_reasons"] = list(self.reasons), list(self.adjudication_reasons)
        d["comments"] = list(self.comments)
        return d


EXPORT_COLUMNS = tuple(f.name for f in fields(ExportRow))


def _visible(actor: Actor, store: Store, run_id: int, relation: str, full: bool,
             mine: set[str]) -> tuple[set[str] | None, set[str] | None]:
    """(reviewers whose calls ``actor`` may export, None for all; the items on which other reviewers' calls and
    the adjudications may be shown, None for all).  ``mine``: the items ``actor`` has judged.

    ``full`` (an adjudicator or admin) sees everything unless they judged an item here: a party gets what a
    reviewer gets.  A reviewer who closed the review sample sees the other closers' calls and the
    adjudications only on items of the drawn sample that they judged themselves (what calibration shows them):
    never on a flagged item outside the sample that they may still judge blind.  Anyone else sees only their
    own calls."""
    if full and not mine:
        return None, None
    state = sample_state(store, run_id, relation)
    if state.closed and actor.name in state.closed_by:
        draw = review_rows.review_sample(store, run_id, relation)
        drawn = set(draw["sample_ids"]) if draw else set()
        return set(state.closed_by), drawn & mine
    return {actor.name}, set()


def judgment_export(actor: Actor, store: Store, run_ids=None, relation: str | None = None) -> list[ExportRow]:
    """The calls ``actor`` may export (see the module's docstring), one row per item and reviewer, ordered by
    run, relation, item and reviewer.  ``run_ids``: the runs to export (an int or several; None: every run
    with judgments); ``relation``: one of ``RELATIONS`` (None: both).  Raises NotAllowed for an account with
    no reviewing role, ValueError for a run that is not in the store."""
    A.authorize(actor, A.EXPORT_JUDGMENTS, "judgments")
    full = A.permits(actor, A.SEE_CALLS)
    relations = RELATIONS if relation is None else (check_relation(relation),)
    judged = {r.run_id: r for r in judged_runs(store)}
    if run_ids is None:
        ids = sorted(judged)
    else:
        ids = [check_run_id(r) for r in ([run_ids] if isinstance(run_ids, int) else run_ids)]
        for rid in ids:
            if rid not in judged:
                try:
                    store.get_run(rid)
                except KeyError:
                    raise ValueError(f"no run {rid} in the store; `objrel runs` lists them") from None
    out: list[ExportRow] = []
    for rid in ids:
        run = judged.get(rid)
        if run is None:
            continue  # a run without judgments: nothing to export
        versions = review_rows.current_versions(store, rid)
        for rel in relations:
            calls = judgments(store, rid, rel)
            files = review_rows.item_files(store, rid, [j.sample_id for j in calls])
            mine = {j.sample_id for j in calls if j.reviewer == actor.name}
            who, shared = _visible(actor, store, rid, rel, full, mine)
            adjudications = review_rows.adjudications(store, rid, rel) if shared is None or shared else {}
            talk = threads(actor, store, rid, rel)      # as the exporter may read them (objrel.review.comments)
            for j in calls:
                if who is not None and j.reviewer not in who:
                    continue
                if shared is not None and j.reviewer != actor.name and j.sample_id not in shared:
                    continue
                adj = adjudications.get(j.sample_id) if shared is None or j.sample_id in shared else None
                out.append(ExportRow(
                    run=rid, run_name=run.name, relation=rel, item=j.sample_id, file=files.get(j.sample_id),
                    reviewer=j.reviewer, call=j.verdict, reasons=j.reasons, note=j.note, validity=j.validity,
                    time=utc(j.updated_at).isoformat(), version=versions.get((j.sample_id, rel, j.reviewer)),
                    adjudicator=adj["adjudicator"] if adj else None,
                    adjudicated_call=adj["verdict"] if adj else None,
                    adjudication_reasons=tuple(adj["reasons"] or ()) if adj else (),
                    adjudication_note=adj["note"] if adj else None,
                    adjudication_validity=adj.get("validity") if adj else None,
                    thread=talk[j.sample_id].state if j.sample_id in talk else None,
                    comments=talk[j.sample_id].lines() if j.sample_id in talk else ()))
    return out


def _cell(value) -> object:
    if value is None:
        return ""
    if isinstance(value, tuple):
        value = REASON_SEPARATOR.join(value)
    return safe_cell(value)


def to_csv(rows: list[ExportRow]) -> str:
    """CSV of the rows, header ``EXPORT_COLUMNS`` (also with no rows); reasons joined by ``REASON_SEPARATOR``,
    None as an empty cell, every text cell that a spreadsheet would evaluate neutralised (``objrel.csvsafe``)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(EXPORT_COLUMNS)
    for row in rows:
        w.writerow([_cell(getattr(row, c)) for c in EXPORT_COLUMNS])
    return buf.getvalue()


def to_json(rows: list[ExportRow]) -> str:
    """JSON array of the rows (``ExportRow.to_dict``: reasons as lists, None as null)."""
    return json.dumps([r.to_dict() for r in rows], indent=1, ensure_ascii=False)


# ---------------------------------------------------------------- long and wide tables of the calls (k raters)

# Long: one row per item and reviewer, the calls alone (R's irr and the ``krippendorff`` package read this shape
# after a pivot; tidy tools read it as is).
LONG_COLUMNS = ("run", "run_name", "relation", "item", "file", "reviewer", "call")
# Wide: one row per item, one column per reviewer holding their call (empty: no call), then the adjudication;
# the items x raters table that Fleiss' kappa and Krippendorff's alpha read.
WIDE_LEADING_COLUMNS = ("run", "run_name", "relation", "item", "file")
WIDE_TRAILING_COLUMNS = ("adjudicated_call",)


def long_rows(rows: list[ExportRow]) -> list[dict]:
    """The calls of ``rows`` (``judgment_export``'s, so only what the actor may export), one dict per item and
    reviewer with ``LONG_COLUMNS``, in the rows' order."""
    return [{c: getattr(r, c) for c in LONG_COLUMNS} for r in rows]


def wide_columns(rows: list[ExportRow]) -> tuple[str, ...]:
    """The wide table's header: ``WIDE_LEADING_COLUMNS``, every reviewer of ``rows`` by name, then
    ``WIDE_TRAILING_COLUMNS``.  Raises ValueError when a reviewer's name is one of the fixed columns."""
    reviewers = sorted({r.reviewer for r in rows})
    clash = sorted(set(reviewers) & set(WIDE_LEADING_COLUMNS + WIDE_TRAILING_COLUMNS))
    if clash:
        raise ValueError(f"reviewer names {clash} clash with the wide table's fixed columns; export the long "
                         "table instead")
    return WIDE_LEADING_COLUMNS + tuple(reviewers) + WIDE_TRAILING_COLUMNS


def wide_rows(rows: list[ExportRow]) -> list[dict]:
    """The calls of ``rows`` as one dict per (run, relation, item), keys ``wide_columns(rows)``: each reviewer's
    call (None where they made none, or where the actor may not see it) and the adjudicated call, in the rows'
    order of first appearance."""
    header = wide_columns(rows)
    out: dict[tuple, dict] = {}
    for r in rows:
        key = (r.run, r.relation, r.item)
        if key not in out:
            out[key] = dict.fromkeys(header) | {c: getattr(r, c) for c in WIDE_LEADING_COLUMNS}
        out[key][r.reviewer] = r.call
        if r.adjudicated_call is not None:
            out[key]["adjudicated_call"] = r.adjudicated_call
    return list(out.values())


def _table_csv(header: tuple[str, ...], dicts: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([_cell(h) for h in header])
    for d in dicts:
        w.writerow([_cell(d[c]) for c in header])
    return buf.getvalue()


def to_long_csv(rows: list[ExportRow]) -> str:
    """CSV of ``long_rows(rows)``, header ``LONG_COLUMNS`` (also with no rows); cells as in ``to_csv``."""
    return _table_csv(LONG_COLUMNS, long_rows(rows))


def to_wide_csv(rows: list[ExportRow]) -> str:
    """CSV of ``wide_rows(rows)``, header ``wide_columns(rows)``; an empty cell where a reviewer made no call;
    cells (the reviewers' names in the header too) as in ``to_csv``."""
    return _table_csv(wide_columns(rows), wide_rows(rows))


def to_long_json(rows: list[ExportRow]) -> str:
    """JSON array of ``long_rows(rows)``."""
    return json.dumps(long_rows(rows), indent=1, ensure_ascii=False)


def to_wide_json(rows: list[ExportRow]) -> str:
    """JSON array of ``wide_rows(rows)`` (null where a reviewer made no call)."""
    return json.dumps(wide_rows(rows), indent=1, ensure_ascii=False)


# The shapes of the export: every column of each call (``to_csv``/``to_json``), or the calls alone, long or wide.
EXPORT_SHAPES = ("calls", "long", "wide")


def export_text(rows: list[ExportRow], fmt: str = "csv", shape: str = "calls") -> str:
    """``rows`` as text in format ``fmt`` (one of ``EXPORT_FORMATS``) and shape ``shape`` (one of
    ``EXPORT_SHAPES``).  Raises ValueError for any other format or shape."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format must be one of {list(EXPORT_FORMATS)}; got {fmt!r}")
    writers = {"calls": (to_csv, to_json), "long": (to_long_csv, to_long_json), "wide": (to_wide_csv, to_wide_json)}
    if shape not in writers:
        raise ValueError(f"shape must be one of {list(EXPORT_SHAPES)}; got {shape!r}")
    as_csv, as_json = writers[shape]
    return as_csv(rows) if fmt == "csv" else as_json(rows) + "\n"
