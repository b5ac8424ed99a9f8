"""objrel.analysis.flag_tables and objrel.analysis.significance on hand-built stores: every expected number is
worked out by hand or by an independent formula in the test, never taken from the code under test."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from objrel.analysis import flag_tables as A
from objrel.analysis import significance as S
from objrel.mutations.plan import preset
from objrel.analysis.summary import summarize
from objrel.store import Store

CLASSES = ["red", "green", "blue"]


@dataclass
class Inf:
    """One inference to store.  ``pred`` defaults to the ground truth when correct, else another label."""

    sid: str
    correct: bool = True
    gt: tuple = (0,)
    pred: tuple | None = None
    mr1: bool = False
    mr2: bool = False
    area: float | None = 0.3
    status: str | None = None        # default: tested when correct or test_all, else untested
    v15_mr1: bool | None = None      # 15-colour votes (palette runs only)
    v15_mr2: bool | None = None


def add_run(store: Store, infs: list[Inf], *, model: str = "m", dataset: str = "toy", plan: str = "colours3",
            test_all: bool = True, task: str = "single", skipped: int = 0) -> int:
    """Insert a run row by row through Store.write_sample (the shapes of objrel.engine.classify._commit)."""
    rid = store.create_run(name=f"{model} {plan}", model=model, model_config={}, task=task, class_names=CLASSES,
                           dataset=dataset, dataset_config={}, plan=preset(plan).to_dict(),
                           config={"test_all": test_all}, seed=0, n_total=len(infs) + skipped)
    for i in infs:
        status = i.status or ("tested" if (i.correct or test_all) else "untested")
        pred = list(i.pred) if i.pred is not None else (list(i.gt) if i.correct else [(i.gt[0] + 1) % 3])
        row = {"sample_id": i.sid, "rel_path": f"{i.sid}.png", "status": status, "width": 10, "height": 10,
               "gt_labels": list(i.gt), "gt_categories": [CLASSES[g] for g in i.gt], "predicted": pred,
               "correct": i.correct, "objects": [], "region_source": "box", "area_ratio": i.area}
        votes = []
        if status == "tested":
            for rel, flag, v15 in (("MR-1", i.mr1, i.v15_mr1), ("MR-2", i.mr2, i.v15_mr2)):
                votes.append({"sample_id": i.sid, "group_name": f"{rel} 3 colours", "relation": rel,
                              "is_primary": True, "k": 2, "n": 3, "applicable": 3, "violations": 3 if flag else 0,
                              "flagged": flag})
                if v15 is not None:
                    votes.append({"sample_id": i.sid, "group_name": f"{rel} 15 colours", "relation": rel,
                                  "is_primary": False, "k": 8, "n": 15, "applicable": 15,
                                  "violations": 15 if v15 else 0, "flagged": v15})
        assert store.write_sample(rid, row, [], [], votes)
    for k in range(skipped):
        store.write_sample(rid, {"sample_id": f"skip{k}", "rel_path": f"skip{k}.png", "status": "skipped",
                                 "skip_code": "corrupt-image", "skip_reason": "bad"}, [], [], [])
    return rid


# ---------------------------------------------------------------- per label


def test_per_label_counts_and_ratios(store):
    rid = add_run(store, [
        Inf("a", gt=(0,), mr1=True, mr2=True),
        Inf("b", gt=(0,), mr2=True),
        Inf("c", gt=(0,)),
        Inf("d", gt=(1,), mr2=True),
        Inf("e", correct=False, gt=(2,), mr1=True, mr2=True),  # incorrect: flagged but not counted
        # single-label, two ground-truth labels: counts under the predicted one (green) only
        Inf("f", gt=(0, 1), pred=(1,), mr1=True),
    ], skipped=2)
    t = A.per_label(store, rid).set_index("class_name")
    assert list(t.index) == ["red", "green"]                      # blue has no correct inference
    assert t.loc["red", ["correct", "mr1", "mr2", "both"]].tolist() == [3, 1, 2, 1]
    assert t.loc["green", ["correct", "mr1", "mr2", "both"]].tolist() == [2, 1, 1, 0]
    assert t.loc["red", "mr2_ratio"] == pytest.approx(2 / 3)
    assert t.loc["green", "mr1_ratio"] == pytest.approx(1 / 2)
    assert t.loc["red", "both_ratio"] == pytest.approx(1 / 3)


def test_per_label_multi_label_counts_each_label(store):
    rid = add_run(store, [Inf("a", gt=(0, 2), mr2=True), Inf("b", gt=(2,))], task="multi")
    t = A.per_label(store, rid).set_index("class_name")
    assert t.loc["red", "correct"] == 1 and t.loc["blue", "correct"] == 2
    assert t.loc["blue", "mr2"] == 1 and t.loc["blue", "mr2_ratio"] == pytest.approx(0.5)


def test_sort_per_label(store):
    rid = add_run(store, [Inf("a", gt=(0,), mr2=True), Inf("b", gt=(0,)), Inf("c", gt=(0,)),
                          Inf("d", gt=(1,), mr2=True), Inf("e", gt=(2,), mr1=True), Inf("f", gt=(2,))])
    t = A.per_label(store, rid)
    assert A.sort_per_label(t, "ratio", "MR-2")["class_name"].tolist() == ["green", "red", "blue"]  # 1, 1/3, 0
    assert A.sort_per_label(t, "correct", "MR-2")["class_name"].tolist() == ["red", "blue", "green"]  # 3, 2, 1
    assert A.sort_per_label(t, "flagged", "MR-1")["class_name"].tolist() == ["blue", "red", "green"]
    assert A.sort_per_label(t, "label", "MR-1")["class_name"].tolist() == ["red", "green", "blue"]
    with pytest.raises(ValueError, match="sort key"):
        A.sort_per_label(t, "size", "MR-1")


# ---------------------------------------------------------------- object size


@pytest.mark.parametrize("ratio, expected", [
    (0.0, 0), (0.0499, 0), (0.05, 1), (0.0999, 1), (0.1, 2), (0.35, 7), (0.5, 10),
    (0.9499, 18), (0.95, 19), (0.999, 19), (1.0, 19),
])
def test_size_bin_edges(ratio, expected):
    assert A.size_bin_index(ratio) == expected


def test_size_bin_edges_hold_for_pixel_ratios():
    # an object of exactly k/20 of a 640x480 image lies in bin k; one pixel less lies in bin k-1
    d = 640 * 480
    for k in range(1, 20):
        n = k * d // 20
        assert A.size_bin_index(n / d) == k and A.size_bin_index((n - 1) / d) == k - 1


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan")])
def test_size_bin_rejects_out_of_range(bad):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        A.size_bin_index(bad)


def test_size_bins_counts_correct_tested_inferences(store):
    r1 = add_run(store, [
        Inf("a", area=0.01, mr2=True), Inf("b", area=0.0499), Inf("c", area=0.05, mr2=True),
        Inf("d", area=1.0), Inf("e", area=0.97, mr2=True), Inf("f", area=0.5, mr1=True),
        Inf("g", area=0.02, correct=False, mr2=True),   # incorrect: left out
        Inf("h", area=None, mr2=True),                  # no area: left out
    ], skipped=1)
    r2 = add_run(store, [Inf("a", area=0.03, mr2=True)], model="m2")
    t = A.size_bins(store, [r1], "MR-2")
    assert len(t) == 20 and t["bin"].tolist() == list(range(20))
    assert t.loc[1, "lower"] == pytest.approx(0.05) and t.loc[19, "upper"] == pytest.approx(1.0)
    assert t.loc[0, "x"] == pytest.approx(0.025) and t.loc[19, "x"] == pytest.approx(1.0)
    assert t.loc[0, ["tested", "flagged"]].tolist() == [2, 1] and t.loc[0, "share"] == pytest.approx(0.5)
    assert t.loc[1, ["tested", "flagged"]].tolist() == [1, 1]
    assert t.loc[19, ["tested", "flagged"]].tolist() == [2, 1]
    assert t.loc[10, ["tested", "flagged"]].tolist() == [1, 0]   # flagged for MR-1 only
    assert math.isnan(t.loc[5, "share"]) and t.loc[5, "tested"] == 0
    assert t["tested"].sum() == 6
    # MR-1 on the same run and pooled runs
    assert A.size_bins(store, [r1], "MR-1").loc[10, "flagged"] == 1
    pooled = A.size_bins(store, [r1, r2], "MR-2")
    assert pooled.loc[0, ["tested", "flagged"]].tolist() == [3, 2]


# ---------------------------------------------------------------- model comparison


def test_model_comparison_rows_match_hand_counts_and_summary(store):
    r1 = add_run(store, [Inf("a", mr1=True, mr2=True), Inf("b", mr2=True), Inf("c"), Inf("d", correct=False)],
                 model="alpha", test_all=False, skipped=1)
    r2 = add_run(store, [Inf("a", mr2=True), Inf("b", correct=False), Inf("c", correct=False), Inf("d")],
                 model="beta", test_all=False)
    t = A.model_comparison(store, [r1, r2]).set_index("model")
    assert t.loc["alpha", ["evaluated", "correct", "mr1", "mr2", "both"]].tolist() == [4, 3, 1, 2, 1]
    assert t.loc["alpha", "accuracy"] == pytest.approx(3 / 4)
    assert t.loc["alpha", "mr2_ratio"] == pytest.approx(2 / 3)
    assert t.loc["beta", ["evaluated", "correct", "mr1", "mr2", "both"]].tolist() == [4, 2, 0, 1, 0]
    assert t.loc["beta", "mr2_ratio"] == pytest.approx(1 / 2)
    # the same figures as the Overview page's Table 5 row
    s = summarize(store, r1)
    assert (s.correct, s.mr1, s.mr2, s.both) == tuple(t.loc["alpha", ["correct", "mr1", "mr2", "both"]])


def test_run_figures_are_a_typed_frozen_row_of_the_comparison(store):
    import dataclasses

    r1 = add_run(store, [Inf("a", mr1=True, mr2=True), Inf("b", mr2=True), Inf("c", correct=False)], model="alpha")
    row = A.run_figures(store, store.get_run(r1))
    assert isinstance(row, A.RunFigures) and (row.correct, row.mr1, row.mr2, row.both) == (2, 1, 2, 1)
    assert row.ratio("MR-2") == pytest.approx(1.0) and row.ratio("MR-1&2") == pytest.approx(0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        row.correct = 3
    assert list(A.model_comparison(store, [r1]).columns) == [f.name for f in dataclasses.fields(A.RunFigures)]


def test_no_analysis_module_is_named_after_a_stage():
    """``objrel/analysis/studies.py`` sat beside the ``objrel/studies/`` package: two modules called "studies"."""
    from pathlib import Path

    import objrel

    root = Path(objrel.__file__).parent
    stages = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in (root / "analysis").glob("*.py")}
    assert "summary" in modules and "studies" in stages
    assert modules & stages == set()


def test_multi_run_analyses_refuse_mixed_datasets(store):
    r1 = add_run(store, [Inf("a")], dataset="coco")
    r2 = add_run(store, [Inf("a")], dataset="imagenet")
    with pytest.raises(A.NotAvailable, match="one dataset"):
        A.model_comparison(store, [r1, r2])
    with pytest.raises(A.NotAvailable, match="one dataset"):
        A.cross_model_overlap(store, [r1, r2], "MR-1")
    with pytest.raises(ValueError, match="distinct"):
        A.model_comparison(store, [r1, r1])
    with pytest.raises(ValueError, match="relation must be one of"):
        A.size_bins(store, [r1], "MR-3")


# ---------------------------------------------------------------- cross-model overlap


def test_cross_model_overlap_counts_runs_per_image(store):
    r1 = add_run(store, [Inf("a", mr2=True), Inf("b", mr2=True), Inf("c", mr2=True), Inf("d"), Inf("e")])
    r2 = add_run(store, [Inf("a", mr2=True), Inf("b", mr2=True), Inf("c"), Inf("d"), Inf("e")], model="m2")
    r3 = add_run(store, [Inf("a", mr2=True), Inf("b"), Inf("c"), Inf("d", mr2=True),
                         Inf("e", correct=False, mr2=True)], model="m3")   # incorrect e is not counted
    # a: 3 runs, b: 2, c: 1, d: 1  -> 4 images flagged by at least one run
    t = A.cross_model_overlap(store, [r1, r2, r3], "MR-2")
    assert t["n_models"].tolist() == [1, 2, 3]
    assert t["inputs"].tolist() == [2, 1, 1]
    assert t["share"].tolist() == pytest.approx([2 / 4, 1 / 4, 1 / 4])
    per = A.flagged_by_sample(store, [r1, r2, r3], "MR-2").set_index("sample_id")
    assert per.loc["a", "runs"] == f"{r1},{r2},{r3}" and per.loc["d", "n_models"] == 1
    assert "e" not in per.index
    none = A.cross_model_overlap(store, [r1, r2, r3], "MR-1")
    assert none["inputs"].tolist() == [0, 0, 0] and none["share"].isna().all()
    with pytest.raises(A.NotAvailable, match="at least 2 runs"):
        A.cross_model_overlap(store, [r1], "MR-2")


# ---------------------------------------------------------------- reliable accuracy (Tables 7/8)


def test_reliable_accuracy_splits_correct_and_incorrect_inferences(store):
    # 6 correct + 4 incorrect; MR-2 flags 2 correct and 3 incorrect inferences
    infs = [Inf(f"c{i}", mr2=i < 2) for i in range(6)] + [Inf(f"x{i}", correct=False, mr2=i < 3) for i in range(4)]
    rid = add_run(store, infs, skipped=2)
    row = S.reliable_accuracy(store, [rid], "MR-2").table.iloc[0]
    assert (row["evaluated"], row["unreliable"], row["reliable"]) == (10, 5, 5)
    assert row["original"] == pytest.approx(6 / 10)
    assert row["unreliable_accuracy"] == pytest.approx(2 / 5)
    assert row["reliable_accuracy"] == pytest.approx(4 / 5)
    assert row["delta"] == pytest.approx(4 / 5 - 6 / 10)


def test_reliable_accuracy_needs_incorrect_inferences_tested(store):
    rid = add_run(store, [Inf("a", mr2=True), Inf("b"), Inf("c", correct=False)], test_all=False)
    with pytest.raises(A.NotAvailable, match="--all"):
        S.reliable_accuracy(store, [rid], "MR-2")
    row = S.reliable_accuracy(store, [rid], "MR-2", require_all_tested=False).table.iloc[0]
    assert row["untested"] == 1 and row["reliable_accuracy"] == pytest.approx(1 / 2)
    assert row["unreliable_accuracy"] == pytest.approx(1.0)


def _run_with(store, model, correct, flagged):
    """A --all run whose inference i is correct[i] and flagged for MR-2 when i is in ``flagged``."""
    return add_run(store, [Inf(f"s{i}", correct=c, mr2=i in flagged) for i, c in enumerate(correct)], model=model)


def test_reliable_accuracy_wilcoxon_on_hand_made_pairs(store):
    T, F = True, False
    runs = [
        _run_with(store, "m1", [T, T, F, F], {2}),         # original 1/2, reliable 2/3: +1/6
        _run_with(store, "m2", [T, T, T, F], {3}),         # original 3/4, reliable 1:   +1/4
        _run_with(store, "m3", [T, T, F, F, F], {0}),      # original 2/5, reliable 1/4: -3/20
        _run_with(store, "m4", [T, T, T, F, F], {3, 4}),   # original 3/5, reliable 1:   +2/5
    ]
    res = S.reliable_accuracy(store, runs, "MR-2")
    assert res.table["delta"].tolist() == pytest.approx([1 / 6, 1 / 4, -3 / 20, 2 / 5])
    # |delta| ranks: 3/20 -> 1, 1/6 -> 2, 1/4 -> 3, 2/5 -> 4, so W- = 1 and W+ = 9.
    # Exact null: 16 equally likely sign patterns; W- <= 1 for {} and {1}: P = 2/16.
    assert res.wilcoxon.statistic == pytest.approx(1.0)       # two-sided statistic = min(W+, W-)
    assert res.wilcoxon.pvalue == pytest.approx(2 * 2 / 16)
    assert res.wilcoxon.n == 4 and "too few" in res.note
    assert res.wilcoxon.method == "exact" and res.wilcoxon.n_zero == 0 and not res.wilcoxon.ties
    greater = S.reliable_accuracy(store, runs, "MR-2", alternative="greater").wilcoxon
    assert greater.statistic == pytest.approx(9.0) and greater.pvalue == pytest.approx(2 / 16)
    # one run alone cannot be tested
    single = S.reliable_accuracy(store, runs[:1], "MR-2")
    assert single.wilcoxon is None and "needs at least 2" in single.note


# ---------------------------------------------------------------- 3 vs 15 colours (Table 4)


def yates_chi2(t) -> float:
    (a, b), (c, d) = t
    n = a + b + c + d
    return n * (abs(a * d - b * c) - n / 2) ** 2 / ((a + b) * (c + d) * (a + c) * (b + d))


def pearson_chi2(t) -> float:
    (a, b), (c, d) = t
    n = a + b + c + d
    return n * (a * d - b * c) ** 2 / ((a + b) * (c + d) * (a + c) * (b + d))


@pytest.mark.parametrize("table, paper_v, standard_v", [
    ([[169, 52], [63, 35323]], 0.743, 0.745),      # seed 000 Table 4, MR-1
    ([[5145, 1467], [249, 28773]], 0.835, 0.835),  # seed 000 Table 4, MR-2
])
def test_cramers_v_on_seed_000_table_4(table, paper_v, standard_v):
    n = sum(map(sum, table))
    chi2 = yates_chi2(table)
    c = S.contingency_from_counts(table)
    assert c.yates is False and c.dof == 1 and c.n == n
    # the headline V is the standard one (Pearson chi-square, no correction) ...
    assert c.chi2 == pytest.approx(pearson_chi2(table), rel=1e-9)
    assert round(c.cramers_v, 3) == standard_v and c.v_method.startswith("standard")
    # ... and the Yates-corrected variant is the paper's figure
    assert c.chi2_yates == pytest.approx(chi2, rel=1e-9)
    assert c.cramers_v_yates == pytest.approx(math.sqrt(chi2 / (n * (min(2, 2) - 1))), rel=1e-9)
    assert round(c.cramers_v_yates, 3) == paper_v
    assert c.pvalue < 0.001 and c.pvalue_yates < 0.001
    assert c.to_dict()["v_method"] == S.CRAMERS_V_STANDARD and c.to_dict()["cramers_v_yates"] == c.cramers_v_yates
    assert c.agreement == pytest.approx((table[0][0] + table[1][1]) / n)


def test_contingency_stats_small_tables():
    # 2x2 with Yates: chi2 = 10 (|12 - 2| - 5)^2 / (4 * 6 * 5 * 5) = 250 / 600; 1 dof: p = erfc(sqrt(chi2 / 2))
    chi2, p, dof, v = S.contingency_stats([[3, 1], [2, 4]], correction=True)
    assert chi2 == pytest.approx(250 / 600) and dof == 1
    assert p == pytest.approx(math.erfc(math.sqrt(chi2 / 2)))
    assert v == pytest.approx(math.sqrt(250 / 600 / 10))
    # the default, standard: chi2 = 10 (12 - 2)^2 / 600 = 1000 / 600, V = sqrt(1/6)
    chi2, p, dof, v = S.contingency_stats([[3, 1], [2, 4]])
    assert chi2 == pytest.approx(1000 / 600) and v == pytest.approx(math.sqrt(1 / 6))
    # perfect association: the standard V is 1, the Yates-corrected one is not
    assert S.contingency_stats([[1, 0], [0, 1]])[3] == pytest.approx(1.0)
    # Yates: chi2 = 2 (|1 - 0| - 1)^2 / 1 = 0 -> V = 0
    assert S.contingency_stats([[1, 0], [0, 1]], correction=True)[3] == pytest.approx(0.0)
    # 2x3, no correction: expected counts 10 each, chi2 = (5^2 + 5^2 + 0 + 5^2 + 5^2 + 0) / 10 = 10, 2 dof: p = e^-5
    chi2, p, dof, v = S.contingency_stats([[15, 5, 10], [5, 15, 10]])
    assert chi2 == pytest.approx(10.0) and dof == 2 and p == pytest.approx(math.exp(-5))
    assert v == pytest.approx(math.sqrt(10 / (60 * 1)))
    # an empty column: undefined
    assert S.contingency_stats([[3, 0], [2, 0]])[0] is None


def test_colour_contingency_from_stored_votes(store):
    combos = ([(True, True)] * 3 + [(True, False)] * 1 +      # V15 violate: V3 violate 3, V3 not 1
              [(False, True)] * 2 + [(False, False)] * 4)     # V15 not:     V3 violate 2, V3 not 4
    infs = [Inf(f"s{i}", mr1=v3, v15_mr1=v15, v15_mr2=False) for i, (v15, v3) in enumerate(combos)]
    infs.append(Inf("u", correct=False, status="untested"))  # no votes: left out
    rid = add_run(store, infs, plan="palette15", test_all=False, skipped=1)
    c = S.colour_contingency(store, rid, "MR-1")
    assert c.table.values.tolist() == [[3, 1], [2, 4]]
    assert list(c.table.index) == ["V15: violate", "V15: not violate"]
    assert list(c.table.columns) == ["V3: violate", "V3: not violate"]
    assert c.n == 10 and c.chi2 == pytest.approx(pearson_chi2([[3, 1], [2, 4]]))
    assert c.cramers_v == pytest.approx(math.sqrt(1 / 6))
    assert c.chi2_yates == pytest.approx(yates_chi2([[3, 1], [2, 4]]))
    assert c.cramers_v_yates == pytest.approx(math.sqrt(250 / 600 / 10))
    # MR-2: nothing flagged by either vote -> one cell holds everything, the test is undefined
    c2 = S.colour_contingency(store, rid, "MR-2")
    assert c2.table.values.tolist() == [[0, 0], [0, 10]] and c2.chi2 is None and "undefined" in c2.note
    assert c.to_dict()["table"]["V15: violate"]["V3: violate"] == 3


def test_colour_contingency_without_palette_says_how_to_get_it(store):
    rid = add_run(store, [Inf("a")], plan="colours3")
    assert not A.has_palette(store, rid)
    with pytest.raises(A.NotAvailable, match="objrel run --plan palette15"):
        S.colour_contingency(store, rid, "MR-1")
    with pytest.raises(ValueError, match="relation"):
        S.colour_contingency(store, rid, "MR-1&2")


# ---------------------------------------------------------------- accuracy vs violation ratio (Fig. 10)


def test_pearson_of_accuracy_and_violation_ratio(store):
    T, F = True, False
    # (correct flags, MR-2-flagged indices) -> (accuracy, ratio over correct)
    specs = [
        ([T, T, F, F], {0}),           # 1/2, 1/2
        ([T, T, T, F], {0}),           # 3/4, 1/3
        ([T, T, T, T], {0}),           # 1,   1/4
        ([T, T, F, F, F], {0, 1}),     # 2/5, 1
    ]
    runs = [_run_with(store, f"m{i}", c, f) for i, (c, f) in enumerate(specs)]
    x = np.array([1 / 2, 3 / 4, 1.0, 2 / 5])
    y = np.array([1 / 2, 1 / 3, 1 / 4, 1.0])
    dx, dy = x - x.mean(), y - y.mean()
    r = (dx * dy).sum() / math.sqrt((dx ** 2).sum() * (dy ** 2).sum())
    t = r * math.sqrt((len(x) - 2) / (1 - r ** 2))
    p = 1 - abs(t) / math.sqrt(2 + t ** 2)   # two-sided tail of Student's t with 2 dof, closed form
    res = S.accuracy_violation_correlation(store, runs, "MR-2")
    assert res.n == 4 and res.r == pytest.approx(r) and res.pvalue == pytest.approx(p)
    assert res.slope == pytest.approx((dx * dy).sum() / (dx ** 2).sum())
    assert res.intercept == pytest.approx(y.mean() - res.slope * x.mean())
    assert res.table["accuracy"].tolist() == pytest.approx(x.tolist())
    assert res.to_dict()["n"] == 4


def test_pearson_needs_three_runs_and_variation(store):
    T, F = True, False
    a = _run_with(store, "a", [T, F], {0})
    b = _run_with(store, "b", [T, T], {0})
    with pytest.raises(A.NotAvailable, match="at least 3 runs"):
        S.accuracy_violation_correlation(store, [a, b], "MR-2")
    c = _run_with(store, "c", [T, T, T, F], {0})
    with pytest.raises(A.NotAvailable, match="same ratio"):  # ratios 1, 1/2, 1/3 vary; MR-1 ratios are all 0
        S.accuracy_violation_correlation(store, [a, b, c], "MR-1")


# ---------------------------------------------------------------- catalogue


def test_run_catalog_lists_runs_with_rows(store):
    a = add_run(store, [Inf("a")], plan="palette15", test_all=False)
    store.create_run(name="empty", model="m", model_config={}, task="single", class_names=CLASSES, dataset="toy",
                     dataset_config={}, plan=preset("colours3").to_dict(), config={}, seed=0, n_total=3)
    b = add_run(store, [Inf("a")], plan="colours3", test_all=True)
    cat = A.run_catalog(store)
    assert cat["run"].tolist() == [a, b]
    assert cat["has_palette"].tolist() == [True, False]
    assert cat["test_all"].tolist() == [False, True]
