"""Export a run: one record per tested inference with its predictions, verdicts, votes and scores.

An inference is a sample of a classifier run and a unit of a detection run (``objrel.store.detections``).
Both tasks share the formats (``EXPORT_FORMATS``), the JSON shape (``{"run": ..., "inferences": [...]}``),
the vote columns and one CSV writer; they differ in each record's fields and per-mutation columns:

* classifier: ground truth, predicted labels and top-k, and per mutation the verdict and the mutant's top-1;
* detection:  the unit (image, key, kind), the associated object's label and box (xyxy pixels), the source
  record compared (rcd: score, box, IoU with the object, test T), and per mutation the verdict, the outcome
  (missing / incorrect detection, removed, ...), rcd''s IoU with the object and test T on the mutant.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict

from objrel import csvsafe
from objrel.store import Store
from objrel.store import detections as D
from objrel.relations import common as C
from objrel.relations.votes import scoring_basis
from objrel.mutations import Plan

EXPORT_FORMATS = ("csv", "json")


def _vote_fields(rows: list[dict]) -> dict:
    """Vote rows of one inference as ``{group name: {relation, primary, violations, applicable, k, n, flagged}}``."""
    return {v["group_name"]: {"relation": v["relation"], "primary": bool(v["is_primary"]),
                              "violations": v["violations"], "applicable": v["applicable"],
                              "k": v["k"], "n": v["n"], "flagged": bool(v["flagged"])} for v in rows}


def _votes_by_inference(store: Store, run_id: int) -> dict[str, list[dict]]:
    votes: dict[str, list[dict]] = defaultdict(list)
    for v in store.votes(run_id):
        votes[v["sample_id"]].append(v)
    return votes


# Samples read per query while a run is exported (a page of samples with their votes, verdicts, predictions).
EXPORT_CHUNK = 1000


def records(store: Store, run_id: int) -> list[dict]:
    """Nested records (JSON export) of a classifier run: sample fields, source top-k with class names, votes,
    verdicts.  ``box_only`` flags an S computed on a region without a mask and ``s_reading`` is ORMR's
    reading of S (low when <= 0.5) with the box-only caveat (``objrel.relations.common.relevancy_verdict``).
    ``iter_records`` gives the same one at a time."""
    return list(iter_records(store, run_id))


def iter_records(store: Store, run_id: int, chunk: int = EXPORT_CHUNK):
    """``records`` one at a time, by sample id, reading ``chunk`` samples (and their rows) per query: a run of
    any size is exported holding one page of it."""
    scoring = scoring_basis(Plan.from_dict(store.get_run(run_id).plan)).name
    names = store.class_names(run_id)
    name = lambda i: names[i] if 0 <= i < len(names) else str(i)  # noqa: E731
    after = None
    while True:
        page = store.samples_after(run_id, after, chunk, status="tested")
        if not page:
            return
        ids = [s["sample_id"] for s in page]
        votes, verdicts = store.rows_of("votes", run_id, ids), store.rows_of("verdicts", run_id, ids)
        predictions = store.rows_of("predictions", run_id, ids)
        for s in page:
            sid = s["sample_id"]
            p = {r["mutation_key"]: r for r in predictions[sid]}
            yield _record(s, p, votes[sid], verdicts[sid], name, scoring)
        after = ids[-1]


def _record(s: dict, p: dict, votes: list[dict], verdicts: list[dict], name, scoring: str) -> dict:
    boxed = C.box_only(s["objects"] or ())
    src = p["source"]["prediction"]
    return {
        "sample_id": s["sample_id"],
        "image": s["rel_path"],
        "ground_truth": [name(i) for i in s["gt_labels"] or []],
        "correct": bool(s["correct"]),
        "predicted": [name(i) for i in src["predicted"]],
        "top_labels": [name(i) for i in src["top_labels"]],
        "top_probs": [round(x, 6) for x in src["top_probs"]],
        "area_ratio": s["area_ratio"],
        "s_p": s["s_p"], "s_r": s["s_r"], "s": s["s"], "box_only": boxed,
        "s_reading": C.relevancy_verdict(s["s"], boxed, scoring),
        "votes": _vote_fields(votes),
        "mutations": {
            v["mutation_key"]: {
                "relation": v["relation"], "verdict": v["verdict"], "distance": v["distance"],
                "source_certainty": v["source_certainty"], "mutant_certainty": v["mutant_certainty"],
                "top1": (name(p[v["mutation_key"]]["prediction"]["top_labels"][0])
                         if p.get(v["mutation_key"], {}).get("prediction") else None),
                "seed": p.get(v["mutation_key"], {}).get("seed"),
            } for v in verdicts
        },
    }


def detection_records(store: Store, run_id: int) -> list[dict]:
    """Nested records (JSON export) of a detection run, one per tested unit: the unit, the associated object's
    label and box, rcd on the source (score, box, IoU, T), votes, and per mutation the verdict, outcome,
    IoU', T' and rcd'.  Units come by image id, then in the order the run listed them."""
    images = {s["sample_id"]: s for s in store.samples(run_id)}
    votes = _votes_by_inference(store, run_id)
    checks: dict[tuple[str, str], list[D.DetectionVerdict]] = defaultdict(list)
    for v in D.verdicts(store, run_id):
        checks[(v.image_id, v.unit_key)].append(v)
    out = []
    for u in D.units(store, run_id, tested=True):
        img = images[u.image_id]
        out.append({
            "unit_id": u.unit_id, "image_id": u.image_id, "unit": u.key, "kind": u.kind, "image": img["rel_path"],
            "label": u.label, "object_box": list(u.object_box), "region_source": img["region_source"],
            "t_source": u.t_source, "iou_source": u.iou_source, "score_source": u.record_score,
            "record_box": None if u.record_box is None else list(u.record_box), "area_ratio": u.area_ratio,
            "s_p": u.s_p, "s_r": u.s_r, "s": u.s, "box_only": C.box_only([u.object]),
            # detection scores keep objrel's 'applicable' weights (objrel.engine.detect)
            "s_reading": C.relevancy_verdict(u.s, C.box_only([u.object]), C.SCORING_APPLICABLE),
            "votes": _vote_fields(votes[u.unit_id]),
            "mutations": {v.mutation_key: {
                "relation": v.relation, "verdict": v.verdict, "outcome": v.outcome, "note": v.note,
                "iou": v.iou_mutant, "t": v.t_mutant, "record_label": v.record_label,
                "record_score": v.record_score, "distance": v.distance, "seed": v.seed,
            } for v in checks[(u.image_id, u.key)]},
        })
    return out


# A classifier run's CSV columns before its vote and mutation columns.
CLASSIFIER_FIELDS = ("sample_id", "image", "correct", "area_ratio", "s_p", "s_r", "s", "box_only", "s_reading",
                     "ground_truth", "predicted", "top_labels", "top_probs")


def _classifier_columns(r: dict) -> dict:
    row = {k: r[k] for k in CLASSIFIER_FIELDS[:9]}
    row["ground_truth"] = "|".join(r["ground_truth"])
    row["predicted"] = "|".join(r["predicted"])
    row["top_labels"] = "|".join(r["top_labels"])
    row["top_probs"] = "|".join(f"{x:.6f}" for x in r["top_probs"])
    return row


def _detection_columns(r: dict) -> dict:
    row = {k: r[k] for k in ("unit_id", "image_id", "unit", "kind", "image", "label", "region_source", "t_source",
                             "iou_source", "score_source", "area_ratio", "s_p", "s_r", "s", "box_only",
                             "s_reading")}
    row["object_box"] = " ".join(f"{v:g}" for v in r["object_box"])
    return row


def flat_rows(recs: list[dict], detection: bool = False) -> list[dict]:
    """One flat dict per inference (CSV export): its fields, then a column per vote group and per mutation.

    Per mutation: ``verdict[key]`` and, for classifier runs, the mutant's ``top1[key]``; for detection runs
    the ``outcome[key]`` and rcd''s ``iou[key]`` with the associated object."""
    return [flat_row(r, detection) for r in recs]


def flat_row(r: dict, detection: bool = False) -> dict:
    """One record of ``records`` / ``detection_records`` as a flat dict (see ``flat_rows``)."""
    row = _detection_columns(r) if detection else _classifier_columns(r)
    for g, v in r["votes"].items():
        row[f"flagged[{g}]"] = v["flagged"]
        row[f"violations[{g}]"] = v["violations"]
    for key, m in r["mutations"].items():
        row[f"verdict[{key}]"] = m["verdict"]
        if detection:
            row[f"outcome[{key}]"] = m["outcome"]
            row[f"iou[{key}]"] = m["iou"]
        else:
            row[f"top1[{key}]"] = m["top1"]
    return row


def export_run(store: Store, run_id: int, fmt: str = "csv") -> str:
    """The run's tested inferences as ``fmt`` text: CSV (one row each) or JSON (the run and nested records)."""
    buf = io.StringIO()
    write_run(store, run_id, buf, fmt)
    return buf.getvalue()


def write_run(store: Store, run_id: int, out, fmt: str = "csv", chunk: int = EXPORT_CHUNK) -> int:
    """Write ``export_run``'s text to the text stream ``out`` and return the inferences written.  A classifier
    run is read and written a page of samples at a time (``iter_records``), so a run of a million samples is
    exported in the memory of one page; a detection run's units are read at once."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"export format must be one of {EXPORT_FORMATS}, got {fmt!r}")
    run = store.get_run(run_id)
    detection = D.is_detection_run(run)
    recs = iter(detection_records(store, run_id)) if detection else iter_records(store, run_id, chunk)
    if fmt == "json":
        header = {**run.to_dict(), "scoring": scoring_basis(Plan.from_dict(run.plan)).describe()}
        head = json.dumps({"run": header, "inferences": []}, indent=2, default=str)
        out.write(head[:head.rindex("[") + 1])
        n = 0
        for rec in recs:
            out.write(("," if n else "") + "\n    " + json.dumps(rec, default=str))   # one record per line
            n += 1
        out.write("\n  ]\n}" if n else "]\n}")
        return n
    if detection:
        rows = [flat_row(r, True) for r in recs]
        out.write(csv_text(rows))
        return len(rows)
    return csvsafe.write_rows(out, _classifier_fields(store, run_id), (flat_row(r) for r in recs))


def _classifier_fields(store: Store, run_id: int) -> list[str]:
    """The CSV columns of a classifier run: the sample's fields, two per vote group and two per mutation, in the
    order the run first wrote them (the order ``flat_rows`` meets them)."""
    fields = list(CLASSIFIER_FIELDS)
    for g in store.first_seen("votes", "group_name", run_id):
        fields += [f"flagged[{g}]", f"violations[{g}]"]
    for key in store.first_seen("verdicts", "mutation_key", run_id):
        fields += [f"verdict[{key}]", f"top1[{key}]"]
    return fields


def csv_text(rows: list[dict]) -> str:
    """CSV of flat rows whose keys may differ (the columns are every key, in first-seen order); text that a
    spreadsheet would evaluate as a formula is escaped (``objrel.csvsafe``)."""
    return csvsafe.csv_text(rows)
