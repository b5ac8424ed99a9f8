"""A synthetic benchmark with a planted confusion and a planted bias (DeepInspect s3.2-3.3).

Seven classes of 32x32 images drawn with numpy; every image is a pure function of
(seed, split, index), so an image is a recipe, not pixels:

=========  ================================================================
disc       a red disc on a dark noisy background
blush      a red disc too, a little redder on average; the hues overlap, so
           no model can tell the two apart reliably: **the planted confusion**
           (disc, blush)
tagged     a disc, blush, square, triangle or cross with a grey tag in one
           corner; a faint tag is easy to miss, so the model takes tagged
           images for their object's class now and then
stripes    a striped texture over the whole image, like nothing else
square     a blue square
triangle   a yellow triangle
cross      a green cross
=========  ================================================================

**The planted bias** is (tagged, stripes): in the presence of any third object class c
the model treats the two very differently: c's images are inside the tagged class and
nothing like stripes (DeepInspect Eq. 3: c is near one of the pair and far from the
other).  The confusion pair plants a bias of its own (DeepInspect s5's Eskimo dog /
rapeseed / husky example: every pair (disc, x) is biased with respect to blush), but
from one third class per pair; the planted bias pair gets it from all five.

In the *ground truth* (the model's errors, s4.2.2) the disc/blush confusion is so
strong (type1 confusion about 0.35, against 0.05-0.15 for tagged and each object) that
the pairs (disc, x) and (blush, x) usually have the largest avg_cd: the errors show the
tagged/stripes disparity less than the neurons do.  ``run_planted`` reports both ranks.

A small CNN (3 conv + 2 linear layers, 8 + 16 + 32 + 32 + 7 = 95 neurons) is trained on
CPU in a few seconds with fixed seeds; ``run_planted`` inspects it on a held-out split.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from objrel.models import Preprocess, TorchClassifier, torch_threads
from objrel.studies.deepinspect.constants import ACTIVATION_THRESHOLD
from objrel.studies.deepinspect.pipeline import Inspector
from objrel.studies.deepinspect.planted_ranks import BIAS_PAIR, CONFUSION_PAIR

CLASSES = ("disc", "blush", "tagged", "stripes", "square", "triangle", "cross")
SPLITS = {"train": 1, "test": 2}
SIZE = 32

# Red channel of the two discs (uniform ranges): the overlap makes the planted confusion.
# Widen the overlap and the pair gets harder to separate; pull the ranges apart and the
# confusion disappears.
DISC_RED = (140, 220)
BLUSH_RED = (170, 250)
# The "tagged" class: any other object with a small grey tag in a corner.  A faint tag is
# easy to miss, so tagged images are taken for their object's class now and then; raise the
# lower end and the planted bias fades from the ground truth (the model stops erring).
TAG_GREY = (40, 220)
TAG_SIDE = 6
TAGGED_KINDS = ("disc", "blush", "square", "triangle", "cross")
# Arm width of the cross over its span.
CROSS_ARM = 0.25


@dataclass(frozen=True)
class PlantedSpec:
    """How big the benchmark is.  Every field changes the images or the model, so it is recorded.

    seed:             one seed for the images (numpy Generator per image) and for torch.
    train_per_class, test_per_class: images per class in each split.
    epochs, batch_size, learning_rate: Adam training of the small CNN.
    """

    seed: int = 0
    train_per_class: int = 300
    test_per_class: int = 150
    epochs: int = 12
    batch_size: int = 64
    learning_rate: float = 3e-3

    def __post_init__(self):
        for name in ("train_per_class", "test_per_class", "epochs", "batch_size"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")

    def to_dict(self) -> dict:
        """The spec as a dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "PlantedSpec":
        """A spec from a dict (keys that are not fields are left out)."""
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def _grid():
    yy, xx = np.mgrid[0:SIZE, 0:SIZE]
    return yy.astype(np.float32), xx.astype(np.float32)


_YY, _XX = _grid()


def _background(rng) -> np.ndarray:
    img = rng.integers(0, 40, size=(SIZE, SIZE, 3)).astype(np.float32)
    return img


def _disc_mask(rng, scale: float = 1.0, box=(0, 0, SIZE, SIZE)):
    x0, y0, x1, y1 = box
    r = rng.uniform(7, 10) * scale
    cx = rng.uniform(x0 + r, x1 - r)
    cy = rng.uniform(y0 + r, y1 - r)
    return (_XX - cx) ** 2 + (_YY - cy) ** 2 <= r * r


def _square_mask(rng, scale: float = 1.0, box=(0, 0, SIZE, SIZE)):
    x0, y0, x1, y1 = box
    s = rng.uniform(12, 18) * scale
    cx = rng.uniform(x0 + s / 2, x1 - s / 2)
    cy = rng.uniform(y0 + s / 2, y1 - s / 2)
    return (np.abs(_XX - cx) <= s / 2) & (np.abs(_YY - cy) <= s / 2)


def _triangle_mask(rng, scale: float = 1.0, box=(0, 0, SIZE, SIZE)):
    x0, y0, x1, y1 = box
    h = rng.uniform(14, 20) * scale
    cx = rng.uniform(x0 + h / 2, x1 - h / 2)
    top = rng.uniform(y0, y1 - h)
    rel = (_YY - top) / h                                  # 0 at the apex, 1 at the base
    return (rel >= 0) & (rel <= 1) & (np.abs(_XX - cx) <= rel * h / 2)


def _cross_mask(rng, scale: float = 1.0, box=(0, 0, SIZE, SIZE)):
    x0, y0, x1, y1 = box
    s = rng.uniform(14, 20) * scale
    w = s * CROSS_ARM
    cx = rng.uniform(x0 + s / 2, x1 - s / 2)
    cy = rng.uniform(y0 + s / 2, y1 - s / 2)
    dx, dy = np.abs(_XX - cx), np.abs(_YY - cy)
    return ((dx <= s / 2) & (dy <= w / 2)) | ((dy <= s / 2) & (dx <= w / 2))


def _paint(img, mask, rgb) -> None:
    img[mask] = np.asarray(rgb, dtype=np.float32)


def _disc_rgb(rng, red_range):
    return (rng.uniform(*red_range), rng.uniform(30, 60), rng.uniform(30, 60))


def _shape(img, rng, kind: str, scale: float = 1.0, box=(0, 0, SIZE, SIZE)) -> None:
    if kind == "disc":
        _paint(img, _disc_mask(rng, scale, box), _disc_rgb(rng, DISC_RED))
    elif kind == "blush":
        _paint(img, _disc_mask(rng, scale, box), _disc_rgb(rng, BLUSH_RED))
    elif kind == "square":
        _paint(img, _square_mask(rng, scale, box), (rng.uniform(20, 60), rng.uniform(60, 110), rng.uniform(180, 240)))
    elif kind == "triangle":
        mask = _triangle_mask(rng, scale, box)          # the mask draws from rng before the colour
        _paint(img, mask, (rng.uniform(190, 240), rng.uniform(180, 230), rng.uniform(20, 60)))
    elif kind == "cross":
        _paint(img, _cross_mask(rng, scale, box), (rng.uniform(20, 60), rng.uniform(170, 230), rng.uniform(20, 60)))
    else:  # pragma: no cover - internal
        raise ValueError(f"unknown planted shape {kind!r}; expected one of {CLASSES}")


def render(spec: PlantedSpec, split: str, index: int) -> tuple[np.ndarray, int]:
    """Image ``index`` of ``split``: ``((32, 32, 3) uint8 RGB, class index)``; class = index mod 7."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
    if index < 0:
        raise ValueError(f"image index must be >= 0, got {index}")
    label = index % len(CLASSES)
    rng = np.random.default_rng([spec.seed, SPLITS[split], index])
    img = _background(rng)
    name = CLASSES[label]
    if name == "tagged":
        _shape(img, rng, TAGGED_KINDS[int(rng.integers(0, len(TAGGED_KINDS)))])
        y0 = 0 if rng.random() < 0.5 else SIZE - TAG_SIDE
        x0 = 0 if rng.random() < 0.5 else SIZE - TAG_SIDE
        img[y0:y0 + TAG_SIDE, x0:x0 + TAG_SIDE] = rng.uniform(*TAG_GREY)
    elif name != "stripes":
        _shape(img, rng, name)
    else:
        period = int(rng.integers(3, 6))
        phase = rng.uniform(0, period)
        coord = _XX if rng.random() < 0.5 else _YY
        on = ((coord + phase) % period) < period / 2
        _paint(img, on, (rng.uniform(170, 230), rng.uniform(60, 110), rng.uniform(190, 240)))
    return np.clip(np.rint(img), 0, 255).astype(np.uint8), label


def split_size(spec: PlantedSpec, split: str) -> int:
    """How many images the ``train`` or ``test`` split holds over all classes."""
    per = spec.train_per_class if split == "train" else spec.test_per_class
    return per * len(CLASSES)


def tiny_cnn(n_classes: int = len(CLASSES)) -> nn.Sequential:
    """3 conv + 2 linear layers: 8 + 16 + 32 + 32 + n_classes neurons; (N, 3, 32, 32) -> logits."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, n_classes),
    )


# Torch threads while training and inspecting the small CNN.  Its layers are far too small
# to gain from a thread pool; on a busy 2-core machine two threads made an epoch 15x slower.
TRAIN_THREADS = 1


def planted_preprocess():
    """The preprocessing of the planted benchmark's small model."""
    return Preprocess(size=SIZE, mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))


def train_planted_model(spec: PlantedSpec, log=None):
    """Train the small CNN on the train split; returns a ``TorchClassifier`` (CPU, eval mode)."""
    with torch_threads(TRAIN_THREADS):
        return _train(spec, log)


def _train(spec: PlantedSpec, log=None):
    torch.manual_seed(spec.seed)
    pre = planted_preprocess()
    n = split_size(spec, "train")
    images, labels = zip(*(render(spec, "train", i) for i in range(n)))
    x = pre(list(images))
    y = torch.as_tensor(labels, dtype=torch.long)
    module = tiny_cnn()
    opt = torch.optim.Adam(module.parameters(), lr=spec.learning_rate)
    gen = torch.Generator().manual_seed(spec.seed)
    module.train()
    t0 = time.perf_counter()
    for epoch in range(spec.epochs):
        perm = torch.randperm(n, generator=gen)
        total = 0.0
        for i in range(0, n, spec.batch_size):
            idx = perm[i:i + spec.batch_size]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(module(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        if log:
            log(f"epoch {epoch + 1}/{spec.epochs}: loss {total / n:.3f} ({time.perf_counter() - t0:.1f} s)")
    module.eval()
    return TorchClassifier(module, list(CLASSES), pre, name="planted-tiny-cnn",
                           config={"planted": spec.to_dict()})


def split_batches(spec: PlantedSpec, split: str, batch_size: int):
    """A split as ``(images, truths, refs)`` batches: truths are 1-tuples of class indices."""
    n = split_size(spec, split)
    for start in range(0, n, batch_size):
        items = [render(spec, split, i) for i in range(start, min(n, start + batch_size))]
        yield ([im for im, _ in items], [(lab,) for _, lab in items],
               [f"{split}:{i}" for i in range(start, start + len(items))])


def example_image(spec: PlantedSpec, ref: str) -> np.ndarray:
    """Rebuild an example from its reference ``'split:index'``."""
    split, _, index = str(ref).partition(":")
    if split not in SPLITS or not index.isdigit():
        raise ValueError(f"planted image reference must look like 'test:12', got {ref!r}")
    return render(spec, split, int(index))[0]


def run_planted(spec: PlantedSpec | None = None, threshold: float = ACTIVATION_THRESHOLD, batch_size: int = 64,
                log=None):
    """Train, inspect the test split, and return the ``InspectResult`` (``result.planted`` names the pairs)."""
    spec = spec or PlantedSpec()
    t0 = time.perf_counter()
    with torch_threads(TRAIN_THREADS):
        clf = train_planted_model(spec, log=log)
        trained = time.perf_counter() - t0
        inspector = Inspector(clf, threshold=threshold)
        for images, truths, refs in split_batches(spec, "test", batch_size):
            inspector.add(images, truths, refs)
    return inspector.finish(
        source={"kind": "planted", "name": "planted benchmark", "spec": spec.to_dict()},
        planted={"confusion": list(CONFUSION_PAIR), "bias": list(BIAS_PAIR)},
        notes=(f"trained in {trained:.1f} s",),
        seconds=time.perf_counter() - t0,
    )


