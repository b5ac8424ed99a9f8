"""Parameter sweeps: violations per mutation ratio or variance (DetReport s5.1, Tables 3-4).

A sweep is one detection run whose plan has one single-mutation vote group (k = 1) per setting
of one operator parameter, so it is stored, resumable and reviewable like any run; the table
counts, per setting, the units whose check was violated (split into missing and incorrect
detections for MR-2, "still detected" for MR-1) and those whose check held.

Defaults follow DetReport: random erase (MR-1) and object noise (MR-2, variance 160) over the
mutation ratios 0.1 ... 0.9; background noise (MR-2) over a variance grid.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from objrel.relations import common as C
from objrel.mutations import Mutation, Plan, VoteGroup, get_operator
from objrel.store import Store
from objrel.store import detections as D
from objrel.config import DetectionConfig
from objrel.engine.detect import DetectionEngine
from objrel.relations.detect import INCORRECT_DETECTION, MISSING_DETECTION, STILL_DETECTED

RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
# Background-noise variances in 0-255 pixel units squared (std 10 ... 128).
BACKGROUND_VARIANCES = (100.0, 400.0, 1600.0, 2500.0, 6400.0, 16384.0)
# operator -> (swept parameter, default values, fixed parameters)
SWEEP_DEFAULTS = {
    "random_erase": ("ratio", RATIOS, {}),
    "object_noise": ("ratio", RATIOS, {"variance": 160.0}),   # DetReport s5.1.1: variance 160, ratio 0.1-0.9
    "background_noise": ("variance", BACKGROUND_VARIANCES, {}),
}


def sweep_plan(operator: str, param: str, values, fixed: dict | None = None, dilate: int = 0) -> Plan:
    """One group per value: ``"<operator> <param>=<value>"``, one mutation, flagged when violated (k = 1)."""
    op = get_operator(operator)
    if not values:
        raise ValueError(f"a sweep needs at least one value of {param!r}, got {values!r}")
    fixed = dict(fixed or {})
    if param in fixed:
        raise ValueError(f"parameter {param!r} is swept; it cannot also be fixed ({fixed})")
    groups = []
    for v in values:
        m = Mutation.of(operator, **{**fixed, param: float(v)})
        groups.append(VoteGroup(f"{operator} {param}={float(v):g}", op.relation, (m,), 1))
    return Plan(tuple(groups), dilate)


@dataclass(frozen=True)
class SweepRow:
    """One setting: ``units`` checked; ``violating`` = ``missing`` + ``incorrect`` (MR-2) or ``still_detected``
    (MR-1); ``not_violating`` held; ``not_applicable`` n/a (MR-1 on units not detected on the source)."""

    value: float
    mutation: str
    relation: str
    units: int
    violating: int
    missing: int
    incorrect: int
    still_detected: int
    not_violating: int
    not_applicable: int

    def to_dict(self) -> dict:
        """The row as a dict."""
        return asdict(self)


@dataclass(frozen=True)
class SweepResult:
    run_id: int
    detector: str
    dataset: str
    operator: str
    param: str
    relation: str
    rows: tuple[SweepRow, ...]

    def to_dict(self) -> dict:
        """The sweep as a JSON-ready dict, its rows included."""
        d = asdict(self)
        d["rows"] = [r.to_dict() for r in self.rows]
        return d

    def table(self) -> str:
        """Plain-text table in the layout of DetReport Tables 3-4."""
        if self.relation == "MR-2":
            head = [self.param, "units", "violating: missing", "violating: incorrect", "not violating"]
            body = [[f"{r.value:g}", r.units, r.missing, r.incorrect, r.not_violating] for r in self.rows]
        else:
            head = [self.param, "units", "violating: still detected", "not violating: removed",
                    "n/a (not detected)"]
            body = [[f"{r.value:g}", r.units, r.still_detected, r.not_violating, r.not_applicable]
                    for r in self.rows]
        widths = [max(len(str(h)), *(len(str(b[i])) for b in body)) for i, h in enumerate(head)]
        line = lambda cells: " | ".join(str(c).rjust(w) for c, w in zip(cells, widths))  # noqa: E731
        out = [f"sweep of {self.operator}({self.param}) [{self.relation}] - {self.detector} on {self.dataset} "
               f"(run {self.run_id})", line(head), "-+-".join("-" * w for w in widths)]
        out += [line(b) for b in body]
        return "\n".join(out)

    def markdown(self) -> str:
        """The sweep table as a Markdown table."""
        lines = self.table().splitlines()
        head, body = lines[1], lines[3:]
        md = ["| " + " | ".join(c.strip() for c in head.split("|")) + " |",
              "|" + "|".join(" ---: " for _ in head.split("|")) + "|"]
        md += ["| " + " | ".join(c.strip() for c in b.split("|")) + " |" for b in body]
        return "\n".join(md)


def sweep_table(store: Store, run_id: int) -> SweepResult:
    """The sweep table of a stored sweep run (its plan's groups are the settings)."""
    run = store.get_run(run_id)
    if not D.is_detection_run(run):
        raise ValueError(f"run {run_id} is a {run.task!r} run; sweeps are detection runs")
    plan = Plan.from_dict(run.plan)
    muts = [g.mutations[0] for g in plan.groups]
    ops = {m.operator for m in muts}
    if len(ops) != 1 or any(len(g.mutations) != 1 for g in plan.groups):
        raise ValueError(f"run {run_id} is not a sweep: expected one mutation per group of one operator, "
                         f"got groups {[g.name for g in plan.groups]}")
    swept = _swept_param(muts)
    counts: dict[str, list[D.OutcomeCount]] = {m.key: [] for m in muts}
    for c in D.outcome_counts(store, run_id):
        if c.mutation_key in counts:
            counts[c.mutation_key].append(c)
    rows = []
    for m in muts:
        def count(pred, cs=counts[m.key]) -> int:
            return sum(c.n for c in cs if pred(c))
        rows.append(SweepRow(float(m.kwargs[swept]), m.key, m.relation, count(lambda c: True),
                             count(lambda c: c.verdict == C.VIOLATED),
                             count(lambda c: c.outcome == MISSING_DETECTION),
                             count(lambda c: c.outcome == INCORRECT_DETECTION),
                             count(lambda c: c.outcome == STILL_DETECTED),
                             count(lambda c: c.verdict == C.HOLDS),
                             count(lambda c: c.verdict == C.NOT_APPLICABLE)))
    op = next(iter(ops))
    return SweepResult(run_id, run.model, run.dataset, op, swept, rows[0].relation if rows else "", tuple(rows))


def _swept_param(muts: list[Mutation]) -> str:
    keys = sorted({k for m in muts for k, _ in m.params})
    varying = [k for k in keys if len({dict(m.params).get(k) for m in muts}) > 1]
    if len(varying) == 1:
        return varying[0]
    if len(muts) == 1 and keys:
        for op, (param, _, _) in SWEEP_DEFAULTS.items():
            if op == muts[0].operator and param in keys:
                return param
        return keys[0]
    raise ValueError(f"cannot tell the swept parameter of {[m.key for m in muts]}")


def run_sweep(store: Store, config: DetectionConfig, operator: str, param: str | None = None, values=None,
              fixed: dict | None = None, detector=None, dataset=None, progress=None) -> SweepResult:
    """Run ``operator`` at every value of ``param`` over the units of ``config``'s detector and dataset.

    param / values / fixed default to ``SWEEP_DEFAULTS[operator]``; returns the table (also rebuildable later
    with ``sweep_table(store, run_id)``)."""
    if operator not in SWEEP_DEFAULTS and (param is None or values is None):
        raise ValueError(f"operator {operator!r} has no default sweep; give param and values "
                         f"(defaults exist for {sorted(SWEEP_DEFAULTS)})")
    d_param, d_values, d_fixed = SWEEP_DEFAULTS.get(operator, (param, values, {}))
    param = param or d_param
    values = tuple(values) if values else d_values
    fixed = d_fixed if fixed is None and param == d_param else dict(fixed or {})
    plan = sweep_plan(operator, param, values, fixed, dilate=config.dilate)
    name = config.name or f"sweep {operator}({param}) - {config.detector} on {config.dataset or config.images}"
    engine = DetectionEngine(store, config.replace(name=name), detector=detector, dataset=dataset, plan=plan)
    report = engine.execute(progress=progress)
    return sweep_table(store, report.run_id)


def plot_sweep(result: SweepResult, path) -> Path:
    """Stacked bars of the violations per setting (missing + incorrect for MR-2, still detected for MR-1)
    beside the units that did not violate; written as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    labels = [f"{r.value:g}" for r in result.rows]
    x = range(len(labels))
    fig, ax = plt.subplots(figsize=(max(5.0, 0.7 * len(labels) + 2), 3.6), dpi=120)
    if result.relation == "MR-2":
        miss = [r.missing for r in result.rows]
        inc = [r.incorrect for r in result.rows]
        ax.bar(x, miss, color="#d62728", label="missing detection")
        ax.bar(x, inc, bottom=miss, color="#ff7f0e", label="incorrect detection")
    else:
        ax.bar(x, [r.still_detected for r in result.rows], color="#d62728", label="still detected (violates MR-1)")
    ax.plot(list(x), [r.not_violating for r in result.rows], "o-", color="#2ca02c", label="not violating")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels)
    ax.set_xlabel(result.param)
    ax.set_ylabel("units")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{result.operator}: {result.relation} violations per {result.param}\n{result.detector} on "
                 f"{result.dataset}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, format="png")
    plt.close(fig)
    return out
