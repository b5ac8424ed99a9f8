"""The classifier worker: a classifier x a dataset x a plan, run by ``objrel.engine.loop.execute_run``.

Flow per chunk of ``batch_size`` samples:

1. decode each source (bad files become ``skipped`` rows with their reason);
2. predict all sources of the chunk in one batch;
3. decide which inferences are tested (correct ones by default) and their target;
4. stream (sample, mutation) pairs through the model in batches of ``batch_size``,
   making each mutant just before its batch (memory stays at one batch of mutants);
5. check each mutant against its source's prediction (computed once, step 2),
   vote, score, and commit the chunk's samples and all their rows in one transaction.

A killed run resumes from the samples not yet in the store; the same seed gives
the same rows (mutation seeds derive from run seed, sample id and mutation).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from objrel.relations import classify as R
from objrel.relations import common as C
from objrel.config import RunConfig
from objrel.data import Dataset, load_dataset, load_rgb
from objrel.data.region import area_ratio, check_object, target_region
from objrel.data.sample import Sample, TargetObject
from objrel.engine.loop import (PREFETCH_BATCHES, ProgressFn, RunReport, execute_run, image_budget, mutant_batches,
                                overlap_default, prefetch)
from objrel.relations.votes import Distances, VoteSchedule, vote_rows
from objrel.errors import BadSampleError
from objrel.models import Classifier, class_lookup, load_classifier
from objrel.models.threads import configure_inference_threads, parallel_each
from objrel.models.preprocess import PaintedInput
from objrel.mutations import Mutation, NotApplicable, Plan, build_target, derive_seed
from objrel.mutations.fills import constant_fill
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
    dropped: tuple[dict, ...] = ()                 # invalid annotations: class_index, code, reason, ...
    mutants: dict = field(default_factory=dict)    # key -> Prediction | NotApplicable
    seeds: dict = field(default_factory=dict)
    model_input: object = None                     # the source's row of its prepared batch, while mixing fills
    fill_basis: object = None                      # the model's FillBasis of source and target, while tested
    masks: tuple | None = None                     # the objects' masks, decoded for their check, until the target
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


def _class_index(category: str, class_index: int | None, class_names, lookup) -> int | None:
    idx = class_index
    if idx is None:
        idx = lookup.get(category.strip().lower())
        if idx is None and category.strip().isdigit():
            idx = int(category)
    return idx if idx is not None and 0 <= idx < len(class_names) else None


def split_objects(sample: Sample, class_names, width: int, height: int,
                  masks: list | None = None) -> tuple[tuple[TargetObject, ...], tuple[dict, ...]]:
    """The sample's valid objects (with the model's class index) and its invalid annotations.

    An annotation is invalid when its category is not a class of the model, its box lies outside the
    ``width`` x ``height`` image or is empty, or its mask is broken or empty; the loader's own
    ``sample.dropped`` records join them.  Each invalid one is a dict with ``category``, ``class_index``
    (None when unknown), ``code`` and ``reason``; the caller decides whether it skips the sample.
    ``masks``, when given, gets each valid object's mask (decoded for its check), in their order.
    """
    lookup = class_lookup(class_names)
    valid, invalid = [], []
    for d in sample.dropped:
        cat = d.get("category")
        idx = _class_index(str(cat), d.get("class_index"), class_names, lookup) if cat is not None else None
        invalid.append({**d, "class_index": idx})
    for n, obj in enumerate(sample.objects):
        idx = _class_index(obj.category, obj.class_index, class_names, lookup)
        entry = {"object": n, "category": obj.category, "class_index": idx,
                 "box": [float(v) if np.isfinite(v) else None for v in obj.box]}  # JSON has no NaN
        if idx is None:
            invalid.append({**entry, "code": "unknown-label",
                            "reason": f"category {obj.category!r} is not a class of the model ({len(class_names)} "
                                      f"classes)"})
            continue
        resolved = TargetObject(obj.category, int(idx), obj.box, obj.segmentation, obj.iscrowd)
        try:
            mask = check_object(resolved, width, height)
        except BadSampleError as exc:
            invalid.append({**entry, "code": exc.code, "reason": exc.reason})
            continue
        valid.append(resolved)
        if masks is not None:
            masks.append(mask)
    return tuple(valid), tuple(invalid)


# Object masks (bool, a third of the RGB image's bytes each) a sample keeps from its objects' checks for its
# target: up to the image's own size.  More objects are decoded again for the target.
KEPT_MASKS_PER_IMAGE = 3
# Model inputs (bytes) prepared before their forward passes run back to back (``Engine._predict_mutants``): 8
# batches of 16 at 224 x 224.
BACK_TO_BACK_BYTES = 8 * 16 * 224 * 224 * 3 * 4


def batch_bytes(x) -> int:
    """Bytes a prepared batch holds: an array's or tensor's buffer (``nbytes``), or a list's images."""
    if hasattr(x, "nbytes"):
        return int(x.nbytes)
    return sum(batch_bytes(item) for item in x) if isinstance(x, (list, tuple)) else 0


class Engine:
    """Runs one plan of one model over one dataset into one store."""

    # Work beside the forward pass, in threads: decode the next chunk (and preprocess its sources) while
    # this one runs, and run the model on its sources while the mutant worker makes this chunk's first
    # batch (``read_ahead``); make the next batch of mutants while the model runs on this one
    # (``prefetch_mutants``).  None: only where the forward pass leaves cores free (an accelerator, or
    # fewer torch threads than cores: ``objrel.engine.loop.overlap_default``); otherwise each step runs in
    # turn on every core.
    read_ahead: bool | None = None
    prefetch_mutants: bool | None = None
    # False while the chunk being processed is a suspected process killer (``process_chunk``'s argument, from
    # ``execute_run``): touch no other sample then.
    speculate = True
    # Called at each progress tick (``objrel.engine.loop.PassTicker``), or None.
    pass_progress: Callable | None = None
    # Bytes a chunk's images may take (None: ``$OBJREL_MEMORY_BUDGET`` or the default; a Ray actor gets its driver's).
    memory_budget: int | None = None
    # One-colour fills (``objrel.mutations.fills``) reach a model that can mix them (``Classifier.fill_basis``)
    # as ``PaintedInput``: no mutant is painted or resized.  False: every mutant is made and prepared.
    mix_fills = True

    def __init__(self, store: Store, config: RunConfig, model: Classifier | None = None,
                 dataset: Dataset | None = None, plan: Plan | None = None):
        self.store = store
        self.config = config
        self.model = model or load_classifier(config.model, config.weights, task=config.task,
                                              threshold=config.threshold, runtime=config.model_runtime,
                                              device=config.device)
        # the model's own task (a py: factory's, say) may differ from the one asked: the run records both, the
        # asked one in its settings and the model's beside it (``create_run``); every check uses the model's
        if config.compile and hasattr(self.model, "enable_compile"):
            self.model.enable_compile()
        configure_inference_threads(getattr(self.model, "threads", None))
        overlap_default(self, getattr(self.model, "device", "cpu"))
        self.dataset = dataset if dataset is not None else load_dataset(
            config.dataset, config.images, config.fmt, padding=config.padding, synset_mapping=config.synset_mapping)
        self.plan: Plan = plan or config.build_plan()
        self.mutations: tuple[Mutation, ...] = self.plan.mutations
        self._fills = {m.key: f for m in self.mutations if (f := constant_fill(m)) is not None}
        samples = list(self.dataset.samples)
        self.samples = samples[: config.limit] if config.limit else samples
        # working ahead (``read_ahead``): each sample's position in the run, the decode thread (started on first
        # use), the next chunk being decoded and the next chunk already predicted, each with its sample ids
        self._position = {s.sample_id: i for i, s in enumerate(self.samples)}
        self._loader: ThreadPoolExecutor | None = None
        self._ahead: tuple | None = None
        self._decided: tuple | None = None

    @property
    def passes_per_sample_guess(self) -> float:
        """Forward passes a tested sample takes, guessed before any has finished (progress bars): the source
        and every mutation; with lazy votes, halfway between the first wave alone (every vote decided at
        once) and every mutation."""
        every = len(self.mutations)
        if not self.config.lazy:
            return 1.0 + every
        return 1.0 + (len(VoteSchedule(self.plan).next_wave({})) + every) / 2

    # ------------------------------------------------------------ run bookkeeping

    def create_run(self) -> int:
        """Record a new run of this model, dataset and plan in the store; returns its id."""
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
            expected = (sample.width, sample.height) if sample.width and sample.height else None
            image = load_rgb(self.image_source(sample), expected, max_bytes=image_budget(self))
            h, w = image.shape[:2]
            masks: list = []
            objects, prep.dropped = split_objects(sample, self.model.class_names, w, h, masks)
            # kept for the target when they take no more memory than the image itself, else decoded again there
            if len(masks) <= KEPT_MASKS_PER_IMAGE:
                prep.masks = tuple(masks)
            if not objects:
                first = prep.dropped[0] if prep.dropped else {"code": "empty-region", "reason": "no annotated object"}
                raise BadSampleError(first["code"], f"no valid annotation: {first['reason']}", path=sample.rel_path)
            prep.image, prep.objects = image, objects
            prep.labels = tuple(sorted({o.class_index for o in objects}))
        except BadSampleError as exc:
            if exc.path is None:
                exc.path = sample.rel_path
            prep.skip = exc
        return prep

    def image_source(self, sample: Sample):
        """What ``_prepare`` decodes for ``sample``: its file (a Ray actor's engine: the bytes the driver read)."""
        return sample.image_path

    def _decide(self, prep: _Prepared, src: R.Prediction) -> None:
        """Decide what ``prep`` tests from ``src``, its source's prediction, and build its target."""
        task = self.model.task
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
        bad = self._invalid_of_interest(prep, src)
        if bad is not None:
            prep.skip, prep.tested = BadSampleError(
                bad["code"], f"an annotation of the tested class {bad['category']!r} is invalid, so its region "
                f"would be incomplete: {bad['reason']}", path=prep.sample.rel_path), False
            prep.masks = None
            return
        if prep.tested:
            h, w = prep.image.shape[:2]
            masks = None
            if prep.masks is not None:
                by_object = dict(zip(map(id, prep.objects), prep.masks))
                masks = [by_object.get(id(o)) for o in prep.target_objects]
                masks = None if any(m is None for m in masks) else masks
            try:
                prep.target = build_target(prep.target_objects, w, h, self.plan.dilate, masks=masks)
            except BadSampleError as exc:
                exc.path = prep.sample.rel_path
                prep.skip, prep.tested = exc, False
        prep.masks = None

    def _invalid_of_interest(self, prep: _Prepared, src: R.Prediction) -> dict | None:
        """The first invalid annotation of a tested class, or None (the others are dropped with a warning).

        Tested classes: single-label, the top-1 and the image's valid labels (a correct top-1 then needs
        only its own objects; an incorrect one is judged against every valid label, and an invalid
        annotation of the predicted class might make it correct); multi-label, every class the image
        shows, since the truth itself would be incomplete.
        """
        for d in prep.dropped:
            idx = d.get("class_index")
            if idx is None:
                continue
            if self.model.task != "single" or idx == src.top1 or (not prep.correct and idx in prep.labels):
                return d
        return None

    def _load_chunk(self, chunk: list[Sample]) -> tuple[list[_Prepared], object]:
        """Decode ``chunk`` (spread over the cores) and make the model's batch of its sources (``prepare``);
        thread-safe."""
        preps: list = [None] * len(chunk)

        def decode(i: int) -> None:
            preps[i] = self._prepare(chunk[i])

        parallel_each(decode, len(chunk))
        live = [p for p in preps if p.skip is None]
        return preps, (self.model.prepare([p.image for p in live]) if live else None)

    def _next_samples(self, chunk: list[Sample]) -> list[Sample]:
        """The run's next ``len(chunk)`` samples after ``chunk``: the guess of what comes next."""
        at = self._position.get(chunk[-1].sample_id) if chunk else None
        return self.samples[at + 1 : at + 1 + len(chunk)] if at is not None else []

    def _read_ahead(self, chunk: list[Sample]) -> None:
        """Start decoding the samples after ``chunk`` in the decode thread (when working ahead is on)."""
        nxt = self._next_samples(chunk)
        if nxt and self.read_ahead and self.speculate:
            if self._loader is None:
                self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="objrel-decode")
            self._ahead = (tuple(s.sample_id for s in nxt), self._loader.submit(self._load_chunk, nxt))

    def _loaded_chunk(self, chunk: list[Sample]) -> tuple[list[_Prepared], object]:
        """``_load_chunk(chunk)``, done by the decode thread while the previous chunk ran when it guessed this
        chunk; then start on the next ``len(chunk)`` samples of the run (a wrong guess costs one decode)."""
        ahead = self._ahead
        key = tuple(s.sample_id for s in chunk)
        self._ahead = None
        loaded = ahead[1].result() if ahead is not None and ahead[0] == key else self._load_chunk(chunk)
        self._read_ahead(chunk)
        return loaded

    def _forward_sources(self, preps: list[_Prepared], sources, report: RunReport) -> None:
        """Predict the chunk's decoded sources and decide what each sample tests."""
        live = [p for p in preps if p.skip is None]
        if live and self._mixing():
            # before the forward pass: a module may change its input
            for p, kept in zip(live, self.model.input_copies(sources)):
                p.model_input = kept
        if live:
            with report.step("forward"):
                probs = self.model.forward(sources)
            report.forward_passes += len(live)
            with report.step("check"):  # each sample's own prediction and target (masks): spread over the cores
                found = R.Prediction.from_batch(probs, self.model.task, [p.labels for p in live],
                                                threshold=self.model.threshold)
                parallel_each(lambda i: self._decide(live[i], found[i]), len(live))

    def _decided_chunk(self, chunk: list[Sample], report: RunReport) -> list[_Prepared]:
        """The chunk's samples with their source predictions: from ``_decide_next`` when it guessed this
        chunk, else decoded (or taken from the decode thread) and predicted now."""
        decided, self._decided = self._decided, None
        if decided is not None and decided[0] == tuple(s.sample_id for s in chunk) and self.speculate:
            return decided[1]
        with report.step("decode"):
            preps, sources = self._loaded_chunk(chunk)
        self._forward_sources(preps, sources, report)
        return preps

    def _decide_next(self, report: RunReport) -> None:
        """Run the model on the next chunk's sources now, if the decode thread has them ready: called while
        the mutant worker makes this chunk's first batch, which the model would otherwise wait for."""
        ahead = self._ahead
        if ahead is None or not ahead[1].done() or not (self.read_ahead and self.speculate):
            return
        self._ahead = None
        preps, sources = ahead[1].result()
        self._forward_sources(preps, sources, report)
        self._decided = (ahead[0], preps)
        self._read_ahead([p.sample for p in preps])

    def process_chunk(self, chunk: list[Sample], report: RunReport, speculate: bool = True) -> list[_Prepared]:
        """Test the chunk's samples (``RunWorker``): sources predicted, mutants made in batches and checked, votes
        cast; with ``speculate`` False nothing is worked ahead."""
        self.speculate = speculate
        preps = self._decided_chunk(chunk, report)
        tested = [p for p in preps if p.skip is None and p.tested]
        self._fill_bases(tested, report)
        try:
            if self.config.lazy:
                self._predict_lazy(tested, report)
            else:
                self._predict_mutants([(p, m) for p in tested for m in self.mutations], report,
                                      meanwhile=lambda: self._decide_next(report))
        finally:
            for p in preps:
                p.fill_basis = p.model_input = None
        return preps

    def _mixing(self) -> bool:
        """Whether one-colour fills reach the model mixed (``PaintedInput``) rather than painted."""
        return bool(self.mix_fills and self._fills and self.model.mixes_fills)

    def _fill_bases(self, tested: list[_Prepared], report: RunReport) -> None:
        """Give each tested sample the model's ``FillBasis`` of its source and target, spread over the cores,
        when the plan has one-colour fills and the model can mix them (else the fills are painted)."""
        if not (tested and self._mixing()):
            return

        def basis(i: int) -> None:
            p = tested[i]
            p.fill_basis = self.model.fill_basis(p.image, p.target.region, p.model_input)

        with report.step("bases"):
            parallel_each(basis, len(tested))

    def _painted(self, holder: _Prepared, mutation: Mutation) -> PaintedInput | None:
        """The model input of ``mutation`` mixed from the sample's ``FillBasis``; None: make the mutant."""
        fill = self._fills.get(mutation.key)
        if fill is None or holder.fill_basis is None:
            return None
        return PaintedInput(holder.fill_basis, fill.side, fill.colour)

    def _predict_lazy(self, tested: list[_Prepared], report: RunReport) -> None:
        """Feed the mutants in waves across the chunk's samples, each wave only the mutations that can
        still change a vote (``VoteSchedule``); a sample whose groups are all decided gets no more."""
        schedule = VoteSchedule(self.plan)
        verdicts: dict[int, dict[str, str]] = {id(p): {} for p in tested}
        wave = [(p, m) for p in tested for m in schedule.next_wave(verdicts[id(p)])]
        meanwhile = lambda: self._decide_next(report)  # noqa: E731 - during the first wave's first batch
        while wave:
            self._predict_mutants(wave, report, meanwhile)
            meanwhile = None
            with report.step("check"):
                for p, m in wave:
                    res = p.mutants[m.key]
                    verdicts[id(p)][m.key] = (C.NOT_APPLICABLE if isinstance(res, NotApplicable)
                                              else R.check(m.relation, p.source, res).verdict)
            wave = [(p, m) for p in tested for m in schedule.next_wave(verdicts[id(p)])]

    def _predict_mutants(self, jobs, report: RunReport, meanwhile: Callable[[], None] | None = None) -> None:
        """Model the mutants of ``jobs`` batch by batch.  With ``prefetch_mutants`` (spare cores) a worker
        thread makes and prepares (the model's ``prepare``: resize, normalise) the next batch while the model
        runs on this one, and ``meanwhile`` runs here while the first batch is being made; without, each
        batch is made and prepared on every core just before its forward pass, on this thread."""
        made = mutant_batches(((p, p.sample.sample_id, p.image, p.target, m) for p, m in jobs),
                              self.config.seed, self.config.batch_size, parallel=not self.prefetch_mutants,
                              instead=self._painted)
        prepare = self.model.prepare
        if self.prefetch_mutants:
            stream = prefetch(((b, prepare([img for _, _, img in b])) for b in made), depth=PREFETCH_BATCHES)
        else:
            stream = ((b, None) for b in made)
        try:
            if meanwhile is not None:
                meanwhile()
        except BaseException:
            stream.close()  # stops the worker thread, if any
            raise
        batches = iter(stream)
        # Without a worker thread, batches are made and prepared a group at a time (on every core), then the
        # group's forward passes run back to back: the runtime's threads stay busy from one pass to the next
        # instead of waking (or spinning) once per batch around each batch's preparation.
        group_bytes = 0 if self.prefetch_mutants else BACK_TO_BACK_BYTES
        while True:
            ready: list[tuple[list, object]] = []
            size = 0
            while not ready or size < group_bytes:
                with report.step("mutants"):  # made now, or waited for from the worker thread
                    batch, x = next(batches, (None, None))
                if batch is None:
                    break
                if x is None:
                    with report.step("prepare"):
                        x = prepare([img for _, _, img in batch])
                ready.append(([(p, m) for p, m, _ in batch], x))
                size += batch_bytes(x)
            if not ready:
                break
            with report.step("forward"):
                outputs = [self.model.forward(x) for _, x in ready]
            report.forward_passes += sum(len(jobs_b) for jobs_b, _ in ready)
            with report.step("check"):
                for (jobs_b, _), probs in zip(ready, outputs):
                    interests = [set(p.label_of_interest) | set(p.source.predicted) for p, _ in jobs_b]
                    found = R.Prediction.from_batch(probs, self.model.task, interests, threshold=self.model.threshold)
                    for (p, m), pred in zip(jobs_b, found):
                        p.mutants[m.key] = pred

    # ------------------------------------------------------------ results

    def _distance(self, p: _Prepared, relation: str, mut: R.Prediction) -> float | None:
        # --all: D of the ground-truth label ranked highest (ORMR s V-A.1), else the mean over the labels
        return R.inference_distance(relation, p.source, mut, p.label_of_interest,
                                    highest_ranked=bool(self.config.test_all))

    def commit_chunk(self, run_id: int, preps: list[_Prepared], report: RunReport) -> None:
        """The chunk's samples and all their rows in one transaction (``Store.write_samples``)."""
        self._commit_rows(run_id, [self.result_rows(p) for p in preps], report)

    def _commit_rows(self, run_id: int, results: list[tuple], report: RunReport) -> None:
        """Write ``results`` and count the samples written (one already stored is not counted again)."""
        for (sample, *_), written in zip(results, self.store.write_samples(run_id, results)):
            if written:
                report.count_sample(sample["status"], sample.get("skip_code"), sample.get("skip_reason") or "")

    def result_rows(self, p: _Prepared) -> tuple[dict, list[dict], list[dict], list[dict]]:
        """The sample, prediction, verdict and vote rows of one processed sample."""
        s = p.sample
        row = {"sample_id": s.sample_id, "rel_path": s.rel_path, "region_source": s.region_source,
               "gt_categories": list(s.categories), "dropped": [dict(d) for d in p.dropped] or None,
               "notes": list(s.notes) or None}
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
            distances = Distances(self.plan)  # S by the plan's scoring basis (seed002 when it holds Table I)
            for m in self.mutations:
                res = p.mutants.get(m.key)
                seed = p.seeds[m.key] if m.key in p.seeds else derive_seed(self.config.seed, s.sample_id, m.key)
                preds.append({"sample_id": s.sample_id, "mutation_key": m.key, "seed": str(seed),
                              "prediction": None if res is None or isinstance(res, NotApplicable) else res.to_dict()})
                if res is None:  # a lazy run's vote groups were decided without it: never "holds"
                    v = {"verdict": C.NOT_EVALUATED, "source_certainty": None, "mutant_certainty": None,
                         "label_changed": None, "distance": None, "note": C.VOTE_DECIDED}
                    by_key[m.key] = C.NOT_EVALUATED
                elif isinstance(res, NotApplicable):
                    v = {"verdict": C.NOT_APPLICABLE, "source_certainty": None, "mutant_certainty": None,
                         "label_changed": None, "distance": None, "note": str(res)}
                    by_key[m.key] = C.NOT_APPLICABLE
                else:
                    chk = R.check(m.relation, p.source, res)
                    d = self._distance(p, m.relation, res)
                    distances.add(m.relation, m.operator, d)
                    v = {"verdict": chk.verdict, "source_certainty": chk.source_certainty,
                         "mutant_certainty": chk.mutant_certainty, "label_changed": chk.label_changed,
                         "distance": d, "note": C.TIE_NOTE if chk.tie else None}
                    by_key[m.key] = chk.verdict
                verdict_rows.append({"sample_id": s.sample_id, "mutation_key": m.key, "operator": m.operator,
                                     "relation": m.relation, **v})
            votes = vote_rows(self.plan, s.sample_id, by_key)
            if self.config.lazy:  # not every mutation ran: the continuous scores would be biased
                row.update(s_p=None, s_r=None, s=None)
            else:
                rel = distances.relevancy()
                row.update(s_p=rel.s_p, s_r=rel.s_r, s=rel.s)
        row["elapsed_ms"] = (time.perf_counter() - p.t0) * 1000.0
        return row, preds, verdict_rows, votes

    def test_samples(self, samples: list[Sample]) -> list[tuple[dict, list[dict], list[dict], list[dict]]]:
        """Test ``samples`` now and return their rows without storing them (re-tests, previews)."""
        report = RunReport(run_id=-1, status="running")
        return [self.result_rows(p) for p in self.process_chunk(list(samples), report)]
