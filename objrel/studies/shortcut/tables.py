"""The planted-shortcut benchmark's tables, read from its results file's JSON object (``load_results``).

The CLI's report and the Shortcut page draw the same tables: both pass the results file's form
(``BenchResults.to_dict()``, or the file read back), never the arms' in-memory results.
"""

from __future__ import annotations

import pandas as pd

from objrel.studies.shortcut.results import MODELS
from objrel.studies.shortcut.scoring import DetectorScore, pool

def ratio_table(results: dict) -> pd.DataFrame:
    """One row per model and seed (plus the mean): accuracy, swapped accuracy, flag ratios, reliant share."""
    rows = []
    for s in results["seeds"]:
        for name in MODELS:
            m = s["models"][name]
            su = m["summary"]
            rows.append({"model": name, "seed": str(s["seed"]), "correct": su["correct"], "accuracy": su["accuracy"],
                         "swapped accuracy": m["swapped_accuracy"], "MR-1 ratio": su["mr1_ratio"],
                         "MR-2 ratio": su["mr2_ratio"], "MR-1&2 ratio": su["both_ratio"],
                         "reliant (truth)": m["reliance"]["reliant_ratio"]})
    df = pd.DataFrame(rows)
    if len(results["seeds"]) > 1:
        mean = df.groupby("model", sort=False).mean(numeric_only=True).reset_index()
        mean["seed"] = "mean"
        df = pd.concat([df, mean], ignore_index=True)
    return df


def pooled_scores(results: dict, model: str | None, truth: str = "reliant") -> list[DetectorScore]:
    """Detector scores summed over seeds, for one model or (None) both."""
    scores = []
    for s in results["seeds"]:
        for name in MODELS:
            if model in (None, name):
                scores += [DetectorScore.from_dict(d) for d in s["models"][name]["scores"] if d["truth"] == truth]
    return pool(scores)


FAMILY_ORDER = {"3 colours": 0, "15 colours": 1, "operator": 2}
RELATION_ORDER = {"MR-1": 0, "MR-2": 1, "union": 2}


def score_table(scores: list[DetectorScore]) -> pd.DataFrame:
    """One row per detector, in family then relation order: its counts and precision / recall with intervals."""
    rows = []
    for s in sorted(scores, key=lambda s: (FAMILY_ORDER[s.family], RELATION_ORDER[s.relation], s.detector)):
        d = s.to_dict()
        rows.append({"detector": s.detector, "relation": s.relation, "TP": s.tp, "FP": s.fp, "FN": s.fn, "TN": s.tn,
                     "precision": d["precision"], "precision_lo": d["precision_lo"], "precision_hi": d["precision_hi"],
                     "recall": d["recall"], "recall_lo": d["recall_lo"], "recall_hi": d["recall_hi"]})
    return pd.DataFrame(rows)


def repair_table(results: dict) -> pd.DataFrame:
    """Before (the biased model), control (fine-tuned on the original images only, share 0, when swept) and
    after (the kept share) per seed, plus the means."""
    rows = []
    for s in results["seeds"]:
        rep = s["repair"]
        before = next(r for r in rep["rows"] if r["share"] is None)
        control = next((r for r in rep["rows"] if r["share"] == 0.0), None)
        after = next(r for r in rep["rows"] if r["share"] == rep["chosen_share"])
        for when, r in (("before", before), ("control", control), ("after", after)):
            if r is None:
                continue
            rows.append({"seed": str(s["seed"]), "when": when, "share": r["added"]["share"],
                         "added": r["added"]["added"],
                         "MR-1 ratio": r["test"]["mr1_ratio"], "MR-2 ratio": r["test"]["mr2_ratio"],
                         "accuracy": r["test"]["accuracy"], "swapped accuracy": r["swapped_accuracy"]})
    df = pd.DataFrame(rows)
    if len(results["seeds"]) > 1:
        mean = df.groupby("when", sort=False).mean(numeric_only=True).reset_index()
        mean["seed"] = "mean"
        df = pd.concat([df, mean], ignore_index=True)
    return df


def sweep_table(results: dict) -> pd.DataFrame:
    """Every share of every seed (seed 001 Tables 5-6): validation figures pick the share."""
    rows = []
    for s in results["seeds"]:
        rep = s["repair"]
        for r in rep["rows"]:
            rows.append({"seed": str(s["seed"]),
                         "share asked": "original" if r["share"] is None else f"{r['share']:.2f}",
                         "share": r["added"]["share"], "added": r["added"]["added"], "MR-1 added": r["added"]["mr1"],
                         "MR-2 added": r["added"]["mr2"], "val accuracy": r["val"]["accuracy"],
                         "val MR-2 ratio": r["val"]["mr2_ratio"], "test accuracy": r["test"]["accuracy"],
                         "test MR-2 ratio": r["test"]["mr2_ratio"], "swapped accuracy": r["swapped_accuracy"],
                         "kept": r["share"] is not None and r["share"] == rep["chosen_share"]})
    return pd.DataFrame(rows)


def attack_table(results: dict) -> pd.DataFrame:
    """Successes per model, scenario and strategy, summed over seeds."""
    acc: dict = {}
    for s in results["seeds"]:
        for name in MODELS:
            for t in s["attack"][name]["totals"]:
                key = (name, t["scenario"], t["strategy"])
                a = acc.setdefault(key, {"pairs": 0, "attempts": 0, "successes": 0, "pairs guided > random": 0})
                a["pairs"] += t["pairs"]
                a["attempts"] += t["attempts"]
                a["successes"] += t["successes"]
                a["pairs guided > random"] += t["guided_wins"]
    rows = [{"model": k[0], "scenario": k[1], "strategy": k[2], **v,
             "rate": v["successes"] / v["attempts"] if v["attempts"] else None} for k, v in acc.items()]
    return pd.DataFrame(rows)


def _arm_scores(results: dict, arm: str) -> list[DetectorScore]:
    """An arm's (``multi_label``, ``detection``) detector scores against reliance, summed over seeds (empty
    when it was not run)."""
    scores = []
    for s in results["seeds"]:
        if arm in s:
            scores += [DetectorScore.from_dict(d) for d in s[arm]["scores"] if d["truth"] == "reliant"]
    return pool(scores)


def multi_label_scores(results: dict) -> list[DetectorScore]:
    """The multi-label arm's detector scores summed over seeds (empty when it was not run)."""
    return _arm_scores(results, "multi_label")


def detection_scores(results: dict) -> list[DetectorScore]:
    """The detection arm's detector scores summed over seeds (empty when it was not run)."""
    return _arm_scores(results, "detection")


def detection_totals(results: dict) -> dict | None:
    """Units, detected (T = 1) units, reliant ones and the planted rule's agreement with the truth, summed over
    seeds; None when the detection arm was not run."""
    arms = [s["detection"] for s in results["seeds"] if "detection" in s]
    if not arms:
        return None
    return {"units": sum(a["reliance"]["evaluated"] for a in arms),
            "detected": sum(a["reliance"]["correct"] for a in arms),
            "reliant": sum(a["reliance"]["reliant"] for a in arms),
            "planted": sum(a["planted"]["planted"] for a in arms),
            "agree": sum(a["planted"]["agree"] for a in arms)}


def tables(results: dict) -> dict[str, pd.DataFrame]:
    """Every table of the report, by name (``ratios``, ``scores_<model>``, ``scores_both``, ``repair``, ...)."""
    out = {"ratios": ratio_table(results)}
    multi = score_table(multi_label_scores(results))
    out["scores_multi"] = multi
    out["scores_detection"] = score_table(detection_scores(results))
    for model in (*MODELS, None):
        out[f"scores_{model or 'both'}"] = score_table(pooled_scores(results, model))
    out["scores_matched_both"] = score_table(pooled_scores(results, None, "matched"))
    out["repair"] = repair_table(results)
    out["sweep"] = sweep_table(results)
    out["attack"] = attack_table(results)
    return out
