"""Torch's intra-op thread count: chosen once per process for inference, or fixed for a block of work."""

from __future__ import annotations

import os
from contextlib import contextmanager

import cv2
import torch


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


# Intra-op threads of a classifier's forward pass: one per core this process may use.  Measured on the
# 2-core build machine with EfficientNet-Lite0, batch 16: 2 threads run about 1.8x faster than 1; more
# threads than cores only add contention (the mutant worker thread runs numpy/OpenCV beside them).
INFERENCE_THREADS = available_cores()

# OpenCV's own thread pool during inference: 1.  Its resizes and fills run in the engine's worker threads
# beside torch's intra-op threads; at 2 threads it oversubscribes the cores (4 threads on 2 here) and
# stalls torch at its barriers, while a 600x512 -> 224 resize runs no faster on 2 threads than on 1.
OPENCV_THREADS = 1

_configured = False


def configure_inference_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to ``n`` (default ``INFERENCE_THREADS``) and OpenCV's to
    ``OPENCV_THREADS``, once per process; later calls leave the counts alone.  Returns torch's count."""
    global _configured
    if not _configured:
        want = int(n or INFERENCE_THREADS)
        if want < 1:
            raise ValueError(f"inference needs at least 1 thread, got {want}")
        if torch.get_num_threads() != want:
            torch.set_num_threads(want)
        cv2.setNumThreads(OPENCV_THREADS)
        _configured = True
    return torch.get_num_threads()


@contextmanager
def torch_threads(n: int):
    """Run the block with ``n`` (>= 1) torch intra-op threads, then restore the previous count.

    Small networks (MTCNN's stages, the planted benchmark's CNN) gain nothing from a thread pool
    and lose much to it on a busy machine; they run under ``torch_threads(1)``.
    """
    if int(n) < 1:
        raise ValueError(f"torch_threads needs at least 1 thread, got {n}")
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)
