"""The exported runtimes (ONNX Runtime, OpenVINO) against torch: the same probabilities within 1e-5, and
runs whose samples, verdicts and votes are identical to torch's on the demo photos, the planted-shortcut
scenes and a multi-label model; ``auto``'s choice and the one-line refusals."""

from __future__ import annotations


import numpy as np
import pytest
import torch

from objrel.analysis.same_results import classifier_rows, differences
from objrel.config import RunConfig
from objrel.constants import ONNXRUNTIME, OPENVINO, TORCH_RUNTIME
from objrel.data import load_demo, load_rgb
from objrel.engine.classify import Engine
from objrel.errors import ConfigError
from objrel.models import CallableClassifier, TorchClassifier, load_classifier
from objrel.models.runtimes import (INPUT_LAYOUTS, MATCH_TOLERANCE, NCHW, NHWC, ExportedClassifier,
                                    RuntimeUnavailable, choose_runtime, export_onnx, installed_runtimes,
                                    model_cache_dir, with_runtime)
from objrel.store import Store
from objrel.studies.shortcut.models import ARCH, TrainConfig, build_module, module_classifier, train
from objrel.studies.shortcut.scenes import SyntheticConfig, load_arrays, write_split

EXPORTED = (ONNXRUNTIME, OPENVINO)


def test_both_exported_runtimes_are_installed():
    """The project depends on both (pyproject.toml): a missing one would silently leave auto on fewer."""
    assert installed_runtimes() == (TORCH_RUNTIME, ONNXRUNTIME, OPENVINO)


@pytest.fixture(scope="module")
def lite0():
    return load_classifier("efficientnet-lite0")


@pytest.fixture(scope="module")
def demo_images():
    return [load_rgb(s.image_path) for s in load_demo().samples]


@pytest.mark.slow
@pytest.mark.parametrize("runtime", EXPORTED)
def test_exported_probabilities_equal_torchs_on_the_demo_photos(lite0, demo_images, runtime):
    ref = lite0.predict(demo_images)
    got = with_runtime(lite0, runtime).predict(demo_images)
    assert got.dtype == np.float32 and got.shape == ref.shape == (len(demo_images), 1000)
    assert np.abs(got - ref).max() <= MATCH_TOLERANCE
    assert (got.argmax(axis=1) == ref.argmax(axis=1)).all()


def runs_by_runtime(tmp_path, model: TorchClassifier, cfg: RunConfig) -> dict:
    """The same run made by torch and by each exported runtime, each into its own SQLite store."""
    out = {}
    for runtime in (TORCH_RUNTIME, *EXPORTED):
        store = Store(tmp_path / f"{runtime}.db")
        engine = Engine(store, cfg, model=with_runtime(model, runtime))
        report = engine.execute()
        assert report.status == "finished"
        assert engine.store.get_run(report.run_id).model_config["runtime"] == runtime
        out[runtime] = (report, classifier_rows(store, report.run_id))
        store.dispose()
    return out


def assert_identical(runs: dict) -> None:
    torch_report, torch_rows = runs[TORCH_RUNTIME]
    assert torch_report.tested > 0 and torch_rows["verdicts"] and torch_rows["votes"]
    for runtime in EXPORTED:
        report, rows = runs[runtime]
        assert (report.tested, report.untested, dict(report.skipped), report.forward_passes) == \
               (torch_report.tested, torch_report.untested, dict(torch_report.skipped), torch_report.forward_passes)
        assert differences(rows, torch_rows, MATCH_TOLERANCE) == [], runtime


@pytest.mark.slow
def test_demo_runs_on_every_runtime_store_identical_results(tmp_path, lite0):
    """EfficientNet-Lite0 on the bundled photos, every mutation run (lazy off: S_p, S_r and S stored)."""
    runs = runs_by_runtime(tmp_path, lite0, RunConfig(lazy=False, test_all=True))
    assert_identical(runs)
    assert any(v["verdict"] == "violated" for v in runs[TORCH_RUNTIME][1]["verdicts"])


@pytest.fixture(scope="module")
def scenes(tmp_path_factory):
    """Planted-shortcut scenes (textured backgrounds that name the class 95% of the time) and a small CNN
    trained on them for two epochs: a model with real, mixed reliance."""
    root = tmp_path_factory.mktemp("scenes")
    cfg = SyntheticConfig(n_classes=3, rho=0.95, seed=2)
    images, targets = load_arrays(write_split(cfg, root, "train", 96).annotation)
    torch.manual_seed(0)
    module, _ = train(images, targets, TrainConfig(epochs=2, batch_size=32, seed=0), n_classes=3)
    test = write_split(cfg, root, "test", 16)
    return test, module_classifier(module, [f"class{i}" for i in range(3)])


@pytest.mark.slow
def test_planted_shortcut_runs_on_every_runtime_store_identical_results(tmp_path, scenes):
    split, model = scenes
    runs = runs_by_runtime(tmp_path, model, RunConfig(dataset=split.annotation, plan="palette15", lazy=False,
                                                      test_all=True, batch_size=7))
    assert_identical(runs)


def test_multi_label_runs_on_every_runtime_store_identical_results(tmp_path):
    cfg = SyntheticConfig(n_classes=3, rho=0.9, multi_label=True, objects=(1, 2), seed=5)
    split = write_split(cfg, tmp_path / "multi", "test", 12)
    torch.manual_seed(3)
    model = module_classifier(build_module(ARCH, 3), ["disc", "square", "triangle"], task="multi")
    runs = runs_by_runtime(tmp_path, model, RunConfig(dataset=split.annotation, plan="colours3", task="multi",
                                                      lazy=False, test_all=True))
    assert_identical(runs)
    images = list(load_arrays(split.annotation)[0])
    got = with_runtime(model, ONNXRUNTIME).predict(images)
    # independent sigmoids (the exported head is the multi-label one): rows need not sum to 1
    assert np.abs(got.sum(axis=1) - 1).max() > 0.01
    assert np.abs(got - model.predict(images)).max() <= MATCH_TOLERANCE


@pytest.mark.slow
@pytest.mark.parametrize("runtime", EXPORTED)
def test_each_runtime_takes_the_batch_in_its_own_layout_and_both_layouts_agree(lite0, demo_images, runtime):
    """OpenVINO's graph takes the network's own NCHW input, ONNX Runtime's channel-last NHWC (``INPUT_LAYOUTS``):
    ``prepare`` writes that layout, handed to the runtime with no copy, and the other layout's graph gives the
    same probabilities on the same photos."""
    own = with_runtime(lite0, runtime)
    assert own.layout == INPUT_LAYOUTS[runtime] == {ONNXRUNTIME: NHWC, OPENVINO: NCHW}[runtime]
    assert own.describe()["input_layout"] == own.layout
    x = own.prepare(demo_images)
    planes = x.is_contiguous()                                           # NCHW, plane after plane
    channel_last = x.is_contiguous(memory_format=torch.channels_last)     # NHWC strides
    assert (planes, channel_last) == ((True, False) if own.layout == NCHW else (False, True))
    other = ExportedClassifier(lite0, runtime, layout=NHWC if own.layout == NCHW else NCHW)
    assert other.export_key != own.export_key
    assert np.abs(other.predict(demo_images) - own.predict(demo_images)).max() <= MATCH_TOLERANCE
    with pytest.raises(ValueError, match="layout must be 'nhwc' or 'nchw'"):
        ExportedClassifier(lite0, runtime, layout="chw")


@pytest.mark.slow
def test_auto_chooses_the_fastest_matching_runtime_and_remembers_it(scenes):
    _, model = scenes
    choice = choose_runtime(model)
    assert set(choice.images_per_s) == {TORCH_RUNTIME, *EXPORTED}
    assert all(d <= MATCH_TOLERANCE for d in choice.max_difference.values())
    assert choice.runtime == max(choice.images_per_s, key=choice.images_per_s.get)
    again = choose_runtime(model)  # read back from the model cache, not measured again
    assert again == choice
    chosen = with_runtime(model, "auto")
    assert chosen.describe()["runtime"] == choice.runtime
    assert chosen.describe()["runtime_choice"]["reason"].startswith("fastest matching runtime")


@pytest.mark.slow
def test_export_is_cached_once_per_network_and_changes_with_the_weights(scenes):
    _, model = scenes
    path = export_onnx(model)
    assert path.parent == model_cache_dir() and path.is_file()
    stamp = path.stat().st_mtime_ns
    assert export_onnx(model) == path and path.stat().st_mtime_ns == stamp
    other = module_classifier(build_module(ARCH, 3), model.class_names)
    with torch.no_grad():
        for p in other.module.parameters():
            p.add_(0.01)
    assert export_onnx(other) != path


def test_a_callable_model_is_refused_in_one_line_and_auto_keeps_it_on_torch():
    clf = CallableClassifier(lambda ims: np.full((len(ims), 2), 0.5), ["a", "b"], name="rule")
    with pytest.raises(RuntimeUnavailable) as err:
        with_runtime(clf, ONNXRUNTIME)
    assert "\n" not in str(err.value) and "--runtime torch" in str(err.value) and "CallableClassifier" in str(err.value)
    assert with_runtime(clf, "auto") is clf and clf.describe()["runtime"] == "python"


class _Fourier(torch.nn.Module):
    """A network with an operator ONNX has no export for (``aten::fft_fft``)."""

    def forward(self, x):
        return torch.fft.fft(x.mean(dim=(2, 3))).real


class _ThroughNumpy(torch.nn.Module):
    """A network whose forward leaves torch for numpy: the tracer freezes that part into a constant and
    exports a graph that runs but ignores its input."""

    def forward(self, x):
        return torch.from_numpy(x.mean(dim=(2, 3)).numpy().copy())


def test_a_network_that_cannot_be_exported_names_why_and_the_runtime_that_works(capfd):
    model = TorchClassifier(_Fourier(), ["r", "g", "b"], name="fourier")
    with pytest.raises(RuntimeUnavailable) as err:
        with_runtime(model, OPENVINO)
    text = str(err.value)
    assert text.startswith("model fourier cannot be exported to ONNX") and "fft" in text
    assert text.endswith("run it with --runtime torch") and "\n" not in text
    assert "Torch IR graph" not in "".join(capfd.readouterr())  # the exporter's dump stays out of the terminal
    assert with_runtime(model, TORCH_RUNTIME) is model


def test_an_export_that_runs_but_computes_another_model_is_refused():
    model = TorchClassifier(_ThroughNumpy(), ["r", "g", "b"], name="numpy-inside")
    with pytest.raises(RuntimeUnavailable, match=r"^model numpy-inside exported to ONNX (gives other outputs|cannot "
                                                 r"run) on onnxruntime .*; run it with --runtime torch$"):
        with_runtime(model, ONNXRUNTIME)
    assert with_runtime(model, "auto").describe()["runtime"] == TORCH_RUNTIME  # auto falls back, saying why
    assert "numpy-inside exported to ONNX" in model.describe()["runtime_choice"]["reason"]


def test_compile_is_for_torch_only():
    with pytest.raises(ConfigError, match="compile is torch.compile"):
        RunConfig(compile=True, runtime=ONNXRUNTIME)
    assert RunConfig(compile=True).model_runtime == TORCH_RUNTIME
    assert RunConfig().model_runtime == "auto"


@pytest.mark.slow
def test_an_exported_adapter_survives_pickling_and_reopens_its_session(scenes):
    import pickle

    _, model = scenes
    exported = with_runtime(model, ONNXRUNTIME)
    images = [np.full((64, 64, 3), v, np.uint8) for v in (0, 128, 255)]
    before = exported.predict(images)
    copy = pickle.loads(pickle.dumps(exported))
    assert isinstance(copy, ExportedClassifier) and np.array_equal(copy.predict(images), before)


@pytest.mark.subprocess
def test_the_command_line_refuses_an_unexportable_model_in_one_line(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "objrel", "run", "--model", "py:tests.fixtures.colour_model:factory",
                           "--dataset", "demo", "--runtime", OPENVINO, "--store", str(tmp_path / "s.db"), "--quiet"],
                          capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                          timeout=300)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "objrel: error: model dominant-colour is CallableClassifier, not a plain torch network: objrel "
        "cannot export it for openvino; run it with --runtime torch"]


def test_a_refusal_quotes_the_library_without_its_folders():
    """What a run records of a runtime's or exporter's error names no server folder (visitors read run records)."""
    from objrel.models.runtimes import MESSAGE_CHARS, first_line

    err = FileNotFoundError("[Errno 2] No such file: '/root/.cache/objrel/models/.abc-1.onnx'\nsecond line")
    assert first_line(err) == "[Errno 2] No such file: '.abc-1.onnx'"
    assert first_line(RuntimeError("C:\\Users\\me\\models\\m.onnx is damaged")) == "m.onnx is damaged"
    assert first_line(ValueError("")) == "ValueError"
    assert len(first_line(ValueError("x" * 1000))) == MESSAGE_CHARS
