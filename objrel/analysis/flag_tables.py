"""The flagged-inference tables behind the Explore page: what the runs' primary votes flagged, per label, per
object size, per model and across models (EMSE21 sections 6.1, 6.2 and Tables 5/6).

Every function is pure: it reads the store (through ``Store``, ``objrel.store.inferences`` and, for detection
runs, ``objrel.store.detections``) and returns a pandas DataFrame.  Nothing here writes to the store or draws.
The statistical tests over these tables are in ``objrel.analysis.significance``.

Common conventions
------------------
* **Flags come from the primary votes** (``votes.is_primary``): the 3-colour vote
  (2 of 3) in every preset plan.  An inference is flagged for ``"MR-1"`` or
  ``"MR-2"`` when that relation's primary vote says violated, and for
  ``"MR-1&2"`` when both do (EMSE21 Tables 5/6, "Inferences Violating MR-1&2").
* **Evaluated** inferences are the samples that were not skipped (status
  ``tested`` or ``untested``); **correct** inferences are the evaluated ones with
  ``samples.correct`` true (top-1 in the ground truth for single-label, exact
  label-set match for multi-label).  Unless a docstring says otherwise, counts of
  flagged inferences are over *correct* inferences and ratios divide by the
  number of correct inferences, as EMSE21 s6.1 does.
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
from dataclasses import asdict, dataclass, replace
from typing import Sequence

import numpy as np
import pandas as pd

from objrel.store.kept import NoDelta, kept
from objrel.store import Store
from objrel.store import detections as D
from objrel.store import inferences as inference_rows

# ---------------------------------------------------------------- constants

MR1, MR2, BOTH = "MR-1", "MR-2", "MR-1&2"
# Relations an analysis can be asked about; "MR-1&2" means flagged by both primary votes.
RELATIONS = (MR1, MR2, BOTH)
# Column stem used for each relation in the tables below (``mr1``, ``mr1_ratio``, ...).
RELATION_COLUMN = {MR1: "mr1", MR2: "mr2", BOTH: "both"}

# EMSE21 s6.2 / Fig. 8: object-size intervals [0.05 i, 0.05 (i+1)), i = 0..19.
# More bins give a finer curve with fewer inferences per bin.
N_SIZE_BINS = 20
SIZE_BIN_WIDTH = 1.0 / N_SIZE_BINS

# Name suffix of the 15-colour vote groups of the palette15 / all presets
# (objrel.mutations.plan.preset: "MR-1 15 colours", "MR-2 15 colours"; EMSE21 s5.2.1).
PALETTE_GROUP_SUFFIX = "15 colours"
PALETTE_PLAN_HINT = "objrel run --plan palette15"
# Cross-model overlap (Fig. 6) compares at least this many runs.
MIN_OVERLAP_RUNS = 2

TEST_ALL_HINT = "objrel run --all (test_all = true in a config file)"


class NotAvailable(ValueError):
    """An analysis cannot be computed from these runs; the message says why and how to fix it."""


# ---------------------------------------------------------------- input checks and loading


def check_relation(relation: str, allowed: Sequence[str] = RELATIONS) -> str:
    """``relation`` when it is one of ``allowed``; ``ValueError`` naming the allowed ones otherwise."""
    if relation not in allowed:
        raise ValueError(f"relation must be one of {tuple(allowed)}, got {relation!r}")
    return relation


def run_records(store: Store, run_ids: Sequence[int], *, same_dataset: bool, minimum: int = 1,
              what: str = "this analysis") -> list:
    """The run records of ``run_ids`` (one id is taken as a list of one), distinct and at least ``minimum`` of
    them, all on one dataset when ``same_dataset``; :class:`NotAvailable` says what ``what`` is missing."""
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


def inferences(store: Store, run_id: int, labels: bool = True, rows: tuple[int, int] | None = None) -> pd.DataFrame:
    """One row per stored sample of ``run_id`` with its primary-vote flags (for a detection run: one row per
    unit, ``sample_id`` its unit id and ``correct`` test T on the source, plus one per skipped image).

    Columns: ``sample_id`` (str), ``status`` (tested | untested | skipped), ``evaluated`` (bool: not
    skipped), ``correct`` (bool; False for skipped), ``tested`` (bool), ``gt_labels`` and ``predicted``
    (lists of class indices; left out when ``labels`` is False, which skips decoding their JSON),
    ``area_ratio`` (float in [0, 1] or NaN), ``mr1``, ``mr2`` (bool: the primary MR-1 / MR-2 vote
    flagged it; False when there is no vote), ``both`` (``mr1 & mr2``).

    The flags come from one LEFT JOIN with the votes, so a 50,000-sample run reads in one query.  With ``rows``
    = (after, upto], only the samples whose row id lies there (what a running run added since a result was kept;
    ``NoDelta`` for a detection run, whose units are counted whole).
    """
    detection = D.is_detection_run(store.get_run(run_id))
    if detection:
        if rows is not None:
            raise NoDelta(f"run {run_id} is a detection run: its units are counted over the whole run")
        names, found = D.flagged_units(store, run_id, labels)
    else:
        names, found = inference_rows.flagged_inferences(store, run_id, labels, rows)
    df = pd.DataFrame.from_records(found, columns=list(names))
    df["evaluated"] = df["status"] != "skipped"
    df["tested"] = df["status"] == "tested"
    df["correct"] = df["correct"].eq(True) & df["evaluated"]
    df["area_ratio"] = pd.to_numeric(df["area_ratio"], errors="coerce").astype(float)
    df["mr1"] = df["mr1"].astype(bool)
    df["mr2"] = df["mr2"].astype(bool)
    df["both"] = df["mr1"] & df["mr2"]
    return df


def relation_flags(df: pd.DataFrame, relation: str) -> pd.Series:
    """The column of an :func:`inferences` table that says whether ``relation`` flagged each row."""
    return df[RELATION_COLUMN[relation]]


def safe_ratio(k: float, n: float) -> float:
    """k / n, NaN when n is 0."""
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


def _merge_per_label(kept_table: pd.DataFrame, more: pd.DataFrame, arguments: dict) -> pd.DataFrame:
    """Two :func:`per_label` tables over disjoint samples as one."""
    both = pd.concat([t for t in (kept_table, more) if not t.empty])
    if both.empty:
        return kept_table
    g = both.groupby("label", as_index=False).agg(class_name=("class_name", "first"), correct=("correct", "sum"),
                                                  mr1=("mr1", "sum"), mr2=("mr2", "sum"), both=("both", "sum"))
    return _label_ratios(g)


def _label_ratios(g: pd.DataFrame) -> pd.DataFrame:
    cols = ["label", "class_name", "correct", "mr1", "mr1_ratio", "mr2", "mr2_ratio", "both", "both_ratio"]
    for stem in ("mr1", "mr2", "both"):
        g[stem] = g[stem].astype(int)
        g[f"{stem}_ratio"] = g[stem] / g["correct"]
    g["correct"] = g["correct"].astype(int)
    g["label"] = g["label"].astype(int)
    return g[cols].sort_values("label").reset_index(drop=True)


@kept(merge=_merge_per_label)
def per_label(store: Store, run_id: int, rows: tuple[int, int] | None = None) -> pd.DataFrame:
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
    df = inferences(store, run_id, rows=rows)
    df = df[df["correct"]]
    cols = ["label", "class_name", "correct", "mr1", "mr1_ratio", "mr2", "mr2_ratio", "both", "both_ratio"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    long = df[["predicted", "mr1", "mr2", "both"]].explode("predicted").dropna(subset=["predicted"])
    long["label"] = long["predicted"].astype(int)
    g = long.groupby("label").agg(correct=("mr1", "size"), mr1=("mr1", "sum"), mr2=("mr2", "sum"),
                                  both=("both", "sum")).reset_index()
    g["class_name"] = [names[i] if 0 <= i < len(names) else str(i) for i in g["label"]]
    return _label_ratios(g)


def sort_per_label(table: pd.DataFrame, key: str, relation: str) -> pd.DataFrame:
    """Order a :func:`per_label` table for display.

    key: ``correct`` (most correct inferences first), ``flagged`` (most flagged for ``relation`` first),
    ``ratio`` (highest flagged ratio for ``relation`` first) or ``label`` (class index ascending).  Ties keep
    label order.
    """
    if key not in PER_LABEL_SORT_KEYS:
        raise ValueError(f"sort key must be one of {PER_LABEL_SORT_KEYS}, got {key!r}")
    stem = RELATION_COLUMN[check_relation(relation)]
    by = {"correct": "correct", "flagged": stem, "ratio": f"{stem}_ratio", "label": "label"}[key]
    base = table.sort_values("label", kind="stable")
    if key == "label":
        return base.reset_index(drop=True)
    return base.sort_values(by, ascending=False, kind="stable").reset_index(drop=True)


# ---------------------------------------------------------------- object size (Fig. 8)


def size_bin_index(ratio: float) -> int:
    """Bin of an object-area ratio in [0, 1]: ``i`` such that ratio is in [0.05 i, 0.05 (i+1)).

    EMSE21 s6.2 writes "i ranges from 0 to 20", which would make a 21st bin holding only ratio 1.0; like
    the paper's Fig. 8 (whose last point is drawn at 1.0) this puts 1.0 into the last bin, 19.
    ``floor(ratio * 20)`` is exact at the edges: a pixel ratio n/d equal to k/20 rounds to the double
    nearest k/20, and that double times 20 rounds back to k for every k in 0..20.
    """
    r = float(ratio)
    if not 0.0 <= r <= 1.0 or math.isnan(r):
        raise ValueError(f"area ratio must be in [0, 1], got {ratio!r}")
    return min(int(math.floor(r * N_SIZE_BINS)), N_SIZE_BINS - 1)


def size_bins(store: Store, run_ids: Sequence[int] | int, relation: str) -> pd.DataFrame:
    """EMSE21 s6.2 / Fig. 8: share of flagged inferences per object-size bin.

    Over the *correct, tested* inferences of the runs (pooled when several runs are given), each placed by
    ``samples.area_ratio`` (target-region pixels / image pixels) into one of ``N_SIZE_BINS`` = 20 bins
    [0.05 i, 0.05 (i+1)), ratio 1.0 in the last bin (:func:`size_bin_index`).  Inferences without an area
    ratio are left out.

    Returns 20 rows (every bin, empty ones too); columns ``bin`` (0..19), ``lower``, ``upper`` (edges),
    ``x`` (the paper's x value: the bin's middle, 1.0 for the last bin), ``interval`` ("[0.05, 0.10)"),
    ``tested`` (int: inferences in the bin), ``flagged`` (int: of those, flagged for ``relation``) and
    ``share`` (flagged / tested; NaN for an empty bin).
    """
    check_relation(relation)
    recs = run_records(store, run_ids, same_dataset=False, what="the object-size histogram")
    tested = np.zeros(N_SIZE_BINS, dtype=int)
    flagged = np.zeros(N_SIZE_BINS, dtype=int)
    for rec in recs:
        run_tested, run_flagged = size_counts(store, rec.id, relation)
        tested += np.asarray(run_tested, dtype=int)
        flagged += np.asarray(run_flagged, dtype=int)
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
        "share": [safe_ratio(f, t) for f, t in zip(flagged, tested)],
    })


def _merge_counts(kept_counts: tuple, more: tuple, arguments: dict) -> tuple:
    """Tuples of count lists over disjoint samples, added element by element."""
    return tuple([int(a) + int(b) for a, b in zip(x, y)] for x, y in zip(kept_counts, more))


@kept(merge=_merge_counts)
def size_counts(store: Store, run_id: int, relation: str,
                rows: tuple[int, int] | None = None) -> tuple[list[int], list[int]]:
    """One run's share of :func:`size_bins`: per bin, its correct tested inferences with an area ratio and how
    many of them ``relation`` flags (two lists of ``N_SIZE_BINS`` counts)."""
    df = inferences(store, run_id, labels=False, rows=rows)
    df = df[df["correct"] & df["tested"] & df["area_ratio"].notna()]
    idx = np.array([size_bin_index(min(max(r, 0.0), 1.0)) for r in df["area_ratio"]], dtype=int)
    tested = np.bincount(idx, minlength=N_SIZE_BINS)
    flagged = np.bincount(idx, weights=relation_flags(df, relation).to_numpy(dtype=float),
                          minlength=N_SIZE_BINS).astype(int)
    return [int(x) for x in tested], [int(x) for x in flagged]


# ---------------------------------------------------------------- model comparison (Tables 5/6)


@dataclass(frozen=True)
class RunFigures:
    """One run's counts over its correct inferences (a row of the Tables 5/6 comparison): ``evaluated`` (not
    skipped), ``correct``, ``accuracy`` (correct / evaluated), ``mr1`` / ``mr2`` / ``both`` (flagged by the
    primary MR-1 vote, MR-2 vote, both) and their ratios to ``correct`` (NaN without a correct inference)."""

    run: int
    name: str
    model: str
    dataset: str
    evaluated: int
    correct: int
    accuracy: float
    mr1: int
    mr1_ratio: float
    mr2: int
    mr2_ratio: float
    both: int
    both_ratio: float

    def ratio(self, relation: str) -> float:
        """The share of correct inferences flagged for ``relation``."""
        return getattr(self, f"{RELATION_COLUMN[relation]}_ratio")


def run_figures(store: Store, rec) -> RunFigures:
    """The :class:`RunFigures` of the run record ``rec`` (kept per state of the run; its name as it is now)."""
    return replace(_run_figures(store, rec.id), name=rec.name)


def _figures(rec, evaluated: int, correct: int, counts: dict) -> RunFigures:
    n = correct
    return RunFigures(rec.run if isinstance(rec, RunFigures) else rec.id, rec.name, rec.model, rec.dataset,
                      evaluated, n, safe_ratio(n, evaluated),
                      counts["mr1"], safe_ratio(counts["mr1"], n), counts["mr2"], safe_ratio(counts["mr2"], n),
                      counts["both"], safe_ratio(counts["both"], n))


def _merge_figures(a: RunFigures, b: RunFigures, arguments: dict) -> RunFigures:
    return _figures(a, a.evaluated + b.evaluated, a.correct + b.correct,
                    {stem: getattr(a, stem) + getattr(b, stem) for stem in RELATION_COLUMN.values()})


@kept(merge=_merge_figures)
def _run_figures(store: Store, run_id: int, rows: tuple[int, int] | None = None) -> RunFigures:
    rec = store.get_run(run_id)
    df = inferences(store, rec.id, labels=False, rows=rows)
    ev = df[df["evaluated"]]
    cor = ev[ev["correct"]]
    return _figures(rec, len(ev), len(cor), {stem: int(cor[stem].sum()) for stem in RELATION_COLUMN.values()})


MODEL_COLUMNS = ["run", "name", "model", "dataset", "evaluated", "correct", "accuracy", "mr1", "mr1_ratio", "mr2",
                 "mr2_ratio", "both", "both_ratio"]


def model_comparison(store: Store, run_ids: Sequence[int]) -> pd.DataFrame:
    """EMSE21 Tables 5/6: one row per run, all runs on one dataset.

    Columns: ``run``, ``name``, ``model``, ``dataset``, ``evaluated`` (not skipped), ``correct``,
    ``accuracy`` (correct / evaluated), ``mr1``, ``mr2``, ``both`` (correct inferences flagged by the primary
    MR-1 vote, MR-2 vote, both) and ``mr1_ratio``, ``mr2_ratio``, ``both_ratio`` (count / correct, the
    paper's percentages in parentheses).  Rows in the order of ``run_ids``.
    """
    recs = run_records(store, run_ids, same_dataset=True, what="the model comparison")
    return pd.DataFrame([asdict(run_figures(store, r)) for r in recs], columns=MODEL_COLUMNS)


# ---------------------------------------------------------------- cross-model overlap (Fig. 6)


def flagged_by_sample(store: Store, run_ids: Sequence[int], relation: str) -> pd.DataFrame:
    """Per image flagged by at least one run: how many runs flag it (correct inferences only).

    Columns ``sample_id``, ``n_models`` (int in 1..len(run_ids)), ``runs`` (comma-separated run ids that
    flag it); ordered by ``n_models`` descending, then ``sample_id``.
    """
    check_relation(relation)
    recs = run_records(store, run_ids, same_dataset=True, what="the cross-model overlap")
    by: dict[str, list[int]] = {}
    for rec in recs:
        df = inferences(store, rec.id, labels=False)
        for sid in df.loc[df["correct"] & relation_flags(df, relation), "sample_id"]:
            by.setdefault(str(sid), []).append(rec.id)
    out = pd.DataFrame([{"sample_id": sid, "n_models": len(v), "runs": ",".join(map(str, v))}
                        for sid, v in by.items()], columns=["sample_id", "n_models", "runs"])
    return out.sort_values(["n_models", "sample_id"], ascending=[False, True], kind="stable").reset_index(drop=True)


@kept(refusals=(NotAvailable,))
def flagged_by_sample_head(store: Store, run_ids: Sequence[int], relation: str, limit: int) -> tuple[pd.DataFrame, int]:
    """The first ``limit`` rows of :func:`flagged_by_sample` (the images most runs flag) and how many rows it has
    in all: what a page shows of a list that can hold every image of the dataset."""
    per = flagged_by_sample(store, run_ids, relation)
    return per.head(int(limit)).reset_index(drop=True), int(len(per))


@kept(refusals=(NotAvailable,))
def cross_model_overlap(store: Store, run_ids: Sequence[int], relation: str) -> pd.DataFrame:
    """EMSE21 s6.1 / Fig. 6: for how many models each image's inference is unreliable.

    For each image (``sample_id``; every run on the same dataset) the number n of runs whose *correct*
    inference of it is flagged for ``relation`` by the primary vote.  Returns one row per n = 1..N
    (N = len(run_ids), zero rows included): ``n_models``, ``inputs`` (images flagged by exactly n runs) and
    ``share`` (inputs / images flagged by at least one run, as the paper's percentages; NaN when none is).
    Needs at least ``MIN_OVERLAP_RUNS`` runs.
    """
    recs = run_records(store, run_ids, same_dataset=True, minimum=MIN_OVERLAP_RUNS, what="the cross-model overlap")
    per = flagged_by_sample(store, [r.id for r in recs], relation)
    n_runs = len(recs)
    counts = per["n_models"].value_counts()
    inputs = [int(counts.get(n, 0)) for n in range(1, n_runs + 1)]
    total = sum(inputs)
    return pd.DataFrame({"n_models": list(range(1, n_runs + 1)), "inputs": inputs,
                         "share": [safe_ratio(k, total) for k in inputs]})
