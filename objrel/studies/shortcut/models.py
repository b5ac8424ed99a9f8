"""Small CNNs for the planted-shortcut benchmark: train, save as a state dict + JSON, load as an adapter.

Architecture choice: torchvision's smallest classifiers (mobilenet_v3_small,
shufflenet_v2_x0_5, squeezenet1_1) train at roughly 20-50 images/s on two CPU cores
at 64 x 64, and the full bench trains about twenty models; ``ShortcutCNN`` (four
3x3 conv blocks, global average pooling, ~25k parameters) trains at well over a
thousand images/s and reaches > 90% accuracy on unbiased scenes.  Any torchvision
architecture still works (``arch="torchvision:<name>"``): it is saved the same way
and loaded through ``objrel.models.load_classifier``.

Both load like any user model: the weights are a plain ``state_dict`` read with
``torch.load(weights_only=True)`` (``objrel.models.load_state_dict``), the JSON
beside it says how to rebuild the module, and the result is objrel's own
``TorchClassifier`` with ``Preprocess(size=64)``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from objrel.models import Preprocess, TorchClassifier, load_classifier, load_state_dict

ARCH = "shortcut-cnn"
# The model spec stored in the runs' configs: ``RunConfig(model=MODEL_SPEC, weights=<state dict>)``.
MODEL_SPEC = "py:objrel.studies.shortcut.models:factory"
# Inputs are scaled to [-2, 2]: (x - 0.5) / 0.25 per channel.
MEAN = (0.5, 0.5, 0.5)
STD = (0.25, 0.25, 0.25)
CONFIG_SUFFIX = ".json"


class ShortcutCNN(nn.Module):
    """A 5x5 stride-2 stem and three 3x3 conv-BN-ReLU blocks (widths w, 2w, 4w, 4w; 2x2 max-pool
    after the second and third), global average pooling, one linear layer.
    ``(N, 3, S, S)`` float -> ``(N, n_classes)`` logits."""

    def __init__(self, n_classes: int, width: int = 16):
        super().__init__()
        if n_classes < 2 or width < 1:
            raise ValueError(f"need n_classes >= 2 and width >= 1, got {n_classes} and {width}")

        def block(i: int, o: int, pool: bool, k: int = 3, stride: int = 1) -> list[nn.Module]:
            layers: list[nn.Module] = [nn.Conv2d(i, o, k, stride=stride, padding=k // 2, bias=False),
                                       nn.BatchNorm2d(o), nn.ReLU(inplace=True)]
            return layers + [nn.MaxPool2d(2)] if pool else layers

        w = width
        self.features = nn.Sequential(*block(3, w, False, k=5, stride=2), *block(w, 2 * w, True),
                                      *block(2 * w, 4 * w, True), *block(4 * w, 4 * w, False))
        self.head = nn.Linear(4 * w, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Class logits of a batch of images."""
        return self.head(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


@dataclass(frozen=True)
class TrainConfig:
    """How a model is trained.

    arch:       ``shortcut-cnn`` or ``torchvision:<name>``.  width: ShortcutCNN base width.
    epochs, batch_size, lr, weight_decay: Adam with a cosine schedule over all steps.
    flip:       random horizontal flips (every class's shape is left-right symmetric up to rotation).
    size:       network input side (the adapter's ``Preprocess(size)``).
    seed:       initialisation and batch order (``torch.Generator``).
    """

    arch: str = ARCH
    width: int = 16
    epochs: int = 12
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 1e-4
    flip: bool = True
    size: int = 64
    seed: int = 0

    def __post_init__(self):
        if self.arch != ARCH and not self.arch.startswith("torchvision:"):
            raise ValueError(f"arch must be {ARCH!r} or 'torchvision:<name>', got {self.arch!r}")
        if self.epochs < 0 or self.batch_size < 1 or self.lr <= 0:
            raise ValueError(f"need epochs >= 0, batch_size >= 1, lr > 0; got {self.epochs}, {self.batch_size}, "
                             f"{self.lr}")

    def to_dict(self) -> dict:
        """The training settings as a dict."""
        return asdict(self)


def preprocess_for(size: int = 64) -> Preprocess:
    """The preprocessing of the benchmark's models: stretch to ``size`` and normalise."""
    return Preprocess(size=size, resize="stretch", mean=MEAN, std=STD)


def build_module(arch: str, n_classes: int, width: int = 16) -> nn.Module:
    """An untrained module of ``arch`` (the benchmark's small CNN or a torchvision architecture)."""
    if arch == ARCH:
        return ShortcutCNN(n_classes, width)
    import torchvision.models as tvm

    return tvm.get_model(arch.split(":", 1)[1], weights=None, num_classes=n_classes)


def to_tensor(images, size: int = 64) -> torch.Tensor:
    """``(N, H, W, 3)`` uint8 (array or list) -> the adapter's normalised ``(N, 3, size, size)`` float."""
    pre = preprocess_for(size)
    chunks = [pre(list(images[i : i + 512])) for i in range(0, len(images), 512)]
    return torch.cat(chunks) if chunks else torch.zeros((0, 3, size, size))


def train(images, targets, cfg: TrainConfig, n_classes: int, task: str = "single",
          init: dict | None = None) -> tuple[nn.Module, dict]:
    """Train a module from scratch (or fine-tune from the state dict ``init``).

    images:  ``(N, H, W, 3)`` uint8.
    targets: single-label: ``(N,)`` int class indices, or ``(N, K)`` float rows summing to 1
             (soft targets, e.g. the uniform row for an object-removed mutant);
             multi-label: ``(N, K)`` float 0/1.
    Returns the module in eval mode and a log ``{"seconds", "final_loss", "train_accuracy"}``.
    """
    if task not in ("single", "multi"):
        raise ValueError(f"task must be 'single' or 'multi', got {task!r}")
    x = to_tensor(images, cfg.size)
    y = torch.as_tensor(np.asarray(targets))
    if len(x) != len(y):
        raise ValueError(f"{len(x)} images but {len(y)} targets")
    soft = y.dim() == 2
    if task == "single" and soft and y.shape[1] != n_classes:
        raise ValueError(f"soft targets must be (N, {n_classes}), got {tuple(y.shape)}")
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    module = build_module(cfg.arch, n_classes, cfg.width)
    if init is not None:
        module.load_state_dict(init)
    # channels_last roughly doubles CPU training speed of small convolutions here
    module = module.to(memory_format=torch.channels_last)
    x = x.contiguous(memory_format=torch.channels_last)
    opt = torch.optim.Adam(module.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    steps = max(1, cfg.epochs * ((len(x) + cfg.batch_size - 1) // cfg.batch_size))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    t0 = time.perf_counter()
    loss_val = float("nan")
    module.train()
    for _ in range(cfg.epochs):
        order = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), cfg.batch_size):
            idx = order[i : i + cfg.batch_size]
            if len(idx) < 2:
                continue  # BatchNorm needs two samples
            xb, yb = x[idx], y[idx]
            if cfg.flip:
                flip = torch.rand(len(idx), generator=gen) < 0.5
                xb = torch.where(flip[:, None, None, None], xb.flip(3), xb)
            logits = module(xb)
            if task == "multi":
                loss = F.binary_cross_entropy_with_logits(logits, yb.float())
            else:
                loss = F.cross_entropy(logits, yb.float() if soft else yb.long())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_val = float(loss.detach())
    module = module.to(memory_format=torch.contiguous_format).eval()
    x = x.contiguous()
    with torch.inference_mode():
        out = torch.cat([module(x[i : i + 512]) for i in range(0, len(x), 512)]) if len(x) else torch.zeros(0)
    if task == "multi":
        acc = float(((out.sigmoid() >= 0.5) == (y >= 0.5)).all(1).float().mean()) if len(x) else float("nan")
    else:
        hard = y.argmax(1) if soft else y
        acc = float((out.argmax(1) == hard).float().mean()) if len(x) else float("nan")
    return module, {"seconds": time.perf_counter() - t0, "final_loss": loss_val, "train_accuracy": acc}


def save_model(module: nn.Module, path, class_names, cfg: TrainConfig, task: str = "single",
               extra: dict | None = None) -> Path:
    """``torch.save(module.state_dict(), path)`` and the JSON that rebuilds it at ``path.with_suffix('.json')``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(module.state_dict(), path)
    meta = {"arch": cfg.arch, "width": cfg.width, "class_names": list(class_names), "task": task,
            "preprocess": preprocess_for(cfg.size).to_dict(), "train": cfg.to_dict(), **(extra or {})}
    path.with_suffix(CONFIG_SUFFIX).write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return path


def read_config(path) -> dict:
    """The JSON config ``save_model`` wrote beside the state dict at ``path``; FileNotFoundError without one."""
    cfg_path = Path(path).with_suffix(CONFIG_SUFFIX)
    if not cfg_path.is_file():
        raise FileNotFoundError(f"model config {cfg_path} is missing; expected the JSON save_model writes beside "
                                f"the state dict")
    return json.loads(cfg_path.read_text(encoding="utf-8"))


def load_model(path, name: str | None = None) -> TorchClassifier:
    """The classifier adapter of a saved model (weights read with ``weights_only=True``)."""
    meta = read_config(path)
    pre = Preprocess(size=int(meta["preprocess"]["size"]), resize=meta["preprocess"]["resize"],
                     mean=tuple(meta["preprocess"]["mean"]), std=tuple(meta["preprocess"]["std"]))
    names = meta["class_names"]
    if meta["arch"].startswith("torchvision:"):
        clf = load_classifier(meta["arch"], weights=str(path), task=meta["task"], preprocess=pre, class_names=names)
        if name:
            clf.name = name
        return clf
    if meta["arch"] != ARCH:
        raise ValueError(f"{path}: unknown arch {meta['arch']!r}; expected {ARCH!r} or 'torchvision:<name>'")
    module = ShortcutCNN(len(names), int(meta["width"]))
    module.load_state_dict(load_state_dict(path), strict=True)
    return TorchClassifier(module, names, pre, task=meta["task"], name=name or f"{ARCH}:{Path(path).stem}",
                           config={"weights": str(path), "family": ARCH})


def factory(weights: str | None = None) -> TorchClassifier:
    """``py:objrel.studies.shortcut.models:factory``: the adapter of the saved model ``weights``.

    Runs of the benchmark record ``model=MODEL_SPEC`` and ``weights=<file>`` so the app can
    reload their model; a loader that calls the factory without the weights gets a
    ``ConfigError`` saying so, never a different model.
    """
    if not weights:
        from objrel.errors import ConfigError

        raise ConfigError(f"{MODEL_SPEC} needs weights=<state dict saved by "
                          "objrel.studies.shortcut.models.save_model>; got none")
    return load_model(weights)


def module_classifier(module: nn.Module, class_names, task: str = "single", size: int = 64,
                      name: str = ARCH) -> TorchClassifier:
    """Wrap an in-memory module with the same adapter ``load_model`` builds."""
    return TorchClassifier(module, class_names, preprocess_for(size), task=task, name=name,
                           config={"family": ARCH})
