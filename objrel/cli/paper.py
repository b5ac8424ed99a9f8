"""``objrel paper-check``: EMSE21's published review counts (s5.1, Tables 1-3) fed through objrel's own
precision and Cochran code, each reproduced figure printed beside the published one.

    objrel paper-check [--json]

Every check is one row: the table, the row, the quantity, the published figure, objrel's figure and a
status: ``ok`` (the same at the paper's precision), or ``MISMATCH`` with a note and a group that says what
kind of mismatch it is:

* ``error in the paper``: the paper's own figures disagree, whatever anyone assumes (Table 2's MobileNet
  row: 351 + 0 + 16 = 367 calls for a sample of 364; its Total prints 8 of 1,069 as 0.07%, which is 0.75%);
* ``carried over``: a figure wrong only because it sums an error above (Table 2's Total calls, 1,072
  for 1,069: exactly MobileNet's 3 extra calls);
* ``rests on an assumption``: objrel's figure needs a value the paper does not state, and the note names
  it.  s5.1.2 gives the Cochran formula "with 95% confidence level" only; objrel takes a margin e = 0.05
  and p = 0.5 (the usual choice, and Tables 2 and 3 match it), and Table 1's sizes do not follow from
  them: the note gives the margin each would need.

The exit status is 0: the mismatches are findings about the paper, not errors of the command.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass

from objrel.review.agreement import _pct as precision_percent  # objrel's precision: 100 k / n, 1 decimal
from objrel.review.sampling import cochran_sample_size

OK, MISMATCH = "ok", "MISMATCH"
# What a mismatch is (``Check.group``), in the order the report lists them.
PAPER_ERROR = "error in the paper"
CARRIED = "carried over"
ASSUMPTION = "rests on an assumption"
GROUPS = (PAPER_ERROR, CARRIED, ASSUMPTION)
GROUP_HEADINGS = {
    PAPER_ERROR: "Errors in the paper (its own figures disagree)",
    CARRIED: "Errors carried over (a figure that sums an error above)",
    ASSUMPTION: "Figures that rest on an assumption the paper does not state",
}
# What objrel assumes for Cochran's formula beyond the 95% confidence level s5.1.2 states.
COCHRAN_MARGIN, COCHRAN_P = 0.05, 0.5
COCHRAN_ASSUMED = f"e = {COCHRAN_MARGIN}, p = {COCHRAN_P}"

# EMSE21 Table 1 (MR-1, single-label; ImageNet): model, total flagged, sample size, true positive (its
# printed %), false positive reasons multiple / incomplete / others, cases with both of the first two,
# uncertain.
TABLE_1 = (
    ("NASNetLarge", 826, 311, 202, 65.0, 84, 16, 4, 1, 6),
    ("ResNet101", 344, 194, 122, 62.9, 55, 8, 8, 2, 3),
    ("MobileNet", 222, 149, 95, 63.8, 42, 8, 3, 1, 2),
)
TABLE_1_TOTAL = {"total": 1392, "sample": 654, "tp": 419, "tp_pct": 64.1, "multiple": 181, "multiple_pct": 27.7,
                 "incomplete": 32, "incomplete_pct": 4.9, "others": 15, "uncertain": 11}
# EMSE21 Table 2 (MR-2, single-label): model, total, sample size, true positive (its %), false positive,
# uncertain.
TABLE_2 = (
    ("NASNetLarge", 3634, 348, 339, 97.4, 1, 8),
    ("ResNet101", 4942, 357, 340, 95.2, 7, 10),
    ("MobileNet", 6622, 364, 351, 96.4, 0, 16),
)
TABLE_2_TOTAL = {"total": 15198, "sample": 1069, "tp": 1030, "tp_pct": 96.4, "fp": 8, "fp_pct": 0.07,
                 "uncertain": 34}
# EMSE21 Table 3 (TResNet-XL, multi-label, COCO): relation, total, sample size, true positive (its %),
# false positive, uncertain.
TABLE_3 = (
    ("MR-1", 957, 275, 215, 78.2, 44, 16),
    ("MR-2", 4732, 356, 308, 86.5, 30, 18),
)


@dataclass(frozen=True)
class Check:
    table: str
    row: str
    quantity: str
    published: float
    reproduced: float
    status: str
    note: str = ""
    group: str = ""      # one of GROUPS for a mismatch, "" when the figure is reproduced


def _same(published: float, reproduced: float, decimals: int) -> bool:
    return round(float(reproduced), decimals) == round(float(published), decimals)


def _check(table, row, quantity, published, reproduced, decimals=0, note="", group=PAPER_ERROR) -> Check:
    ok = _same(published, reproduced, decimals)
    return Check(table, row, quantity, published, reproduced, OK if ok else MISMATCH, "" if ok else note,
                 "" if ok else group)


def implied_margin(population: int, sample: int, confidence: float = 0.95, p: float = COCHRAN_P) -> float:
    """The margin e for which Cochran's formula (finite population correction) gives ``sample`` of ``population``:
    n0 = n (N - 1) / (N - n), e = z sqrt(p (1 - p) / n0)."""
    if not 0 < sample < population:
        raise ValueError(f"sample must lie strictly between 0 and the population {population}; got {sample}")
    from scipy.stats import norm

    z = float(norm.ppf(1 - (1 - confidence) / 2))
    n0 = sample * (population - 1) / (population - sample)
    return z * math.sqrt(p * (1 - p) / n0)


def _cochran(table, row, total, sample) -> Check:
    n = cochran_sample_size(total, margin=COCHRAN_MARGIN, p=COCHRAN_P)
    return _check(table, row, f"sample size (Cochran, 95%, {COCHRAN_ASSUMED})", sample, n, 0,
                  f"Cochran's formula gives {n} of {total}, the paper drew {sample}; s5.1.2 states 95% confidence "
                  f"but not {COCHRAN_ASSUMED}; {sample} needs e = {implied_margin(total, sample):.3f}", ASSUMPTION)


def checks() -> list[Check]:
    """Every figure of EMSE21 Tables 1-3 that objrel can recompute from the others."""
    out: list[Check] = []
    # ---- Table 1: MR-1, single-label
    t = "Table 1"
    for model, total, sample, tp, tp_pct, mult, inc, oth, both, unc in TABLE_1:
        out.append(_cochran(t, model, total, sample))
        fp = mult + inc + oth - both  # an item with both reasons is counted under each
        out.append(_check(t, model, "tp + fp + uncertain = sample size", sample, tp + fp + unc, 0,
                          "the row's calls do not add up to its sample size"))
        out.append(_check(t, model, "true positive %", tp_pct, precision_percent(tp, sample), 1,
                          "precision differs from tp / sample size"))
    tot = TABLE_1_TOTAL
    out.append(_check(t, "Total", "total flagged", tot["total"], sum(r[1] for r in TABLE_1)))
    out.append(_check(t, "Total", "sample size", tot["sample"], sum(r[2] for r in TABLE_1)))
    out.append(_check(t, "Total", "true positive", tot["tp"], sum(r[3] for r in TABLE_1)))
    out.append(_check(t, "Total", "true positive %", tot["tp_pct"], precision_percent(tot["tp"], tot["sample"]), 1))
    for key, i in (("multiple", 5), ("incomplete", 6), ("others", 7)):
        out.append(_check(t, "Total", key, tot[key], sum(r[i] for r in TABLE_1)))
    for key in ("multiple", "incomplete"):
        out.append(_check(t, "Total", f"{key} %", tot[f"{key}_pct"], precision_percent(tot[key], tot["sample"]), 1))
    out.append(_check(t, "Total", "uncertain", tot["uncertain"], sum(r[9] for r in TABLE_1)))
    # ---- Table 2: MR-2, single-label
    t = "Table 2"
    for model, total, sample, tp, tp_pct, fp, unc in TABLE_2:
        out.append(_cochran(t, model, total, sample))
        out.append(_check(t, model, "tp + fp + uncertain = sample size", sample, tp + fp + unc, 0,
                          f"{tp} + {fp} + {unc} = {tp + fp + unc}, not the sample size {sample}"))
        out.append(_check(t, model, "true positive %", tp_pct, precision_percent(tp, sample), 1,
                          "precision differs from tp / sample size"))
    tot = TABLE_2_TOTAL
    for key, i in (("total", 1), ("sample", 2), ("tp", 3), ("fp", 5), ("uncertain", 6)):
        out.append(_check(t, "Total", key, tot[key], sum(r[i] for r in TABLE_2), 0,
                          "the Total is not the sum of the rows"))
    calls = tot["tp"] + tot["fp"] + tot["uncertain"]
    excess = {model: tp + fp + unc - sample for model, _, sample, tp, _, fp, unc in TABLE_2}
    off_rows = [m for m, x in excess.items() if x]
    carried = bool(off_rows) and calls - tot["sample"] == sum(excess.values())
    note = (f"{tot['tp']} + {tot['fp']} + {tot['uncertain']} = {calls}, not the sample size {tot['sample']}: the "
            "totals do not add up")
    if carried:
        note += (f"; the {calls - tot['sample']} extra calls are those of {', '.join(off_rows)} "
                 f"({', '.join(f'{excess[m]:+d}' for m in off_rows)}) summed into the Total")
    out.append(_check(t, "Total", "tp + fp + uncertain = sample size", tot["sample"], calls, 0, note,
                      CARRIED if carried else PAPER_ERROR))
    out.append(_check(t, "Total", "true positive %", tot["tp_pct"], precision_percent(tot["tp"], tot["sample"]), 1))
    fp_pct = 100.0 * tot["fp"] / tot["sample"]
    out.append(_check(t, "Total", "false positive %", tot["fp_pct"], round(fp_pct, 2), 2,
                      f"{tot['fp']} of {tot['sample']} is {fp_pct:.2f}%, printed as {tot['fp_pct']}%"))
    # ---- Table 3: TResNet-XL, multi-label
    t = "Table 3"
    for rel, total, sample, tp, tp_pct, fp, unc in TABLE_3:
        out.append(_cochran(t, rel, total, sample))
        out.append(_check(t, rel, "tp + fp + uncertain = sample size", sample, tp + fp + unc, 0,
                          "the row's calls do not add up to its sample size"))
        out.append(_check(t, rel, "true positive %", tp_pct, precision_percent(tp, sample), 1,
                          "precision differs from tp / sample size"))
    return out


def _fmt(x: float) -> str:
    return f"{x:g}" if float(x) != int(x) else f"{int(x):,}"


def render(rows: list[Check]) -> str:
    """The checks as an aligned text table, followed by the paper's own inconsistencies."""
    head = ("table", "row", "quantity", "published", "objrel", "status")
    body = [(c.table, c.row, c.quantity, _fmt(c.published), _fmt(c.reproduced), c.status) for c in rows]
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip()  # noqa: E731
    out = [line(head), line(tuple("-" * w for w in widths))] + [line(r) for r in body]
    bad = [c for c in rows if c.status == MISMATCH]
    out.append("")
    out.append(f"{len(rows) - len(bad)} of {len(rows)} published figures reproduced; {len(bad)} not:")
    for group in GROUPS:
        found = [c for c in bad if c.group == group]
        if found:
            out.append(f"{GROUP_HEADINGS[group]}: {len(found)}")
            out += [f"  - {c.table}, {c.row}: {c.quantity}: {c.note}" for c in found]
    return "\n".join(out)


def handle(args: argparse.Namespace) -> int:
    """``objrel paper-check``: print the recomputed published figures as a table or JSON."""
    rows = checks()
    if args.json:
        print(json.dumps([asdict(c) for c in rows], indent=2))
    else:
        print("Tian et al. (EMSE 2021) s5.1, Tables 1-3, recomputed with objrel's precision and Cochran code")
        print(render(rows))
    return 0


def add_paper_command(subparsers) -> argparse.ArgumentParser:
    """Add ``paper-check``; returns its parser."""
    p = subparsers.add_parser("paper-check", help="recompute EMSE21's published review figures (Tables 1-3) "
                              "with objrel's precision and Cochran code and flag the paper's inconsistencies")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.set_defaults(fn=handle)
    return p
