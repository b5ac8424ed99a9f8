"""Export a run: one record per tested inference with its predictions, verdicts and scores."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict

from objrel.store import Store

EXPORT_FORMATS = ("csv", "json")


def records(store: Store, run_id: int) -> list[dict]:
    """Nested records (JSON export): sample fields, source top-k with class names, votes, verdicts."""
    names = store.class_names(run_id)
    name = lambda i: names[i] if 0 <= i < len(names) else str(i)  # noqa: E731
    votes, verdicts, preds = defaultdict(list), defaultdict(list), {}
    for v in store.votes(run_id):
        votes[v["sample_id"]].append(v)
    for v in store.verdicts(run_id):
        verdicts[v["sample_id"]].append(v)
    out = []
    for s in store.samples(run_id, status="tested"):
        sid = s["sample_id"]
        p = store.predictions(run_id, sid)
        src = p["source"]["prediction"]
        out.append({
            "sample_id": sid,
            "image": s["rel_path"],
            "ground_truth": [name(i) for i in s["gt_labels"] or []],
            "correct": bool(s["correct"]),
            "predicted": [name(i) for i in src["predicted"]],
            "top_labels": [name(i) for i in src["top_labels"]],
            "top_probs": [round(x, 6) for x in src["top_probs"]],
            "area_ratio": s["area_ratio"],
            "s_p": s["s_p"], "s_r": s["s_r"], "s": s["s"],
            "votes": {v["group_name"]: {"relation": v["relation"], "primary": bool(v["is_primary"]),
                                        "violations": v["violations"], "applicable": v["applicable"],
                                        "k": v["k"], "n": v["n"], "flagged": bool(v["flagged"])}
                      for v in votes[sid]},
            "mutations": {
                v["mutation_key"]: {
                    "relation": v["relation"], "verdict": v["verdict"], "distance": v["distance"],
                    "source_certainty": v["source_certainty"], "mutant_certainty": v["mutant_certainty"],
                    "top1": (name(p[v["mutation_key"]]["prediction"]["top_labels"][0])
                             if p.get(v["mutation_key"], {}).get("prediction") else None),
                    "seed": p.get(v["mutation_key"], {}).get("seed"),
                } for v in verdicts[sid]
            },
        })
    return out


def flat_rows(recs: list[dict]) -> list[dict]:
    """One flat dict per inference (CSV export): a column per vote group and per mutation verdict."""
    rows = []
    for r in recs:
        row = {k: r[k] for k in ("sample_id", "image", "correct", "area_ratio", "s_p", "s_r", "s")}
        row["ground_truth"] = "|".join(r["ground_truth"])
        row["predicted"] = "|".join(r["predicted"])
        row["top_labels"] = "|".join(r["top_labels"])
        row["top_probs"] = "|".join(f"{x:.6f}" for x in r["top_probs"])
        for g, v in r["votes"].items():
            row[f"flagged[{g}]"] = v["flagged"]
            row[f"violations[{g}]"] = v["violations"]
        for key, m in r["mutations"].items():
            row[f"verdict[{key}]"] = m["verdict"]
            row[f"top1[{key}]"] = m["top1"]
        rows.append(row)
    return rows


def export_run(store: Store, run_id: int, fmt: str = "csv") -> str:
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"export format must be one of {EXPORT_FORMATS}, got {fmt!r}")
    if store.get_run(run_id).task == "detection":
        from objrel.analysis.export_detect import export_detection_run

        return export_detection_run(store, run_id, fmt)
    recs = records(store, run_id)
    if fmt == "json":
        return json.dumps({"run": store.get_run(run_id).to_dict(), "inferences": recs}, indent=2, default=str)
    return csv_text(flat_rows(recs))


def csv_text(rows: list[dict]) -> str:
    """CSV of flat rows whose keys may differ: the columns are every key, in first-seen order."""
    buf = io.StringIO()
    fields = list(dict.fromkeys(k for row in rows for k in row)) or ["sample_id"]
    w = csv.DictWriter(buf, fieldnames=fields)
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()
