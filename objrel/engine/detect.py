"""Detection runs: a detector x a dataset x a plan, into the same store as classifier runs.

Flow per chunk of ``batch_size`` images (the classifier engine's, per detection unit):

1. decode each image; keep its ground-truth objects whose label the detector reports (an image
   with none, or with a bad box, becomes a ``skipped`` row with its reason);
2. detect on every source of the chunk in one batch;
3. tie each record to its Associated Object and list the units (``matching.detection_units``):
   records with an associated object, then objects no record is associated with; test T on each;
4. stream (unit, mutation) pairs through the detector in batches, each mutant made just before
   its batch in a worker thread (``objrel.engine.classify.prefetch``), with the unit's associated object
   as the target region; MR-1 mutants of undetected units are not made (verdict ``n/a``);
5. find rcd' on each mutant, check MR-1 / MR-2, vote, score S_p / S_r / S, and commit all rows
   of the image in one transaction.

Store layout: one ``samples`` row per unit, ``sample_id = "<image id>/<unit key>"`` (``4/r0``,
``4/o1``), whose ``objects`` is the associated object (so ``objrel.mutations.rebuild.rebuild_mutant`` and
the review page rebuild the exact mutants), ``correct`` is T on the source, ``gt_labels`` /
``predicted`` are label indices into the run's ``class_names``; a skipped image is one row with
the image id.  ``predictions.prediction`` holds every record of the image plus the compared
record (``unit_prediction``); verdict rows keep IoUs in the certainty columns and the outcome
(``missing detection``, ``incorrect detection``, ...) in ``note``.  The run's ``n_total`` /
``n_done`` count images, ``n_tested`` tested units, ``task`` is ``"detection"``.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import insert, update
from sqlalchemy.exc import IntegrityError

from objrel.relations import classify as R
from objrel.data import Dataset, load_rgb
from objrel.data.region import area_ratio
from objrel.data.sample import Sample, TargetObject
from objrel.engine.classify import PREFETCH_BATCHES, ProgressFn, RunReport, execute_run, prefetch
from objrel.errors import BadSampleError
from objrel.mutations import Mutation, NotApplicable, Plan, Target, build_target, derive_seed, make_mutant
from objrel.store import Store
from objrel.store import schema as S
from objrel.store.store import now
from objrel.models.detector import DETECTION_TASK, Detector, load_detector
from objrel.config import DetectionConfig
from objrel.relations.associate import RecordMatch, Unit, detection_units, match_record
from objrel.models.detections import Detections
from objrel.data.detector_regions import detector_regions, load_detection_dataset
from objrel.relations.detect import check, iou_test

UNIT_SEP = "/"
_UNIT_RE = re.compile(r"^(?P<image>.+)/(?P<unit>[ro]\d+)$")


def unit_id(image_id: str, key: str) -> str:
    """Sample id of a unit: ``"<image id>/<unit key>"``."""
    return f"{image_id}{UNIT_SEP}{key}"


def image_of(sample_id: str) -> str:
    """The image id of a unit's (or a skipped image's) sample id."""
    m = _UNIT_RE.match(str(sample_id))
    return m.group("image") if m else str(sample_id)


def is_detection_run(run) -> bool:
    return getattr(run, "task", None) == DETECTION_TASK


def unit_prediction(detections: Detections, match: RecordMatch, t: int, label: str, class_names: list[str],
                    iou_threshold: float) -> dict:
    """What the store keeps of one image's detections for one unit (``predictions.prediction``).

    ``detections``: every record (boxes xyxy pixels, labels, scores); ``record``: the compared record and
    its IoU with the associated object; ``t``: test T.  The keys ``predicted``, ``top_labels``,
    ``top_probs`` and ``probs`` summarise the compared record as a classifier prediction (label indices
    into ``class_names``, the score as its probability), so the run's export reads like a classifier's.
    """
    idx = class_names.index(match.label) if match.found and match.label in class_names else None
    unit_idx = class_names.index(label) if label in class_names else None
    return {
        "task": DETECTION_TASK, "detections": detections.to_dict(), "record": match.to_dict(), "t": int(t),
        "label": label, "iou_threshold": iou_threshold,
        "predicted": [unit_idx] if t and unit_idx is not None else [],
        "top_labels": [idx] if idx is not None else [],
        "top_probs": [match.score] if idx is not None else [],
        "probs": {str(idx): match.score} if idx is not None else {},
        "ranks": {}, "threshold": iou_threshold,
    }


@dataclass
class _UnitState:
    unit: Unit
    sample_id: str
    obj: TargetObject
    target: Target
    t_source: int
    tested: bool
    mutants: dict = field(default_factory=dict)      # mutation key -> (Detections, RecordMatch) | NotApplicable
    seeds: dict = field(default_factory=dict)


@dataclass
class _Image:
    sample: Sample
    image: np.ndarray | None = None
    objects: tuple[TargetObject, ...] = ()
    targets: tuple[Target, ...] = ()
    skip: BadSampleError | None = None
    source: Detections | None = None
    units: list[_UnitState] = field(default_factory=list)
    t0: float = 0.0


class DetectionEngine:
    """Runs one plan of one detector over one dataset into one store."""

    def __init__(self, store: Store, config: DetectionConfig, detector: Detector | None = None,
                 dataset: Dataset | None = None, plan: Plan | None = None, region_detector: Detector | None = None):
        self.store = store
        self.config = config
        opts = {"class_names": list(config.labels)} if config.labels else {}
        self.detector = detector if detector is not None else load_detector(
            config.detector, config.weights, config.score_threshold, **opts)
        ds = dataset if dataset is not None else load_detection_dataset(
            config.dataset, config.images, config.fmt, padding=config.padding, synset_mapping=config.synset_mapping)
        if config.regions_from or region_detector is not None:
            if region_detector is None:
                region_detector = (self.detector if config.regions_from == config.detector
                                   else load_detector(config.regions_from))
            ds = detector_regions(ds, region_detector)
        self.dataset = ds
        self.region_detector = region_detector
        self.plan: Plan = plan if plan is not None else config.build_plan()
        self.mutations: tuple[Mutation, ...] = self.plan.mutations
        samples = list(self.dataset.samples)
        self.samples = samples[: config.limit] if config.limit else samples
        vocab = self.detector.labels
        self.class_names: list[str] = list(vocab) if vocab is not None else sorted(
            set(self.dataset.categories) | {o.category for s in self.samples for o in s.objects})
        self.iou_threshold = float(config.iou_threshold)

    # ------------------------------------------------------------ run bookkeeping

    def create_run(self) -> int:
        c = self.config
        dataset_config = {**self.dataset.describe(), "padding": c.padding, "fmt": c.fmt,
                          "synset_mapping": c.synset_mapping,
                          "regions_from": self.region_detector.name if self.region_detector else None}
        return self.store.create_run(
            name=c.name or f"{self.detector.name} on {self.dataset.name}",
            model=self.detector.name, model_config=self.detector.describe(), task=DETECTION_TASK,
            class_names=self.class_names, dataset=self.dataset.name, dataset_config=dataset_config,
            plan=self.plan.to_dict(), config=c.to_dict(), seed=c.seed, n_total=len(self.samples),
        )

    def done_image_ids(self, run_id: int) -> set[str]:
        return {image_of(sid) for sid in self.store.done_sample_ids(run_id)}

    def execute(self, run_id: int | None = None, progress: ProgressFn | None = None,
                stop_after: int | None = None) -> RunReport:
        """Run (or resume) ``run_id``; counts in the report are images (processed, skipped) and units
        (tested, untested).  ``stop_after`` processes at most that many images (simulates a kill)."""
        return execute_run(self, run_id, self.done_image_ids, progress, stop_after)

    # ------------------------------------------------------------ the work

    def _prepare(self, sample: Sample) -> _Image:
        img = _Image(sample=sample, t0=time.perf_counter())
        try:
            if sample.problem:
                raise BadSampleError(sample.problem[0], sample.problem[1], path=sample.rel_path)
            vocab = set(self.class_names) if self.detector.labels is not None else None
            keep = [o for o in sample.objects if vocab is None or o.category in vocab]
            if not keep:
                raise BadSampleError(
                    "unknown-label",
                    f"none of the image's objects {sorted({o.category for o in sample.objects})} has a label "
                    f"detector {self.detector.name} reports ({self.class_names})", path=sample.rel_path)
            expected = (sample.width, sample.height) if sample.width and sample.height else None
            image = load_rgb(sample.image_path, expected)
            h, w = image.shape[:2]
            objects = tuple(TargetObject(o.category, self.class_names.index(o.category), o.box, o.segmentation,
                                         o.iscrowd) for o in keep)
            # validates every box and mask before any detector work; each object is a possible target
            img.targets = tuple(build_target([o], w, h, self.plan.dilate) for o in objects)
            img.image, img.objects = image, objects
        except BadSampleError as exc:
            if exc.path is None:
                exc.path = sample.rel_path
            img.skip = exc
        return img

    def _decide(self, img: _Image, detections: Detections) -> None:
        img.source = detections
        for u in detection_units(detections, img.objects):
            t = iou_test(u.source, u.label, self.iou_threshold)
            img.units.append(_UnitState(u, unit_id(img.sample.sample_id, u.key), img.objects[u.object],
                                        img.targets[u.object], t, bool(t or not self.config.detected_only)))

    def _process_chunk(self, chunk: list[Sample], report: RunReport) -> list[_Image]:
        imgs = [self._prepare(s) for s in chunk]
        live = [i for i in imgs if i.skip is None]
        if live:
            dets = self.detector.detect([i.image for i in live])
            report.forward_passes += len(live)
            for img, d in zip(live, dets):
                self._decide(img, d)
        jobs = [(img, st, m) for img in live for st in img.units if st.tested for m in self.mutations
                if not (m.relation == "MR-1" and st.t_source == 0)]  # nothing to remove: n/a, no mutant
        self._predict_mutants(jobs, report)
        return imgs

    def _mutant_batches(self, jobs):
        bs = self.config.batch_size
        batch: list = []
        for img, st, m in jobs:
            seed = derive_seed(self.config.seed, st.sample_id, m.key)
            st.seeds[m.key] = seed
            try:
                mutant = make_mutant(img.image, st.target, m, seed)
            except NotApplicable as exc:
                st.mutants[m.key] = exc
                continue
            batch.append((st, m, mutant))
            if len(batch) >= bs:
                yield batch
                batch = []
        if batch:
            yield batch

    def _predict_mutants(self, jobs, report: RunReport) -> None:
        for batch in prefetch(self._mutant_batches(jobs), depth=PREFETCH_BATCHES):
            dets = self.detector.detect([im for _, _, im in batch])
            report.forward_passes += len(batch)
            for (st, m, _), d in zip(batch, dets):
                st.mutants[m.key] = (d, match_record(d, st.obj.box))

    # ------------------------------------------------------------ results

    def _commit(self, run_id: int, img: _Image, report: RunReport) -> None:
        report.processed += 1
        if img.skip is not None:
            report.skipped[img.skip.code] += 1
            report.skip_examples.setdefault(img.skip.code, str(img.skip))
        tested = sum(st.tested for st in img.units)
        report.tested += tested
        report.untested += len(img.units) - tested
        write_image(self.store, run_id, self.result_rows(img), tested=tested, skipped=img.skip is not None)

    def _unit_rows(self, img: _Image, st: _UnitState, elapsed_ms: float):
        s, names, thr = img.sample, self.class_names, self.iou_threshold
        h, w = img.image.shape[:2]
        label_idx = names.index(st.unit.label)
        row = {"sample_id": st.sample_id, "rel_path": s.rel_path, "region_source": s.region_source,
               "gt_categories": [st.unit.label], "width": w, "height": h, "gt_labels": [label_idx],
               "predicted": [label_idx] if st.t_source else [], "correct": bool(st.t_source),
               "objects": [st.obj.to_dict()], "area_ratio": area_ratio(st.target.region),
               "status": "tested" if st.tested else "untested", "elapsed_ms": elapsed_ms}
        preds = [{"sample_id": st.sample_id, "mutation_key": "source", "seed": None,
                  "prediction": unit_prediction(img.source, st.unit.source, st.t_source, st.unit.label, names, thr)}]
        verdicts, votes = [], []
        if not st.tested:
            return row, preds, verdicts, votes
        by_key = {}
        dist: dict[str, dict[str, list[float]]] = {"MR-1": defaultdict(list), "MR-2": defaultdict(list)}
        for m in self.mutations:
            res = st.mutants.get(m.key)
            seed = st.seeds.get(m.key, derive_seed(self.config.seed, st.sample_id, m.key))
            if isinstance(res, NotApplicable):
                preds.append({"sample_id": st.sample_id, "mutation_key": m.key, "seed": str(seed), "prediction": None})
                v = {"verdict": R.NOT_APPLICABLE, "source_certainty": st.unit.source.iou, "mutant_certainty": None,
                     "label_changed": None, "distance": None, "note": str(res)}
            else:
                d, match = res if res is not None else (None, RecordMatch())
                chk = check(m.relation, st.unit.source, match, st.unit.label, thr)
                pred = None if d is None else unit_prediction(d, match, chk.t_mutant or 0, st.unit.label, names, thr)
                preds.append({"sample_id": st.sample_id, "mutation_key": m.key, "seed": str(seed), "prediction": pred})
                v = chk.verdict_columns()
                if chk.distance is not None:
                    dist[m.relation][m.operator].append(chk.distance)
            by_key[m.key] = v["verdict"]
            verdicts.append({"sample_id": st.sample_id, "mutation_key": m.key, "operator": m.operator,
                             "relation": m.relation, **v})
        for g in self.plan.groups:
            vt = R.vote(g.name, g.relation, [by_key[m.key] for m in g.mutations], g.k)
            primary = self.plan.primary(g.relation)
            votes.append({"sample_id": st.sample_id, "group_name": g.name, "relation": g.relation,
                          "is_primary": primary is not None and primary.name == g.name, "k": vt.k, "n": vt.n,
                          "applicable": vt.applicable, "violations": vt.violations, "flagged": vt.flagged})
        rel = R.relevancy(dist["MR-2"], dist["MR-1"])
        row.update(s_p=rel.s_p, s_r=rel.s_r, s=rel.s)
        return row, preds, verdicts, votes

    def result_rows(self, img: _Image) -> list[tuple[dict, list[dict], list[dict], list[dict]]]:
        """The (sample, predictions, verdicts, votes) rows of every unit of one image; one sample row with
        the image id when the image was skipped."""
        s = img.sample
        if img.skip is not None:
            row = {"sample_id": s.sample_id, "rel_path": s.rel_path, "region_source": s.region_source,
                   "gt_categories": list(s.categories), "status": "skipped", "skip_code": img.skip.code,
                   "skip_reason": str(img.skip), "elapsed_ms": (time.perf_counter() - img.t0) * 1000.0}
            return [(row, [], [], [])]
        elapsed = (time.perf_counter() - img.t0) * 1000.0 / max(1, len(img.units))
        return [self._unit_rows(img, st, elapsed) for st in img.units]

    def test_samples(self, samples: list[Sample]) -> list[tuple[dict, list[dict], list[dict], list[dict]]]:
        """Test ``samples`` now and return the rows of all their units without storing them."""
        report = RunReport(run_id=-1, status="running")
        return [r for img in self._process_chunk(list(samples), report) for r in self.result_rows(img)]


def write_image(store: Store, run_id: int, rows, tested: int, skipped: bool) -> bool:
    """Commit every row of one image in a single transaction (``Store.write_sample`` for several sample
    rows).  ``n_done`` grows by one image, ``n_tested`` by the tested units.  Returns False and writes
    nothing when the image is already stored, so a resumed run never duplicates rows."""
    rid = int(run_id)
    try:
        with store.engine.begin() as c:
            for row, preds, verdicts, votes in rows:
                c.execute(insert(S.samples).values(run_id=rid, **row))
                if preds:
                    c.execute(insert(S.predictions), [{"run_id": rid, **p} for p in preds])
                if verdicts:
                    c.execute(insert(S.verdicts), [{"run_id": rid, **v} for v in verdicts])
                if votes:
                    c.execute(insert(S.votes), [{"run_id": rid, **v} for v in votes])
            c.execute(update(S.runs).where(S.runs.c.id == rid).values(
                n_done=S.runs.c.n_done + 1, n_skipped=S.runs.c.n_skipped + (1 if skipped else 0),
                n_tested=S.runs.c.n_tested + int(tested), heartbeat_at=now()))
    except IntegrityError:
        return False
    return True


def run_detection(config: DetectionConfig, store: Store | str | None = None, detector: Detector | None = None,
                  dataset: Dataset | None = None, progress: ProgressFn | None = None) -> RunReport:
    """Create and execute a detection run; the one-call library entry point."""
    st = store if isinstance(store, Store) else Store(store)
    return DetectionEngine(st, config, detector, dataset).execute(progress=progress)


def resume_detection(run_id: int, store: Store | str | None = None, detector: Detector | None = None,
                     dataset: Dataset | None = None, progress: ProgressFn | None = None) -> RunReport:
    """Continue a stopped detection run with its stored configuration; finished images are not redone."""
    st = store if isinstance(store, Store) else Store(store)
    rec = st.get_run(run_id)
    if not is_detection_run(rec):
        raise ValueError(f"run {run_id} is a {rec.task!r} run, not a detection run; "
                         f"resume it with `objrel run --resume`")
    return DetectionEngine(st, DetectionConfig.from_dict(rec.config), detector, dataset).execute(
        run_id=run_id, progress=progress)
