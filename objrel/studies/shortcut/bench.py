"""``objrel bench shortcut``: the planted-shortcut benchmark, end to end.

Per seed:

1. write planted-shortcut scenes (``objrel.studies.shortcut.scenes``): a biased training set
   (rho = 0.95), an unbiased one (rho = 1/K), a validation split and a test split
   (both rho = 0.95), and the background-swapped test split (every test object on a
   background of another class's type);
2. train a ``ShortcutCNN`` on each training set, save it as a state dict + JSON and load
   it back through the adapter (``objrel.studies.shortcut.models.load_model``);
3. run objrel (``Engine``, plan ``all`` by default) on the test split with each model;
4. decide each correct inference's background reliance from counterfactuals
   (``groundtruth``) and score every vote group against it (``scoring``);
5. repair the biased model by retraining on its violating mutants (seed 001 s4.5),
   sweeping the share of added mutants (``repair``);
6. attack both models by transplanting objects, guided by S_p / S_r vs at random
   (seed 002 s VIII, ``attack``);
7. the multi-label arm (``run_multi_label``): a biased multi-label model, scored the same way;
8. the detection arm (``run_detection``): ``planted.PlantedDetector``, a rule-based stand-in detector
   whose reliance is known by construction, run through the ``DetectionEngine`` on flat-colour scenes
   and scored against the per-unit counterfactual truth (``groundtruth.detection_ground_truth``).

Everything lands in ``OUT/results.json`` (what the app's Shortcut page reads), the
runs in ``OUT/shortcut.db``, data and models under ``OUT/seed<N>/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from objrel.config import DetectionConfig, RunConfig
from objrel.studies.shortcut.scenes import SyntheticConfig, load_arrays, write_split
from objrel.engine.classify import Engine
from objrel.engine.detect import DetectionEngine
from objrel.mutations import ERASE_NOISE
from objrel.analysis.summary import summarize
from objrel.store import Store
from objrel.studies.shortcut import attack as A
from objrel.studies.shortcut import planted as PD
from objrel.studies.shortcut.groundtruth import detection_ground_truth, ground_truth, reliance_share
from objrel.studies.shortcut.models import MODEL_SPEC, TrainConfig, load_model, save_model, train
from objrel.studies.shortcut.repair import RepairConfig, accuracy, repair, state_of
from objrel.studies.shortcut.scoring import DetectorScore, pool, score_detection_run, score_run

# The SQLite store of the benchmark's objrel runs, in its output folder (the Shortcut page reads progress from it).
STORE_FILE = "shortcut.db"
DEFAULT_OUT = "var/shortcut"
RESULTS_FILE = "results.json"
MODELS = ("biased", "unbiased")
# Biased training data: the background type names the class in 95% of the scenes.
BIASED_RHO = 0.95
# Torch threads while training and testing.  One thread is the default: on a shared
# 2-core machine OpenMP's spinning threads made two-thread training 5-10x *slower*
# whenever another process held a core; on an idle machine two threads are ~1.7x faster.
DEFAULT_THREADS = 1


@dataclass(frozen=True)
class BenchConfig:
    """Sizes of the benchmark.  The defaults train on 2 CPU cores in minutes; ``quick()`` is for tests.

    seeds: one full pipeline per seed.  n_classes: K.  n_train / n_val / n_test: scenes per split.
    plan: the preset run on the test split and scored (``all`` scores every operator).
    draws: counterfactual backgrounds per other class type.  attack_attempts / attack_pairs:
    transplants per label pair and strategy, and how many ordered pairs (None = all).
    """

    seeds: tuple[int, ...] = (0, 1, 2)
    n_classes: int = 4
    size: int = 64
    rho: float = BIASED_RHO
    n_train: int = 1000
    n_val: int = 200
    n_test: int = 300
    train: TrainConfig = field(default_factory=lambda: TrainConfig(epochs=8))
    plan: str = "all"
    draws: int = 1
    repair: RepairConfig = field(default_factory=RepairConfig)
    attack_attempts: int = A.DEFAULT_ATTEMPTS
    attack_pairs: int | None = None
    threads: int = DEFAULT_THREADS
    quick: bool = False
    # Also train a biased multi-label model on multi-label scenes (MULTI_OBJECTS objects of distinct
    # classes; the background goes with the first-drawn one at rate rho) and score MR-1, MR-2 and their
    # union against its ground truth (seed 000 s4.4 multi-label relations).
    multi_label: bool = True
    # Also run the planted stand-in detector (``planted.PlantedDetector``: small objects named by the background
    # colour, large ones by their outline) on n_test flat-colour detection scenes and score MR-1, MR-2 and their
    # union, for the 3-colour fills and the detectors' erase/noise plan, against each unit's counterfactual truth.
    detection: bool = True

    def __post_init__(self):
        object.__setattr__(self, "seeds", tuple(int(s) for s in self.seeds))
        if not self.seeds:
            raise ValueError("seeds must name at least one seed")
        if min(self.n_train, self.n_val, self.n_test) < 1:
            raise ValueError(f"split sizes must be >= 1, got {self.n_train}, {self.n_val}, {self.n_test}")

    @classmethod
    def quick_config(cls, seeds=(0,)) -> "BenchConfig":
        """About 20 s on one CPU thread: 3 classes, small splits, short training, two repair shares."""
        return cls(seeds=tuple(seeds), n_classes=3, n_train=240, n_val=45, n_test=60,
                   train=TrainConfig(epochs=5), plan="all",
                   repair=RepairConfig(shares=(0.0, 0.2), epochs=2, plan="colours3"),
                   attack_attempts=4, quick=True)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["seeds"] = list(self.seeds)
        d["train"] = self.train.to_dict()
        d["repair"] = self.repair.to_dict()
        return d


class Timer:
    def __init__(self):
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, t0: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - t0


def run_seed(cfg: BenchConfig, seed: int, out: Path, store: Store, timer: Timer, log) -> dict:
    """The whole pipeline for one seed; returns its JSON-ready results."""
    base = SyntheticConfig(n_classes=cfg.n_classes, size=cfg.size, rho=cfg.rho, seed=seed)
    data = {"biased": base, "unbiased": base.replace(rho=1.0 / cfg.n_classes)}
    root = out / f"seed{seed}"
    t0 = time.perf_counter()
    splits = {
        "train_biased": write_split(data["biased"], root / "data" / "biased", "train", cfg.n_train),
        "train_unbiased": write_split(data["unbiased"], root / "data" / "unbiased", "train", cfg.n_train),
        "val": write_split(base, root / "data" / "biased", "val", cfg.n_val),
        "test": write_split(base, root / "data" / "biased", "test", cfg.n_test),
        "swapped": write_split(base, root / "data" / "biased", "test", cfg.n_test, swapped=True),
    }
    timer.add("generate", t0)
    test_x, test_y = load_arrays(splits["test"].annotation)
    sw_x, sw_y = load_arrays(splits["swapped"].annotation)
    res: dict = {"seed": seed, "splits": {k: v.to_dict() for k, v in splits.items()}, "models": {}}
    clfs, states, runs = {}, {}, {}
    for name in MODELS:
        t0 = time.perf_counter()
        x, y = load_arrays(splits[f"train_{name}"].annotation)
        tcfg = replace(cfg.train, seed=seed, size=cfg.size)
        module, tlog = train(x, y, tcfg, cfg.n_classes)
        path = save_model(module, root / "models" / f"{name}.pt", base.class_names, tcfg,
                          extra={"data": data[name].to_dict(), "train_log": tlog})
        timer.add("train", t0)
        clf = load_model(path, name=f"{name} (seed {seed})")
        states[name] = state_of(module)
        clfs[name] = clf
        t0 = time.perf_counter()
        # lazy=False: the attack (section 4) orders candidates by S_p / S_r, which need every mutation
        report = Engine(store, RunConfig(model=MODEL_SPEC, weights=str(path), dataset=splits["test"].annotation,
                                         plan=cfg.plan, seed=seed, batch_size=64, lazy=False,
                                         name=f"{name} seed {seed} test ({cfg.plan})"), model=clf).execute()
        runs[name] = report.run_id
        summ = summarize(store, report.run_id)
        timer.add("objrel run", t0)
        t0 = time.perf_counter()
        truth = ground_truth(clf, splits["test"].annotation, draws=cfg.draws)
        timer.add("ground truth", t0)
        scores = score_run(store, report.run_id, truth, "reliant") + score_run(store, report.run_id, truth, "matched")
        res["models"][name] = {
            "weights": str(path), "train_log": tlog, "run_id": report.run_id,
            "summary": summ.to_dict(), "swapped_accuracy": accuracy(clf, sw_x, sw_y),
            "test_accuracy": accuracy(clf, test_x, test_y),
            "reliance": reliance_share(truth), "scores": [s.to_dict() for s in scores],
            "truth": {k: v.to_dict() for k, v in truth.items()},
        }
        log(f"seed {seed} {name}: accuracy {summ.accuracy:.3f}, swapped {res['models'][name]['swapped_accuracy']:.3f}"
            f", MR-1 {summ.mr1_ratio:.3f}, MR-2 {summ.mr2_ratio:.3f}, reliant "
            f"{res['models'][name]['reliance']['reliant_ratio']:.3f}")
    t0 = time.perf_counter()
    rep = repair(store, states["biased"], replace(cfg.train, seed=seed, size=cfg.size), base.class_names,
                 splits["train_biased"].annotation, *load_arrays(splits["train_biased"].annotation),
                 splits["val"].annotation, splits["test"].annotation, sw_x, sw_y,
                 replace(cfg.repair, seed=seed), tag=f"seed {seed} ", log=log,
                 weights=res["models"]["biased"]["weights"], save_dir=root / "models")
    res["repair"] = rep.to_dict()
    timer.add("repair", t0)
    t0 = time.perf_counter()
    res["attack"] = {}
    for name in MODELS:
        pairs = A.run_attack(clfs[name], store, runs[name], cfg.attack_attempts, cfg.attack_pairs, seed)
        res["attack"][name] = {"pairs": [p.to_dict() for p in pairs], "totals": A.totals(pairs)}
    timer.add("attack", t0)
    if cfg.multi_label:
        t0 = time.perf_counter()
        res["multi_label"] = run_multi_label(cfg, seed, root, store, log)
        timer.add("multi-label", t0)
    if cfg.detection:
        t0 = time.perf_counter()
        res["detection"] = run_detection(cfg, seed, root, store, log)
        timer.add("detection", t0)
    return res


# Objects per multi-label scene: one or two (never more than K) distinct classes.
MULTI_OBJECTS = (1, 2)
# The multi-label arm runs the 3-colour votes only: MR-1, MR-2 and their union are what it scores.
MULTI_PLAN = "colours3"


def run_multi_label(cfg: BenchConfig, seed: int, root: Path, store: Store, log) -> dict:
    """The multi-label arm of one seed: biased multi-label scenes, a sigmoid CNN trained on them, an objrel run
    on the test split (multi-label relations, seed 000 s4.4) and every detector scored against the ground
    truth (``groundtruth``: multi-label reliance is defined on the predicted label set)."""
    mcfg = SyntheticConfig(n_classes=cfg.n_classes, size=cfg.size, rho=cfg.rho, seed=seed, multi_label=True,
                           objects=(MULTI_OBJECTS[0], min(MULTI_OBJECTS[1], cfg.n_classes)))
    data = root / "data" / "multi"
    train_split = write_split(mcfg, data, "train", cfg.n_train)
    test_split = write_split(mcfg, data, "test", cfg.n_test)
    x, y = load_arrays(train_split.annotation)
    tcfg = replace(cfg.train, seed=seed, size=cfg.size)
    module, tlog = train(x, y, tcfg, cfg.n_classes, task="multi")
    path = save_model(module, root / "models" / "multi.pt", mcfg.class_names, tcfg, task="multi",
                      extra={"data": mcfg.to_dict(), "train_log": tlog})
    clf = load_model(path, name=f"multi-label (seed {seed})")
    report = Engine(store, RunConfig(model=MODEL_SPEC, weights=str(path), dataset=test_split.annotation,
                                     plan=MULTI_PLAN, seed=seed, batch_size=64, task="multi",
                                     name=f"multi-label seed {seed} test ({MULTI_PLAN})"), model=clf).execute()
    summ = summarize(store, report.run_id)
    truth = ground_truth(clf, test_split.annotation, draws=cfg.draws)
    scores = score_run(store, report.run_id, truth, "reliant")
    out = {"weights": str(path), "run_id": report.run_id, "summary": summ.to_dict(),
           "reliance": reliance_share(truth), "scores": [s.to_dict() for s in scores]}
    log(f"seed {seed} multi-label: accuracy {summ.accuracy:.3f}, MR-1 {summ.mr1_ratio:.3f}, MR-2 {summ.mr2_ratio:.3f}"
        f", reliant {out['reliance']['reliant_ratio']:.3f}")
    return out


# The detection arm's plans: the 3-colour fills (MR-1, MR-2 and their union, as in the other arms) and
# seed 001's erase/noise plan, the detection runs' default.
DETECTION_PLANS = ("colours3", ERASE_NOISE)


def run_detection(cfg: BenchConfig, seed: int, root: Path, store: Store, log) -> dict:
    """The detection arm of one seed: ``n_test`` single-object scenes on flat-colour backgrounds (rho as the
    biased data), the planted stand-in detector (``planted``), one ``DetectionEngine`` run per plan of
    ``DETECTION_PLANS`` and every detector scored against the units' counterfactual ground truth
    (``groundtruth.detection_ground_truth``).  Nothing is trained: the detector's rule is fixed."""
    dcfg = SyntheticConfig(n_classes=cfg.n_classes, size=cfg.size, rho=cfg.rho, seed=seed, backgrounds="colours")
    split = write_split(dcfg, root / "data" / "detection", "test", cfg.n_test)
    detector = PD.PlantedDetector(cfg.n_classes)
    truth = detection_ground_truth(detector, split.annotation, draws=cfg.draws)
    runs, scores = {}, []
    for plan in DETECTION_PLANS:
        report = DetectionEngine(store, DetectionConfig(
            detector=PD.spec(cfg.n_classes), dataset=split.annotation, plan=plan, seed=seed, batch_size=64,
            name=f"planted detector seed {seed} test ({plan})"), detector=detector).execute()
        summ = summarize(store, report.run_id)
        scores += score_detection_run(store, report.run_id, truth)
        runs[plan] = {"run_id": report.run_id, "summary": summ.to_dict()}
    planted = PD.planted_reliance(detector, split.annotation)
    correct = [r for r in truth.values() if r.correct]
    agree = sum(bool(r.reliant) == planted[r.image_id] for r in correct)
    out = {"detector": detector.describe(), "data": dcfg.to_dict(), "runs": runs, "reliance": reliance_share(truth),
           "planted": {"correct": len(correct), "planted": sum(planted[r.image_id] for r in correct),
                       "agree": agree},
           "scores": [s.to_dict() for s in scores], "truth": {k: v.to_dict() for k, v in truth.items()}}
    su = runs[DETECTION_PLANS[0]]["summary"]
    r3 = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731  (no ratio when nothing was detected)
    log(f"seed {seed} detection: detected {su['correct']}/{su['evaluated']} units, MR-1 {r3(su['mr1_ratio'])}, "
        f"MR-2 {r3(su['mr2_ratio'])}, reliant {r3(out['reliance']['reliant_ratio'])} "
        f"(planted rule agrees on {agree}/{len(correct)})")
    return out


# ---------------------------------------------------------------- tables


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


def run_bench(cfg: BenchConfig, out, log=None) -> dict:
    """Run the benchmark into ``out`` (its previous store and seed folders are replaced); returns the results."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for p in [out / STORE_FILE, out / f"{STORE_FILE}-wal", out / f"{STORE_FILE}-shm",
              *out.glob("seed*")]:
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    say = log or (lambda m: None)
    threads = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    timer = Timer()
    t_all = time.perf_counter()
    store = Store(out / STORE_FILE)
    try:
        seeds = [run_seed(cfg, s, out, store, timer, say) for s in cfg.seeds]
    finally:
        store.dispose()
        torch.set_num_threads(threads)
    timer.seconds["total"] = time.perf_counter() - t_all
    results = {"config": cfg.to_dict(), "seeds": seeds, "store": str((out / STORE_FILE).resolve()),
               "timings": {k: round(v, 2) for k, v in timer.seconds.items()}}
    (out / RESULTS_FILE).write_text(json.dumps(results, default=_json_default), encoding="utf-8")
    return results


def _json_default(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    raise TypeError(f"cannot serialise {type(o).__name__}")


def load_results(path) -> dict:
    """The results file at ``path``, held to ``MAX_RESULTS_FILE_BYTES`` and ``MAX_NESTING_DEPTH`` before it is
    parsed; ``ValueError`` (``InputFileError``) in one line for a file too large, too deep or not JSON."""
    from objrel.constants import MAX_RESULTS_FILE_BYTES
    from objrel.data.bounded import parse_json

    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no benchmark results at {p}; run `objrel bench shortcut --out {p.parent}` first")
    data = parse_json(p, f"benchmark results {p}", MAX_RESULTS_FILE_BYTES)
    if not isinstance(data, dict):
        raise ValueError(f"benchmark results {p} is a JSON {type(data).__name__}, expected an object")
    return data


def import_root() -> Path:
    """The folder that holds the ``objrel`` package (objrel/studies/shortcut/bench.py is three levels down)."""
    return Path(__file__).resolve().parents[3]


def start_quick(out):
    """Start ``objrel bench shortcut --quick --out OUT`` as a separate process (the app never trains in
    its script thread, ARCHITECTURE.md decision 7) and return its ``subprocess.Popen``; the caller reaps it.
    The app starts it through ``browse.start_quick_benchmark``, which asks the gate first."""
    import os
    import subprocess

    out = Path(out).resolve()      # the child writes where the page looks, whatever the child's cwd
    out.mkdir(parents=True, exist_ok=True)
    log = out / "quick.log"
    cmd = [sys.executable, "-m", "objrel.studies.shortcut.bench", "--quick", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(import_root()),
                                                                       os.environ.get("PYTHONPATH")]))}
    with open(log, "wb") as fh:
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)


def config_from_args(args) -> BenchConfig:
    seeds = tuple(range(args.seeds)) if args.seeds else None
    if args.quick:
        cfg = BenchConfig.quick_config(seeds or (0,))
    else:
        cfg = BenchConfig(seeds=seeds or (0, 1, 2))
    if args.threads:
        cfg = replace(cfg, threads=args.threads)
    return cfg


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="small and fast (one seed, 3 classes; for tests)")
    p.add_argument("--seeds", type=int, default=None, help="number of seeds 0..N-1 (default 3; 1 with --quick)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    p.add_argument("--threads", type=int, default=None, help=f"torch threads (default {DEFAULT_THREADS})")
    p.add_argument("--quiet", action="store_true", help="no progress lines")


def handle(args) -> int:
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    cfg = config_from_args(args)
    log = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    results = run_bench(cfg, args.out, log)
    print(report_text(results))
    print(f"\nresults: {Path(args.out) / RESULTS_FILE}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="objrel bench shortcut", description=__doc__.splitlines()[0])
    add_arguments(p)
    return handle(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
