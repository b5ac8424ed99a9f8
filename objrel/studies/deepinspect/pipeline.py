"""Streaming images through a hooked torch classifier and turning the counts into an InspectResult.

``Inspector`` is the one accumulator: ``add(images, truths, refs)`` per batch, then
``finish()``.  ``inspect_dataset`` feeds it an objrel ``Dataset`` (any loader), the
planted benchmark feeds it synthetic images; memory is one batch plus the count matrices
(``neurons x classes`` and, with labels, ``classes x classes``), whatever the number of
images.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Callable, Iterable, Sequence

import numpy as np
from torch import nn

from objrel.data import load_rgb
from objrel.engine.classify import resolve_objects
from objrel.errors import BadSampleError
from objrel.studies.deepinspect.constants import (ACTIVATION_THRESHOLD, DEFAULT_BATCH_SIZE, EXAMPLES_PER_CLASS,
                                                  FAR_STD, FLAG_STD, MIN_CLASS_IMAGES)
from objrel.studies.deepinspect.coverage import ActivationCounter, ActivityHooks, predicted_members
from objrel.studies.deepinspect.evaluation import (evaluate_ranking, last_linear, optimal_evaluation, random_evaluation,
                         weight_distances)
from objrel.studies.deepinspect.groundtruth import ErrorCounter, avg_confusion_disparity
from objrel.studies.deepinspect.metrics import avg_bias, far_cutoff, flag_high, flag_low, napvd, pair_values
from objrel.studies.deepinspect.result import GroundTruth, InspectResult, WeightBaseline


def torch_module(classifier) -> nn.Module:
    """The classifier's ``nn.Module``; DeepInspect is white-box and needs one."""
    module = getattr(classifier, "module", None)
    if not isinstance(module, nn.Module):
        raise ValueError(f"DeepInspect needs a torch classifier (objrel TorchClassifier with a .module); got "
                         f"{type(classifier).__name__}, whose neurons cannot be hooked")
    return module


class Inspector:
    """Accumulates neuron activation counts per predicted class, and error counts where labels exist.

    classifier: an objrel ``TorchClassifier`` (``predict`` + ``module``); its ``task`` and
                multi-label ``threshold`` decide the predicted classes.
    threshold:  the activation threshold Th in [0, 1).
    layers:     names of the conv / linear layers to hook (default: all of them).
    examples_per_class: image references kept per predicted class, for display.
    """

    def __init__(self, classifier, threshold: float = ACTIVATION_THRESHOLD, layers: Sequence[str] | None = None,
                 examples_per_class: int = EXAMPLES_PER_CLASS):
        self.classifier = classifier
        self.module = torch_module(classifier)
        self.hooks = ActivityHooks(self.module, threshold, layers)
        self.n_classes = int(classifier.num_classes)
        self.task = classifier.task
        self.activations = ActivationCounter(self.hooks.n_neurons, self.n_classes)
        self.errors = ErrorCounter(self.task, self.n_classes)
        self.examples: dict[int, list[str]] = {}
        self.examples_per_class = int(examples_per_class)
        self.skipped: Counter = Counter()
        self.skip_examples: dict[str, str] = {}

    @property
    def threshold(self) -> float:
        """The activation threshold the hooks count neurons against."""
        return self.hooks.threshold

    def skip(self, code: str, reason: str) -> None:
        """Record an input that could not be used (shown in the result's notes)."""
        self.skipped[code] += 1
        self.skip_examples.setdefault(code, reason)

    def add(self, images: Sequence[np.ndarray], truths: Sequence | None = None,
            refs: Sequence[str] | None = None) -> np.ndarray:
        """One batch.

        images: ``(H, W, 3)`` uint8 RGB arrays.
        truths: per image, a tuple of true class indices (model output indices) or None
                when the image has no label; omit for unlabelled data.
        refs:   per image, a reference to show it again later (dataset-relative path).
        Returns the ``(N, C)`` probabilities.
        """
        n = len(images)
        if truths is not None and len(truths) != n or refs is not None and len(refs) != n:
            raise ValueError(f"expected one truth and one reference per image ({n}), got "
                             f"{None if truths is None else len(truths)} and {None if refs is None else len(refs)}")
        if n == 0:
            return np.zeros((0, self.n_classes), dtype=np.float32)
        with self.hooks:
            probs = self.classifier.predict(list(images))
            active = self.hooks.take(n)
        members = predicted_members(probs, self.task, self.classifier.threshold)
        self.activations.add(active, members)
        if truths is not None:
            self._add_truth(truths, members)
        if refs is not None and self.examples_per_class > 0:
            for i, ref in enumerate(refs):
                for c in np.flatnonzero(members[i]):
                    kept = self.examples.setdefault(int(c), [])
                    if len(kept) < self.examples_per_class:
                        kept.append(str(ref))
        return probs

    def _add_truth(self, truths, members: np.ndarray) -> None:
        rows = [i for i, t in enumerate(truths) if t is not None and len(t) > 0]
        if not rows:
            return
        t = np.zeros((len(rows), self.n_classes), dtype=bool)
        for r, i in enumerate(rows):
            idx = np.asarray(list(truths[i]), dtype=int)
            if idx.min() < 0 or idx.max() >= self.n_classes:
                raise ValueError(f"true class indices must lie in [0, {self.n_classes}), got {list(truths[i])}")
            t[r, idx] = True
        self.errors.add(t, members[rows])

    def finish(self, source: dict | None = None, planted: dict | None = None, notes: Iterable[str] = (),
               seconds: float = 0.0, min_class_images: int = MIN_CLASS_IMAGES, flag_std: float = FLAG_STD,
               far_std: float = FAR_STD, baseline: bool = True) -> InspectResult:
        """Compute every score from the counts (see ``analyse``)."""
        notes = list(notes)
        for code, k in self.skipped.most_common():
            notes.append(f"skipped {k} x {code}: e.g. {self.skip_examples[code]}")
        if self.errors.n_ambiguous:
            notes.append(f"{self.errors.n_ambiguous} single-label images name several classes; left out of "
                         f"the ground truth")
        return analyse(self, source or {"kind": "images"}, planted, notes, seconds, min_class_images, flag_std,
                       far_std, baseline)


def _weights(inspector: Inspector, classes: np.ndarray, flag_std: float, far_std: float, notes: list):
    try:
        name, layer = last_linear(inspector.module, inspector.n_classes)
    except ValueError as exc:
        notes.append(f"no weight-vector baseline: {exc}")
        return None
    w = layer.weight.detach().cpu().numpy()[classes]
    dist = weight_distances(w)
    _, conf_cut = flag_low(pair_values(dist), flag_std)
    ab = avg_bias(dist, far_cutoff(dist, far_std))
    _, bias_cut = flag_high(pair_values(ab), flag_std)
    return WeightBaseline(name or "(root)", dist, ab, conf_cut, bias_cut)


def analyse(inspector: Inspector, source: dict, planted: dict | None = None, notes: list | None = None,
            seconds: float = 0.0, min_class_images: int = MIN_CLASS_IMAGES, flag_std: float = FLAG_STD,
            far_std: float = FAR_STD, baseline: bool = True) -> InspectResult:
    """NAPVD, avg_bias, their flags, the ground truth and the evaluations, from an Inspector's counts.

    Classes predicted fewer than ``min_class_images`` times are left out (and named in the
    notes); at least 3 classes must remain, since bias needs a third class.
    """
    notes = list(notes or [])
    counts = inspector.activations.class_counts
    classes = np.flatnonzero(counts >= max(1, min_class_images))
    dropped = inspector.n_classes - len(classes)
    if dropped:
        notes.append(f"{dropped} of {inspector.n_classes} classes were predicted fewer than "
                     f"{max(1, min_class_images)} times and are left out")
    if len(classes) < 3:
        raise ValueError(f"DeepInspect needs at least 3 predicted classes (bias compares a pair against a third); "
                         f"the model predicted {len(classes)} classes on {inspector.activations.n_inputs} images")
    rho = inspector.activations.probabilities(classes)
    dist = napvd(rho)
    _, conf_cut = flag_low(pair_values(dist), flag_std)
    far = far_cutoff(dist, far_std)
    ab = avg_bias(dist, far)
    _, bias_cut = flag_high(pair_values(ab), flag_std)

    gt = None
    if inspector.errors.n_images:
        err = inspector.errors.error_matrix(classes)
        acd = avg_confusion_disparity(err)
        _, gt_conf = flag_high(pair_values(err), flag_std)
        _, gt_bias = flag_high(pair_values(acd), flag_std)
        gt = GroundTruth("type1" if inspector.task == "single" else "type2", inspector.errors.n_images, err, acd,
                         gt_conf, gt_bias)

    weights = _weights(inspector, classes, flag_std, far_std, notes) if baseline else None

    evaluations = []
    if gt is not None:
        truth_c, truth_b = gt.confused(), gt.biased()
        scored = [("deepinspect", dist, ab, conf_cut, bias_cut)]
        if weights is not None:
            scored.append(("weights", weights.distances, weights.avg_bias, weights.confusion_cutoff,
                           weights.bias_cutoff))
        for method, d, b, cc, bc in scored:
            dv, bv = pair_values(d), pair_values(b)
            evaluations.append(evaluate_ranking("confusion", method, dv, True, dv < cc, truth_c))
            evaluations.append(evaluate_ranking("bias", method, bv, False, bv > bc, truth_b))
        p = len(truth_c)
        n_flag_c = int((pair_values(dist) < conf_cut).sum())
        n_flag_b = int((pair_values(ab) > bias_cut).sum())
        evaluations += [random_evaluation("confusion", p, int(truth_c.sum()), n_flag_c),
                        random_evaluation("bias", p, int(truth_b.sum()), n_flag_b),
                        optimal_evaluation("confusion", p, int(truth_c.sum())),
                        optimal_evaluation("bias", p, int(truth_b.sum()))]

    names = inspector.classifier.class_names
    return InspectResult(
        model=_json_safe(inspector.classifier.describe()), source=source, task=inspector.task,
        activation_threshold=inspector.threshold, n_images=inspector.activations.n_inputs,
        layers=tuple(zip(inspector.hooks.names, inspector.hooks.sizes)),
        class_index=tuple(int(c) for c in classes), class_names=tuple(str(names[c]) for c in classes),
        class_counts=tuple(int(counts[c]) for c in classes),
        napvd=dist, confusion_cutoff=conf_cut, avg_bias=ab, bias_cutoff=bias_cut, far_cutoff=far,
        ground_truth=gt, weights=weights, evaluations=tuple(evaluations),
        examples={int(c): tuple(v) for c, v in inspector.examples.items() if c in set(classes.tolist())},
        planted=planted, notes=tuple(notes), seconds=float(seconds),
    )


def _json_safe(value):
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def dataset_batches(dataset, class_names, batch_size: int = DEFAULT_BATCH_SIZE, limit: int | None = None,
                    on_skip: Callable[[str, str], None] | None = None):
    """An objrel ``Dataset`` as ``(images, truths, refs)`` batches, decoding one batch at a time.

    truths: the model class indices of each sample's objects (None when a category names
    no class of the model: the image still counts for coverage).  Unreadable samples are
    reported to ``on_skip(code, reason)`` and left out.
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    images, truths, refs = [], [], []
    for k, sample in enumerate(dataset):
        if limit is not None and k >= limit:
            break
        if sample.problem is not None:
            if on_skip:
                on_skip(sample.problem[0], f"{sample.rel_path}: {sample.problem[1]}")
            continue
        try:
            image = load_rgb(sample.image_path)
        except BadSampleError as exc:
            if on_skip:
                on_skip(exc.code, f"{sample.rel_path}: {exc.reason}")
            continue
        try:
            truth = tuple(sorted({o.class_index for o in resolve_objects(sample, class_names)}))
        except BadSampleError as exc:
            if on_skip:
                on_skip("no-truth-" + exc.code, f"{sample.rel_path}: {exc.reason}")
            truth = None
        images.append(image)
        truths.append(truth or None)
        refs.append(sample.rel_path)
        if len(images) == batch_size:
            yield images, truths, refs
            images, truths, refs = [], [], []
    if images:
        yield images, truths, refs


def inspect_dataset(classifier, dataset, threshold: float = ACTIVATION_THRESHOLD,
                    batch_size: int = DEFAULT_BATCH_SIZE, limit: int | None = None,
                    layers: Sequence[str] | None = None, progress: Callable[[int, int], None] | None = None,
                    **finish_options) -> InspectResult:
    """Run DeepInspect over an objrel ``Dataset``: coverage on every image, ground truth from its labels."""
    t0 = time.perf_counter()
    inspector = Inspector(classifier, threshold=threshold, layers=layers)
    total = len(dataset) if limit is None else min(limit, len(dataset))
    done = 0
    for images, truths, refs in dataset_batches(dataset, classifier.class_names, batch_size, limit,
                                                on_skip=inspector.skip):
        inspector.add(images, truths, refs)
        done += len(images)
        if progress:
            progress(done, total)
    source = {"kind": "dataset", **dataset.describe()}
    return inspector.finish(source=source, seconds=time.perf_counter() - t0, **finish_options)
