"""Where a classifier's forward pass runs: the CPU or a CUDA GPU, checked against this machine.

A GPU run keeps f32 arithmetic: torch's TF32 convolutions and matrix products (on by default for cuDNN on
Ampere and later) round inputs to 10 mantissa bits and move probabilities by ~1e-3, so ``use_device`` turns
them off for the process, as the runtimes force f32 on the CPU.
"""

from __future__ import annotations

import torch

from objrel.constants import CPU_DEVICE, CUDA_DEVICE
from objrel.errors import ConfigError


def is_cpu(device) -> bool:
    """Whether ``device`` (a name or a ``torch.device``) is the CPU."""
    return str(device).split(":")[0] == CPU_DEVICE


def cuda_index(device) -> int:
    """The GPU index of a ``cuda`` / ``cuda:N`` device (0 for a bare ``cuda``)."""
    _, _, index = str(device).partition(":")
    return int(index) if index else 0


def use_device(device: str) -> str:
    """``device`` once this machine is checked to have it, with f32 forced for a GPU; a ConfigError naming
    what is missing and the device that works otherwise."""
    if is_cpu(device):
        return CPU_DEVICE
    if str(device).split(":")[0] != CUDA_DEVICE:
        raise ConfigError(f"device must be {CPU_DEVICE!r} or {CUDA_DEVICE!r}[:N], got {device!r}")
    if not torch.cuda.is_available():
        raise ConfigError(f"device {device}: torch here sees no CUDA GPU (torch {torch.__version__}, "
                          f"torch.cuda.is_available() is False); run with --device {CPU_DEVICE}")
    count = torch.cuda.device_count()
    if cuda_index(device) >= count:
        raise ConfigError(f"device {device}: this machine has {count} CUDA GPU(s), numbered 0 to {count - 1}")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return str(device)
