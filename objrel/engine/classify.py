"""The classifier worker: a classifier x a dataset x a plan, run by ``objrel.engine.loop.execute_run``.

Flow per chunk of ``batch_size`` samples:

1. decode each source (bad files become ``skipped`` rows with their reason);
2. predict all sources of the chunk in one batch;
3. decide which inferences are tested (correct ones by default) and their target;
4. stream (sample, mutation) pairs through the model in batches of ``batch_size``,
   making each mutant just before its batch (memory stays at one batch of mutants);
5. check each mutant against its source's prediction (computed once, step 2),
   vote, score, and commit the sample's rows in one transaction.

A killed run resumes from the samples not yet in the store; the same seed gives
the same rows (mutation seeds derive from run seed, sample id and mutation).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from objrel.relations import classify as R
from objrel.config import RunConfig
from objrel.data import Dataset, load_dataset, load_rgb
from objrel.data.region import area_ratio, target_region
from objrel.data.sample import Sample, TargetObject
from objrel.engine.loop import PREFETCH_BATCHES, ProgressFn, RunReport, execute_run, mutant_batches, prefetch
from objrel.engine.votes import Distances, vote_rows
from objrel.errors import BadSampleError
from objrel.models import Classifier, class_lookup, load_classifier
from objrel.mutations import Mutation, NotApplicable, Plan, build_target
from objrel.store import Store


@dataclass
class _Prepared:
    sample: Sample
    image: np.ndarray | None = None
    labels: tuple[int, ...] = ()
    objects: tuple[TargetObject, ...] = ()
    skip: BadSampleError | None = None
    source: R.Prediction | None = None
    correct: bool | None = None
    tested: bool = False
    target_objects: tuple[TargetObject, ...] = ()
    target: object = None
    label_of_interest: tuple[int, ...] = ()
    mutants: dict = field(default_factory=dict)    # key -> Prediction | NotApplicable
    seeds: dict = field(default_factory=dict)
    t0: float = 0.0


def resolve_objects(sample: Sample, class_names) -> tuple[TargetObject, ...]:
    """Give every object a class index of the model; unknown names skip the sample."""
    lookup = class_lookup(class_names)
    out = []
    for obj in sample.objects:
        idx = obj.class_index
        if idx is None:
            idx = lookup.get(obj.category.strip().lower())
            if idx is None and obj.category.strip().isdigit():
                idx = int(obj.category)
        if idx is None or not 0 <= idx < len(class_names):
            raise BadSampleError(
                "unknown-label",
                f"category {obj.category!r} is not a class of the model ({len(class_names)} classes); give the "
                f"category an 'imagenet_index' / 'class_index' or use a name from the model's class list",
                path=sample.rel_path,
            )
        out.append(TargetObject(obj.category, int(idx), obj.box, obj.segmentation, obj.iscrowd))
    return tuple(out)


class Engine:
    """Runs one plan of one model over one dataset into one store."""

    def __init__(self, store: Store, config: RunConfig, model: Classifier | None = None,
                 dataset: Dataset | None = None, plan: Plan | None = None):
        self.store = store
        self.config = config
        self.model = model or load_classifier(config.model, config.weights, task=config.task,
                                              threshold=config.threshold)
        if self.model.task != config.task:
            self.config = config = config.replace(task=self.model.task)
        self.dataset = dataset or load_dataset(config.dataset, config.images, config.fmt, padding=config.padding,
                                               synset_mapping=config.synset_mapping)
        self.plan: Plan = plan or config.build_plan()
        self.mutations: tuple[Mutation, ...] = self.plan.mutations
        samples = list(self.dataset.samples)
        self.samples = samples[: config.limit] if config.limit else samples

    # ------------------------------------------------------------ run bookkeeping

    def create_run(self) -> int:
        c = self.config
        dataset_config = {**self.dataset.describe(), "padding": c.padding, "fmt": c.fmt,
                          "synset_mapping": c.synset_mapping}
        return self.store.create_run(
            name=c.name or f"{self.model.name} on {self.dataset.name}",
            model=self.model.name, model_config=self.model.describe(), task=self.model.task,
            class_names=self.model.class_names, dataset=self.dataset.name, dataset_config=dataset_config,
            plan=self.plan.to_dict(), config=c.to_dict(), seed=c.seed, n_total=len(self.samples),
        )

    def execute(self, run_id: int | None = None, progress: ProgressFn | None = None,
                stop_after: int | None = None) -> RunReport:
        """Run (or resume) ``run_id``; ``stop_after`` processes at most that many samples (tests use it
        to simulate a killed run)."""
        return execute_run(self, run_id, self.store.done_sample_ids, progress, stop_after)

    # ------------------------------------------------------------ the work

    def _prepare(self, sample: Sample) -> _Prepared:
        prep = _Prepared(sample=sample, t0=time.perf_counter())
        try:
            if sample.problem:
                raise BadSampleError(sample.problem[0], sample.problem[1], path=sample.rel_path)
            objects = resolve_objects(sample, self.model.class_names)
            expected = (sample.width, sample.height) if sample.width and sample.height else None
            image = load_rgb(sample.image_path, expected)
            h, w = image.shape[:2]
            build_target(objects, w, h)  # validates boxes and masks before any model work
            prep.image, prep.objects = image, objects
            prep.labels = tuple(sorted({o.class_index for o in objects}))
        except BadSampleError as exc:
            if exc.path is None:
                exc.path = sample.rel_path
            prep.skip = exc
        return prep

    def _decide(self, prep: _Prepared, probs: np.ndarray) -> None:
        task, thr = self.model.task, self.model.threshold
        src = R.Prediction.from_probs(probs, task, interest=prep.labels, threshold=thr)
        prep.source = src
        if task == "single":
            prep.correct = src.top1 in prep.labels
            if prep.correct:
                prep.target_objects = tuple(o for o in prep.objects if o.class_index == src.top1)
                prep.label_of_interest = (src.top1,)
            else:
                prep.target_objects = prep.objects
                prep.label_of_interest = prep.labels
        else:
            prep.correct = set(src.predicted) == set(prep.labels)
            prep.target_objects = prep.objects
            prep.label_of_interest = prep.labels
        prep.tested = bool(prep.correct or self.config.test_all)
        if prep.tested:
            h, w = prep.image.shape[:2]
            try:
                prep.target = build_target(prep.target_objects, w, h, self.plan.dilate)
            except BadSampleError as exc:
                exc.path = prep.sample.rel_path
                prep.skip, prep.tested = exc, False

    def _process_chunk(self, chunk: list[Sample], report: RunReport) -> list[_Prepared]:
        preps = [self._prepare(s) for s in chunk]
        live = [p for p in preps if p.skip is None]
        if live:
            probs = self.model.predict([p.image for p in live])
            report.forward_passes += len(live)
            for p, row in zip(live, probs):
                self._decide(p, row)
        jobs = [(p, m) for p in preps if p.skip is None and p.tested for m in self.mutations]
        self._predict_mutants(jobs, report)
        return preps

    def _predict_mutants(self, jobs, report: RunReport) -> None:
        """Model the mutants while a worker thread makes the next batch (torch and numpy release
        the GIL), so mutation costs hide behind inference."""
        made = mutant_batches(((p, p.sample.sample_id, p.image, p.target, m) for p, m in jobs),
                              self.config.seed, self.config.batch_size)
        for batch in prefetch(made, depth=PREFETCH_BATCHES):
            probs = self.model.predict([img for _, _, img in batch])
            report.forward_passes += len(batch)
            for (p, m, _), row in zip(batch, probs):
                interest = set(p.label_of_interest) | set(p.source.predicted)
                p.mutants[m.key] = R.Prediction.from_probs(row, self.model.task, interest=interest,
                                                           threshold=self.model.threshold)

    # ------------------------------------------------------------ results

    def _distance(self, p: _Prepared, relation: str, mut: R.Prediction) -> float | None:
        fn = R.distance_preserving if relation == "MR-2" else R.distance_removing
        ds = []
        for label in p.label_of_interest:
            if label in p.source.ranks and label in mut.ranks:
                ds.append(fn(p.source.probs[label], p.source.ranks[label], mut.probs[label], mut.ranks[label]))
        return float(np.mean(ds)) if ds else None

    def _commit(self, run_id: int, p: _Prepared, report: RunReport) -> None:
        report.processed += 1
        if p.skip is not None:
            report.count_skip(p.skip)
        elif p.tested:
            report.tested += 1
        else:
            report.untested += 1
        self.store.write_sample(run_id, *self.result_rows(p))

    def result_rows(self, p: _Prepared) -> tuple[dict, list[dict], list[dict], list[dict]]:
        """The sample, prediction, verdict and vote rows of one processed sample."""
        s = p.sample
        row = {"sample_id": s.sample_id, "rel_path": s.rel_path, "region_source": s.region_source,
               "gt_categories": list(s.categories)}
        if p.skip is not None:
            row.update(status="skipped", skip_code=p.skip.code, skip_reason=str(p.skip))
            return row, [], [], []
        h, w = p.image.shape[:2]
        region = p.target.region if p.target is not None else target_region(p.objects, w, h)
        row.update(width=w, height=h, gt_labels=list(p.labels), predicted=list(p.source.predicted),
                   correct=bool(p.correct), objects=[o.to_dict() for o in (p.target_objects or p.objects)],
                   area_ratio=area_ratio(region), status="tested" if p.tested else "untested")
        preds = [{"sample_id": s.sample_id, "mutation_key": "source", "seed": None,
                  "prediction": p.source.to_dict()}]
        verdict_rows: list[dict] = []
        votes: list[dict] = []
        if p.tested:
            by_key = {}
            distances = Distances()
            for m in self.mutations:
                res = p.mutants[m.key]
                preds.append({"sample_id": s.sample_id, "mutation_key": m.key, "seed": str(p.seeds[m.key]),
                              "prediction": None if isinstance(res, NotApplicable) else res.to_dict()})
                if isinstance(res, NotApplicable):
                    v = {"verdict": R.NOT_APPLICABLE, "source_certainty": None, "mutant_certainty": None,
                         "label_changed": None, "distance": None, "note": str(res)}
                    by_key[m.key] = R.NOT_APPLICABLE
                else:
                    chk = R.check(m.relation, p.source, res)
                    d = self._distance(p, m.relation, res)
                    distances.add(m.relation, m.operator, d)
                    v = {"verdict": chk.verdict, "source_certainty": chk.source_certainty,
                         "mutant_certainty": chk.mutant_certainty, "label_changed": chk.label_changed,
                         "distance": d, "note": None}
                    by_key[m.key] = chk.verdict
                verdict_rows.append({"sample_id": s.sample_id, "mutation_key": m.key, "operator": m.operator,
                                     "relation": m.relation, **v})
            votes = vote_rows(self.plan, s.sample_id, by_key)
            rel = distances.relevancy()
            row.update(s_p=rel.s_p, s_r=rel.s_r, s=rel.s)
        row["elapsed_ms"] = (time.perf_counter() - p.t0) * 1000.0
        return row, preds, verdict_rows, votes

    def test_samples(self, samples: list[Sample]) -> list[tuple[dict, list[dict], list[dict], list[dict]]]:
        """Test ``samples`` now and return their rows without storing them (re-tests, previews)."""
        report = RunReport(run_id=-1, status="running")
        return [self.result_rows(p) for p in self._process_chunk(list(samples), report)]
