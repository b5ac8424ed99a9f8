"""Neuron activation probability per predicted class (DeepInspect s3.1), through forward hooks.

A *neuron* is one output channel of a convolutional layer or one output unit of a linear
layer.  For one input, a layer's whole output is min-max scaled to [0, 1] (over every
channel and position of that input); a channel's value is the mean of its scaled map,
and the neuron is *active* when that value is strictly greater than the threshold Th
(DeepInspect's published coverage code scales and averages the same way).

The counts are accumulated batch by batch: a hook reduces each layer's output to an
``(N, neurons)`` bool array inside the forward pass, and the batch's activity is folded
into an ``(neurons, classes)`` integer matrix before the next batch.  Nothing per image
is kept, so memory does not grow with the number of images.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from objrel.studies.deepinspect.constants import ACTIVATION_THRESHOLD

# Layer types whose outputs are neurons (DeepInspect s3.1 hooks convolutions; the issue adds linear layers).
LAYER_TYPES = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Linear)


def check_threshold(threshold: float) -> float:
    """Th must lie in [0, 1): a scaled value is in [0, 1] and the test is strict."""
    th = float(threshold)
    if not 0.0 <= th < 1.0:
        raise ValueError(f"activation threshold Th must be in [0, 1) (scaled outputs lie in [0, 1] and a neuron "
                         f"is active when strictly above Th), got {threshold!r}")
    return th


def layer_activity(output: torch.Tensor, threshold: float = ACTIVATION_THRESHOLD,
                   channels_last: bool = False) -> torch.Tensor:
    """Which neurons of one layer each input activates.

    output:        a conv output ``(N, C, *spatial)`` or a linear output ``(N, F)``;
                   with ``channels_last=True`` a linear output ``(N, *, F)`` (tokens in the
                   middle), whose feature axis is moved to position 1 first.
    threshold:     Th in [0, 1).
    Returns ``(N, C)`` bool: ``mean(scaled channel) > Th``, where each input's whole layer
    output is scaled by its own min and max; an input whose layer output is constant
    activates nothing.
    """
    th = check_threshold(threshold)
    if output.ndim < 2:
        raise ValueError(f"layer output must be (N, C, ...) or (N, F), got shape {tuple(output.shape)}")
    x = output.detach().float()
    if channels_last and x.ndim > 2:
        x = x.movedim(-1, 1)
    n, c = x.shape[0], x.shape[1]
    flat = x.reshape(n, c, -1)
    channel_mean = flat.mean(dim=2)                                  # (N, C)
    lo = flat.reshape(n, -1).amin(dim=1, keepdim=True)               # (N, 1)
    hi = flat.reshape(n, -1).amax(dim=1, keepdim=True)
    span = hi - lo
    scaled = torch.where(span > 0, (channel_mean - lo) / torch.where(span > 0, span, torch.ones_like(span)),
                         torch.zeros_like(channel_mean))
    return scaled > th


def hooked_layers(module: nn.Module, layers=None) -> list[tuple[str, nn.Module, int]]:
    """``(name, layer, neurons)`` for every conv / linear layer of ``module`` in definition order.

    layers: optional iterable of layer names (as in ``module.named_modules()``) to keep.
    """
    wanted = None if layers is None else set(layers)
    found = []
    for name, m in module.named_modules():
        if not isinstance(m, LAYER_TYPES):
            continue
        if wanted is not None and name not in wanted:
            continue
        size = m.out_features if isinstance(m, nn.Linear) else m.out_channels
        found.append((name, m, int(size)))
    if wanted is not None:
        missing = wanted - {n for n, _, _ in found}
        if missing:
            names = [n for n, m in module.named_modules() if isinstance(m, LAYER_TYPES)]
            raise ValueError(f"layers {sorted(missing)} are not conv/linear layers of the model; "
                             f"expected names from {names[:20]}{' ...' if len(names) > 20 else ''}")
    if not found:
        raise ValueError(f"{type(module).__name__} has no convolutional or linear layer to hook; "
                         f"expected at least one of {[t.__name__ for t in LAYER_TYPES]}")
    return found


class ActivityHooks:
    """Context manager: forward hooks that record each layer's active neurons per input.

    After a forward pass of N inputs, ``take()`` returns the ``(N, neurons)`` bool array
    of all hooked layers side by side (layer order of ``layers``) and clears the record.
    A layer that runs twice in one pass (a shared block) counts a neuron active when it
    was active in either call.
    """

    def __init__(self, module: nn.Module, threshold: float = ACTIVATION_THRESHOLD, layers=None):
        self.threshold = check_threshold(threshold)
        self.layers = hooked_layers(module, layers)
        self._handles: list = []
        self._record: dict[int, torch.Tensor] = {}

    @property
    def names(self) -> tuple[str, ...]:
        """The hooked layers' names."""
        return tuple(n for n, _, _ in self.layers)

    @property
    def sizes(self) -> tuple[int, ...]:
        """The hooked layers' neuron counts."""
        return tuple(s for _, _, s in self.layers)

    @property
    def n_neurons(self) -> int:
        """The neurons over all hooked layers."""
        return sum(self.sizes)

    def _hook(self, index: int, is_linear: bool):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            act = layer_activity(out, self.threshold, channels_last=is_linear).cpu()
            prev = self._record.get(index)
            self._record[index] = act if prev is None or prev.shape != act.shape else (prev | act)
        return hook

    def __enter__(self) -> "ActivityHooks":
        self._record.clear()
        for i, (_, m, _) in enumerate(self.layers):
            self._handles.append(m.register_forward_hook(self._hook(i, isinstance(m, nn.Linear))))
        return self

    def __exit__(self, *exc) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._record.clear()

    def take(self, n_inputs: int) -> np.ndarray:
        """The last pass's activity, ``(n_inputs, n_neurons)`` bool; raises if a layer did not run."""
        parts = []
        for i, (name, _, size) in enumerate(self.layers):
            act = self._record.get(i)
            if act is None:
                raise ValueError(f"layer {name!r} did not run in the forward pass; pass layers= to leave it out")
            if act.shape != (n_inputs, size):
                raise ValueError(f"layer {name!r} recorded activity of shape {tuple(act.shape)}, expected "
                                 f"({n_inputs}, {size})")
            parts.append(act.numpy())
        self._record.clear()
        return np.concatenate(parts, axis=1)


def predicted_members(probs: np.ndarray, task: str, multi_threshold: float) -> np.ndarray:
    """Classes each input is counted in: ``(N, C)`` probabilities -> ``(N, C)`` bool.

    single-label: the arg-max class (one per row); multi-label: every class with
    ``p >= multi_threshold`` (a row may be empty).
    """
    p = np.asarray(probs)
    if p.ndim != 2:
        raise ValueError(f"probabilities must be (N, C), got shape {p.shape}")
    if task == "single":
        out = np.zeros(p.shape, dtype=bool)
        if len(p):
            out[np.arange(len(p)), p.argmax(axis=1)] = True
        return out
    if task == "multi":
        return p >= multi_threshold
    raise ValueError(f"task must be 'single' or 'multi', got {task!r}")


@dataclass
class ActivationCounter:
    """Running counts behind the neuron activation probability matrix.

    counts[j, i]:    inputs predicted as class i that activated neuron j (int64).
    class_counts[i]: inputs predicted as class i.
    n_inputs:        inputs seen (multi-label inputs with no predicted class included).
    """

    n_neurons: int
    n_classes: int
    counts: np.ndarray = field(init=False)
    class_counts: np.ndarray = field(init=False)
    n_inputs: int = field(init=False, default=0)

    def __post_init__(self):
        self.counts = np.zeros((self.n_neurons, self.n_classes), dtype=np.int64)
        self.class_counts = np.zeros(self.n_classes, dtype=np.int64)

    def add(self, active: np.ndarray, members: np.ndarray) -> None:
        """Fold in one batch: ``active (N, neurons)`` bool, ``members (N, classes)`` bool."""
        active = np.asarray(active, dtype=bool)
        members = np.asarray(members, dtype=bool)
        if active.shape[1:] != (self.n_neurons,) or members.shape != (active.shape[0], self.n_classes):
            raise ValueError(f"expected active (N, {self.n_neurons}) and members (N, {self.n_classes}) with the "
                             f"same N, got {active.shape} and {members.shape}")
        self.n_inputs += active.shape[0]
        cols = np.flatnonzero(members.any(axis=0))
        if cols.size == 0:
            return
        # float32 products are exact here: every entry is a count of at most N inputs.
        block = active.T.astype(np.float32) @ members[:, cols].astype(np.float32)
        self.counts[:, cols] += np.rint(block).astype(np.int64)
        self.class_counts += members.sum(axis=0)

    def probabilities(self, classes=None) -> np.ndarray:
        """rho: ``(neurons, len(classes))`` float64, P(neuron j active | predicted class i) (DeepInspect s3.1).

        classes: indices of the columns wanted (default all); a class never predicted has
        no estimate and is refused.
        """
        idx = np.arange(self.n_classes) if classes is None else np.asarray(classes, dtype=int)
        empty = idx[self.class_counts[idx] == 0]
        if empty.size:
            raise ValueError(f"classes {empty.tolist()[:10]} were never predicted, so they have no activation "
                             f"column; expected classes with at least one prediction")
        return self.counts[:, idx] / self.class_counts[idx][None, :]
