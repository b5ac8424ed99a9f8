"""Where the planted benchmark's pairs rank in an inspection result (``objrel.studies.deepinspect.planted``
trains the model that plants them).  Plain numbers over a result: no model library is needed to read them.
"""

from __future__ import annotations

from objrel.studies.deepinspect.result import pair_rank

# The planted pairs: the confusion the benchmark plants and the pair it biases.
CONFUSION_PAIR = ("disc", "blush")
BIAS_PAIR = ("tagged", "stripes")


def planted_ranks(result) -> dict:
    """Where the planted pairs rank, by DeepInspect's scores and by the ground truth.

    Returns ``{"confusion": {...}, "bias": {...}}``, each with ``pair``, ``n_pairs``, the
    DeepInspect rank (``napvd`` / ``avg_bias``), the ground-truth rank (``type1`` /
    ``avg_cd``) and whether DeepInspect flags it; ranks are 1-based, None when a class of
    the pair was never predicted (then it has no activation column).
    """
    out = {}
    n_pairs = result.n_classes * (result.n_classes - 1) // 2
    for kind, pair, score, truth in (("confusion", CONFUSION_PAIR, "napvd", "error"),
                                     ("bias", BIAS_PAIR, "avg_bias", "avg_cd")):
        row = {"pair": list(pair), "n_pairs": n_pairs, score: None, "ground_truth": None, "flagged": None}
        if all(c in result.class_names for c in pair):
            row[score] = pair_rank(result, *pair, score=score)
            if result.ground_truth is not None:
                row["ground_truth"] = pair_rank(result, *pair, score=truth)
            i, j = result.position(pair[0]), result.position(pair[1])
            row["flagged"] = bool(result.napvd[i, j] < result.confusion_cutoff if kind == "confusion"
                                  else result.avg_bias[i, j] > result.bias_cutoff)
        out[kind] = row
    return out


def format_planted_ranks(ranks: dict) -> list[str]:
    """Lines for a terminal: one per planted pair."""
    lines = []
    for kind, score, truth in (("confusion", "napvd", "type1 confusion"), ("bias", "avg_bias", "avg_cd")):
        r = ranks[kind]
        a, b = r["pair"]
        if r[score] is None:
            lines.append(f"planted {kind} ({a}, {b}): not ranked, a class of the pair was never predicted")
            continue
        gt = "-" if r["ground_truth"] is None else f"{r['ground_truth']} of {r['n_pairs']}"
        lines.append(f"planted {kind} ({a}, {b}): rank {r[score]} of {r['n_pairs']} by {score}"
                     f"{' (flagged)' if r['flagged'] else ' (not flagged)'}; ground truth rank by {truth}: {gt}")
    return lines
