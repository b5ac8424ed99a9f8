"""The planted-shortcut benchmark's tables, read from its results file's JSON object (``load_results``).

The CLI's report and the Shortcut page draw the same tables: both pass the results file's form
(``BenchResults.to_dict()``, or the file read back), never the arms' in-memory results.

Every precision / recall table is re-derived here from the stored per-swap outcomes and flags
(``scoring.score_at``) at a *setting*: a draw count (backgrounds per other type, ``REPORT_DRAWS``) and a
reliance threshold (``groundtruth.THRESHOLDS``).  ``note`` says, from the counts alone, when a figure is
fixed by the data rather than measured (a detector that flags every unit, a truth with no negatives).
"""

from __future__ import annotations

import pandas as pd

from objrel.studies.shortcut.groundtruth import (MAJORITY, REPORT_DRAWS, THRESHOLDS, Reliance, Threshold,
                                                UnitReliance)
from objrel.studies.shortcut.results import MODELS
from objrel.studies.shortcut.scoring import DetectorScore, flags_from_dict, pool, roc_auc, score_at

# The arms whose inferences are scored: single-label models, multi-label models, the stand-in detector.
ARMS = ("single", "multi", "detection")
# The relevancy scores of ORMR stored per inference, in their stored order.
RELEVANCY_SCORES = ("S_p", "S_r", "S")
# Notes computed from a score's counts.
NOTE_FLAGS_ALL = "uninformative: flags every unit (recall 100%, precision = base rate)"
NOTE_FLAGS_NONE = "flags nothing"
NOTE_NO_NEGATIVE = "no non-reliant unit: precision is 100% whatever is flagged"
NOTE_NO_POSITIVE = "no reliant unit: recall undefined"
# The detection arm's MR-2 by colour fill: the stand-in detector names a small object by the background colour,
# which these fills replace, so they find its reliance because of how the detector was built.
NOTE_BY_RULE = "by construction: the stand-in rule reads the background colour these fills change"

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
                         "reliant (truth)": m["reliance"]["reliant_ratio"],
                         "reliant (majority)": _majority_share(m["truth"])})
    df = pd.DataFrame(rows)
    if len(results["seeds"]) > 1:
        mean = df.groupby("model", sort=False).mean(numeric_only=True).reset_index()
        mean["seed"] = "mean"
        df = pd.concat([df, mean], ignore_index=True)
    return df


def _majority_share(truth: dict) -> float | None:
    """The share of correct inferences whose reliance rate over every draw made is >= 0.5 (None when none is
    correct or the file holds no per-swap outcomes)."""
    rs = [r for r in (Reliance.from_dict(d) for d in truth.values()) if r.correct]
    if not rs or not all(r.draws for r in rs):
        return None
    return sum(bool(r.verdict(None, MAJORITY).reliant) for r in rs) / len(rs)


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


def score_note(s: DetectorScore) -> str:
    """What the counts alone fix about a score ('' when precision and recall are both measured)."""
    notes = []
    if s.n and s.tp + s.fp == s.n:
        notes.append(NOTE_FLAGS_ALL)
    elif s.n and s.tp + s.fp == 0:
        notes.append(NOTE_FLAGS_NONE)
    if s.n and s.fp + s.tn == 0:
        notes.append(NOTE_NO_NEGATIVE)
    if s.n and s.tp + s.fn == 0:
        notes.append(NOTE_NO_POSITIVE)
    return "; ".join(notes)


def score_table(scores: list[DetectorScore]) -> pd.DataFrame:
    """One row per detector, in family then relation order: its counts, precision / recall with intervals and the
    note of what its counts fix (``score_note``)."""
    rows = []
    for s in sorted(scores, key=lambda s: (FAMILY_ORDER[s.family], RELATION_ORDER[s.relation], s.detector)):
        d = s.to_dict()
        rows.append({"detector": s.detector, "relation": s.relation, "TP": s.tp, "FP": s.fp, "FN": s.fn, "TN": s.tn,
                     "precision": d["precision"], "precision_lo": d["precision_lo"], "precision_hi": d["precision_hi"],
                     "recall": d["recall"], "recall_lo": d["recall_lo"], "recall_hi": d["recall_hi"],
                     "note": score_note(s)})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- settings: draws x thresholds


def max_draws(results: dict) -> int:
    """The draws per type the benchmark made (its config's ``draws``)."""
    return int(results["config"].get("draws", 1))


def settings(results: dict) -> list[tuple[int, Threshold]]:
    """Every (draw count, threshold) the tables are reported at: ``REPORT_DRAWS`` up to the draws made (the draws
    made when fewer), each at every threshold of ``THRESHOLDS``."""
    most = max_draws(results)
    draws = [d for d in REPORT_DRAWS if d <= most] or [most]
    return [(d, t) for d in draws for t in THRESHOLDS]


def scored_runs(results: dict, arm: str, model: str | None = None):
    """``(truth, tested ids, flags)`` of every run of ``arm`` (``ARMS``) for ``model`` (None: every model) over the
    seeds, read from the results file (truths as ``Reliance`` / ``UnitReliance``)."""
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    out = []
    for s in results["seeds"]:
        if arm == "detection":
            if "detection" not in s:
                continue
            truth = {k: UnitReliance.from_dict(v) for k, v in s["detection"]["truth"].items()}
            out += [(truth, *flags_from_dict(r["flags"])) for r in s["detection"]["runs"].values()]
            continue
        group = s["models"] if arm == "single" else s.get("multi_label", {})
        for name in MODELS:
            if model in (None, name) and name in group:
                m = group[name]
                out.append(({k: Reliance.from_dict(v) for k, v in m["truth"].items()}, *flags_from_dict(m["flags"])))
    return out


def scores_at(results: dict, arm: str, model: str | None, draws: int | None, threshold: Threshold,
              kind: str = "reliant") -> list[DetectorScore]:
    """Every detector of ``arm`` for ``model`` (None: pooled) scored at ``draws`` (None: every draw made) and
    ``threshold``, summed over runs and seeds."""
    scores = []
    for truth, tested, flags in scored_runs(results, arm, model):
        scores += score_at(flags, tested, truth, draws, threshold, kind)
    return pool(scores)


def base_rate(results: dict, arm: str, model: str | None, draws: int, threshold: Threshold) -> tuple[int, int]:
    """``(reliant, scored)``: the correct tested inferences (units) of one run per seed and how many are reliant at
    the setting: the share a detector that flags everything would score as precision."""
    seen: set = set()
    k = n = 0
    for truth, tested, _ in scored_runs(results, arm, model):
        for sid in tested:
            r = truth.get(sid)
            key = (id(truth), sid)
            if r is None or not r.correct or key in seen:
                continue
            seen.add(key)
            n += 1
            k += bool(r.verdict(draws, threshold).reliant)
    return k, n


def curve_table(results: dict, arm: str, model: str | None, detectors=None, kind: str = "reliant") -> pd.DataFrame:
    """The precision / recall curve of ``arm`` for ``model`` (None: pooled): one row per setting (draws, threshold)
    and detector (all, or those named in ``detectors``), with the setting's base rate (reliant / scored)."""
    frames = []
    for draws, thr in settings(results):
        k, n = base_rate(results, arm, model, draws, thr)
        df = score_table(scores_at(results, arm, model, draws, thr, kind))
        if arm == "detection" and len(df):
            by_rule = (df["relation"] == "MR-2") & df["detector"].str.contains("colours")
            df.loc[by_rule, "note"] = [f"{n}; {NOTE_BY_RULE}" if n else NOTE_BY_RULE for n in df.loc[by_rule, "note"]]
        if detectors is not None and len(df):
            df = df[df["detector"].isin(detectors)]
        df.insert(0, "base rate", k / n if n else None)
        df.insert(0, "reliant", k)
        df.insert(0, "scored", n)
        df.insert(0, "threshold", thr.name)
        df.insert(0, "draws", draws)
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def auc_table(results: dict) -> pd.DataFrame:
    """ROC AUC of ORMR's S_p, S_r and S (ranking value -S: low S read as reliant) against the swap-flip rate
    binarised at each threshold, at each draw count: per single-label model and pooled over both.  Inferences
    without the score (undefined distance) are left out; ``pos`` / ``neg`` count those scored."""
    rows = []
    for model in (*MODELS, None):
        for draws, thr in settings(results):
            pairs = []
            for s in results["seeds"]:
                for name in MODELS:
                    if model not in (None, name):
                        continue
                    m = s["models"][name]
                    rel = m.get("relevancy", {})
                    for sid, d in m["truth"].items():
                        r = Reliance.from_dict(d)
                        if r.correct and sid in rel:
                            pairs.append((rel[sid], thr.holds(r.swap_rate(draws))))
            row = {"model": model or "both", "draws": draws, "threshold": thr.name}
            for i, score in enumerate(RELEVANCY_SCORES):
                kept = [(v[i], y) for v, y in pairs if v[i] is not None]
                row[f"AUC {score}"] = roc_auc([-v for v, _ in kept], [y for _, y in kept])
            row["pos"] = sum(y for _, y in pairs)
            row["neg"] = len(pairs) - row["pos"]
            rows.append(row)
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
    """Every share of every seed (DetReport Tables 5-6): validation figures pick the share."""
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


def multi_label_scores(results: dict, model: str | None = None, draws: int | None = None,
                       threshold: Threshold = THRESHOLDS[0]) -> list[DetectorScore]:
    """The multi-label arm's detector scores for ``model`` (None: both) summed over seeds at ``draws`` (None: every
    draw made) and ``threshold`` (empty when it was not run)."""
    return scores_at(results, "multi", model, draws, threshold)


def detection_scores(results: dict, draws: int | None = None, threshold: Threshold = THRESHOLDS[0]
                     ) -> list[DetectorScore]:
    """The detection arm's detector scores summed over seeds at ``draws`` and ``threshold`` (empty when it was not
    run)."""
    return scores_at(results, "detection", None, draws, threshold)


def detection_totals(results: dict) -> dict | None:
    """Units, detected (T = 1) units, reliant ones and the planted rule's agreement with the truth, summed over
    seeds; None when the detection arm was not run."""
    arms = [s["detection"] for s in results["seeds"] if "detection" in s]
    if not arms:
        return None
    own = [UnitReliance.from_dict(d) for a in arms for d in a["truth"].values()]
    return {"units": sum(a["reliance"]["evaluated"] for a in arms),
            "detected": sum(a["reliance"]["correct"] for a in arms),
            "reliant": sum(a["reliance"]["reliant"] for a in arms),
            "own_background_detects": sum(r.correct and r.own_alone for r in own),
            "planted": sum(a["planted"]["planted"] for a in arms),
            "agree": sum(a["planted"]["agree"] for a in arms)}


def tables(results: dict) -> dict[str, pd.DataFrame]:
    """Every table of the report, by name (``ratios``, ``scores_<model>``, ``scores_both``, ``repair``, ...)."""
    out = {"ratios": ratio_table(results)}
    out["scores_multi"] = score_table(multi_label_scores(results))
    out["scores_detection"] = score_table(detection_scores(results))
    for model in (*MODELS, None):
        out[f"scores_{model or 'both'}"] = score_table(pooled_scores(results, model))
        out[f"curve_{model or 'both'}"] = curve_table(results, "single", model)
        if any("multi_label" in s for s in results["seeds"]):
            out[f"curve_multi_{model or 'both'}"] = curve_table(results, "multi", model)
    out["curve_detection"] = curve_table(results, "detection", None)
    out["auc"] = auc_table(results)
    out["scores_matched_both"] = score_table(pooled_scores(results, None, "matched"))
    out["repair"] = repair_table(results)
    out["sweep"] = sweep_table(results)
    out["attack"] = attack_table(results)
    return out
