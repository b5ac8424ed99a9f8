"""``--device cpu | cuda[:N]``: the names a run accepts, the machine checked before any work, f32 forced on a
GPU, and ONNX Runtime's CUDA provider asked for (or refused in one line where this ONNX Runtime has none).

This machine's torch may or may not see a GPU: each test asserts what must hold either way (the refusal where
there is none, the working device where there is one)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from objrel.config import RunConfig, check_device_name
from objrel.constants import ONNXRUNTIME, OPENVINO, TORCH_RUNTIME
from objrel.errors import ConfigError
from objrel.models import load_classifier
from objrel.models.devices import cuda_index, is_cpu, use_device
from objrel.models.runtimes import RuntimeUnavailable, _ort_providers, _OpenVinoSession

ROOT = Path(__file__).resolve().parents[2]
HAS_CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("name", ["cpu", "cuda", "cuda:0", "cuda:3"])
def test_device_names_a_run_accepts(name):
    assert check_device_name(name) == name
    assert RunConfig(device=name).device == name


@pytest.mark.parametrize("name", ["gpu", "CUDA", "cuda:", "cuda:x", "cuda:-1", "cpu:0", "",
                                  "cuda:\u00b2", "cuda:\u0663"])  # digits, but not ASCII ones
def test_other_device_names_are_refused_saying_what_was_expected(name):
    expected = r"device must be 'cpu', 'cuda' or 'cuda:N' \(a GPU's index\), got " + re.escape(repr(name))
    with pytest.raises(ConfigError, match=expected):
        RunConfig(device=name)


def test_a_gpu_run_is_local_and_not_on_openvino():
    with pytest.raises(ConfigError, match="device cuda runs on the local engine"):
        RunConfig(device="cuda", engine="ray")
    with pytest.raises(ConfigError, match=f"runtime {OPENVINO} runs on the CPU here; for device cuda use"):
        RunConfig(device="cuda", runtime=OPENVINO)
    assert RunConfig(device="cuda:1", runtime=ONNXRUNTIME).device == "cuda:1"


def test_device_helpers_read_names_and_torch_devices():
    assert is_cpu("cpu") and is_cpu(torch.device("cpu")) and not is_cpu("cuda:1")
    assert (cuda_index("cuda"), cuda_index("cuda:2"), cuda_index(torch.device("cuda", 1))) == (0, 2, 1)
    assert use_device("cpu") == "cpu"


def test_a_gpu_is_checked_on_this_machine_before_any_work():
    if not HAS_CUDA:
        with pytest.raises(ConfigError, match=r"device cuda: torch here sees no CUDA GPU .*torch.cuda.is_available\(\) "
                                              r"is False\); run with --device cpu"):
            use_device("cuda")
        # before any weights are read: a missing weights file would otherwise hide it
        with pytest.raises(ConfigError, match="sees no CUDA GPU"):
            load_classifier("torchvision:resnet18", weights=str(Path("no-such-weights.pt")), device="cuda")
    else:
        assert use_device("cuda") == "cuda"
        # f32 forced: TF32 moves probabilities by ~1e-3
        assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
        with pytest.raises(ConfigError, match="CUDA GPU"):
            use_device(f"cuda:{torch.cuda.device_count()}")


@pytest.mark.subprocess
def test_the_command_line_refuses_a_missing_gpu_in_one_line(tmp_path):
    missing = f"cuda:{torch.cuda.device_count() if HAS_CUDA else 7}"
    done = subprocess.run([sys.executable, "-m", "objrel", "run", "--device", missing, "--dataset", "demo",
                           "--store", str(tmp_path / "s.db"), "--quiet", "--limit", "1"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=300)
    if not HAS_CUDA:
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.strip().splitlines() == [
            f"objrel: error: device cuda:7: torch here sees no CUDA GPU (torch {torch.__version__}, "
            f"torch.cuda.is_available() is False); run with --device cpu"]
    else:
        assert done.returncode == 2 and "CUDA GPU(s), numbered 0 to" in done.stderr


def test_onnxruntime_asks_for_its_cuda_provider_with_f32_or_names_the_package_that_has_it():
    import onnxruntime as ort

    assert _ort_providers(ort, "cpu") == ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" in ort.get_available_providers():
        cuda, cpu = _ort_providers(ort, "cuda:1")
        assert cuda == ("CUDAExecutionProvider", {"device_id": "1", "use_tf32": "0",
                                                  "cudnn_conv_algo_search": "HEURISTIC"})
        assert cpu == "CPUExecutionProvider"
    else:
        with pytest.raises(RuntimeUnavailable, match=rf"onnxruntime {ort.__version__} here has no CUDA provider "
                                                     rf"\(pip install onnxruntime-gpu\); --runtime {TORCH_RUNTIME} "
                                                     r"runs on cuda"):
            _ort_providers(ort, "cuda")


def test_openvino_refuses_a_gpu_before_reading_anything(tmp_path):
    with pytest.raises(RuntimeUnavailable, match=f"objrel runs {OPENVINO} on the CPU only; for cuda use --runtime"):
        _OpenVinoSession(tmp_path / "missing.onnx", 1, "cuda")


def test_a_cpu_model_records_no_device_and_a_kept_row_is_a_host_array():
    model = load_classifier("torchvision:resnet18")
    assert "device" not in model.describe()
    import numpy as np

    row = model.prepare([np.zeros((40, 30, 3), dtype=np.uint8)])[0]
    kept = model.input_copy(row)
    assert isinstance(kept, np.ndarray) and kept.shape == (224, 224, 3)
    assert np.array_equal(kept, row.permute(1, 2, 0).numpy())


@pytest.mark.subprocess
@pytest.mark.slow
def test_the_gpu_benchmark_runs_end_to_end_on_the_cpu(tmp_path):
    """``benchmarks/gpu.py`` on the CPU with a few sources: every section prints, the rows of ONNX Runtime and
    torch agree in every label and flag, and the figures file is written."""
    done = subprocess.run([sys.executable, "benchmarks/gpu.py", "--device", "cpu", "--sources", "3", "--batch-size",
                           "4", "--limit-batches", "1", "--compare-cpu", "3", "--out", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "limit  = fastest:" in out and out.count("objrel ") == 4
    assert "rows   onnxruntime vs torch on cpu, lazy off, 3 sources: identical in every verdict" in out
    assert "rows   torch on cpu vs torch on the CPU, lazy off, first 3 sources: identical" in out
    import json

    figures = json.loads((tmp_path / "gpu.json").read_text())
    assert set(figures["runs"]) == {"torch-full", "torch-lazy", "onnxruntime-full", "onnxruntime-lazy"}
    assert figures["runs"]["torch-full"]["passes"] == 3 * 8  # the source and 7 mutants each
    assert all(r["identical"] for r in figures["rows"])


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("change, on, off", [("input-copies", "one copy", "row by row")])
def test_the_gpu_ab_benchmark_runs_end_to_end_on_the_cpu(change, on, off):
    """``benchmarks/gpu_ab.py`` on the CPU with a few sources: both ways run in each round, the ratio prints, and
    the rows of the change on and off are identical."""
    done = subprocess.run([sys.executable, "benchmarks/gpu_ab.py", change, "--device", "cpu", "--sources", "3",
                           "--rounds", "2", "--batch-size", "4"],
                          capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    rounds = sorted(line.split(":")[0].rstrip() for line in out.splitlines() if line.startswith("round "))
    assert rounds == [f"round 0 {on}", f"round 0 {off}", f"round 1 {on}", f"round 1 {off}"]
    assert out.count("(24 passes)") == 4           # 3 sources, each with its 7 mutants, in every run
    assert f"{on} / {off}: median " in out
    assert f"rows   {on} vs {off}, last round: identical in every verdict, flag, label and count" in out


@pytest.mark.subprocess
def test_a_stored_gpu_run_resumes_where_device_says(tmp_path):
    """``--resume N`` keeps the stored settings but ``--device``: a run stored with a GPU goes on on the CPU with
    ``--device cpu``; without it, a machine with no such GPU refuses in one line."""
    import json

    import sqlalchemy as sa

    db = tmp_path / "s.db"

    def objrel_run(*args):
        return subprocess.run([sys.executable, "-m", "objrel", "run", "--store", str(db), "--quiet", *args],
                              capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              timeout=300)

    first = objrel_run("--dataset", "demo", "--limit", "1", "--runtime", TORCH_RUNTIME)
    assert first.returncode == 0, first.stderr[-1500:]
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.begin() as conn:  # the same run as if it had been started with --device cuda:N
        config = json.loads(conn.execute(sa.text("SELECT config FROM runs")).scalar_one())
        assert config["device"] == "cpu"
        missing = f"cuda:{torch.cuda.device_count()}"
        conn.execute(sa.text("UPDATE runs SET config = :c"), {"c": json.dumps({**config, "device": missing})})
    engine.dispose()
    refused = objrel_run("--resume", "1")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith(f"objrel: error: device {missing}: ")
    done = objrel_run("--resume", "1", "--device", "cpu")
    assert done.returncode == 0, done.stderr[-1500:]
