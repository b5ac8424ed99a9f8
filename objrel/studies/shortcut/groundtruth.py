"""Ground truth of background reliance per test inference, from counterfactual scenes.

Seed 000 s7.3 could count false positives by hand but never false negatives: nobody
knew which inferences truly rested on object-irrelevant features.  On planted-shortcut
scenes (``objrel.studies.shortcut.scenes``) we can redraw any scene exactly with another
background, so we ask the model directly.

For a **correct** inference with label ``y`` (single-label; the predicted set ``P``
for multi-label) the counterfactuals are:

* **swaps**: the same object pixels (exact mask) pasted on a fresh background of
  every *other* class's type (``draws`` backgrounds per type; for multi-label the
  types of classes absent from the scene);
* **background alone**: the scene's own background layer, i.e. the scene with the
  object removed and nothing painted in its place, and the swap backgrounds alone.

The inference is

* **swap-dependent** (the background is *necessary*) when some swap is not
  classified ``y`` (multi-label: some swap's predicted set differs from ``P``).
  This is what MR-2 tries to detect with its crude fills;
* **background-sufficient** (the object is *unnecessary*) when the background alone
  is classified ``y`` *and* at least one other type's background alone is not: the
  answer comes from the background's type, not from a default answer to an empty
  scene (multi-label: some label of ``P`` is predicted on the background alone and
  missing on some other type's background alone).  This is what MR-1 tries to detect;
* **background-reliant** when either holds.  That is the ground truth every
  detector (MR-1, MR-2, their union, each operator) is scored against.

Incorrect inferences get ``correct=False`` and no reliance facts (the engine does
not test them by default, seed 000 s4.1).

``detection_ground_truth`` asks the same two questions of a detector's units (a record tied
to its object), with seed 001's test T (label and IoU) in place of "classified ``y``"; see
``UnitReliance``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from objrel.data.region import segmentation_mask
from objrel.studies.shortcut.scenes import SyntheticConfig, counterfactual_background, paste, read_split
from objrel.models import Classifier

# Backgrounds drawn per other class's type for the swaps; more draws find more
# swap-dependence (a prediction that flips on only some backgrounds of a type).
DEFAULT_DRAWS = 1
# Images per forward pass when predicting counterfactuals.
BATCH = 256


def is_reliant(correct: bool, swap_dependent: bool | None, background_sufficient: bool | None) -> bool | None:
    """The ground truth's verdict for an inference or a detection unit: reliant on the background when the
    swaps change it or the background alone gives it (see the module docstring); None when it is wrong."""
    if not correct:
        return None
    return bool(swap_dependent or background_sufficient)


@dataclass(frozen=True)
class Reliance:
    """Ground truth of one inference.

    sample_id:   the engine's sample id (the COCO image id, as a string).
    labels:      true class indices; predicted: the model's predicted labels on the scene.
    correct:     the inference is correct (only then are the facts below defined).
    swaps / swap_changes: counterfactual swaps made, and how many changed the prediction.
    background_label: the predicted labels on the background alone.
    swap_dependent, background_sufficient, reliant: see the module docstring.
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

    @property
    def reliant(self) -> bool | None:
        """True when the model relies on the background for this scene; None when its inference is wrong."""
        return is_reliant(self.correct, self.swap_dependent, self.background_sufficient)

    def to_dict(self) -> dict:
        """The reliance as a JSON-ready dict, with ``reliant``."""
        d = asdict(self)
        d["labels"], d["predicted"], d["background_label"] = (list(self.labels), list(self.predicted),
                                                              list(self.background_label))
        d["reliant"] = self.reliant
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Reliance":
        """A reliance from a ``to_dict`` dict (``reliant`` is recomputed)."""
        keep = {k: v for k, v in d.items() if k != "reliant"}
        for k in ("labels", "predicted", "background_label"):
            keep[k] = tuple(keep.get(k, ()))
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


def _queue_counterfactuals(cfg: SyntheticConfig, root: Path, rec: dict, img: np.ndarray, segmentations,
                           labels: tuple[int, ...], draws: int, batch: list[np.ndarray]
                           ) -> tuple[list[int], int, list[int]]:
    """Append a scene's counterfactuals to ``batch``: for each other background type and draw, the object
    (the union of ``segmentations``) pasted on that background, and that background alone; then the
    scene's own background alone.  Returns their positions: ``(swap idx, own-bg idx, other-bg idx)``."""
    mask = np.zeros(img.shape[:2], dtype=bool)
    for seg in segmentations:
        mask |= segmentation_mask(seg, img.shape[1], img.shape[0])
    split, index = rec["scene"]["split"], rec["scene"]["index"]
    swap_idx, alone_idx = [], []
    for t in _swap_types(cfg, labels, rec["bg_type"]):
        for d in range(draws):
            bg = counterfactual_background(cfg, split, index, t, d)
            swap_idx.append(len(batch))
            batch.append(paste(img, mask, bg))
            alone_idx.append(len(batch))
            batch.append(bg)
    own = len(batch)
    batch.append(np.asarray(Image.open(root / rec["background_file"]).convert("RGB")))
    return swap_idx, own, alone_idx


def ground_truth(clf: Classifier, annotation, draws: int = DEFAULT_DRAWS,
                 sample_ids=None) -> dict[str, Reliance]:
    """Reliance of ``clf``'s inference on every scene of a written synthetic split.

    annotation: the split's COCO JSON (``write_split``); sample_ids: restrict to these ids.
    Returns ``{sample_id: Reliance}``.  Costs ``1 + 2 * (K - 1) * draws + 1`` forward passes
    per correct inference (``K`` classes).
    """
    if draws < 1:
        raise ValueError(f"draws must be >= 1 background per type, got {draws}")
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

    # Every counterfactual of every correct inference, then one batched pass.
    batch: list[np.ndarray] = []
    plan: list[tuple[int, list[int], int, list[int]]] = []   # (record, swap idx, own-bg idx, other-bg idx)
    for n, (rec, img, y, p) in enumerate(zip(recs, images, truths, preds)):
        correct = set(p) == set(y) if cfg.multi_label else p[0] in y
        if not correct:
            continue
        swap_idx, own, alone_idx = _queue_counterfactuals(
            cfg, root, rec, img, [a["segmentation"] for a in anns[rec["id"]]], y, draws, batch)
        plan.append((n, swap_idx, own, alone_idx))
    cf = _predicted_sets(clf, batch) if batch else []

    out: dict[str, Reliance] = {}
    planned = {n: (s, o, a) for n, s, o, a in plan}
    for n, (rec, y, p) in enumerate(zip(recs, truths, preds)):
        sid = str(rec["id"])
        if n not in planned:
            out[sid] = Reliance(sid, y, p, False)
            continue
        swap_idx, own, alone_idx = planned[n]
        changes = sum(set(cf[i]) != set(p) for i in swap_idx)
        alone = cf[own]
        if cfg.multi_label:
            sufficient = any(c in alone and any(c not in cf[i] for i in alone_idx) for c in p)
        else:
            sufficient = alone == p and any(cf[i] != p for i in alone_idx)
        out[sid] = Reliance(sid, y, p, True, len(swap_idx), int(changes), tuple(alone),
                            changes > 0, bool(sufficient))
    return out


def reliance_share(truth: dict[str, Reliance]) -> dict:
    """Counts over the correct inferences: how many are reliant, swap-dependent, background-sufficient."""
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
# object, or an object no record is tied to) is defined with seed 001's test T in place of "classified y":
#
# * the unit is *correct* when T = 1 on the source (a record of the object's label with IoU >= the run's
#   threshold): only then are the facts below defined, as only then can MR-1 be checked;
# * **swap-dependent**: pasting the image's objects (exact masks) on a fresh background of every other class's
#   type (``draws`` per type), T is 0 on some swap: the record at the object lost its label or its box;
# * **background-sufficient**: T is 1 on the scene's own background alone (no object: a record of the label
#   where the object was) *and* 0 on some other type's background alone;
# * **reliant** when either holds.  As for classifiers, this asks the detector directly: it never reads the
#   detector's own rule (``planted.PlantedDetector`` documents one; tests check the two agree).


@dataclass(frozen=True)
class UnitReliance:
    """Ground truth of one detection unit.

    unit_id:   the engine's unit id (``"<image id>/r<j>"`` or ``"<image id>/o<k>"``); image_id its image.
    label:     the associated object's category; t_source: test T on the source (0 or 1).
    correct:   T = 1 on the source (only then are the facts below defined).
    swaps / swap_changes: counterfactual swaps made, and on how many T became 0; swap_label_changes: of
               those, how many kept a record on the object under another label.
    background_t: T on the scene's own background alone.
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
        d["correct"], d["reliant"] = self.correct, self.reliant
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "UnitReliance":
        """A unit's reliance from a ``to_dict`` dict (``correct`` and ``reliant`` are recomputed)."""
        return cls(**{k: v for k, v in d.items() if k not in ("correct", "reliant")})


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
    from objrel.relations.detect import DEFAULT_IOU_THRESHOLD, iou_test
    from objrel.store.detection_records import make_unit_id

    if draws < 1:
        raise ValueError(f"draws must be >= 1 background per type, got {draws}")
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

    batch_images: list[np.ndarray] = []
    plans = []      # (sample, units, swap idx, own-bg idx, other-bg idx)
    for s, img, dets in zip(samples, images, sources):
        objects = [o for o in s.objects if vocab is None or o.category in vocab]
        units = [(u, iou_test(u.source, u.label, thr)) for u in detection_units(dets, objects)]
        swap_idx: list[int] = []
        alone_idx: list[int] = []
        own = None
        if any(t for _, t in units):
            swap_idx, own, alone_idx = _queue_counterfactuals(
                cfg, root, recs[s.sample_id], img, [o.segmentation for o in s.objects],
                tuple(sorted(labels_of.get(s.sample_id, ()))), draws, batch_images)
        plans.append((s, objects, units, swap_idx, own, alone_idx))
    cf = _detect_all(detector, batch_images, batch)

    out: dict[str, UnitReliance] = {}
    for s, objects, units, swap_idx, own, alone_idx in plans:
        for u, t in units:
            uid = make_unit_id(s.sample_id, u.key)
            if not t:
                out[uid] = UnitReliance(uid, s.sample_id, u.label, 0)
                continue
            box = objects[u.object].box
            matches = [match_record(cf[i], box) for i in swap_idx]
            lost = [m for m in matches if not iou_test(m, u.label, thr)]
            alone_t = [iou_test(match_record(cf[i], box), u.label, thr) for i in alone_idx]
            own_t = iou_test(match_record(cf[own], box), u.label, thr)
            out[uid] = UnitReliance(uid, s.sample_id, u.label, 1, len(matches), len(lost),
                                    sum(m.found and m.label != u.label for m in lost), own_t, bool(lost),
                                    bool(own_t and any(v == 0 for v in alone_t)))
    return out


def _detect_all(detector, images: list[np.ndarray], batch: int) -> list:
    out: list = []
    for i in range(0, len(images), batch):
        out += detector.detect(images[i : i + batch])
    return out

