"""The planted-shortcut benchmark's report: the tables of ``tables`` as the text ``objrel bench shortcut`` prints."""

from __future__ import annotations

import pandas as pd

from objrel.studies.shortcut.results import MODELS
from objrel.studies.shortcut.tables import detection_totals, tables

COUNT_COLUMNS = ("correct", "added", "attempts", "successes", "pairs", "pairs guided > random")


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


def _score_fmt(df: pd.DataFrame) -> str:
    """Detector counts and precision / recall in percent with their 95% intervals."""
    if not len(df):
        return "(empty)"
    pct = lambda v: "-" if v is None or v != v else f"{100 * v:.0f}"  # noqa: E731
    view = pd.DataFrame({
        "detector": df["detector"], "TP": df["TP"], "FP": df["FP"], "FN": df["FN"], "TN": df["TN"],
        "precision % [95% CI]": [f"{pct(p)} [{pct(lo)}, {pct(hi)}]" for p, lo, hi in
                                 zip(df["precision"], df["precision_lo"], df["precision_hi"])],
        "recall % [95% CI]": [f"{pct(p)} [{pct(lo)}, {pct(hi)}]" for p, lo, hi in
                              zip(df["recall"], df["recall_lo"], df["recall_hi"])],
    })
    return view.to_string(index=False)


def report_text(results: dict) -> str:
    """The report of the results file's JSON object ``results``: every section, then the times."""
    t = tables(results)
    n = len(results["seeds"])
    lines = [f"objrel planted-shortcut benchmark ({'quick' if results['config']['quick'] else 'full'}; "
             f"{n} seed{'s' if n > 1 else ''}; K={results['config']['n_classes']}, rho={results['config']['rho']} "
             f"vs 1/K; plan {results['config']['plan']})", "",
             "1. Flag ratios on the test split (3-colour votes, over correct inferences) and ground-truth reliance",
             _fmt(t["ratios"]), ""]
    for model in (*MODELS, "both"):
        lines += [f"2. Precision / recall against ground-truth background reliance: {model} model"
                  f"{'s pooled' if model == 'both' else ''} (summed over seeds; Wilson 95% intervals)",
                  _score_fmt(t[f"scores_{model}"]), ""]
    lines += ["2b. Same, each relation against its own facet (MR-2: swap-dependent; MR-1: background-sufficient), "
              "both models pooled", _score_fmt(t["scores_matched_both"]), ""]
    lines += ["3. Repair of the biased model (seed 001 s4.5) on the test split: before, control (fine-tuned without "
              "mutants), after (fine-tuned with the kept share of violating mutants)", _fmt(t["repair"]), "",
              "3b. Share search (validation picks the share; test and swapped shown for every share)",
              _fmt(t["sweep"]), "",
              "4. Transplanting attack (seed 002 s VIII): successes summed over seeds", _fmt(t["attack"]), ""]
    if results["config"].get("multi_label"):
        lines += ["5. Multi-label scenes (biased multi-label model, seed 000 s4.4 multi-label relations): precision / "
                  "recall of MR-1, MR-2 and MR-1 ∪ MR-2 against ground-truth reliance (summed over seeds; Wilson 95% "
                  "intervals)", _score_fmt(t["scores_multi"]), ""]
    det = detection_totals(results)
    if results["config"].get("detection") and det is not None:
        lines += ["6. Detection scenes (planted stand-in detector: small objects named by the background colour, "
                  "large ones by their outline; flat-colour scenes): precision / recall of MR-1, MR-2 and MR-1 ∪ "
                  "MR-2 over detected units (T = 1) against counterfactual reliance (summed over seeds; Wilson 95% "
                  "intervals)",
                  f"   {det['detected']} of {det['units']} units detected, {det['reliant']} reliant by the "
                  f"counterfactuals; the planted rule names {det['planted']} from the background and agrees with "
                  f"the counterfactual truth on {det['agree']} of {det['detected']}",
                  _score_fmt(t["scores_detection"]), ""]
    secs = results["timings"]
    lines.append("Times: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()))
    return "\n".join(lines)

