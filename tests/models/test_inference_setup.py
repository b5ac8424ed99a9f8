"""The once-per-process inference setup: the allocator keeping freed blocks, per-image work spread over
the cores, the rule for working beside the forward pass, and preprocessing that is the same whichever
thread does it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from objrel.models import threads as T
from objrel.models.preprocess import Preprocess

ROOT = Path(__file__).resolve().parents[2]

# Allocates and frees a 64 MiB block twice, touching every page, and prints the page faults of the second
# round: with glibc's defaults the block is a fresh mmap each time (one fault per 4 KiB page, ~16,000);
# with the thresholds raised the second round reuses the heap pages of the first.
FAULTS_SCRIPT = """
import ctypes, resource, sys
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "keep":
    from objrel.models.allocator import keep_freed_memory
    assert keep_freed_memory() == "kept", keep_freed_memory()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)
SIZE = 64 << 20
def round_trip():
    p = libc.malloc(SIZE)
    ctypes.memset(p, 1, SIZE)
    libc.free(p)
round_trip()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
round_trip()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str, **env) -> int:
    out = subprocess.run([sys.executable, "-c", FAULTS_SCRIPT, str(ROOT), mode], capture_output=True, text=True,
                         timeout=60, env={k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env)
    assert out.returncode == 0, out.stderr
    return int(out.stdout.strip())


@pytest.mark.subprocess
def test_the_allocator_keeps_freed_blocks_for_the_next_batch():
    pages = (64 << 20) // 4096
    assert _faults("default") > pages // 2     # glibc's defaults: the block's pages fault in again
    assert _faults("keep") < pages // 50       # kept: the second round reuses them


def test_the_allocator_leaves_a_users_choice_alone(monkeypatch):
    from objrel.models import allocator as A

    for env, value, expected in (("OBJREL_ALLOCATOR", "system", "disabled"),
                                 ("MALLOC_TRIM_THRESHOLD_", "1000", "user-settings"),
                                 ("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=65536", "user-settings"),
                                 ("GLIBC_TUNABLES", "glibc.cpu.hwcaps=-AVX512F", "kept"),   # not the allocator
                                 ("LD_PRELOAD", "/usr/lib/libjemalloc.so.2", "user-settings")):
        with monkeypatch.context() as m:
            m.setenv(env, value)
            assert A._configure() == expected


def test_parallel_each_runs_every_index_once_and_reraises():
    seen: list[int] = []
    lock = threading.Lock()

    def note(i):
        with lock:
            seen.append(i)

    T.parallel_each(note, 37)
    assert sorted(seen) == list(range(37))

    def fail(i):
        if i == 5:
            raise ValueError("item 5 is bad")

    with pytest.raises(ValueError, match="item 5 is bad"):
        T.parallel_each(fail, 10)

    # every index has been tried when the error arrives: nothing writes into the caller's buffers after it
    done = np.zeros(10, bool)

    def slow_then_fail(i):
        if i == 0:
            raise ValueError("item 0 is bad")
        time.sleep(0.01)
        done[i] = True

    before = T.PREPROCESS_THREADS
    T.set_preprocess_threads(2)   # item 0 fails at once; the other thread is still sleeping on its item then
    try:
        with pytest.raises(ValueError, match="item 0 is bad"):
            T.parallel_each(slow_then_fail, 10)
    finally:
        T.set_preprocess_threads(before)
    assert done[1:].all() and not done[0]

    # two failures: the lowest index's error arrives, whichever thread failed first
    def two_fail(i):
        if i == 9:
            raise ValueError("item 9 is bad")
        if i == 3:
            time.sleep(0.02)
            raise ValueError("item 3 is bad")

    T.set_preprocess_threads(2)
    try:
        with pytest.raises(ValueError, match="item 3 is bad"):
            T.parallel_each(two_fail, 10)
    finally:
        T.set_preprocess_threads(before)

    # called again from inside a pool thread it runs inline instead of waiting on the pool it occupies
    inner: list[tuple[int, int]] = []

    def outer(i):
        T.parallel_each(lambda j: inner.append((i, j)), 3)

    T.parallel_each(outer, 4)
    assert sorted(inner) == [(i, j) for i in range(4) for j in range(3)]


def test_work_beside_the_forward_pass_only_on_cores_it_leaves_free():
    cores = T.available_cores()
    assert T.overlap_beside_forward("cuda:0")                  # an accelerator leaves every core free
    with T.torch_threads(cores):
        assert not T.overlap_beside_forward("cpu")             # torch on every core: work in turn
    with T.torch_threads(1):
        assert T.overlap_beside_forward("cpu") == (cores > 1)  # a spare core for the worker threads


def test_an_engine_works_in_turn_when_the_model_takes_every_core(tmp_path):
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine
    from objrel.store import Store
    from tests.conftest import write_flagged_set

    data = write_flagged_set(tmp_path / "data", n_flagged=1, n_clean=1)
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(data))
    with T.torch_threads(T.available_cores()):
        eng = Engine(Store(tmp_path / "s.db"), cfg)
        assert (eng.read_ahead, eng.prefetch_mutants) == (False, False)
    eng_class = type("Ahead", (Engine,), {"read_ahead": True})
    with T.torch_threads(T.available_cores()):
        eng = eng_class(Store(tmp_path / "t.db"), cfg)
        assert eng.read_ahead is True                          # a subclass's own choice stays


def test_preprocessing_a_batch_gives_the_bytes_of_one_image_at_a_time_and_of_the_float32_formula():
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, (int(rng.integers(20, 90)), int(rng.integers(20, 90)), 3), dtype=np.uint8)
              for _ in range(11)]
    for pre in (Preprocess(size=32), Preprocess(size=24, resize="shorter-crop", mean=(0.5,) * 3, std=(0.25,) * 3)):
        x = pre(images).permute(0, 2, 3, 1).numpy()
        one_by_one = np.concatenate([pre([im]).permute(0, 2, 3, 1).numpy() for im in images])
        assert np.array_equal(x, one_by_one)
        # (u8 * (1/255)/std) + (-mean/std), each step rounded to float32: what the numpy version computed
        std = np.asarray(pre.std, np.float32)
        ref = np.stack([pre.resize_one(im) for im in images]).astype(np.float32) * (np.float32(1 / 255) / std)
        ref += -np.asarray(pre.mean, np.float32) / std
        assert ref.dtype == np.float32 and np.array_equal(x, ref)


def test_class_lookup_is_built_once_and_read_only():
    from objrel.models import class_lookup

    names = ["tabby, tabby cat", "Egyptian cat"]
    a = class_lookup(names)
    assert a is class_lookup(list(names))
    assert a["tabby cat"] == 0 and a["egyptian cat"] == 1 and a.get("dog") is None
    with pytest.raises(TypeError):
        a["dog"] = 2  # type: ignore[index]


@pytest.mark.subprocess
def test_a_forked_child_gets_a_pool_of_its_own():
    """After the parent used the pool, a forked child must not wait on the parent's threads (they do not
    exist in the child)."""
    import multiprocessing as mp

    T.parallel_each(lambda i: None, 4)       # the parent's pool is started
    ctx = mp.get_context("fork")
    child = ctx.Process(target=_child_uses_the_pool)
    child.start()
    child.join(30)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0


def _child_uses_the_pool():
    out = []
    T.parallel_each(out.append, 6)
    assert sorted(out) == list(range(6))


def test_per_image_threads_can_be_narrowed_to_a_share_of_the_cores():
    before = T.PREPROCESS_THREADS
    try:
        T.set_preprocess_threads(1)
        names = []
        T.parallel_each(lambda i: names.append(threading.current_thread().name), 5)
        assert names == [threading.current_thread().name] * 5      # one thread: inline, in order
        with pytest.raises(ValueError, match="at least 1 thread"):
            T.set_preprocess_threads(0)
    finally:
        T.set_preprocess_threads(before)
