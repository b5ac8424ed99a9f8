"""The throughput benchmark's limit candidates: every installed runtime is measured on the same batches, as the
bare network's NCHW graph and as the NHWC one, ONNX Runtime with its own default session and objrel's; objrel
runs on every runtime still in contention."""

from __future__ import annotations

import numpy as np

from benchmarks.throughput import Candidate, contenders, contending_ways, limit_session, runtime_candidates
from objrel.constants import ONNXRUNTIME, OPENVINO
from objrel.models import load_classifier
from objrel.models.threads import configure_inference_threads


def test_every_installed_runtime_is_a_limit_candidate_on_the_same_batches():
    model = load_classifier("efficientnet-lite0")
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (120, 160, 3), dtype=np.uint8) for _ in range(5)]
    candidates, missing = runtime_candidates(model, images, 4, configure_inference_threads())
    assert missing == {}
    assert [c.label for c in candidates] == [
        f"{ONNXRUNTIME}, nchw input, objrel's session", f"{ONNXRUNTIME}, nchw input, ONNX Runtime's defaults",
        f"{ONNXRUNTIME}, nhwc input, objrel's session", f"{ONNXRUNTIME}, nhwc input, ONNX Runtime's defaults",
        f"{OPENVINO}, nchw input, objrel's session", f"{OPENVINO}, nhwc input, objrel's session"]
    nchw = candidates[0].prepared[0][0]
    assert nchw.shape == (4, 3, 224, 224)
    for c in candidates:
        assert [n for _, n in c.prepared] == [4, 1]
        first = c.prepared[0][0]
        # the same pixels either way: an NHWC batch is the NCHW one with the channel axis moved last
        assert np.array_equal(first if "nchw" in c.label else first.transpose(0, 3, 1, 2), nchw)
        assert c.images_per_s() > 0


def _candidate(label: str) -> Candidate:
    return Candidate(label, ONNXRUNTIME, [], run=None)


def test_only_candidates_near_the_fastest_of_the_first_pass_are_measured_again():
    a, b, c, d = (_candidate(x) for x in "abcd")
    first = {"a": 200.0, "b": 160.0, "c": 149.9, "d": 150.0}
    # 0.75 of 200 is 150: d is at it, c just under
    assert contenders([a, b, c, d], first, share=0.75) == [a, b, d]
    assert contenders([a, b, c, d], first, share=0.9) == [a]


def test_the_limit_is_the_session_with_the_best_median_not_the_best_of_each_repeat():
    x, y, z = (_candidate(n) for n in "xyz")
    repeats = [{"x": 103.0, "y": 97.0, "z": 96.0},
               {"x": 95.0, "y": 102.0, "z": 96.0},
               {"x": 96.0, "y": 95.0, "z": 101.0}]
    # each repeat's best is 103, 102, 101 (median 102), above every session's own median: x 96, y 97, z 96
    assert limit_session([x, y, z], repeats) is y


def test_objrel_runs_on_every_runtime_in_contention_once_the_fastest_first():
    """Two sessions of one runtime are one way to run objrel; the order is the first pass's best of each."""
    ort_own, ort_defaults = Candidate(ONNXRUNTIME, ONNXRUNTIME, [], None, session="a"), \
        Candidate(ONNXRUNTIME, ONNXRUNTIME, [], None, session="b")
    ov = Candidate(OPENVINO, OPENVINO, [], None, session="a")
    first = {ort_own.label: 300.0, ort_defaults.label: 320.0, ov.label: 310.0}
    assert contending_ways([ort_own, ov, ort_defaults], first) == [ONNXRUNTIME, OPENVINO]
    first[ov.label] = 321.0
    assert contending_ways([ort_own, ov, ort_defaults], first) == [OPENVINO, ONNXRUNTIME]


def test_objrel_runs_each_torch_form_on_an_adapter_of_that_form_and_leaves_the_base_as_it_was():
    """Were several torch forms in contention, each would get an adapter of its own form: the default one takes
    planar batches, torch.compile's is compiled, and the adapter the benchmark started from is not changed (it
    was: every torch form ran on it, and torch.compile's marked it compiled for all of them)."""
    import torch

    from benchmarks.throughput import objrel_model
    from objrel.constants import TORCH_RUNTIME

    base = load_classifier("efficientnet-lite0")
    assert base.channels_last and not base.compile
    way = {n: Candidate(n, TORCH_RUNTIME, [], None) for n in ("torch default", "torch channels_last", "torch.compile")}
    default, last, compiled = (objrel_model(base, way[n]) for n in way)
    assert last is base
    assert default is not base and not default.channels_last and not default.compile
    assert compiled is not base and compiled.compile and compiled.channels_last
    assert base.channels_last and not base.compile
    assert default.module is base.module is compiled.module   # one module: its format is each way's setup
    image = np.zeros((50, 60, 3), np.uint8)
    assert default.prepare([image]).is_contiguous()
    assert base.prepare([image]).is_contiguous(memory_format=torch.channels_last)
