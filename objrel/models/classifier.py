"""The classifier adapter protocol and its two implementations.

``predict(images) -> probabilities``: ``images`` is a list of ``(H, W, 3)`` uint8
RGB arrays (sizes may differ); the result is a float ``(N, C)`` array in [0, 1]:
softmax rows summing to 1 for ``task='single'``, independent sigmoids for
``task='multi'`` (a label is predicted when ``p >= threshold``).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from objrel.constants import MULTI_LABEL_THRESHOLD
from objrel.relations.classify import TASKS
from objrel.models.preprocess import Preprocess
from objrel.models.inputs import check_rgb_batch


class Classifier:
    """Base adapter.  Subclasses implement ``_probabilities``."""

    def __init__(self, name: str, class_names: Sequence[str], task: str = "single",
                 threshold: float = MULTI_LABEL_THRESHOLD, config: dict | None = None):
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"multi-label threshold must be in (0, 1), got {threshold}")
        self.name = name
        self.class_names = list(class_names)
        self.task = task
        self.threshold = float(threshold)
        self.config = dict(config or {})

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def predict(self, images) -> np.ndarray:
        if len(images) == 0:
            return np.zeros((0, self.num_classes), dtype=np.float32)
        check_rgb_batch(images, "predict")
        probs = np.asarray(self._probabilities(images), dtype=np.float32)
        if probs.shape != (len(images), self.num_classes):
            raise ValueError(
                f"model {self.name} returned shape {probs.shape}, expected ({len(images)}, {self.num_classes})"
            )
        return probs

    def _probabilities(self, images) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:
        return {"name": self.name, "task": self.task, "threshold": self.threshold,
                "num_classes": self.num_classes, **self.config}


class TorchClassifier(Classifier):
    """Wraps an ``nn.Module`` that maps ``(N, 3, S, S)`` float tensors to logits ``(N, C)``.

    ``outputs='logits'`` (default) applies softmax (single) or sigmoid (multi);
    ``outputs='probabilities'`` uses the module's output as is.
    """

    def __init__(self, module: torch.nn.Module, class_names, preprocess: Preprocess | None = None,
                 task: str = "single", threshold: float = MULTI_LABEL_THRESHOLD, name: str = "torch-model",
                 outputs: str = "logits", device: str = "cpu", config: dict | None = None):
        if outputs not in ("logits", "probabilities"):
            raise ValueError(f"outputs must be 'logits' or 'probabilities', got {outputs!r}")
        self.preprocess = preprocess or Preprocess()
        super().__init__(name, class_names, task, threshold,
                         {**(config or {}), "preprocess": self.preprocess.to_dict(), "outputs": outputs})
        self.module = module.eval().to(device)
        self.outputs = outputs
        self.device = device

    def _probabilities(self, images) -> np.ndarray:
        x = self.preprocess(images).to(self.device)
        with torch.inference_mode():
            out = self.module(x)
            if self.outputs == "logits":
                out = out.softmax(dim=1) if self.task == "single" else out.sigmoid()
        return out.float().cpu().numpy()


class CallableClassifier(Classifier):
    """Any Python function ``fn(list of (H, W, 3) uint8) -> (N, C) probabilities``."""

    def __init__(self, fn: Callable, class_names, task: str = "single",
                 threshold: float = MULTI_LABEL_THRESHOLD, name: str | None = None):
        super().__init__(name or getattr(fn, "__name__", "callable"), class_names, task, threshold,
                         {"callable": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"})
        self.fn = fn

    def _probabilities(self, images) -> np.ndarray:
        return self.fn(images)
