"""Model adapters: safe weight loading, torchvision by name, preprocessing, task heads."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from objrel.errors import ConfigError, UnsafeWeightsError
from objrel.models import CallableClassifier, Preprocess, load_classifier, load_state_dict
from objrel.models.preprocess import LITE_MEAN, LITE_STD

RNG = np.random.default_rng(0)


def images(n=3, h=50, w=70):
    return [RNG.integers(0, 256, (h, w, 3), dtype=np.uint8) for _ in range(n)]


class Pickled(torch.nn.Module):
    """A module saved whole (not as a state dict): loading it needs full unpickling."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)


def test_whole_pickled_module_is_refused_with_an_explanation(tmp_path):
    path = tmp_path / "model.pt"
    torch.save(Pickled(), path)
    with pytest.raises(UnsafeWeightsError, match="needs full unpickling.*state_dict"):
        load_state_dict(path)


def test_non_tensor_payload_is_refused(tmp_path):
    path = tmp_path / "odd.pt"
    torch.save({"epoch": 3, "lr": 0.1}, path)
    with pytest.raises(UnsafeWeightsError, match="not a state dict of tensors"):
        load_state_dict(path)


def test_checkpoint_wrappers_and_dataparallel_prefix_are_unwrapped(tmp_path):
    lin = torch.nn.Linear(3, 2)
    path = tmp_path / "ckpt.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in lin.state_dict().items()}}, path)
    sd = load_state_dict(path)
    assert set(sd) == {"weight", "bias"} and torch.equal(sd["weight"], lin.weight.detach())


def test_missing_weights_file_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_state_dict(tmp_path / "nope.pt")


def test_torchvision_architecture_with_local_state_dict(tmp_path):
    import torchvision

    net = torchvision.models.get_model("resnet18", weights=None, num_classes=3)
    path = tmp_path / "resnet18.pt"
    torch.save(net.state_dict(), path)
    clf = load_classifier("torchvision:resnet18", weights=str(path), class_names=["a", "b", "c"])
    probs = clf.predict(images())
    assert probs.shape == (3, 3) and np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    # the loaded weights are the saved ones
    assert torch.equal(clf.module.fc.weight, net.fc.weight)


def test_multi_label_head_uses_sigmoid(tmp_path):
    import torchvision

    net = torchvision.models.get_model("resnet18", weights=None, num_classes=4)
    path = tmp_path / "r.pt"
    torch.save(net.state_dict(), path)
    clf = load_classifier("resnet18", weights=str(path), class_names=list("abcd"), task="multi", threshold=0.4)
    batch = images(2)
    probs = clf.predict(batch)
    x = clf.preprocess(batch)
    # same input through the raw network, then a sigmoid by hand
    with torch.no_grad():
        expected = torch.sigmoid(net.eval()(x)).numpy()
    assert probs.shape == (2, 4) and clf.threshold == 0.4
    assert np.allclose(probs, expected, atol=1e-5)
    assert not np.allclose(probs.sum(axis=1), 1.0)


def test_wrong_state_dict_for_architecture_fails_loudly(tmp_path):
    path = tmp_path / "small.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), path)
    with pytest.raises(RuntimeError, match="Missing key"):
        load_classifier("resnet18", weights=str(path), class_names=["a", "b"])


def test_unknown_model_names_are_refused():
    with pytest.raises(ConfigError, match="unknown torchvision classification model"):
        load_classifier("torchvision:not-a-net")
    with pytest.raises(ConfigError, match="py:package.module:factory"):
        load_classifier("py:nothing")


def test_python_factory_models_load_by_spec():
    clf = load_classifier("py:tests.fixtures.colour_model:factory")
    assert clf.class_names == ["red", "green", "blue"]
    red = np.zeros((4, 4, 3), np.uint8)
    red[..., 0] = 255
    assert clf.predict([red]).argmax() == 0


def test_callable_with_wrong_output_shape_is_reported():
    clf = CallableClassifier(lambda ims: np.ones((len(ims), 2)), ["a", "b", "c"], name="bad")
    with pytest.raises(ValueError, match=r"returned shape \(1, 2\), expected \(1, 3\)"):
        clf.predict(images(1))


def test_predict_rejects_non_uint8_images():
    clf = CallableClassifier(lambda ims: np.ones((len(ims), 1)), ["a"])
    with pytest.raises(ValueError, match="uint8"):
        clf.predict([np.zeros((4, 4, 3), np.float32)])


def test_preprocess_stretch_and_crop_shapes_and_lite_normalisation():
    img = np.full((30, 90, 3), 127, np.uint8)
    pre = Preprocess(size=32, mean=LITE_MEAN, std=LITE_STD)
    x = pre([img, img])
    assert tuple(x.shape) == (2, 3, 32, 32)
    assert torch.allclose(x, torch.zeros_like(x), atol=1e-6)  # (127 - 127) / 128
    crop = Preprocess(size=32, resize="shorter-crop")
    assert crop.resize_one(np.zeros((30, 90, 3), np.uint8)).shape == (32, 32, 3)
    with pytest.raises(ValueError, match="resize must be one of"):
        Preprocess(resize="squash")


@pytest.mark.slow
def test_efficientnet_lite0_is_real_and_offline():
    """ARCHITECTURE.md: the skimage cat is class 285 (Egyptian cat), the coffee photo 967 (espresso)."""
    import skimage.data

    clf = load_classifier("efficientnet-lite0")
    probs = clf.predict([skimage.data.chelsea(), skimage.data.coffee()])
    assert probs.shape == (2, 1000)
    assert probs[0].argmax() == 285 and probs[0, 285] > 0.6
    assert probs[1].argmax() == 967 and probs[1, 967] > 0.6
    assert clf.class_names[285] == "Egyptian cat"


# ---------------------------------------------------------------- adapter at the model's limit


def _tiny_torch_classifier(**kw):
    from objrel.models import TorchClassifier

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(8, 4))
    return TorchClassifier(net, ["a", "b", "c", "d"], Preprocess(size=32), **kw)


def test_preprocess_gives_channels_last_float32_without_a_copy_and_matches_the_reference():
    rng = np.random.default_rng(0)
    images = [rng.integers(0, 256, (40, 50, 3), dtype=np.uint8), rng.integers(0, 256, (20, 20, 3), dtype=np.uint8)]
    pre = Preprocess(size=32)
    x = pre(images)
    assert x.dtype == torch.float32 and x.is_contiguous(memory_format=torch.channels_last)
    ref = np.stack([pre.resize_one(im) for im in images]).astype(np.float64) / 255.0
    ref = (ref - np.asarray(pre.mean)) / np.asarray(pre.std)
    assert np.allclose(x.permute(0, 2, 3, 1).numpy(), ref, atol=1e-5)


def test_prepare_then_forward_equals_predict_and_both_memory_formats_agree():
    rng = np.random.default_rng(1)
    images = [rng.integers(0, 256, (36, 36, 3), dtype=np.uint8) for _ in range(5)]
    cl = _tiny_torch_classifier()
    plain = _tiny_torch_classifier(channels_last=False)
    assert cl.channels_last and not plain.channels_last
    x = cl.prepare(images)
    assert isinstance(x, torch.Tensor) and x.is_contiguous(memory_format=torch.channels_last)
    p = cl.forward(x)
    assert p.dtype == np.float32 and p.shape == (5, 4)
    assert np.allclose(p, cl.predict(images), atol=1e-6)
    assert np.allclose(p, plain.predict(images), atol=1e-5)
    assert cl.forward(cl.prepare([])).shape == (0, 4)
    # the base adapter's prepare is the checked list, forward the function
    fn = CallableClassifier(lambda ims: np.full((len(ims), 2), 0.5), ["x", "y"])
    assert fn.forward(fn.prepare(images)).shape == (5, 2)
    with pytest.raises(ValueError):
        fn.prepare([images[0].astype(np.float32)])


def test_compile_is_opt_in_and_compiled_once_per_module(monkeypatch):
    from objrel.models import classifier as C

    calls = []

    def fake_compile(module):
        calls.append(module)
        return module

    monkeypatch.setattr(C.torch, "compile", fake_compile)
    clf = _tiny_torch_classifier()
    img = [np.zeros((32, 32, 3), np.uint8)]
    clf.predict(img)
    assert calls == []
    clf.enable_compile()
    clf.predict(img)
    clf.predict(img)
    other = C.TorchClassifier(clf.module, clf.class_names, clf.preprocess, compile=True)
    other.predict(img)
    assert calls == [clf.module]  # one compile for the module, shared by both adapters


def test_inference_threads_are_set_once():
    from objrel.models import threads as T

    assert T.INFERENCE_THREADS >= 1
    n = T.configure_inference_threads()
    assert n == torch.get_num_threads()
    import cv2

    assert cv2.getNumThreads() == T.OPENCV_THREADS == 1  # OpenCV beside torch, not competing with it
    torch.set_num_threads(1)
    try:
        assert T.configure_inference_threads(5) == 1  # already configured: left alone
    finally:
        torch.set_num_threads(n)


def test_run_config_and_cli_carry_lazy_compile_and_engine():
    from objrel.cli.main import build_parser
    from objrel.cli.run import run_config
    from objrel.config import RunConfig

    assert (RunConfig().lazy, RunConfig().compile, RunConfig().engine, RunConfig().runtime) == \
        (True, False, "local", "auto")
    with pytest.raises(ConfigError, match="engine must be one of"):
        RunConfig(engine="spark")
    args = build_parser().parse_args(["run", "--no-lazy", "--compile", "--engine", "ray", "--workers", "3"])
    cfg = run_config(args)
    assert (cfg.lazy, cfg.compile, cfg.engine, cfg.workers) == (False, True, "ray", 3)
    with pytest.raises(ConfigError, match="workers must be >= 1"):
        RunConfig(workers=0)
    assert RunConfig.from_dict(cfg.to_dict()) == cfg
    cfg = run_config(build_parser().parse_args(["run"]))
    assert (cfg.lazy, cfg.compile, cfg.engine) == (True, False, "local")
