"""Analyses behind the Explore page: seed 000 sections 5.2 and 6.1-6.4 over a store.

Every function is pure: it reads the store (through ``Store``,
``objrel.store.inferences`` and, for detection runs, ``objrel.store.detections``) and returns a pandas DataFrame or a frozen
dataclass with ``to_dict``.  Nothing here writes to the store or draws.

Common conventions
------------------
* **Flags come from the primary votes** (``votes.is_primary``): the 3-colour vote
  (2 of 3) in every preset plan.  An inference is flagged for ``"MR-1"`` or
  ``"MR-2"`` when that relation's primary vote says violated, and for
  ``"MR-1&2"`` when both do (seed 000 Tables 5/6, "Inferences Violating MR-1&2").
* **Evaluated** inferences are the samples that were not skipped (status
  ``tested`` or ``untested``); **correct** inferences are the evaluated ones with
  ``samples.correct`` true (top-1 in the ground truth for single-label, exact
  label-set match for multi-label).  Unless a docstring says otherwise, counts of
  flagged inferences are over *correct* inferences and ratios divide by the
  number of correct inferences, as seed 000 s6.1 does.
* Functions over several runs take ``run_ids`` (a sequence of run ids, no
  duplicates).  Those that compare models on the same images require every run to
  be on one dataset (``runs.dataset``, the annotation file's stem).
* When an analysis cannot be computed because something is missing from the
  runs (too few runs, no 15-colour vote group, incorrect inferences not tested,
  runs on different datasets, constant inputs), it raises :class:`NotAvailable`
  (a ``ValueError``) whose message says what is missing and how to get it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps
from objrel.store import Store
from objrel.store import inferences as inference_rows
from objrel.store import detections as D

# ---------------------------------------------------------------- constants

MR1, MR2, BOTH = "MR-1", "MR-2", "MR-1&2"
# Relations an analysis can be asked about; "MR-1&2" means flagged by both primary votes.
RELATIONS = (MR1, MR2, BOTH)
# Column stem used for each relation in the tables below (``mr1``, ``mr1_ratio``, ...).
RELATION_COLUMN = {MR1: "mr1", MR2: "mr2", BOTH: "both"}

# Seed 000 s6.2 / Fig. 8: object-size intervals [0.05 i, 0.05 (i+1)), i = 0..19.
# More bins give a finer curve with fewer inferences per bin.
N_SIZE_BINS = 20
SIZE_BIN_WIDTH = 1.0 / N_SIZE_BINS

# Name suffix of the 15-colour vote groups of the palette15 / all presets
# (objrel.mutations.plan.preset: "MR-1 15 colours", "MR-2 15 colours"; seed 000 s5.2.1).
PALETTE_GROUP_SUFFIX = "15 colours"
PALETTE_PLAN_HINT = "objrel run --plan palette15"
# Cramér's V as Cramér (1946, s21.9) defines it: from Pearson's chi-square *without* Yates'
# continuity correction, so a perfectly associated table such as [[1, 0], [0, 1]] has V = 1
# (``scipy.stats.contingency.association(t, method="cramer")``).  The headline chi2, p-value
# and V of a Contingency are these.  Seed 000 Table 4 reports V = 0.743 (MR-1) and 0.835
# (MR-2), which is what V computed from the Yates-corrected chi-square gives (scipy's
# ``chi2_contingency`` default); the standard V is 0.745 and 0.835.  That variant is offered
# next to it (``cramers_v_yates``), labelled as such.
CONTINGENCY_YATES = False
CRAMERS_V_STANDARD = "standard (Pearson chi-square, no continuity correction)"
CRAMERS_V_YATES = "Yates-corrected chi-square (as seed 000 Table 4)"
# Wilcoxon signed-rank: scipy's exact null distribution is used when there are no zero
# differences, no tied |differences| and at most this many pairs; otherwise the normal
# approximation.  Differences are rounded to this many decimals first, so that equal
# accuracy gains computed along different float paths count as ties.
WILCOXON_EXACT_MAX_N = 50
WILCOXON_DECIMALS = 12
WILCOXON_ZERO_METHOD = "wilcox"

# Cross-model overlap (Fig. 6) compares at least this many runs.
MIN_OVERLAP_RUNS = 2
# The Wilcoxon signed-rank test needs at least this many non-zero paired differences.
MIN_WILCOXON_PAIRS = 2
# Seed 000 s6.3 calls fewer than 20 models "significantly less than 20, the typical
# minimum number for a significant test"; below this the result carries a warning.
WILCOXON_ADVISED_PAIRS = 20
# Pearson correlation (Fig. 10) needs at least this many runs (with 2 points r is +-1).
MIN_CORRELATION_RUNS = 3

TEST_ALL_HINT = "objrel run --all (test_all = true in a config file)"


class NotAvailable(ValueError):
    """An analysis cannot be computed from these runs; the message says why and how to fix it."""


# ---------------------------------------------------------------- result types


@dataclass(frozen=True)
class SignificanceTest:
    """One statistical significance test: its statistic, p-value and the number of observations it used."""

    name: str
    statistic: float
    pvalue: float
    n: int
    alternative: str = "two-sided"
    # How the p-value was obtained: "exact" (the exact null distribution) or "approx" (normal
    # approximation); zero_method / n_zero / ties say why an exact test was not possible.
    method: str | None = None
    zero_method: str | None = None
    n_zero: int = 0
    ties: bool = False

    @property
    def method_label(self) -> str:
        """Human-readable account of how the p-value was computed."""
        if self.method is None:
            return "unspecified"
        if self.method == "exact":
            return "exact null distribution"
        why = []
        if self.n_zero:
            why.append(f"{self.n_zero} zero difference(s) dropped (zero_method={self.zero_method})")
        if self.ties:
            why.append("tied differences")
        if not why:
            why.append(f"more than {WILCOXON_EXACT_MAX_N} pairs")
        return "normal approximation (approx): " + "; ".join(why)

    def to_dict(self) -> dict:
        return {"name": self.name, "statistic": self.statistic, "pvalue": self.pvalue, "n": self.n,
                "alternative": self.alternative, "method": self.method, "zero_method": self.zero_method,
                "n_zero": self.n_zero, "ties": self.ties, "method_label": self.method_label}


@dataclass(frozen=True)
class ReliableAccuracy:
    """Seed 000 Table 7/8 for one relation; see :func:`reliable_accuracy`."""

    relation: str
    table: pd.DataFrame
    wilcoxon: SignificanceTest | None
    note: str | None = None

    def to_dict(self) -> dict:
        return {"relation": self.relation, "table": _records(self.table),
                "wilcoxon": self.wilcoxon.to_dict() if self.wilcoxon else None, "note": self.note}


@dataclass(frozen=True)
class Contingency:
    """Seed 000 Table 4 for one run and relation; see :func:`colour_contingency`."""

    run_id: int | None
    relation: str
    table: pd.DataFrame      # 2x2 counts: rows V15 violate / not, columns V3 violate / not
    n: int
    chi2: float | None
    pvalue: float | None
    dof: int
    cramers_v: float | None
    agreement: float | None  # share of inferences on which both votes agree
    yates: bool = CONTINGENCY_YATES   # whether chi2 / pvalue / cramers_v above are Yates-corrected (no: standard)
    note: str | None = None
    # the Yates-corrected variant (what seed 000 Table 4 reports)
    chi2_yates: float | None = None
    pvalue_yates: float | None = None
    cramers_v_yates: float | None = None

    @property
    def v_method(self) -> str:
        return CRAMERS_V_YATES if self.yates else CRAMERS_V_STANDARD

    def to_dict(self) -> dict:
        return {"run_id": self.run_id, "relation": self.relation,
                "table": {str(r): {str(c): int(self.table.loc[r, c]) for c in self.table.columns}
                          for r in self.table.index},
                "n": self.n, "chi2": self.chi2, "pvalue": self.pvalue, "dof": self.dof,
                "cramers_v": self.cramers_v, "agreement": self.agreement, "yates": self.yates, "note": self.note,
                "v_method": self.v_method, "chi2_yates": self.chi2_yates, "pvalue_yates": self.pvalue_yates,
                "cramers_v_yates": self.cramers_v_yates, "v_yates_method": CRAMERS_V_YATES}


@dataclass(frozen=True)
class Correlation:
    """Seed 000 Fig. 10 for one relation; see :func:`accuracy_violation_correlation`."""

    relation: str
    r: float
    pvalue: float
    n: int
    slope: float       # least-squares line ratio = slope * accuracy + intercept (the figure's line)
    intercept: float
    table: pd.DataFrame

    def to_dict(self) -> dict:
        return {"relation": self.relation, "r": self.r, "pvalue": self.pvalue, "n": self.n, "slope": self.slope,
                "intercept": self.intercept, "table": _records(self.table)}


def _records(df: pd.DataFrame) -> list[dict]:
    out = []
    for row in df.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and math.isnan(v) else
                        v.item() if isinstance(v, np.generic) else v) for k, v in row.items()})
    return out


# ---------------------------------------------------------------- input checks and loading


def _check_relation(relation: str, allowed: Sequence[str] = RELATIONS) -> str:
    if relation not in allowed:
        raise ValueError(f"relation must be one of {tuple(allowed)}, got {relation!r}")
    return relation


def _run_list(store: Store, run_ids: Sequence[int], *, same_dataset: bool, minimum: int = 1,
              what: str = "this analysis") -> list:
    if isinstance(run_ids, (int, np.integer)):
        run_ids = [int(run_ids)]
    ids = [int(r) for r in run_ids]
    if len(set(ids)) != len(ids):
        raise ValueError(f"run ids must be distinct, got {ids}")
    if len(ids) < minimum:
        raise NotAvailable(f"{what} needs at least {minimum} runs, got {len(ids)}; select more runs")
    recs = [store.get_run(i) for i in ids]  # KeyError names the missing run
    if same_dataset:
        datasets = sorted({r.dataset for r in recs})
        if len(datasets) > 1:
            raise NotAvailable(f"{what} compares runs on the same images, but the runs are on {len(datasets)} "
                               f"datasets: {datasets}; select runs of one dataset")
    return recs


def inferences(store: Store, run_id: int, labels: bool = True) -> pd.DataFrame:
    """One row per stored sample of ``run_id`` with its primary-vote flags (for a detection run: one row per
    unit, ``sample_id`` its unit id and ``correct`` test T on the source, plus one per skipped image).

    Columns: ``sample_id`` (str), ``status`` (tested | untested | skipped), ``evaluated`` (bool: not
    skipped), ``correct`` (bool; False for skipped), ``tested`` (bool), ``gt_labels`` and ``predicted``
    (lists of class indices; left out when ``labels`` is False, which skips decoding their JSON),
    ``area_ratio`` (float in [0, 1] or NaN), ``mr1``, ``mr2`` (bool: the primary MR-1 / MR-2 vote
    flagged it; False when there is no vote), ``both`` (``mr1 & mr2``).

    The flags come from one LEFT JOIN with the votes, so a 50,000-sample run reads in one query.
    """
    detection = D.is_detection_run(store.get_run(run_id))
    names, rows = (D.flagged_units if detection else inference_rows.flagged_inferences)(store, run_id, labels)
    df = pd.DataFrame.from_records(rows, columns=list(names))
    df["evaluated"] = df["status"] != "skipped"
    df["tested"] = df["status"] == "tested"
    df["correct"] = df["correct"].eq(True) & df["evaluated"]
    df["area_ratio"] = pd.to_numeric(df["area_ratio"], errors="coerce").astype(float)
    df["mr1"] = df["mr1"].astype(bool)
    df["mr2"] = df["mr2"].astype(bool)
    df["both"] = df["mr1"] & df["mr2"]
    return df


def _flag(df: pd.DataFrame, relation: str) -> pd.Series:
    return df[RELATION_COLUMN[relation]]


def _ratio(k: float, n: float) -> float:
    return k / n if n else float("nan")


# ---------------------------------------------------------------- run catalogue (page filters)


def run_catalog(store: Store) -> pd.DataFrame:
    """Runs with at least one stored sample, for the page's filters.

    Columns: ``run`` (id), ``label`` ("#id name"), ``name``, ``model``, ``dataset``, ``status``,
    ``samples`` (stored), ``tested``, ``has_palette`` (the plan has the 15-colour vote groups),
    ``test_all`` (incorrect inferences were tested too).  Ordered by run id.
    """
    rows = []
    for r in store.list_runs():
        if r.n_done == 0:
            continue
        rows.append({"run": r.id, "label": f"#{r.id} {r.name}", "name": r.name, "model": r.model,
                     "dataset": r.dataset, "status": r.status, "samples": r.n_done, "tested": r.n_tested,
                     "has_palette": _has_palette_plan(r.plan), "test_all": bool((r.config or {}).get("test_all"))})
    return pd.DataFrame(rows, columns=["run", "label", "name", "model", "dataset", "status", "samples", "tested",
                                       "has_palette", "test_all"])


def _has_palette_plan(plan: dict) -> bool:
    names = {g.get("name") for g in (plan or {}).get("groups", [])}
    return all(f"{rel} {PALETTE_GROUP_SUFFIX}" in names for rel in (MR1, MR2))


def has_palette(store: Store, run_id: int) -> bool:
    """True when the run's plan has the ``MR-1 15 colours`` and ``MR-2 15 colours`` vote groups."""
    return _has_palette_plan(store.get_run(run_id).plan)


# ---------------------------------------------------------------- per label


PER_LABEL_SORT_KEYS = ("correct", "flagged", "ratio", "label")


def per_label(store: Store, run_id: int) -> pd.DataFrame:
    """Violations per ground-truth label of one run (the Table 5/6 figures split by class).

    A correct inference counts under the label(s) it got right: for single-label runs its top-1 label
    (one of the ground-truth labels, the one whose objects were mutated); for multi-label runs every label
    of its (exactly matching) label set, so a multi-label inference counts once under each of its labels and
    the rows can add up to more than the run's total.

    Returns one row per label with at least one correct inference, ordered by label index; columns
    ``label`` (class index), ``class_name``, ``correct`` (int), ``mr1``, ``mr2``, ``both`` (int: flagged by
    the primary MR-1 vote, the primary MR-2 vote, both) and ``mr1_ratio``, ``mr2_ratio``, ``both_ratio``
    (float in [0, 1]: count / correct).
    """
    names = store.class_names(run_id)
    df = inferences(store, run_id)
    df = df[df["correct"]]
    cols = ["label", "class_name", "correct", "mr1", "mr1_ratio", "mr2", "mr2_ratio", "both", "both_ratio"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    long = df[["predicted", "mr1", "mr2", "both"]].explode("predicted").dropna(subset=["predicted"])
    long["label"] = long["predicted"].astype(int)
    g = long.groupby("label").agg(correct=("mr1", "size"), mr1=("mr1", "sum"), mr2=("mr2", "sum"),
                                  both=("both", "sum")).reset_index()
    g["class_name"] = [names[i] if 0 <= i < len(names) else str(i) for i in g["label"]]
    for stem in ("mr1", "mr2", "both"):
        g[stem] = g[stem].astype(int)
        g[f"{stem}_ratio"] = g[stem] / g["correct"]
    g["correct"] = g["correct"].astype(int)
    return g[cols].sort_values("label").reset_index(drop=True)


def sort_per_label(table: pd.DataFrame, key: str, relation: str) -> pd.DataFrame:
    """Order a :func:`per_label` table for display.

    key: ``correct`` (most correct inferences first), ``flagged`` (most flagged for ``relation`` first),
    ``ratio`` (highest flagged ratio for ``relation`` first) or ``label`` (class index ascending).  Ties keep
    label order.
    """
    if key not in PER_LABEL_SORT_KEYS:
        raise ValueError(f"sort key must be one of {PER_LABEL_SORT_KEYS}, got {key!r}")
    stem = RELATION_COLUMN[_check_relation(relation)]
    by = {"correct": "correct", "flagged": stem, "ratio": f"{stem}_ratio", "label": "label"}[key]
    base = table.sort_values("label", kind="stable")
    if key == "label":
        return base.reset_index(drop=True)
    return base.sort_values(by, ascending=False, kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- object size (Fig. 8)


def size_bin_index(ratio: float) -> int:
    """Bin of an object-area ratio in [0, 1]: ``i`` such that ratio is in [0.05 i, 0.05 (i+1)).

    Seed 000 s6.2 writes "i ranges from 0 to 20", which would make a 21st bin holding only ratio 1.0; like
    the paper's Fig. 8 (whose last point is drawn at 1.0) this puts 1.0 into the last bin, 19.
    ``floor(ratio * 20)`` is exact at the edges: a pixel ratio n/d equal to k/20 rounds to the double
    nearest k/20, and that double times 20 rounds back to k for every k in 0..20.
    """
    r = float(ratio)
    if not 0.0 <= r <= 1.0 or math.isnan(r):
        raise ValueError(f"area ratio must be in [0, 1], got {ratio!r}")
    return min(int(math.floor(r * N_SIZE_BINS)), N_SIZE_BINS - 1)


def size_bins(store: Store, run_ids: Sequence[int] | int, relation: str) -> pd.DataFrame:
    """Seed 000 s6.2 / Fig. 8: share of flagged inferences per object-size bin.

    Over the *correct, tested* inferences of the runs (pooled when several runs are given), each placed by
    ``samples.area_ratio`` (target-region pixels / image pixels) into one of ``N_SIZE_BINS`` = 20 bins
    [0.05 i, 0.05 (i+1)), ratio 1.0 in the last bin (:func:`size_bin_index`).  Inferences without an area
    ratio are left out.

    Returns 20 rows (every bin, empty ones too); columns ``bin`` (0..19), ``lower``, ``upper`` (edges),
    ``x`` (the paper's x value: the bin's middle, 1.0 for the last bin), ``interval`` ("[0.05, 0.10)"),
    ``tested`` (int: inferences in the bin), ``flagged`` (int: of those, flagged for ``relation``) and
    ``share`` (flagged / tested; NaN for an empty bin).
    """
    _check_relation(relation)
    recs = _run_list(store, run_ids, same_dataset=False, what="the object-size histogram")
    tested = np.zeros(N_SIZE_BINS, dtype=int)
    flagged = np.zeros(N_SIZE_BINS, dtype=int)
    for rec in recs:
        df = inferences(store, rec.id, labels=False)
        df = df[df["correct"] & df["tested"] & df["area_ratio"].notna()]
        idx = np.array([size_bin_index(min(max(r, 0.0), 1.0)) for r in df["area_ratio"]], dtype=int)
        tested += np.bincount(idx, minlength=N_SIZE_BINS)
        flagged += np.bincount(idx, weights=_flag(df, relation).to_numpy(dtype=float), minlength=N_SIZE_BINS).astype(int)
    lower = np.arange(N_SIZE_BINS) * SIZE_BIN_WIDTH
    upper = lower + SIZE_BIN_WIDTH
    x = lower + SIZE_BIN_WIDTH / 2
    x[-1] = 1.0
    last = N_SIZE_BINS - 1
    return pd.DataFrame({
        "bin": np.arange(N_SIZE_BINS),
        "lower": np.round(lower, 10), "upper": np.round(upper, 10), "x": np.round(x, 10),
        "interval": [f"[{lo:.2f}, {hi:.2f}{']' if i == last else ')'}" for i, (lo, hi) in enumerate(zip(lower, upper))],
        "tested": tested, "flagged": flagged,
        "share": [_ratio(f, t) for f, t in zip(flagged, tested)],
    })


# ---------------------------------------------------------------- model comparison (Tables 5/6)


def _run_row(store: Store, rec) -> dict:
    df = inferences(store, rec.id)
    ev = df[df["evaluated"]]
    cor = ev[ev["correct"]]
    n = len(cor)
    row = {"run": rec.id, "name": rec.name, "model": rec.model, "dataset": rec.dataset, "evaluated": len(ev),
           "correct": n, "accuracy": _ratio(n, len(ev))}
    for rel, stem in RELATION_COLUMN.items():
        k = int(cor[stem].sum())
        row[stem] = k
        row[f"{stem}_ratio"] = _ratio(k, n)
    return row


MODEL_COLUMNS = ["run", "name", "model", "dataset", "evaluated", "correct", "accuracy", "mr1", "mr1_ratio", "mr2",
                 "mr2_ratio", "both", "both_ratio"]


def model_comparison(store: Store, run_ids: Sequence[int]) -> pd.DataFrame:
    """Seed 000 Tables 5/6: one row per run, all runs on one dataset.

    Columns: ``run``, ``name``, ``model``, ``dataset``, ``evaluated`` (not skipped), ``correct``,
    ``accuracy`` (correct / evaluated), ``mr1``, ``mr2``, ``both`` (correct inferences flagged by the primary
    MR-1 vote, MR-2 vote, both) and ``mr1_ratio``, ``mr2_ratio``, ``both_ratio`` (count / correct, the
    paper's percentages in parentheses).  Rows in the order of ``run_ids``.
    """
    recs = _run_list(store, run_ids, same_dataset=True, what="the model comparison")
    return pd.DataFrame([_run_row(store, r) for r in recs], columns=MODEL_COLUMNS)


# ---------------------------------------------------------------- cross-model overlap (Fig. 6)


def flagged_by_sample(store: Store, run_ids: Sequence[int], relation: str) -> pd.DataFrame:
    """Per image flagged by at least one run: how many runs flag it (correct inferences only).

    Columns ``sample_id``, ``n_models`` (int in 1..len(run_ids)), ``runs`` (comma-separated run ids that
    flag it); ordered by ``n_models`` descending, then ``sample_id``.
    """
    _check_relation(relation)
    recs = _run_list(store, run_ids, same_dataset=True, what="the cross-model overlap")
    by: dict[str, list[int]] = {}
    for rec in recs:
        df = inferences(store, rec.id)
        for sid in df.loc[df["correct"] & _flag(df, relation), "sample_id"]:
            by.setdefault(str(sid), []).append(rec.id)
    out = pd.DataFrame([{"sample_id": sid, "n_models": len(v), "runs": ",".join(map(str, v))}
                        for sid, v in by.items()], columns=["sample_id", "n_models", "runs"])
    return out.sort_values(["n_models", "sample_id"], ascending=[False, True], kind="stable").reset_index(drop=True)


def cross_model_overlap(store: Store, run_ids: Sequence[int], relation: str) -> pd.DataFrame:
    """Seed 000 s6.1 / Fig. 6: for how many models each image's inference is unreliable.

    For each image (``sample_id``; every run on the same dataset) the number n of runs whose *correct*
    inference of it is flagged for ``relation`` by the primary vote.  Returns one row per n = 1..N
    (N = len(run_ids), zero rows included): ``n_models``, ``inputs`` (images flagged by exactly n runs) and
    ``share`` (inputs / images flagged by at least one run, as the paper's percentages; NaN when none is).
    Needs at least ``MIN_OVERLAP_RUNS`` runs.
    """
    recs = _run_list(store, run_ids, same_dataset=True, minimum=MIN_OVERLAP_RUNS, what="the cross-model overlap")
    per = flagged_by_sample(store, [r.id for r in recs], relation)
    n_runs = len(recs)
    counts = per["n_models"].value_counts()
    inputs = [int(counts.get(n, 0)) for n in range(1, n_runs + 1)]
    total = sum(inputs)
    return pd.DataFrame({"n_models": list(range(1, n_runs + 1)), "inputs": inputs,
                         "share": [_ratio(k, total) for k in inputs]})


# ---------------------------------------------------------------- reliable accuracy (Tables 7/8)


def reliable_accuracy(store: Store, run_ids: Sequence[int], relation: str, alternative: str = "two-sided",
                      require_all_tested: bool = True) -> ReliableAccuracy:
    """Seed 000 s6.3 / Tables 7-8: accuracy on the unreliable and the reliable inferences, per run.

    As the paper defines it, *both correct and incorrect* inferences are examined: for each run the
    evaluated (not skipped) inferences are split into **Unreliable** (flagged for ``relation`` by the
    primary vote; for ``MR-1&2`` by both) and **Reliable** (all the others).  Then, per run:

    * ``original``            = correct / evaluated (the column "Original");
    * ``unreliable_accuracy`` = correct among Unreliable / |Unreliable| (NaN when Unreliable is empty);
    * ``reliable_accuracy``   = correct among Reliable / |Reliable| (NaN when Reliable is empty);
    * ``delta``               = reliable_accuracy - original.

    Incorrect inferences can only be flagged when the run tested them (``objrel run --all``).  In a run that
    tested only correct inferences every incorrect one would land in Reliable untested and Unreliable would
    have accuracy 100 % by construction, so by default (``require_all_tested``) such a run raises
    :class:`NotAvailable`; with ``require_all_tested=False`` they count as reliable and the table's
    ``untested`` column says how many there were.

    The Wilcoxon signed-rank test (:func:`wilcoxon_signed_rank`: paired by run, zero_method ``wilcox``,
    exact null distribution when there are no zero or tied differences and at most
    ``WILCOXON_EXACT_MAX_N`` pairs, otherwise the normal approximation; the result says which) compares ``reliable_accuracy`` with ``original`` across runs: the paper's
    "results before and after removing the unreliable inferences".  ``alternative`` is passed to scipy
    (``two-sided`` by default; ``greater`` tests reliable > original).  The paper's p = 3.81e-6 for 18 models
    that all gain accuracy equals 2**-18, the exact *one-sided* p (the two-sided one is twice that).  Runs
    with an empty Reliable set are left out of the test.  The test is None (with ``note``) when fewer than
    ``MIN_WILCOXON_PAIRS`` runs have a non-zero difference.

    Table columns: ``run``, ``model``, ``evaluated``, ``untested``, ``correct``, ``original``,
    ``unreliable`` (int), ``unreliable_accuracy``, ``reliable`` (int), ``reliable_accuracy``, ``delta``.
    """
    _check_relation(relation)
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    recs = _run_list(store, run_ids, same_dataset=True, what="reliable vs unreliable accuracy")
    rows = []
    for rec in recs:
        df = inferences(store, rec.id)
        ev = df[df["evaluated"]]
        untested = int((ev["status"] == "untested").sum())
        if require_all_tested and untested:
            raise NotAvailable(
                f"run {rec.id} ({rec.name}) did not test its {untested} incorrect inference(s); seed 000 Tables 7/8 "
                f"split correct *and* incorrect inferences into reliable and unreliable. Re-run with {TEST_ALL_HINT}")
        flag = _flag(ev, relation)
        unrel, rel = ev[flag], ev[~flag]
        original = _ratio(int(ev["correct"].sum()), len(ev))
        rel_acc = _ratio(int(rel["correct"].sum()), len(rel))
        rows.append({"run": rec.id, "model": rec.model, "evaluated": len(ev), "untested": untested,
                     "correct": int(ev["correct"].sum()), "original": original, "unreliable": len(unrel),
                     "unreliable_accuracy": _ratio(int(unrel["correct"].sum()), len(unrel)),
                     "reliable": len(rel), "reliable_accuracy": rel_acc, "delta": rel_acc - original})
    table = pd.DataFrame(rows, columns=["run", "model", "evaluated", "untested", "correct", "original", "unreliable",
                                        "unreliable_accuracy", "reliable", "reliable_accuracy", "delta"])
    paired = table.dropna(subset=["reliable_accuracy", "original"])
    nonzero = int((paired["delta"].abs() > 0).sum())
    if nonzero < MIN_WILCOXON_PAIRS:
        note = (f"Wilcoxon test not computed: it needs at least {MIN_WILCOXON_PAIRS} runs whose reliable accuracy "
                f"differs from the original, got {nonzero}")
        return ReliableAccuracy(relation, table, None, note)
    test = wilcoxon_signed_rank(paired["reliable_accuracy"].to_numpy(float), paired["original"].to_numpy(float),
                                alternative)
    note = None
    if nonzero < WILCOXON_ADVISED_PAIRS:
        note = (f"only {nonzero} paired runs; seed 000 s6.3 treats fewer than {WILCOXON_ADVISED_PAIRS} as too few "
                f"for a reliable significance test")
    return ReliableAccuracy(relation, table, test, note)


def wilcoxon_signed_rank(x, y, alternative: str = "two-sided") -> SignificanceTest:
    """Wilcoxon (1945) signed-rank test of the paired samples ``x`` and ``y`` (seed 000 s6.3).

    d = x - y, rounded to ``WILCOXON_DECIMALS``.  Zero differences are dropped (zero_method ``wilcox``,
    Wilcoxon's own rule); ``n`` is the number of non-zero differences.  The p-value is computed with
    ``scipy.stats.wilcoxon`` and an *explicit* method, so the label never depends on scipy's own
    fallbacks: ``exact`` (the exact null distribution of W+, Wilcoxon 1945) when no difference is zero,
    no two |d| tie and n <= ``WILCOXON_EXACT_MAX_N``; otherwise ``approx``: the normal approximation
    (scipy ``method="asymptotic"``, tie-corrected variance, no continuity correction).  For the
    two-sided test the statistic is min(W+, W-); for one-sided ones it is W+.
    """
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    d = np.round(np.asarray(x, dtype=float) - np.asarray(y, dtype=float), WILCOXON_DECIMALS)
    if d.ndim != 1 or np.isnan(d).any():
        raise ValueError("the Wilcoxon test needs two 1-D samples of the same length without NaN")
    nz = d[d != 0]
    n_zero = int(d.size - nz.size)
    if nz.size < 1:
        raise ValueError("the Wilcoxon test needs at least one non-zero difference")
    absd = np.abs(nz)
    ties = bool(np.unique(absd).size < absd.size)
    exact = n_zero == 0 and not ties and nz.size <= WILCOXON_EXACT_MAX_N
    res = sps.wilcoxon(d, zero_method=WILCOXON_ZERO_METHOD, alternative=alternative,
                       method="exact" if exact else "asymptotic")
    return SignificanceTest("wilcoxon", float(res.statistic), float(res.pvalue), int(nz.size), alternative,
                            method="exact" if exact else "approx", zero_method=WILCOXON_ZERO_METHOD,
                            n_zero=n_zero, ties=ties)


# ---------------------------------------------------------------- paired comparison of two runs (McNemar)


# McNemar (1947): the exact binomial test below this many discordant pairs (b + c), else the chi-square
# approximation with Edwards' continuity correction (the usual rule of thumb: b + c >= 25).
MCNEMAR_EXACT_BELOW = 25


@dataclass(frozen=True)
class McNemar:
    """McNemar's paired test of two runs' flags on the inferences both answered correctly.

    ``both`` (a) / ``only_a`` (b) / ``only_b`` (c) / ``neither`` (d): the 2x2 table of flagged (primary vote
    of ``relation``) vs not, over the ``n`` shared samples.  Only b and c, the discordant pairs, inform the
    test.  ``method``: ``exact`` (binomial, statistic min(b, c)) or ``chi-square`` ((|b - c| - 1)^2 / (b + c),
    1 degree of freedom).
    """

    run_a: int
    run_b: int
    relation: str
    n: int
    both: int
    only_a: int
    only_b: int
    neither: int
    statistic: float
    pvalue: float
    method: str

    @property
    def discordant(self) -> int:
        return self.only_a + self.only_b

    @property
    def method_label(self) -> str:
        if self.method == "exact":
            return (f"exact binomial test (b + c = {self.discordant} < {MCNEMAR_EXACT_BELOW}), statistic "
                    "min(b, c)")
        return (f"chi-square with continuity correction (b + c = {self.discordant} >= {MCNEMAR_EXACT_BELOW}), "
                "(|b - c| - 1)^2 / (b + c), 1 degree of freedom")

    def table(self) -> pd.DataFrame:
        """The 2x2 table: rows run A flagged / not, columns run B flagged / not."""
        a, b = f"run {self.run_a}", f"run {self.run_b}"
        return pd.DataFrame([[self.both, self.only_a], [self.only_b, self.neither]],
                            index=[f"{a} flags", f"{a} does not"], columns=[f"{b} flags", f"{b} does not"])

    def to_dict(self) -> dict:
        return {**asdict(self), "discordant": self.discordant, "method_label": self.method_label}


def mcnemar_test(b: int, c: int) -> tuple[float, float, str]:
    """(statistic, two-sided p-value, method) of McNemar's test from the discordant counts ``b`` and ``c``:
    ``exact`` (binomial, p = min(1, 2 P[X <= min(b, c)]), X ~ Bin(b + c, 1/2)) when b + c < MCNEMAR_EXACT_BELOW,
    else ``chi-square`` with continuity correction.  No discordant pair: statistic 0, p = 1 (exact)."""
    b, c = int(b), int(c)
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n < MCNEMAR_EXACT_BELOW:
        k = min(b, c)
        return float(k), float(min(1.0, 2.0 * sps.binom.cdf(k, n, 0.5))) if n else 1.0, "exact"
    stat = (abs(b - c) - 1.0) ** 2 / n
    return float(stat), float(sps.chi2.sf(stat, 1)), "chi-square"


def paired_flags(store: Store, run_a: int, run_b: int, relation: str) -> McNemar:
    """McNemar's test of whether two runs on one dataset flag (``relation``) their shared inferences
    differently: the samples with the same id that both runs answered correctly and tested."""
    _check_relation(relation)
    ra, rb = _run_list(store, [run_a, run_b], same_dataset=True, minimum=2, what="McNemar's test")
    col = RELATION_COLUMN[relation]
    frames = []
    for rec in (ra, rb):
        df = inferences(store, rec.id, labels=False)
        frames.append(df.loc[df["correct"] & df["tested"], ["sample_id", col]].set_index("sample_id")[col])
    shared = pd.concat(frames, axis=1, join="inner", keys=["a", "b"])
    if shared.empty:
        raise NotAvailable(f"runs {ra.id} and {rb.id} have no correctly answered, tested sample in common")
    fa, fb = shared["a"].astype(bool), shared["b"].astype(bool)
    both, only_a, only_b = int((fa & fb).sum()), int((fa & ~fb).sum()), int((~fa & fb).sum())
    stat, p, method = mcnemar_test(only_a, only_b)
    return McNemar(ra.id, rb.id, relation, int(len(shared)), both, only_a, only_b,
                   int(len(shared)) - both - only_a - only_b, stat, p, method)


# ---------------------------------------------------------------- 3 vs 15 colours (Table 4)


CONTINGENCY_ROWS = ("V15: violate", "V15: not violate")
CONTINGENCY_COLUMNS = ("V3: violate", "V3: not violate")


def contingency_stats(table, correction: bool = CONTINGENCY_YATES) -> tuple[float | None, float | None, int,
                                                                            float | None]:
    """Chi-square test of independence and Cramér's V of an r x c count table.

    Returns ``(chi2, pvalue, dof, cramers_v)`` from ``scipy.stats.chi2_contingency(table,
    correction=correction)`` and V = sqrt(chi2 / (n (min(r, c) - 1))) (Cramér 1946, s21.9).  By
    default (``correction=False``) chi2 is Pearson's, and V is the standard one (1 for a perfectly
    associated table); with ``correction=True`` scipy applies Yates' continuity correction (2x2 tables
    only), which gives the V of seed 000 Table 4.  When a row or column sums to zero the test is
    undefined and ``(None, None, dof, None)`` is returned.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or min(t.shape) < 2:
        raise ValueError(f"a contingency table must be 2-D with at least 2 rows and columns, got shape {t.shape}")
    if (t < 0).any():
        raise ValueError("a contingency table holds counts; got a negative entry")
    dof = (t.shape[0] - 1) * (t.shape[1] - 1)
    if (t.sum(axis=0) == 0).any() or (t.sum(axis=1) == 0).any():
        return None, None, dof, None
    res = sps.chi2_contingency(t, correction=bool(correction))
    chi2 = float(res.statistic)
    v = math.sqrt(chi2 / (t.sum() * (min(t.shape) - 1)))
    return chi2, float(res.pvalue), int(res.dof), v


def contingency_from_counts(table, relation: str = MR1, run_id: int | None = None) -> Contingency:
    """A :class:`Contingency` from a 2x2 count table laid out as seed 000 Table 4
    (rows V15 violate / not violate, columns V3 violate / not violate)."""
    t = np.asarray(table, dtype=np.int64)
    if t.shape != (2, 2):
        raise ValueError(f"expected a 2x2 table, got shape {t.shape}")
    chi2, p, dof, v = contingency_stats(t, correction=False)
    chi2_y, p_y, _, v_y = contingency_stats(t, correction=True)
    n = int(t.sum())
    note = None if chi2 is not None else (
        "chi-square undefined: one vote flags all or none of the inferences (a row or column of the table is empty)")
    df = pd.DataFrame(t, index=list(CONTINGENCY_ROWS), columns=list(CONTINGENCY_COLUMNS))
    return Contingency(run_id, relation, df, n, chi2, p, dof, v, _ratio(int(t[0, 0] + t[1, 1]), n) if n else None,
                       False, note, chi2_y, p_y, v_y)


def colour_contingency(store: Store, run_id: int, relation: str) -> Contingency:
    """Seed 000 s5.2 / Table 4: the 3-colour vote against the 15-colour vote of one run.

    V3 is the relation's primary vote (3 colours, 2 of 3), V15 the ``"<relation> 15 colours"`` vote group
    (8 of 15) of the palette15 / all plans.  Over the run's *tested* inferences that have both votes (correct
    ones, plus incorrect ones in a ``--all`` run), the 2x2 table counts inferences by (V15, V3): rows
    V15 violate / not violate, columns V3 violate / not violate, as in the paper.  The chi-square test of
    independence uses Pearson's chi-square (``scipy.stats.chi2_contingency``, no continuity correction), and
    Cramér's V is sqrt(chi2 / (n (min(r, c) - 1))) = sqrt(chi2 / n) for 2x2: the standard V.  The
    Yates-corrected chi-square, p-value and V are given too (``*_yates``): they reproduce the paper's
    V = 0.743 / 0.835 from Table 4 (the standard V is 0.745 / 0.835).  ``relation`` is ``MR-1`` or ``MR-2``.
    Raises :class:`NotAvailable` when the run has no 15-colour group.
    """
    _check_relation(relation, (MR1, MR2))
    rec = store.get_run(run_id)
    group = f"{relation} {PALETTE_GROUP_SUFFIX}"
    if group not in {g.get("name") for g in (rec.plan or {}).get("groups", [])}:
        raise NotAvailable(f"run {rec.id} ({rec.name}) has no {group!r} vote group; the 3- vs 15-colour comparison "
                           f"needs a run with the 15-colour palette: `{PALETTE_PLAN_HINT}` (or --plan all)")
    rid = int(run_id)
    votes, tested = inference_rows.relation_votes(store, rid, relation)
    if D.is_detection_run(rec):
        tested = set(D.tested_unit_ids(store, rid))  # a detection run's votes are its units'
    v3: dict[str, bool] = {}
    v15: dict[str, bool] = {}
    for sid, name, primary, flagged in votes:
        if primary:
            v3[sid] = bool(flagged)
        if name == group:
            v15[sid] = bool(flagged)
    t = np.zeros((2, 2), dtype=np.int64)
    for sid in tested & v3.keys() & v15.keys():
        t[0 if v15[sid] else 1, 0 if v3[sid] else 1] += 1
    return contingency_from_counts(t, relation, rid)


# ---------------------------------------------------------------- accuracy vs violation ratio (Fig. 10)


def accuracy_violation_correlation(store: Store, run_ids: Sequence[int], relation: str) -> Correlation:
    """Seed 000 s6.4 / Fig. 10: Pearson correlation of top-1 accuracy and violation ratio across runs.

    Per run (all on one dataset): ``accuracy`` = correct / evaluated, ``ratio`` = correct inferences flagged
    for ``relation`` by the primary vote / correct inferences (the Table 5 percentage).  Returns
    ``scipy.stats.pearsonr(accuracy, ratio)`` (r and two-sided p), the least-squares line of ratio on
    accuracy (the figure's regression line) and the table (columns ``run``, ``model``, ``accuracy``,
    ``ratio``).  Needs at least ``MIN_CORRELATION_RUNS`` = 3 runs with correct inferences and accuracies and
    ratios that are not all equal; otherwise raises :class:`NotAvailable`.
    """
    _check_relation(relation)
    recs = _run_list(store, run_ids, same_dataset=True, minimum=MIN_CORRELATION_RUNS,
                     what="the accuracy / violation-ratio correlation")
    stem = RELATION_COLUMN[relation]
    rows = [_run_row(store, r) for r in recs]
    table = pd.DataFrame([{"run": r["run"], "model": r["model"], "accuracy": r["accuracy"],
                           "ratio": r[f"{stem}_ratio"]} for r in rows], columns=["run", "model", "accuracy", "ratio"])
    empty = table.loc[table["ratio"].isna(), "run"].tolist()
    if empty:
        raise NotAvailable(f"runs {empty} have no correct inference, so their violation ratio is undefined")
    for col in ("accuracy", "ratio"):
        if table[col].nunique() < 2:
            raise NotAvailable(f"every selected run has the same {col} ({table[col].iloc[0]:.4f}); "
                               f"the Pearson correlation is undefined for a constant variable")
    x, y = table["accuracy"].to_numpy(float), table["ratio"].to_numpy(float)
    res = sps.pearsonr(x, y)
    slope, intercept = np.polyfit(x, y, 1)
    return Correlation(relation, float(res.statistic), float(res.pvalue), len(table), float(slope),
                       float(intercept), table)
