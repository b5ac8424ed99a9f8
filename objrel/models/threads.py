"""Torch's intra-op thread count: chosen once per process for inference, or fixed for a block of work.

``configure_inference_threads`` is the once-per-process inference setup: torch's and OpenCV's threads,
and the C allocator (``objrel.models.allocator``: freed activations kept for the next batch).
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import Callable

import cv2
import torch

from objrel.models.allocator import keep_freed_memory


def available_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS / Windows
        return max(1, os.cpu_count() or 1)


# Intra-op threads of a classifier's forward pass: one per core this process may use.  With
# EfficientNet-Lite0 at batch 16 on 2 cores, 2 threads run about 1.8x faster than 1; more
# threads than cores only add contention (the mutant worker thread runs numpy/OpenCV beside them).
INFERENCE_THREADS = available_cores()

# OpenCV's own thread pool during inference: 1.  Its resizes and fills run in the engine's worker threads
# beside torch's intra-op threads; at 2 threads it oversubscribes the cores (4 threads on 2 here) and
# stalls torch at its barriers, while a 600x512 -> 224 resize runs no faster on 2 threads than on 1.
OPENCV_THREADS = 1

# Threads that share out per-image work (decoding, mutants, resizes) between the forward passes.  On 2 cores a
# full run that makes and prepares each batch on both cores just before its forward runs at about 0.84 of
# the bare module's speed, against 0.78 with that work in threads beside the forward:
# a thread competing with torch's intra-op threads for the cores stalls all of them
# at each operator's barrier, so a millisecond it takes costs the forward about two.
PREPROCESS_THREADS = available_cores()
_POOL_PREFIX = "objrel-preprocess"
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()

_configured = False


def configure_inference_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads to ``n`` (default ``INFERENCE_THREADS``) and OpenCV's to
    ``OPENCV_THREADS``, once per process; later calls leave the counts alone.  Also keeps the allocator's
    freed blocks for reuse (``keep_freed_memory``).  Returns torch's count."""
    global _configured
    if not _configured:
        want = int(n or INFERENCE_THREADS)
        if want < 1:
            raise ValueError(f"inference needs at least 1 thread, got {want}")
        if torch.get_num_threads() != want:
            torch.set_num_threads(want)
        cv2.setNumThreads(OPENCV_THREADS)
        keep_freed_memory()
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


def overlap_beside_forward(device: str = "cpu") -> bool:
    """Whether work in threads beside the forward pass (decoding the next chunk, making the next batch of
    mutants) runs on cores the forward pass leaves free: it runs on an accelerator, or torch's intra-op
    threads are fewer than this process's cores.  Otherwise the steps run in turn, each on every core
    (``parallel_each``), which is faster than competing with torch for the cores (``PREPROCESS_THREADS``)."""
    return not str(device).startswith("cpu") or torch.get_num_threads() < available_cores()


def set_preprocess_threads(n: int) -> None:
    """Use ``n`` (>= 1) threads for per-image work from now on (a Ray actor given one core sets 1)."""
    global PREPROCESS_THREADS, _pool
    if int(n) < 1:
        raise ValueError(f"per-image work needs at least 1 thread, got {n}")
    with _pool_lock:
        PREPROCESS_THREADS = int(n)
        old, _pool = _pool, None
    if old is not None:
        old.shutdown(wait=False)


def _forget_pool_after_fork() -> None:
    """A forked child has none of the parent's pool threads: start its own pool when it needs one."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def parallel_each(fn: Callable[[int], None], n: int) -> None:
    """Call ``fn(i)`` for ``i`` in ``range(n)`` spread over ``PREPROCESS_THREADS`` threads and wait for all;
    ``fn`` should release the GIL (OpenCV, numpy).  This thread works too, beside ``PREPROCESS_THREADS - 1``
    pool threads, each taking the next index as it finishes one (images of unequal sizes even out, and one
    thread wakes instead of two).  Every index is tried; then the exception of the lowest failed index
    re-raises here.  Runs inline for one item, with one thread, or when called from one of the pool's own
    threads (no deadlock)."""
    global _pool
    threads = min(PREPROCESS_THREADS, n)
    if n <= 1 or threads <= 1 or threading.current_thread().name.startswith(_POOL_PREFIX):
        for i in range(n):
            fn(i)
        return
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=PREPROCESS_THREADS, thread_name_prefix=_POOL_PREFIX)
        pool = _pool
    indices = itertools.count()  # next() on it is atomic under the GIL: each index goes to one thread
    failed: dict[int, BaseException] = {}

    def run() -> None:
        while (i := next(indices)) < n:
            try:
                fn(i)
            except BaseException as exc:  # noqa: BLE001 - re-raised below, after every index was tried
                failed[i] = exc

    futures = [pool.submit(run) for _ in range(threads - 1)]
    run()
    wait(futures)
    for f in futures:
        f.result()
    if failed:
        raise failed[min(failed)]
