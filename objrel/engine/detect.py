"""Detection runs: a detector x a dataset x a plan, into the same store as classifier runs.

Flow per chunk of ``batch_size`` images (the classifier engine's, per detection unit):

1. decode each image; keep its ground-truth objects whose label the detector reports (an image
   with none, or with a bad box, becomes a ``skipped`` row with its reason);
2. detect on every source of the chunk in one batch;
3. tie each record to its Associated Object and list the units (``objrel.relations.associate``):
   records with an associated object, then objects no record is associated with; test T on each,
   on the source's records near the unit's object found exactly as on a mutant (``mutant_records``);
4. stream (unit, mutation) pairs through the detector in batches, each mutant made just before
   its batch in a worker thread (``objrel.engine.loop.prefetch``), with the unit's associated object
   as the target region; MR-1 mutants of undetected units are not made (verdict ``n/a``);
5. find rcd' (any label, for D) and the best record of the unit's label (for T) on each mutant,
   check MR-1 / MR-2, vote, score S_p / S_r / S, and commit the image with its units, verdicts and
   votes in one transaction (``objrel.store.detections.write_image``).

The store layout is ``objrel.store.detections``'s: one ``samples`` row per image, one
``detection_units`` row per unit, one ``detection_verdicts`` row per (tested unit, mutation), votes
keyed by the unit's ``unit_id``.  The run's ``n_total`` / ``n_done`` count images, ``n_tested``
tested units, ``task`` is ``"detection"``.  Mutation seeds derive from (run seed, unit id, mutation).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from objrel.relations import common as C
from objrel.data import Dataset, load_rgb
from objrel.data.region import area_ratio, check_object
from objrel.data.sample import Sample, TargetObject
from objrel.engine.loop import (PREFETCH_BATCHES, ProgressFn, RunReport, execute_run, image_budget, mutant_batches,
                               prefetch)
from objrel.errors import BadSampleError
from objrel.mutations import Mutation, NotApplicable, Plan, Target, build_target
from objrel.store import Store
from objrel.store.detection_records import DetectionUnit, DetectionVerdict, ImageResult, make_unit_id, unit_kind
from objrel.store.detections import write_image
from objrel.constants import DETECTION_TASK
from objrel.models import Detector, load_detector
from objrel.config import DetectionConfig
from objrel.relations.associate import MutantRecords, Unit, detection_units, mutant_records
from objrel.data.detections import Detections
from objrel.data.detector_regions import load_detection_dataset
from objrel.engine.regions import detector_regions
from objrel.relations.detect import check, iou_test
from objrel.relations.votes import Distances, vote_rows


@dataclass
class _UnitState:
    unit: Unit
    unit_id: str
    obj: TargetObject
    target: Target
    t_source: int
    tested: bool
    mutants: dict = field(default_factory=dict)      # mutation key -> (Detections, MutantRecords) | NotApplicable
    seeds: dict = field(default_factory=dict)
    # the source's records near the object, chosen as on every mutant: T reads .own, D reads .nearest
    source: MutantRecords = field(default_factory=MutantRecords)


@dataclass
class _Image:
    sample: Sample
    image: np.ndarray | None = None
    objects: tuple[TargetObject, ...] = ()
    targets: tuple[Target, ...] = ()
    skip: BadSampleError | None = None
    dropped: tuple[dict, ...] = ()                 # invalid annotations left out: category, code, reason
    source: Detections | None = None
    units: list[_UnitState] = field(default_factory=list)
    t0: float = 0.0


class DetectionEngine:
    """Runs one plan of one detector over one dataset into one store."""

    # Called at each progress tick (``objrel.engine.loop.PassTicker``), or None.
    pass_progress: Callable | None = None
    # Bytes a chunk's images may take (None: ``$OBJREL_MEMORY_BUDGET`` or the default; a Ray actor gets its driver's).
    memory_budget: int | None = None

    def __init__(self, store: Store, config: DetectionConfig, detector: Detector | None = None,
                 dataset: Dataset | None = None, plan: Plan | None = None, region_detector: Detector | None = None):
        self.store = store
        self.config = config
        opts = {"class_names": list(config.labels)} if config.labels else {}
        self.detector = detector if detector is not None else load_detector(
            config.detector, config.weights, config.score_threshold, runtime=config.runtime, **opts)
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
        """Record a new detection run in the store (its settings, plan and dataset) and return its id."""
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

    def execute(self, run_id: int | None = None, progress: ProgressFn | None = None,
                stop_after: int | None = None) -> RunReport:
        """Run (or resume) ``run_id``; counts in the report are images (processed, skipped) and units
        (tested, untested).  ``stop_after`` processes at most that many images (simulates a kill)."""
        return execute_run(self, run_id, self.store.done_sample_ids, progress, stop_after)

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
            image = load_rgb(self.image_source(sample), expected, max_bytes=image_budget(self))
            h, w = image.shape[:2]
            valid, dropped = [], [dict(d) for d in sample.dropped]
            for n, o in enumerate(keep):
                obj = TargetObject(o.category, self.class_names.index(o.category), o.box, o.segmentation, o.iscrowd)
                try:
                    check_object(obj, w, h)
                except BadSampleError as exc:
                    dropped.append({"object": n, "category": o.category, "class_index": obj.class_index,
                                    "box": [float(v) if np.isfinite(v) else None for v in o.box],
                                    "code": exc.code, "reason": exc.reason})
                    continue
                valid.append(obj)
            img.dropped = tuple(dropped)
            tested_labels = {o.category for o in valid}
            for d in dropped:  # an invalid object of a tested label would leave its units' truth incomplete
                if d.get("category") in tested_labels:
                    raise BadSampleError(d["code"], f"an annotation of the tested label {d['category']!r} is "
                                         f"invalid, so its units would be incomplete: {d['reason']}",
                                         path=sample.rel_path)
            if not valid:
                first = dropped[0] if dropped else {"code": "empty-region", "reason": "no annotated object"}
                raise BadSampleError(first["code"], f"no valid annotation: {first['reason']}", path=sample.rel_path)
            objects = tuple(valid)
            # each object is a possible target
            img.targets = tuple(build_target([o], w, h, self.plan.dilate) for o in objects)
            img.image, img.objects = image, objects
        except BadSampleError as exc:
            if exc.path is None:
                exc.path = sample.rel_path
            img.skip = exc
        return img

    def image_source(self, sample: Sample):
        """What ``_prepare`` decodes for ``sample``: its file (a Ray actor's engine: the bytes the driver read)."""
        return sample.image_path

    def _decide(self, img: _Image, detections: Detections) -> None:
        img.source = detections
        for u in detection_units(detections, img.objects):
            # T (DetReport s4.4) is one function of (records, object): the source's records are read exactly
            # as a mutant's, so a detector whose output does not change never changes T
            near = mutant_records(detections, img.objects[u.object].box, u.label)
            t = iou_test(near.own, u.label, self.iou_threshold)
            img.units.append(_UnitState(u, make_unit_id(img.sample.sample_id, u.key), img.objects[u.object],
                                        img.targets[u.object], t, bool(t or not self.config.detected_only),
                                        source=near))

    @property
    def passes_per_sample_guess(self) -> float:
        """Forward passes an image takes, guessed before any has finished: the source and every mutation (of one
        unit; images with several units take more)."""
        return 1.0 + len(self.mutations)

    def process_chunk(self, chunk: list[Sample], report: RunReport, speculate: bool = True) -> list[_Image]:
        """Test the chunk's images (``RunWorker``): sources detected, units made, their mutants detected.
        Nothing is worked ahead, so ``speculate`` changes nothing."""
        with report.step("decode"):
            imgs = [self._prepare(s) for s in chunk]
        live = [i for i in imgs if i.skip is None]
        if live:
            with report.step("forward"):
                dets = self.detector.detect([i.image for i in live])
            report.forward_passes += len(live)
            for img, d in zip(live, dets):
                self._decide(img, d)
        jobs = [(img, st, m) for img in live for st in img.units if st.tested for m in self.mutations
                if not (m.relation == "MR-1" and st.t_source == 0)]  # nothing to remove: n/a, no mutant
        self._predict_mutants(jobs, report)
        return imgs

    def _predict_mutants(self, jobs, report: RunReport) -> None:
        made = mutant_batches(((st, st.unit_id, img.image, st.target, m) for img, st, m in jobs),
                              self.config.seed, self.config.batch_size)
        for batch in prefetch(made, depth=PREFETCH_BATCHES):
            with report.step("forward"):
                dets = self.detector.detect([im for _, _, im in batch])
            report.forward_passes += len(batch)
            for (st, m, _), d in zip(batch, dets):
                st.mutants[m.key] = (d, mutant_records(d, st.obj.box, st.unit.label))

    # ------------------------------------------------------------ results

    def commit_chunk(self, run_id: int, imgs: list[_Image], report: RunReport) -> None:
        """Write each image of the chunk, one transaction per image."""
        for img in imgs:
            self._commit_result(run_id, self.image_result(img), report)

    def _commit_result(self, run_id: int, result: ImageResult, report: RunReport) -> None:
        """Write one image's ``result`` (``image_result``) and count it."""
        report.processed += 1
        if result.skipped:
            report.count_skip(result.sample["skip_code"], result.sample["skip_reason"])
        report.tested += result.tested
        report.untested += len(result.units) - result.tested
        write_image(self.store, run_id, result)

    def _unit_result(self, img: _Image, st: _UnitState) -> tuple[DetectionUnit, list[DetectionVerdict], list[dict]]:
        """The unit record of one unit with its verdicts and vote rows (none when it is not tested)."""
        image_id, key, src, label = img.sample.sample_id, st.unit.key, st.unit.source, st.unit.label
        verdicts: list[DetectionVerdict] = []
        votes: list[dict] = []
        scores = C.Relevancy(None, None)
        if st.tested:
            by_key = {}
            distances = Distances()  # detection scores keep objrel's 'applicable' weights
            for m in self.mutations:
                res = st.mutants.get(m.key)
                seed = st.seeds.get(m.key)
                if isinstance(res, NotApplicable):
                    v = DetectionVerdict(image_id, key, m.key, m.operator, m.relation, C.NOT_APPLICABLE, None,
                                         st.t_source, None, st.source.nearest.iou, None, None, None, seed,
                                         note=str(res))
                else:
                    d, records = res if res is not None else (None, MutantRecords())
                    chk = check(m.relation, st.source, records, label, self.iou_threshold)
                    match = records.nearest  # rcd' is what the verdict row stores (its IoU gives D)
                    v = DetectionVerdict(image_id, key, m.key, m.operator, m.relation, chk.verdict, chk.outcome,
                                         chk.t_source, chk.t_mutant, chk.iou_source, chk.iou_mutant,
                                         chk.label_changed, chk.distance, seed, match.index, match.label,
                                         match.score, match.box, None if d is None else d.to_dict(),
                                         note=C.TIE_NOTE if chk.tie else None)
                    distances.add(m.relation, m.operator, chk.distance)
                by_key[m.key] = v.verdict
                verdicts.append(v)
            votes = vote_rows(self.plan, st.unit_id, by_key)
            scores = distances.relevancy()
        unit = DetectionUnit(
            image_id=image_id, key=key, unit_id=st.unit_id, kind=unit_kind(key), object_index=st.unit.object,
            label=label, label_index=self.class_names.index(label), object=st.obj.to_dict(),
            area_ratio=area_ratio(st.target.region), t_source=int(st.t_source), iou_source=float(src.iou),
            record_index=src.index, record_label=src.label, record_score=src.score, record_box=src.box,
            tested=st.tested, s_p=scores.s_p, s_r=scores.s_r, s=scores.s)
        return unit, verdicts, votes

    def image_result(self, img: _Image) -> ImageResult:
        """What one processed image writes: its ``samples`` row, the source's records, and the units with their
        verdicts and votes; the ``samples`` row alone (status ``skipped``) when the image was skipped."""
        s = img.sample
        row = {"sample_id": s.sample_id, "rel_path": s.rel_path, "region_source": s.region_source,
               "dropped": list(img.dropped) or None, "notes": list(s.notes) or None}
        if img.skip is not None:
            row.update(gt_categories=list(s.categories), status="skipped", skip_code=img.skip.code,
                       skip_reason=str(img.skip), elapsed_ms=(time.perf_counter() - img.t0) * 1000.0)
            return ImageResult(row)
        units, verdicts, votes = [], [], []
        for st in img.units:
            u, vs, vts = self._unit_result(img, st)
            units.append(u)
            verdicts += vs
            votes += vts
        h, w = img.image.shape[:2]
        row.update(width=w, height=h, gt_labels=[o.class_index for o in img.objects],
                   gt_categories=[o.category for o in img.objects], objects=[o.to_dict() for o in img.objects],
                   status="tested" if any(u.tested for u in units) else "untested",
                   elapsed_ms=(time.perf_counter() - img.t0) * 1000.0)
        return ImageResult(row, img.source.to_dict(), tuple(units), tuple(verdicts), tuple(votes))

    def test_samples(self, samples: list[Sample]) -> list[ImageResult]:
        """Test ``samples`` now and return what each image would write, without storing it."""
        report = RunReport(run_id=-1, status="running")
        return [self.image_result(img) for img in self.process_chunk(list(samples), report)]
