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
        if not self.correct:
            return None
        return bool(self.swap_dependent or self.background_sufficient)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["labels"], d["predicted"], d["background_label"] = (list(self.labels), list(self.predicted),
                                                              list(self.background_label))
        d["reliant"] = self.reliant
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Reliance":
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
        mask = np.zeros(img.shape[:2], dtype=bool)
        for a in anns[rec["id"]]:
            mask |= segmentation_mask(a["segmentation"], img.shape[1], img.shape[0])
        split, index = rec["scene"]["split"], rec["scene"]["index"]
        swap_idx, alone_idx = [], []
        for t in _swap_types(cfg, y, rec["bg_type"]):
            for d in range(draws):
                bg = counterfactual_background(cfg, split, index, t, d)
                swap_idx.append(len(batch))
                batch.append(paste(img, mask, bg))
                alone_idx.append(len(batch))
                batch.append(bg)
        own = len(batch)
        batch.append(np.asarray(Image.open(root / rec["background_file"]).convert("RGB")))
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
            sufficient = any(l in alone and any(l not in cf[i] for i in alone_idx) for l in p)
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
