"""The planted-shortcut benchmark's arms, one seed at a time, and the whole run into an output folder.

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
5. repair the biased model by retraining on its violating mutants (DetReport s4.5),
   sweeping the share of added mutants (``repair``);
6. attack both models by transplanting objects, guided by S_p / S_r vs at random
   (ORMR s VIII, ``attack``);
7. the multi-label arm (``run_multi_label``): a biased multi-label model and one trained at rho = 1/K (whose
   correct inferences include non-reliant ones, so precision can fail), tested on the same biased scenes and
   scored the same way;
8. the detection arm (``run_detection``): ``planted.PlantedDetector``, a rule-based stand-in detector
   whose reliance is known by construction, run through the ``DetectionEngine`` on flat-colour scenes
   and scored against the per-unit counterfactual truth (``groundtruth.detection_ground_truth``).

Each arm returns a typed result (``results``); ``run_bench`` writes them all to ``OUT/results.json``, the runs
to ``OUT/shortcut.db`` and data and models under ``OUT/seed<N>/``.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path

import torch

from objrel.analysis.summary import summarize
from objrel.config import DetectionConfig, RunConfig
from objrel.engine.classify import Engine
from objrel.engine.detect import DetectionEngine
from objrel.mutations import ERASE_NOISE
from objrel.store import Store
from objrel.studies.shortcut import attack as A
from objrel.studies.shortcut import planted as PD
from objrel.studies.shortcut.config import BenchConfig
from objrel.studies.shortcut.groundtruth import detection_ground_truth, ground_truth, reliance_share
from objrel.studies.shortcut.models import MODEL_SPEC, load_model, save_model, train
from objrel.studies.shortcut.repair import accuracy, repair, state_of
from objrel.studies.shortcut.results import (MODELS, RESULTS_FILE, STORE_FILE, AttackResult, BenchResults,
                                             DetectionResult, DetectionRun, ModelResult, MultiLabelResult,
                                             PlantedAgreement, SeedResult, write_results)
from objrel.studies.shortcut.scenes import SyntheticConfig, load_arrays, write_split
from objrel.studies.shortcut.scoring import (detection_flags, detector_flags, flags_to_dict, score_detection_run,
                                             score_run)

# Objects per multi-label scene: one or two (never more than K) distinct classes.
MULTI_OBJECTS = (1, 2)
# The multi-label arm runs the 3-colour votes only: MR-1, MR-2 and their union are what it scores.
MULTI_PLAN = "colours3"
# The detection arm's plans: the 3-colour fills (MR-1, MR-2 and their union, as in the other arms) and
# DetReport's erase/noise plan, the detection runs' default.
DETECTION_PLANS = ("colours3", ERASE_NOISE)


class Timer:
    """Seconds spent per stage, summed over seeds."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    def add(self, stage: str, t0: float) -> None:
        """Add the seconds since ``t0`` (``time.perf_counter``) to ``stage``."""
        self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - t0


def run_seed(cfg: BenchConfig, seed: int, out: Path, store: Store, timer: Timer, log) -> SeedResult:
    """The whole pipeline for one seed."""
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
    models: dict[str, ModelResult] = {}
    clfs, states = {}, {}
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
        summ = summarize(store, report.run_id)
        timer.add("objrel run", t0)
        t0 = time.perf_counter()
        truth = ground_truth(clf, splits["test"].annotation, draws=cfg.draws)
        timer.add("ground truth", t0)
        scores = score_run(store, report.run_id, truth, "reliant") + score_run(store, report.run_id, truth, "matched")
        m = models[name] = ModelResult(
            weights=str(path), train_log=tlog, run_id=report.run_id, summary=summ,
            swapped_accuracy=accuracy(clf, sw_x, sw_y), test_accuracy=accuracy(clf, test_x, test_y),
            reliance=reliance_share(truth), scores=tuple(scores), truth=truth,
            flags=flags_to_dict(*detector_flags(store, report.run_id)), relevancy=relevancy_of(store, report.run_id))
        log(f"seed {seed} {name}: accuracy {summ.accuracy:.3f}, swapped {m.swapped_accuracy:.3f}"
            f", MR-1 {summ.mr1_ratio:.3f}, MR-2 {summ.mr2_ratio:.3f}, reliant "
            f"{m.reliance['reliant_ratio']:.3f}")
    t0 = time.perf_counter()
    rep = repair(store, states["biased"], replace(cfg.train, seed=seed, size=cfg.size), base.class_names,
                 splits["train_biased"].annotation, *load_arrays(splits["train_biased"].annotation),
                 splits["val"].annotation, splits["test"].annotation, sw_x, sw_y,
                 replace(cfg.repair, seed=seed), tag=f"seed {seed} ", log=log,
                 weights=models["biased"].weights, save_dir=root / "models")
    timer.add("repair", t0)
    t0 = time.perf_counter()
    attack = {}
    for name in MODELS:
        pairs = A.run_attack(clfs[name], store, models[name].run_id, cfg.attack_attempts, cfg.attack_pairs, seed)
        attack[name] = AttackResult(tuple(pairs), A.totals(pairs))
    timer.add("attack", t0)
    multi = detection = None
    if cfg.multi_label:
        t0 = time.perf_counter()
        multi = run_multi_label(cfg, seed, root, store, log)
        timer.add("multi-label", t0)
    if cfg.detection:
        t0 = time.perf_counter()
        detection = run_detection(cfg, seed, root, store, log)
        timer.add("detection", t0)
    return SeedResult(seed, splits, models, rep, attack, multi, detection)


def relevancy_of(store: Store, run_id: int) -> dict[str, tuple]:
    """``{sample id: (S_p, S_r, S)}`` of a run's tested inferences (ORMR; None where a score is undefined)."""
    return {r["sample_id"]: (r["s_p"], r["s_r"], r["s"]) for r in store.samples(run_id, status="tested")}


def run_multi_label(cfg: BenchConfig, seed: int, root: Path, store: Store, log) -> dict[str, MultiLabelResult]:
    """The multi-label arm of one seed: multi-label test scenes at the biased rate, and per model of ``MODELS`` a
    sigmoid CNN trained on scenes at its rate (biased: rho; unbiased: 1/K), an objrel run on the test split
    (multi-label relations, EMSE21 s4.4) and every detector scored against the ground truth (``groundtruth``:
    multi-label reliance is defined on the predicted label set)."""
    mcfg = SyntheticConfig(n_classes=cfg.n_classes, size=cfg.size, rho=cfg.rho, seed=seed, multi_label=True,
                           objects=(MULTI_OBJECTS[0], min(MULTI_OBJECTS[1], cfg.n_classes)))
    data = root / "data" / "multi"
    test_split = write_split(mcfg, data, "test", cfg.n_test)
    out = {}
    for name, rho in zip(MODELS, (cfg.rho, 1.0 / cfg.n_classes)):
        train_cfg = mcfg.replace(rho=rho)
        train_split = write_split(train_cfg, root / "data" / f"multi_{name}", "train", cfg.n_train)
        x, y = load_arrays(train_split.annotation)
        tcfg = replace(cfg.train, seed=seed, size=cfg.size)
        module, tlog = train(x, y, tcfg, cfg.n_classes, task="multi")
        path = save_model(module, root / "models" / f"multi_{name}.pt", mcfg.class_names, tcfg, task="multi",
                          extra={"data": train_cfg.to_dict(), "train_log": tlog})
        clf = load_model(path, name=f"multi-label {name} (seed {seed})")
        report = Engine(store, RunConfig(model=MODEL_SPEC, weights=str(path), dataset=test_split.annotation,
                                         plan=MULTI_PLAN, seed=seed, batch_size=64, task="multi",
                                         name=f"multi-label {name} seed {seed} test ({MULTI_PLAN})"),
                        model=clf).execute()
        summ = summarize(store, report.run_id)
        truth = ground_truth(clf, test_split.annotation, draws=cfg.draws)
        scores = score_run(store, report.run_id, truth, "reliant")
        m = out[name] = MultiLabelResult(weights=str(path), rho=rho, run_id=report.run_id, summary=summ,
                                         reliance=reliance_share(truth), scores=tuple(scores), truth=truth,
                                         flags=flags_to_dict(*detector_flags(store, report.run_id)))
        log(f"seed {seed} multi-label {name}: accuracy {summ.accuracy:.3f}, MR-1 {summ.mr1_ratio:.3f}, MR-2 "
            f"{summ.mr2_ratio:.3f}, reliant {m.reliance['reliant_ratio']}")
    return out


def run_detection(cfg: BenchConfig, seed: int, root: Path, store: Store, log) -> DetectionResult:
    """The detection arm of one seed: ``n_test`` single-object scenes on flat-colour backgrounds (rho as the
    biased data), the planted stand-in detector (``planted``), one ``DetectionEngine`` run per plan of
    ``DETECTION_PLANS`` and every detector scored against the units' counterfactual ground truth
    (``groundtruth.detection_ground_truth``).  Nothing is trained: the detector's rule is fixed."""
    dcfg = SyntheticConfig(n_classes=cfg.n_classes, size=cfg.size, rho=cfg.rho, seed=seed, backgrounds="colours")
    split = write_split(dcfg, root / "data" / "detection", "test", cfg.n_test)
    detector = PD.PlantedDetector(cfg.n_classes)
    truth = detection_ground_truth(detector, split.annotation, draws=cfg.draws)
    runs: dict[str, DetectionRun] = {}
    scores = []
    for plan in DETECTION_PLANS:
        report = DetectionEngine(store, DetectionConfig(
            detector=PD.spec(cfg.n_classes), dataset=split.annotation, plan=plan, seed=seed, batch_size=64,
            name=f"planted detector seed {seed} test ({plan})"), detector=detector).execute()
        summ = summarize(store, report.run_id)
        scores += score_detection_run(store, report.run_id, truth)
        runs[plan] = DetectionRun(report.run_id, summ, flags_to_dict(*detection_flags(store, report.run_id)))
    planted = PD.planted_reliance(detector, split.annotation)
    correct = [r for r in truth.values() if r.correct]
    agree = sum(bool(r.reliant) == planted[r.image_id] for r in correct)
    out = DetectionResult(detector=detector.describe(), data=dcfg, runs=runs, reliance=reliance_share(truth),
                          planted=PlantedAgreement(len(correct), sum(planted[r.image_id] for r in correct), agree),
                          scores=tuple(scores), truth=truth)
    su = runs[DETECTION_PLANS[0]].summary
    r3 = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731  (no ratio when nothing was detected)
    log(f"seed {seed} detection: detected {su.correct}/{su.evaluated} units, MR-1 {r3(su.mr1_ratio)}, "
        f"MR-2 {r3(su.mr2_ratio)}, reliant {r3(out.reliance['reliant_ratio'])} "
        f"(planted rule agrees on {agree}/{len(correct)})")
    return out


def run_bench(cfg: BenchConfig, out, log=None) -> BenchResults:
    """Run the benchmark into ``out`` (its previous store and seed folders are replaced) and write its results
    file there; returns the results."""
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
    t_all, cpu_all = time.perf_counter(), time.process_time()
    store = Store(out / STORE_FILE)
    try:
        seeds = tuple(run_seed(cfg, s, out, store, timer, say) for s in cfg.seeds)
    finally:
        store.dispose()
        torch.set_num_threads(threads)
    timer.seconds["total"] = time.perf_counter() - t_all
    # this process's own CPU seconds: what the run costs whatever else shares the cores (wall time does not say)
    timer.seconds["cpu"] = time.process_time() - cpu_all
    results = BenchResults(cfg, seeds, str((out / STORE_FILE).resolve()),
                           {k: round(v, 2) for k, v in timer.seconds.items()})
    write_results(results, out / RESULTS_FILE)
    return results
