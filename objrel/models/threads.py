"""Run a block of torch work with a fixed number of intra-op threads."""

from __future__ import annotations

from contextlib import contextmanager

import torch


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
