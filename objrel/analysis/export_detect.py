"""Export a detection run: one record per tested unit with test T, IoUs, outcomes and votes.

``objrel.analysis.export.export_run`` hands detection runs here (its classifier records assume a top-1
label on every mutant, which a detector that found nothing does not have).
"""

from __future__ import annotations

import json
from collections import defaultdict

from objrel.analysis.export import EXPORT_FORMATS, csv_text
from objrel.store import Store



def detection_records(store: Store, run_id: int) -> list[dict]:
    """Nested records (JSON export), one per tested unit: the associated object's label and box, the compared
    source record (label, score, IoU, T), votes, and per mutation the verdict, outcome, IoU', T' and record."""
    votes, verdicts = defaultdict(list), defaultdict(list)
    for v in store.votes(run_id):
        votes[v["sample_id"]].append(v)
    for v in store.verdicts(run_id):
        verdicts[v["sample_id"]].append(v)
    out = []
    for s in store.samples(run_id, status="tested"):
        sid = s["sample_id"]
        preds = store.predictions(run_id, sid)
        src = preds["source"]["prediction"] or {}
        rec = src.get("record") or {}

        def mutation(v):
            p = (preds.get(v["mutation_key"]) or {}).get("prediction") or {}
            r = p.get("record") or {}
            return {"relation": v["relation"], "verdict": v["verdict"], "outcome": v["note"],
                    "iou": v["mutant_certainty"], "t": p.get("t"), "record_label": r.get("label"),
                    "record_score": r.get("score"), "distance": v["distance"],
                    "seed": (preds.get(v["mutation_key"]) or {}).get("seed")}

        out.append({
            "sample_id": sid, "image": s["rel_path"], "label": (s["gt_categories"] or [None])[0],
            "object_box": (s["objects"] or [{}])[0].get("box"), "region_source": s["region_source"],
            "t_source": src.get("t"), "iou_source": rec.get("iou"), "score_source": rec.get("score"),
            "record_box": rec.get("box"), "area_ratio": s["area_ratio"], "s_p": s["s_p"], "s_r": s["s_r"],
            "s": s["s"],
            "votes": {v["group_name"]: {"relation": v["relation"], "primary": bool(v["is_primary"]),
                                        "violations": v["violations"], "applicable": v["applicable"],
                                        "k": v["k"], "n": v["n"], "flagged": bool(v["flagged"])}
                      for v in votes[sid]},
            "mutations": {v["mutation_key"]: mutation(v) for v in verdicts[sid]},
        })
    return out


def detection_flat_rows(recs: list[dict]) -> list[dict]:
    """One flat dict per unit (CSV export): a column per vote group and per mutation outcome."""
    rows = []
    for r in recs:
        row = {k: r[k] for k in ("sample_id", "image", "label", "region_source", "t_source", "iou_source",
                                 "score_source", "area_ratio", "s_p", "s_r", "s")}
        row["object_box"] = " ".join(f"{v:g}" for v in r["object_box"] or [])
        for g, v in r["votes"].items():
            row[f"flagged[{g}]"] = v["flagged"]
            row[f"violations[{g}]"] = v["violations"]
        for key, m in r["mutations"].items():
            row[f"verdict[{key}]"] = m["verdict"]
            row[f"outcome[{key}]"] = m["outcome"]
            row[f"iou[{key}]"] = m["iou"]
        rows.append(row)
    return rows


def export_detection_run(store: Store, run_id: int, fmt: str = "csv") -> str:
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"export format must be one of {EXPORT_FORMATS}, got {fmt!r}")
    recs = detection_records(store, run_id)
    if fmt == "json":
        return json.dumps({"run": store.get_run(run_id).to_dict(), "units": recs}, indent=2, default=str)
    return csv_text(detection_flat_rows(recs))
