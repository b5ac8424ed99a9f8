"""The planted-shortcut benchmark's report: the tables of ``tables`` as the text ``objrel bench shortcut`` prints."""

from __future__ import annotations

import pandas as pd

from objrel.studies.shortcut.groundtruth import THRESHOLDS
from objrel.studies.shortcut.results import MODELS
from objrel.studies.shortcut.tables import (curve_table, detection_totals, max_draws, scores_at, settings,
                                            tables)

COUNT_COLUMNS = ("correct", "added", "attempts", "successes", "pairs", "pairs guided > random")
# The detectors whose curve is printed with intervals (every detector gets the compact table).
CURVE_DETECTORS = ("MR-1 3 colours", "MR-2 3 colours", "MR-1 ∪ MR-2 3 colours")
SETTING_NOTE = ("draws: pool backgrounds per other class's type; threshold any: reliance rate > 0 (some swap flips "
                "the answer), majority: rate >= 0.5; reliance rate = the larger of the swap-flip rate and the "
                "background-sufficiency rate; base: reliant / scored correct inferences, what flagging everything "
                "scores as precision")


def _fmt(df: pd.DataFrame) -> str:
    """Ratios with 3 decimals; counts as integers (means of counts with one decimal)."""
    def cell(v, count):
        if isinstance(v, float):
            if v != v:
                return "-"
            if count:
                return f"{v:.0f}" if v.is_integer() else f"{v:.1f}"
            return f"{v:.3f}"
        return "-" if v is None else str(v)

    if not len(df):
        return "(empty)"
    view = pd.DataFrame({c: [cell(v, c in COUNT_COLUMNS) for v in df[c]] for c in df.columns})
    return view.to_string(index=False)


def _pct(v) -> str:
    return "-" if v is None or v != v else f"{100 * v:.0f}"


def _score_fmt(df: pd.DataFrame) -> str:
    """Detector counts and precision / recall in percent with their 95% intervals (and the note, when any)."""
    if not len(df):
        return "(empty)"
    cols = {}
    for c in ("draws", "threshold"):
        if c in df.columns:
            cols[c] = df[c]
    if "base rate" in df.columns:
        cols["base % (reliant/scored)"] = [f"{_pct(b)} ({k}/{n})" for b, k, n in
                                            zip(df["base rate"], df["reliant"], df["scored"])]
    cols.update({
        "detector": df["detector"], "TP": df["TP"], "FP": df["FP"], "FN": df["FN"], "TN": df["TN"],
        "precision % [95% CI]": [f"{_pct(p)} [{_pct(lo)}, {_pct(hi)}]" for p, lo, hi in
                                 zip(df["precision"], df["precision_lo"], df["precision_hi"])],
        "recall % [95% CI]": [f"{_pct(p)} [{_pct(lo)}, {_pct(hi)}]" for p, lo, hi in
                              zip(df["recall"], df["recall_lo"], df["recall_hi"])],
    })
    if "note" in df.columns and any(df["note"]):
        cols["note"] = df["note"]
    return pd.DataFrame(cols).to_string(index=False)


def _compact(results: dict, arm: str, model: str | None, kind: str = "reliant") -> str:
    """Every detector, one column per setting: precision / recall in percent."""
    cells: dict[str, dict[str, str]] = {}
    order: list[str] = []
    for draws, thr in settings(results):
        col = f"d{draws} {thr.name}"
        for sc in scores_at(results, arm, model, draws, thr, kind):
            if sc.detector not in cells:
                cells[sc.detector] = {}
                order.append(sc.detector)
            cells[sc.detector][col] = f"{_pct(sc.precision)}/{_pct(sc.recall)}"
    if not order:
        return "(empty)"
    return pd.DataFrame([{"detector (precision/recall %)": d, **cells[d]} for d in order]).to_string(index=False)


def _auc_fmt(df: pd.DataFrame) -> str:
    if not len(df):
        return "(empty)"
    view = df.copy()
    for c in [c for c in df.columns if c.startswith("AUC")]:
        view[c] = ["-" if v is None or v != v else f"{v:.3f}" for v in df[c]]
    return view.to_string(index=False)


def report_text(results: dict) -> str:
    """The report of the results file's JSON object ``results``: every section, then the times."""
    t = tables(results)
    n = len(results["seeds"])
    cfg = results["config"]
    lines = [f"objrel planted-shortcut benchmark ({'quick' if cfg['quick'] else 'full'}; "
             f"{n} seed{'s' if n > 1 else ''}; K={cfg['n_classes']}, rho={cfg['rho']} "
             f"vs 1/K; plan {cfg['plan']}; {max_draws(results)} counterfactual draws per other type; thresholds "
             + ", ".join(f"{th.name} ({th.label})" for th in THRESHOLDS) + ")", "",
             "1. Flag ratios on the test split (3-colour votes, over correct inferences) and ground-truth reliance "
             "(any swap flips, every draw)", _fmt(t["ratios"]), ""]
    for model in (*MODELS, "both"):
        lines += [f"2. Precision / recall against ground-truth background reliance: {model} model"
                  f"{'s pooled' if model == 'both' else ''} (summed over seeds; Wilson 95% intervals), at every "
                  "draw count and threshold", f"   {SETTING_NOTE}",
                  _score_fmt(curve_table(results, "single", None if model == "both" else model, CURVE_DETECTORS)),
                  "", f"   every detector, {model}{' models pooled' if model == 'both' else ' model'} "
                  "(precision/recall %):", _compact(results, "single", None if model == "both" else model), ""]
    lines += ["2b. Same, each relation against its own facet (MR-2: swap-flip rate; MR-1: background-sufficiency "
              "rate), both models pooled (precision/recall %)", _compact(results, "single", None, "matched"), "",
              "2c. ROC AUC of ORMR's relevancy scores against the swap-flip rate binarised at each threshold "
              "(ranking value -S: a low S, object irrelevant, read as reliant; 0.5 = chance; pos / neg: correct "
              "inferences with and without the flip)", _auc_fmt(t["auc"]), ""]
    lines += ["3. Repair of the biased model (DetReport s4.5) on the test split: before, control (fine-tuned without "
              "mutants), after (fine-tuned with the kept share of violating mutants)", _fmt(t["repair"]), "",
              "3b. Share search (validation picks the share; test and swapped shown for every share)",
              _fmt(t["sweep"]), "",
              "4. Transplanting attack (ORMR s VIII): successes summed over seeds", _fmt(t["attack"]), ""]
    if cfg.get("multi_label") and any("multi_label" in s for s in results["seeds"]):
        lines += ["5. Multi-label scenes (EMSE21 s4.4 multi-label relations; test scenes at rho, models trained at "
                  "rho (biased) and 1/K (unbiased)): precision / recall of MR-1, MR-2 and MR-1 ∪ MR-2 against "
                  "ground-truth reliance (summed over seeds; Wilson 95% intervals)"]
        for model in (*MODELS, "both"):
            lines += [f"   multi-label {model}{' models pooled' if model == 'both' else ' model'}:",
                      _score_fmt(t[f"curve_multi_{model}"]), ""]
    det = detection_totals(results)
    if cfg.get("detection") and det is not None:
        lines += ["6. Detection scenes: a construction demo, not a measurement. The stand-in detector is a rule "
                  "(planted.py), not a trained model: it names small objects by the background colour and large "
                  "ones by their outline, so MR-2's colour fills (which change what the rule reads) find its "
                  "reliance by construction; no figure here is a headline. Precision / recall of MR-1, MR-2 and "
                  "MR-1 ∪ MR-2 over detected units (T = 1) against counterfactual reliance (summed over seeds; "
                  "Wilson 95% intervals); the note column marks figures the counts fix",
                  f"   {det['detected']} of {det['units']} units detected, {det['reliant']} reliant by the "
                  f"counterfactuals (any, every draw); the planted rule names {det['planted']} from the background "
                  f"and agrees with the counterfactual truth on {det['agree']} of {det['detected']}",
                  f"   the scene's own background alone yields the unit's detection for {det['own_background_detects']}"
                  f" of {det['detected']} units"
                  + (": background-sufficient is never true here, so MR-1 is scored against swaps alone"
                     if det["own_background_detects"] == 0 else ""),
                  _score_fmt(t["curve_detection"]), ""]
    secs = results["timings"]
    lines.append("Times: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()))
    return "\n".join(lines)
