"""Ground truth of background reliance per test inference, from counterfactual scenes.

EMSE21 s7.3 could count false positives by hand but never false negatives: nobody
knew which inferences truly rested on object-irrelevant features.  On planted-shortcut
scenes (``objrel.studies.shortcut.scenes``) we can redraw any scene exactly with another
background, so we ask the model directly.

For a **correct** inference with label ``y`` (single-label; the predicted set ``P``
for multi-label) the counterfactuals are:

* **swaps**: the same object pixels (exact mask) pasted on backgrounds of every
  *other* class's type (``draws`` backgrounds per type; for multi-label the types of
  classes absent from the scene).  The backgrounds come from the counterfactual pool
  (``scenes.pool_background``: POOL_PER_TYPE backgrounds per type and seed, rendered
  from streams no scene uses, so none is a training background); each scene picks its
  own members, seeded, and its first ``k`` draws are the same whatever ``draws`` is;
* **background alone**: the scene's own background layer (the scene with the object
  removed and nothing painted in its place), and each swap background alone.

Each outcome is stored (``Reliance.flips``, ``alone_fails``, ``own_alone``) so the
verdicts below can be re-derived at any draw count ``k <= draws`` and any threshold:

* **swap-flip rate** at ``k``: the share of the ``k`` draws per other type whose swap
  changes the answer (multi-label: the predicted set differs from ``P``).  This is
  what MR-2 tries to detect with its crude fills;
* **background-sufficiency rate** at ``k``: 0 when the scene's own background alone
  does not give the answer (multi-label: no label of ``P`` is predicted on it); else
  the share of the ``k`` draws per other type whose background alone does *not* give
  it (multi-label: misses some label of ``P`` that the own background gave).  The
  answer then comes from the background's type, not from a default answer to an
  empty scene.  This is what MR-1 tries to detect;
* **reliance rate**: the larger of the two; the inference is **reliant** at threshold
  ``t`` when the reliance rate passes ``t`` (``Threshold``: ``any`` is rate > 0, the
  old coin: some swap flips it; ``majority`` is rate >= 0.5), i.e. when the
  swap-flip rate or the sufficiency rate passes it.  ``Reliance.verdict(k, t)``
  gives the three booleans (swap-dependent, background-sufficient, reliant) that
  every detector (MR-1, MR-2, their union, each operator) is scored against.

The stored ``swap_dependent`` / ``background_sufficient`` are the verdicts at every
draw made and threshold ``any``.

Incorrect inferences get ``correct=False`` and no reliance facts (the engine does
not test them by default, EMSE21 s4.1).

``detection_ground_truth`` asks the same two questions of a detector's units (a record tied
to its object), with DetReport's test T (label and IoU) in place of "classified ``y``"; see
``UnitReliance``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from objrel.data.region import segmentation_mask
from objrel.studies.shortcut.scenes import MAX_POOL_DRAWS, SyntheticConfig, counterfactual_background, paste, read_split

if TYPE_CHECKING:  # a type only: the results pages read ground truth without loading a model library
    from objrel.models import Classifier

# Backgrounds drawn per other class's type for the swaps (the benchmark's default and most): the tables
# re-derive the truth at REPORT_DRAWS from these.
DEFAULT_DRAWS = 8
# The draw counts every precision / recall table is reported at (those <= the draws made).
REPORT_DRAWS = (1, 3, 8)
# Images per forward pass when predicting counterfactuals.
BATCH = 256
# Scenes whose counterfactuals are rendered and predicted together (bounds the memory of many draws).
SCENE_CHUNK = 64


@dataclass(frozen=True)
class Threshold:
    """A reliance threshold on a rate in [0, 1]: passed when the rate is > ``rate`` (``strict``) or >= it."""

    name: str
    rate: float
    strict: bool = False

    def holds(self, rate: float) -> bool:
        """True when ``rate`` passes this threshold."""
        return rate > self.rate if self.strict else rate >= self.rate

    @property
    def label(self) -> str:
        """The threshold as a condition, e.g. ``rate > 0``."""
        return f"rate {'>' if self.strict else '>='} {self.rate:g}"


# "any": some swap (or some bare background) changes the answer, the old coin; "majority": at least half do.
ANY_FLIP = Threshold("any", 0.0, strict=True)
MAJORITY = Threshold("majority", 0.5)
THRESHOLDS = (ANY_FLIP, MAJORITY)
THRESHOLD_BY_NAME = {t.name: t for t in THRESHOLDS}


def threshold_named(name: str) -> Threshold:
    """The threshold of ``THRESHOLDS`` called ``name``; ValueError naming the choices otherwise."""
    if name not in THRESHOLD_BY_NAME:
        raise ValueError(f"threshold must be one of {sorted(THRESHOLD_BY_NAME)}, got {name!r}")
    return THRESHOLD_BY_NAME[name]


def is_reliant(correct: bool, swap_dependent: bool | None, background_sufficient: bool | None) -> bool | None:
    """The ground truth's verdict for an inference or a detection unit: reliant on the background when the
    swaps change it or the background alone gives it (see the module docstring); None when it is wrong."""
    if not correct:
        return None
    return bool(swap_dependent or background_sufficient)


@dataclass(frozen=True)
class Verdict:
    """The ground truth of one inference (or unit) at one draw count and threshold; None facts when it is wrong."""

    correct: bool
    swap_dependent: bool | None = None
    background_sufficient: bool | None = None

    @property
    def reliant(self) -> bool | None:
        """True when reliant at this draw count and threshold; None when the inference is wrong."""
        return is_reliant(self.correct, self.swap_dependent, self.background_sufficient)


def _rate(rows, k: int) -> float:
    """The share of ones over the first ``k`` entries of every row."""
    cells = [v for row in rows for v in row[:k]]
    return sum(cells) / len(cells) if cells else 0.0


class Outcomes:
    """The rates and verdicts of a ground truth that holds its per-swap outcomes (``flips``, ``alone_fails``,
    ``own_alone``; one row per other type, one entry per draw).  Mixed into ``Reliance`` and ``UnitReliance``."""

    @property
    def draws(self) -> int:
        """Draws per type whose outcomes are stored (0 for a wrong inference or an old results file)."""
        return min((len(row) for row in self.flips), default=0)

    def _check(self, k: int) -> None:
        if not 1 <= k <= self.draws:
            raise ValueError(f"draw count must be in 1..{self.draws} (the draws made), got {k}")

    def swap_rate(self, k: int | None = None) -> float | None:
        """The share of swaps among the first ``k`` draws per type that change the answer; None when wrong."""
        if not self.correct:
            return None
        k = self.draws if k is None else k
        self._check(k)
        return _rate(self.flips, k)

    def sufficiency_rate(self, k: int | None = None) -> float | None:
        """0 when the own background alone does not give the answer; else the share of the first ``k`` other-type
        backgrounds per type whose background alone does not give it.  None when wrong."""
        if not self.correct:
            return None
        k = self.draws if k is None else k
        self._check(k)
        return _rate(self.alone_fails, k) if self.own_alone else 0.0

    def reliance_rate(self, k: int | None = None) -> float | None:
        """The larger of the swap-flip rate and the sufficiency rate at ``k`` draws; None when wrong."""
        if not self.correct:
            return None
        return max(self.swap_rate(k), self.sufficiency_rate(k))

    def verdict(self, k: int | None = None, threshold: Threshold = ANY_FLIP) -> Verdict:
        """Swap-dependent, background-sufficient and reliant at ``k`` draws (default all) and ``threshold``."""
        if not self.correct:
            return Verdict(False)
        return Verdict(True, threshold.holds(self.swap_rate(k)), threshold.holds(self.sufficiency_rate(k)))


def _nested(rows) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(v) for v in row) for row in rows or ())


@dataclass(frozen=True)
class Reliance(Outcomes):
    """Ground truth of one inference.

    sample_id:   the engine's sample id (the COCO image id, as a string).
    labels:      true class indices; predicted: the model's predicted labels on the scene.
    correct:     the inference is correct (only then are the facts below defined).
    swaps / swap_changes: counterfactual swaps made, and how many changed the prediction.
    background_label: the predicted labels on the background alone.
    swap_dependent, background_sufficient: the verdicts at every draw made, threshold ``any``.
    swap_types:  the other types swapped in, in row order of the outcomes;
    flips:       per other type, per draw: 1 when the swap changed the prediction;
    alone_fails: per other type, per draw: 1 when that background alone does not give the answer;
    own_alone:   the scene's own background alone gives the answer (multi-label: some label of it).
    """

    sample_id: str
    labels: tuple[int, ...]
    predicted: tuple[int, ...]
    correct: bool
    swaps: int = 0
    swap_changes: int = 0
    background_label: tuple[int, ...] = ()
    swap_dependent: bool | None = None
    background_sufficient: bool | None = None
    swap_types: tuple[int, ...] = ()
    flips: tuple[tuple[int, ...], ...] = ()
    alone_fails: tuple[tuple[int, ...], ...] = ()
    own_alone: bool | None = None

    @property
    def reliant(self) -> bool | None:
        """True when the model relies on the background for this scene; None when its inference is wrong."""
        return is_reliant(self.correct, self.swap_dependent, self.background_sufficient)

    def to_dict(self) -> dict:
        """The reliance as a JSON-ready dict, with ``reliant``."""
        d = asdict(self)
        for k in ("labels", "predicted", "background_label", "swap_types"):
            d[k] = list(d[k])
        d["flips"], d["alone_fails"] = [list(r) for r in self.flips], [list(r) for r in self.alone_fails]
        d["reliant"] = self.reliant
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Reliance":
        """A reliance from a ``to_dict`` dict (``reliant`` is recomputed)."""
        keep = {k: v for k, v in d.items() if k != "reliant"}
        for k in ("labels", "predicted", "background_label", "swap_types"):
            keep[k] = tuple(keep.get(k, ()))
        keep["flips"], keep["alone_fails"] = _nested(keep.get("flips")), _nested(keep.get("alone_fails"))
        return cls(**keep)


def _predicted_sets(clf: Classifier, images: list[np.ndarray]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    for i in range(0, len(images), BATCH):
        probs = clf.predict(images[i : i + BATCH])
        if clf.task == "single":
            out += [(int(np.argmax(p)),) for p in probs]
        else:
            out += [tuple(int(j) for j in np.nonzero(p >= clf.threshold)[0]) for p in probs]
    return out


def _swap_types(cfg: SyntheticConfig, labels: tuple[int, ...], bg_type: int) -> list[int]:
    types = [t for t in range(cfg.n_classes) if t not in labels]
    return types or [t for t in range(cfg.n_classes) if t != bg_type]


@dataclass(frozen=True)
class _Queued:
    """Where a scene's counterfactuals sit in a batch: per other type (``types``) and draw, the swap and the
    background alone; then the scene's own background alone."""

    types: tuple[int, ...]
    swaps: tuple[tuple[int, ...], ...]
    alone: tuple[tuple[int, ...], ...]
    own: int


def _queue_counterfactuals(cfg: SyntheticConfig, root: Path, rec: dict, img: np.ndarray, segmentations,
                           labels: tuple[int, ...], draws: int, batch: list[np.ndarray]) -> _Queued:
    """Append a scene's counterfactuals to ``batch``: for each other background type and draw, the object
    (the union of ``segmentations``) pasted on that pool background, and that background alone; then the
    scene's own background alone."""
    mask = np.zeros(img.shape[:2], dtype=bool)
    for seg in segmentations:
        mask |= segmentation_mask(seg, img.shape[1], img.shape[0])
    split, index = rec["scene"]["split"], rec["scene"]["index"]
    types = _swap_types(cfg, labels, rec["bg_type"])
    swaps, alone = [], []
    for t in types:
        s_row, a_row = [], []
        for d in range(draws):
            bg = counterfactual_background(cfg, split, index, t, d)
            s_row.append(len(batch))
            batch.append(paste(img, mask, bg))
            a_row.append(len(batch))
            batch.append(bg)
        swaps.append(tuple(s_row))
        alone.append(tuple(a_row))
    own = len(batch)
    batch.append(np.asarray(Image.open(root / rec["background_file"]).convert("RGB")))
    return _Queued(tuple(types), tuple(swaps), tuple(alone), own)


def _check_draws(draws: int) -> None:
    if not 1 <= draws <= MAX_POOL_DRAWS:
        raise ValueError(f"draws must be 1..{MAX_POOL_DRAWS} backgrounds per type, got {draws}")


def ground_truth(clf: Classifier, annotation, draws: int = DEFAULT_DRAWS,
                 sample_ids=None) -> dict[str, Reliance]:
    """Reliance of ``clf``'s inference on every scene of a written synthetic split.

    annotation: the split's COCO JSON (``write_split``); sample_ids: restrict to these ids.
    Returns ``{sample_id: Reliance}``.  Costs ``1 + 2 * (K - 1) * draws + 1`` forward passes
    per correct inference (``K`` classes).
    """
    _check_draws(draws)
    data = read_split(annotation)
    cfg: SyntheticConfig = data["config"]
    if clf.num_classes != cfg.n_classes:
        raise ValueError(f"the model has {clf.num_classes} classes, the split {cfg.n_classes}")
    root = Path(annotation).parent
    anns: dict[int, list[dict]] = {}
    for a in data["annotations"]:
        anns.setdefault(a["image_id"], []).append(a)
    wanted = None if sample_ids is None else {str(s) for s in sample_ids}
    recs = [r for r in sorted(data["images"], key=lambda r: r["id"]) if wanted is None or str(r["id"]) in wanted]
    images = [np.asarray(Image.open(root / r["file_name"]).convert("RGB")) for r in recs]
    truths = [tuple(sorted({a["category_id"] - 1 for a in anns[r["id"]]})) for r in recs]
    preds = _predicted_sets(clf, images)

    out: dict[str, Reliance] = {}
    correct_at: list[int] = []
    for n, (rec, y, p) in enumerate(zip(recs, truths, preds)):
        if set(p) == set(y) if cfg.multi_label else p[0] in y:
            correct_at.append(n)
        else:
            out[str(rec["id"])] = Reliance(str(rec["id"]), y, p, False)
    # The counterfactuals of SCENE_CHUNK correct inferences at a time, each chunk in batched passes.
    for c in range(0, len(correct_at), SCENE_CHUNK):
        batch: list[np.ndarray] = []
        plan = [(n, _queue_counterfactuals(cfg, root, recs[n], images[n],
                                           [a["segmentation"] for a in anns[recs[n]["id"]]], truths[n], draws,
                                           batch)) for n in correct_at[c : c + SCENE_CHUNK]]
        cf = _predicted_sets(clf, batch)
        for n, q in plan:
            sid, p = str(recs[n]["id"]), preds[n]
            flips = tuple(tuple(int(set(cf[i]) != set(p)) for i in row) for row in q.swaps)
            alone = cf[q.own]
            if cfg.multi_label:
                kept = [c_ for c_ in p if c_ in alone]      # labels of P the own background alone gives
                own_alone = bool(kept)
                fails = tuple(tuple(int(any(c_ not in cf[i] for c_ in kept)) for i in row) for row in q.alone)
            else:
                own_alone = alone == p
                fails = tuple(tuple(int(cf[i] != p) for i in row) for row in q.alone)
            changes = sum(map(sum, flips))
            out[sid] = Reliance(sid, truths[n], p, True, sum(map(len, flips)), int(changes), tuple(alone),
                                changes > 0, bool(own_alone and any(map(any, fails))), q.types, flips, fails,
                                bool(own_alone))
    return {str(r["id"]): out[str(r["id"])] for r in recs}


def reliance_share(truth: dict[str, Reliance]) -> dict:
    """Counts over the correct inferences: how many are reliant, swap-dependent, background-sufficient (at every
    draw made, threshold ``any``)."""
    correct = [r for r in truth.values() if r.correct]
    n = len(correct)
    share = lambda k: k / n if n else None  # noqa: E731
    k_rel = sum(bool(r.reliant) for r in correct)
    k_swap = sum(bool(r.swap_dependent) for r in correct)
    k_suff = sum(bool(r.background_sufficient) for r in correct)
    return {"evaluated": len(truth), "correct": n, "reliant": k_rel, "swap_dependent": k_swap,
            "background_sufficient": k_suff, "reliant_ratio": share(k_rel),
            "swap_dependent_ratio": share(k_swap), "background_sufficient_ratio": share(k_suff)}


# ---------------------------------------------------------------- detection units

# Background reliance of a *detection unit* (objrel.relations.associate: a source record tied to its ground-truth
# object, or an object no record is tied to) is defined with DetReport's test T in place of "classified y":
#
# * the unit is *correct* when T = 1 on the source (a record of the object's label with IoU >= the run's
#   threshold): only then are the facts below defined, as only then can MR-1 be checked;
# * **swap-dependent**: pasting the image's objects (exact masks) on a fresh background of every other class's
#   type (``draws`` per type from the pool), T is 0 on the swap: the record at the object lost its label or its box;
#   the swap-flip rate is the share of swaps where that happens;
# * **background-sufficient**: T is 1 on the scene's own background alone (no object: a record of the label
#   where the object was); the sufficiency rate is then the share of other types' backgrounds alone with T = 0;
# * **reliant** when either rate passes the threshold (``Outcomes.verdict``).  As for classifiers, this asks the
#   detector directly: it never reads the detector's own rule (``planted.PlantedDetector`` documents one; tests
#   check the two agree).


@dataclass(frozen=True)
class UnitReliance(Outcomes):
    """Ground truth of one detection unit.

    unit_id:   the engine's unit id (``"<image id>/r<j>"`` or ``"<image id>/o<k>"``); image_id its image.
    label:     the associated object's category; t_source: test T on the source (0 or 1).
    correct:   T = 1 on the source (only then are the facts below defined).
    swaps / swap_changes: counterfactual swaps made, and on how many T became 0; swap_label_changes: of
               those, how many kept a record on the object under another label.
    background_t: T on the scene's own background alone.
    swap_types, flips, alone_fails, own_alone: the per-swap outcomes, as ``Reliance`` holds them (T = 0 is a flip
               or a failure; own_alone is background_t == 1).
    """

    unit_id: str
    image_id: str
    label: str
    t_source: int
    swaps: int = 0
    swap_changes: int = 0
    swap_label_changes: int = 0
    background_t: int | None = None
    swap_dependent: bool | None = None
    background_sufficient: bool | None = None
    swap_types: tuple[int, ...] = ()
    flips: tuple[tuple[int, ...], ...] = ()
    alone_fails: tuple[tuple[int, ...], ...] = ()

    @property
    def own_alone(self) -> bool:
        """T = 1 on the scene's own background alone."""
        return self.background_t == 1

    @property
    def correct(self) -> bool:
        """True when the detector found the object on the source (T = 1)."""
        return self.t_source == 1

    @property
    def reliant(self) -> bool | None:
        """True when the detector relies on the background for this unit; None when it missed the object."""
        return is_reliant(self.correct, self.swap_dependent, self.background_sufficient)

    def to_dict(self) -> dict:
        """The unit's reliance as a JSON-ready dict, with ``correct`` and ``reliant``."""
        d = asdict(self)
        d["swap_types"] = list(self.swap_types)
        d["flips"], d["alone_fails"] = [list(r) for r in self.flips], [list(r) for r in self.alone_fails]
        d["correct"], d["reliant"] = self.correct, self.reliant
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "UnitReliance":
        """A unit's reliance from a ``to_dict`` dict (``correct`` and ``reliant`` are recomputed)."""
        keep = {k: v for k, v in d.items() if k not in ("correct", "reliant")}
        keep["swap_types"] = tuple(keep.get("swap_types", ()))
        keep["flips"], keep["alone_fails"] = _nested(keep.get("flips")), _nested(keep.get("alone_fails"))
        return cls(**keep)


def detection_ground_truth(detector, annotation, draws: int = DEFAULT_DRAWS, iou_threshold: float | None = None,
                           batch: int = BATCH) -> dict[str, UnitReliance]:
    """Reliance of every unit ``detector`` gives on a written synthetic split (single- or multi-object scenes).

    The units are the detection engine's (``objrel.relations.associate.detection_units`` on the source
    detections, with the dataset loader's objects), so the ids match the run's ``detection_units``.
    iou_threshold: Delta_c of test T (default: the engine's).  Returns ``{unit_id: UnitReliance}``; costs
    ``1 + 2 * (K - 1) * draws + 1`` detector passes per image with a correct unit.
    """
    from objrel.data import load_dataset
    from objrel.relations.associate import detection_units, match_record
    from objrel.relations.detect import DEFAULT_IOU_THRESHOLD, iou_test, object_test
    from objrel.store.detection_records import make_unit_id

    _check_draws(draws)
    thr = DEFAULT_IOU_THRESHOLD if iou_threshold is None else float(iou_threshold)
    data = read_split(annotation)
    cfg: SyntheticConfig = data["config"]
    root = Path(annotation).parent
    recs = {str(r["id"]): r for r in data["images"]}
    labels_of: dict[str, set[int]] = {}
    for a in data["annotations"]:
        labels_of.setdefault(str(a["image_id"]), set()).add(a["category_id"] - 1)
    samples = sorted(load_dataset(str(annotation)).samples, key=lambda s: int(s.sample_id))
    vocab = set(detector.labels) if detector.labels is not None else None
    images = [np.asarray(Image.open(s.image_path).convert("RGB")) for s in samples]
    sources = _detect_all(detector, images, batch)

    units_of = []
    for s, dets in zip(samples, sources):
        objects = [o for o in s.objects if vocab is None or o.category in vocab]
        # T on the source as the engine takes it: the best record of the unit's label for its object
        units_of.append((objects, [(u, object_test(dets, objects[u.object].box, u.label, thr))
                                   for u in detection_units(dets, objects)]))
    with_correct = [n for n, (_, units) in enumerate(units_of) if any(t for _, t in units)]
    queued: dict[int, _Queued] = {}
    cf: dict[int, list] = {}
    for c in range(0, len(with_correct), SCENE_CHUNK):     # SCENE_CHUNK images' counterfactuals at a time
        batch_images: list[np.ndarray] = []
        for n in with_correct[c : c + SCENE_CHUNK]:
            s = samples[n]
            queued[n] = _queue_counterfactuals(cfg, root, recs[s.sample_id], images[n], [o.segmentation for o in
                                               s.objects], tuple(sorted(labels_of.get(s.sample_id, ()))), draws,
                                               batch_images)
        found = _detect_all(detector, batch_images, batch)
        for n in with_correct[c : c + SCENE_CHUNK]:
            cf[n] = found

    out: dict[str, UnitReliance] = {}
    for n, (s, (objects, units)) in enumerate(zip(samples, units_of)):
        for u, t in units:
            uid = make_unit_id(s.sample_id, u.key)
            if not t:
                out[uid] = UnitReliance(uid, s.sample_id, u.label, 0)
                continue
            q, found, box = queued[n], cf[n], objects[u.object].box
            # T reads the best record of the unit's own label (DetReport s4.4, as the engine's checks do);
            # the best record of any label only tells whether a lost object was detected as something else
            own = [[match_record(found[i], box, u.label) for i in row] for row in q.swaps]
            nearest = [[match_record(found[i], box) for i in row] for row in q.swaps]
            flips = tuple(tuple(int(not iou_test(m, u.label, thr)) for m in row) for row in own)
            fails = tuple(tuple(int(not iou_test(match_record(found[i], box, u.label), u.label, thr)) for i in row)
                          for row in q.alone)
            own_t = iou_test(match_record(found[q.own], box, u.label), u.label, thr)
            lost = [n for ro, rn in zip(own, nearest) for o, n in zip(ro, rn) if not iou_test(o, u.label, thr)]
            out[uid] = UnitReliance(uid, s.sample_id, u.label, 1, sum(map(len, own)), len(lost),
                                    sum(n.found and n.label != u.label for n in lost), own_t, bool(lost),
                                    bool(own_t and any(map(any, fails))), q.types, flips, fails)
    return out


def _detect_all(detector, images: list[np.ndarray], batch: int) -> list:
    out: list = []
    for i in range(0, len(images), batch):
        out += detector.detect(images[i : i + batch])
    return out

