"""The C allocator during inference: large freed blocks are kept for the next batch, not handed back.

A forward pass allocates its activations (tens of MB at batch 16) and frees them again, every batch.
With glibc's defaults each of those blocks is a fresh ``mmap`` (blocks over ``M_MMAP_THRESHOLD``) or
a heap top returned to the system (over ``M_TRIM_THRESHOLD``), so every batch faults its pages in and
the kernel zeroes them again. On a small CPU that kernel work can take about half of the CPU time of
EfficientNet-Lite0 at batch 16, and the bare module can run 2-2.7x faster with both thresholds raised
(``benchmarks/allocator.py`` measures it side by side on the machine at hand). The price: the process keeps its
high-water mark of heap memory (freed blocks are reused, not returned), for its whole life; a long-lived
app process that once explained a large batch stays at that size.

Other allocators (jemalloc or tcmalloc preloaded) and a user's own mmap / trim thresholds (``MALLOC_*_``
or ``GLIBC_TUNABLES``) are left alone, as is any process where ``$OBJREL_ALLOCATOR=system``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# Blocks up to this size come from the heap instead of mmap, and free heap tops up to this size stay
# mapped: above any batch of activations a CPU classifier makes.
KEEP_BYTES = 1 << 30
# glibc before 2.35 or so refuses an mmap threshold over 32 MiB on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX):
# then this, which still covers EfficientNet-Lite0's largest activation at batch 16 (25.7 MB).
OLD_GLIBC_MMAP_MAX = 32 << 20
ALLOCATOR_ENV = "OBJREL_ALLOCATOR"
# Settings that mean the user chose these thresholds: left as they are.
USER_SETTINGS_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
USER_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold")
OTHER_ALLOCATORS = ("jemalloc", "tcmalloc", "mimalloc")

_state: str | None = None


def keep_freed_memory() -> str:
    """Raise glibc's mmap and trim thresholds to ``KEEP_BYTES``, once per process.

    Returns what was done: ``'kept'`` (thresholds raised), or why not: ``'not-glibc'``, ``'user-settings'``
    (a ``MALLOC_*`` / ``GLIBC_TUNABLES`` variable or a preloaded allocator), ``'disabled'``
    (``$OBJREL_ALLOCATOR=system``) or ``'refused'`` (``mallopt`` said no).
    """
    global _state
    if _state is None:
        _state = _configure()
    return _state


def _configure() -> str:
    if os.environ.get(ALLOCATOR_ENV, "").strip().lower() == "system":
        return "disabled"
    preload = os.environ.get("LD_PRELOAD", "")
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if (any(os.environ.get(v) for v in USER_SETTINGS_ENV) or any(t in tunables for t in USER_TUNABLES)
            or any(a in preload for a in OTHER_ALLOCATORS)):
        return "user-settings"
    if not sys.platform.startswith("linux"):
        return "not-glibc"
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others have no mallopt
        return "not-glibc"
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    # The mmap threshold first: setting either one freezes glibc's adaptive threshold, so a trim threshold
    # set alone would pin mmap at its 128 KiB start and fault every large block in anew (worse than before).
    if mallopt(M_MMAP_THRESHOLD, KEEP_BYTES) != 1 and mallopt(M_MMAP_THRESHOLD, OLD_GLIBC_MMAP_MAX) != 1:
        return "refused"
    mallopt(M_TRIM_THRESHOLD, KEEP_BYTES)
    return "kept"
