"""The classifier adapter protocol and its two implementations.

``predict(images) -> probabilities``: ``images`` is a list of ``(H, W, 3)`` uint8
RGB arrays (sizes may differ); the result is a float ``(N, C)`` array in [0, 1]:
softmax rows summing to 1 for ``task='single'``, independent sigmoids for
``task='multi'`` (a label is predicted when ``p >= threshold``).

``predict`` is ``forward(prepare(images))``: ``prepare`` (decoded images -> the model's input batch:
resize, normalise) runs in the engine's mutant worker thread, ``forward`` (batch -> probabilities) in
the main thread, so preprocessing hides behind inference.
"""

from __future__ import annotations

import weakref
from typing import Callable, Sequence

import numpy as np
import torch

from objrel.constants import CPU_DEVICE, MULTI_LABEL_THRESHOLD, TORCH_RUNTIME
from objrel.constants import CLASSIFIER_TASKS
from objrel.models.devices import is_cpu
from objrel.models.preprocess import FillBasis, PaintedInput, Preprocess
from objrel.models.inputs import check_rgb_batch
from objrel.models.threads import configure_inference_threads


class Classifier:
    """Base adapter.  Subclasses implement ``_probabilities``."""

    # What runs the forward pass (``objrel.models.runtimes``), and what ``auto`` measured when it chose
    # (a ``RuntimeChoice``); both go into the run's model record.
    runtime = TORCH_RUNTIME
    runtime_choice = None

    def __init__(self, name: str, class_names: Sequence[str], task: str = "single",
                 threshold: float = MULTI_LABEL_THRESHOLD, config: dict | None = None):
        if task not in CLASSIFIER_TASKS:
            raise ValueError(f"task must be one of {CLASSIFIER_TASKS}, got {task!r}")
        if not 0.0 < threshold < 1.0:
            raise ValueError(f"multi-label threshold must be in (0, 1), got {threshold}")
        self.name = name
        self.class_names = list(class_names)
        self.task = task
        self.threshold = float(threshold)
        self.config = dict(config or {})

    @property
    def num_classes(self) -> int:
        """How many classes the model scores."""
        return len(self.class_names)

    def predict(self, images) -> np.ndarray:
        """``(N, C)`` float32 probabilities of a list of ``(H, W, 3)`` uint8 RGB images."""
        if len(images) == 0:
            return np.zeros((0, self.num_classes), dtype=np.float32)
        return self.forward(self.prepare(images))

    def prepare(self, images):
        """The model's input batch for ``images`` (checked); thread-safe, no model state.  Base: the list."""
        if len(images):
            check_rgb_batch(images, "predict")
        return list(images)

    # Whether ``prepare`` takes ``PaintedInput`` (one-colour fills mixed from ``fill_basis``) besides images.
    mixes_fills = False

    def fill_basis(self, image: np.ndarray, region: np.ndarray, prepared=None) -> FillBasis | None:
        """What ``prepare`` mixes the one-colour fills of ``region`` in ``image`` from (``PaintedInput``); None
        where the adapter's preprocessing is not a known linear resize (the engine then paints the mutants).
        ``prepared``: the image's row of a ``prepare`` batch, as ``prepare`` made it, when the caller has it
        (saves a resize)."""
        return None

    def input_copy(self, row):
        """A copy of one row of a ``prepare`` batch that ``fill_basis`` may read after the batch ran."""
        return np.array(row, copy=True)

    def input_copies(self, batch) -> list:
        """``input_copy`` of every row of a ``prepare`` batch (an adapter may copy them at once)."""
        return [self.input_copy(batch[i]) for i in range(len(batch))]

    def forward(self, batch) -> np.ndarray:
        """``(N, C)`` float32 probabilities of a batch made by ``prepare``."""
        n = len(batch)
        if n == 0:
            return np.zeros((0, self.num_classes), dtype=np.float32)
        probs = np.asarray(self._forward(batch), dtype=np.float32)
        if probs.shape != (n, self.num_classes):
            raise ValueError(f"model {self.name} returned shape {probs.shape}, expected ({n}, {self.num_classes})")
        return probs

    def _forward(self, batch) -> np.ndarray:
        return self._probabilities(batch)

    def _probabilities(self, images) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict:
        """The model's name, task, threshold, classes, configuration and runtime, as a dict."""
        out = {"name": self.name, "task": self.task, "threshold": self.threshold,
               "num_classes": self.num_classes, **self.config, "runtime": self.runtime}
        if self.runtime_choice is not None:
            out["runtime_choice"] = self.runtime_choice.to_dict()
        return out


# Compiled forms of modules (``torch.compile``), made once per process per module and reused by every
# adapter that wraps the same module.
_COMPILED: "weakref.WeakKeyDictionary[torch.nn.Module, Callable]" = weakref.WeakKeyDictionary()


def compiled(module: torch.nn.Module) -> Callable:
    """``torch.compile(module)``, compiled once per process and cached."""
    fn = _COMPILED.get(module)
    if fn is None:
        fn = _COMPILED[module] = torch.compile(module)
    return fn


class TorchClassifier(Classifier):
    """Wraps an ``nn.Module`` that maps ``(N, 3, S, S)`` float tensors to logits ``(N, C)``.

    ``outputs='logits'`` (default) applies softmax (single) or sigmoid (multi);
    ``outputs='probabilities'`` uses the module's output as is.
    ``channels_last`` (default True) runs module and inputs in the channels_last memory format
    (2-3x faster on CPU convolutions; same top-1); ``compile`` runs ``torch.compile(module)`` (opt-in:
    compiled once per process, the first batch pays the compile time); ``threads``: torch intra-op
    threads, set once per process (default ``INFERENCE_THREADS``).
    """

    def __init__(self, module: torch.nn.Module, class_names, preprocess: Preprocess | None = None,
                 task: str = "single", threshold: float = MULTI_LABEL_THRESHOLD, name: str = "torch-model",
                 outputs: str = "logits", device: str = CPU_DEVICE, config: dict | None = None,
                 channels_last: bool = True, compile: bool = False, threads: int | None = None):
        if outputs not in ("logits", "probabilities"):
            raise ValueError(f"outputs must be 'logits' or 'probabilities', got {outputs!r}")
        self.preprocess = preprocess or Preprocess()
        super().__init__(name, class_names, task, threshold,
                         {**(config or {}), "preprocess": self.preprocess.to_dict(), "outputs": outputs})
        self.channels_last = bool(channels_last)
        module = module.eval().to(device)
        self.module = module.to(memory_format=torch.channels_last) if self.channels_last else module
        self.outputs = outputs
        self.device = device
        self.threads = threads
        self.compile = False
        if compile:
            self.enable_compile()

    def enable_compile(self) -> None:
        """Run the module through ``torch.compile`` from now on (compiled on the next forward, once)."""
        self.compile = True

    def move_to(self, device: str) -> "TorchClassifier":
        """This adapter with its module on ``device`` (``cpu``, ``cuda``, ``cuda:N``) from now on; returns itself."""
        self.module.to(device)
        self.device = device
        return self

    @property
    def input_device(self) -> str:
        """Where ``prepare`` puts a batch: the module's device (an exported runtime takes it on the CPU)."""
        return self.device

    def _module_fn(self) -> Callable:
        return compiled(self.module) if self.compile else self.module

    @property
    def mixes_fills(self) -> bool:
        """Only this class's own ``prepare`` on a plain ``Preprocess`` (a linear resize): a subclass that
        prepares its own way, or another preprocessing, gets painted mutants."""
        return type(self).prepare is TorchClassifier.prepare and type(self.preprocess) is Preprocess

    def input_copy(self, row):
        """A copy of one row of a ``prepare`` batch, for ``fill_basis`` after the batch ran (a module may change
        its input in place): a numpy array laid as ``fill_basis`` reads it, ``(S, S, 3)`` from a channels_last
        batch, ``(3, S, S)`` from a planar one (no transposing copy either way; from a GPU,
        the one transfer back it needs anyway).  Not torch's ``clone``: on the CPU that is a torch operation,
        which woke torch's thread pool, whose threads then spun beside an exported runtime's (3 ms a row instead
        of 0.04 ms, measured in a run)."""
        if isinstance(row, torch.Tensor):
            row = row.detach()
            return np.array((row.permute(1, 2, 0) if self.channels_last else row).cpu().numpy(), dtype=np.float32,
                            order="C")
        return row.clone()

    def input_copies(self, batch) -> list:
        """``input_copy`` of every row of a ``prepare`` batch, in one copy (from a GPU, one transfer back instead of
        one per row, each of which waits for the device): the rows of one host array."""
        if not isinstance(batch, torch.Tensor) or type(self).input_copy is not TorchClassifier.input_copy:
            return super().input_copies(batch)     # a subclass's own input_copy, row by row
        batch = batch.detach()
        host = np.array((batch.permute(0, 2, 3, 1) if self.channels_last else batch).cpu().numpy(),
                        dtype=np.float32, order="C")
        return list(host)

    def fill_basis(self, image: np.ndarray, region: np.ndarray, prepared=None) -> FillBasis:
        """The pixels a fill operator reads, from ``image`` or from the batch row already prepared for it
        (a tensor row of ``prepare``'s batch, or its ``input_copy``), laid out as this adapter's batch rows are
        (planar without channels_last: each painted input is then mixed from whole planes)."""
        planar = not self.channels_last
        if isinstance(prepared, np.ndarray):
            prepared = np.ascontiguousarray(prepared, dtype=np.float32)
        elif prepared is not None:
            # read, not kept (the basis holds new arrays); a caller that runs the batch through the module
            # first passes a copy made before, since a module may change its input in place
            prepared = prepared.detach()
            prepared = np.ascontiguousarray((prepared if planar else prepared.permute(1, 2, 0)).cpu().numpy(),
                                            dtype=np.float32)
        return self.preprocess.fill_basis(image, region, prepared, planar=planar)

    def prepare(self, images) -> torch.Tensor:
        """``(N, 3, S, S)`` float32 tensor on the adapter's device (channels_last-strided by default).
        ``images``: ``(H, W, 3)`` uint8 arrays or ``PaintedInput`` from this adapter's ``fill_basis``."""
        if len(images):
            check_rgb_batch([im for im in images if not isinstance(im, PaintedInput)], "predict")
        x = self.preprocess(images, planar=not self.channels_last).to(self.input_device)
        return x.contiguous(memory_format=torch.channels_last) if self.channels_last else x.contiguous()

    def _forward(self, x: torch.Tensor) -> np.ndarray:
        configure_inference_threads(self.threads)
        with torch.inference_mode():
            out = self._module_fn()(x)
            if self.outputs == "logits":
                out = out.softmax(dim=1) if self.task == "single" else out.sigmoid()
        return out.float().cpu().numpy()

    def _probabilities(self, images) -> np.ndarray:
        return self._forward(self.prepare(images))

    def describe(self) -> dict:
        """The base record, plus the device where the forward pass ran when it is not the CPU."""
        out = super().describe()
        if not is_cpu(self.device):
            out["device"] = str(self.device)
        return out


class CallableClassifier(Classifier):
    """Any Python function ``fn(list of (H, W, 3) uint8) -> (N, C) probabilities``."""

    runtime = "python"

    def __init__(self, fn: Callable, class_names, task: str = "single",
                 threshold: float = MULTI_LABEL_THRESHOLD, name: str | None = None):
        super().__init__(name or getattr(fn, "__name__", "callable"), class_names, task, threshold,
                         {"callable": f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', '?')}"})
        self.fn = fn

    def _probabilities(self, images) -> np.ndarray:
        return self.fn(images)
