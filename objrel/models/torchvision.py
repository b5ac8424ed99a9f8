"""torchvision models by name: classifiers, and detectors (Faster R-CNN, RetinaNet, SSD / SSDlite, FCOS;
Mask R-CNN's boxes).

Weights never download: ``weights`` is a local state-dict file (loaded with
``torch.load(weights_only=True)``), a torchvision weights name whose file is already in the
torch cache (``ResNet18_Weights.IMAGENET1K_V1``), or ``None`` for an untrained network
(plumbing checks only).  A detector's backbone is never fetched either (``weights_backbone=None``).
``torchvision`` itself is imported inside the functions: it adds about 2 s to every start-up.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from objrel.errors import ConfigError
from objrel.models.classifier import TorchClassifier
from objrel.data.detections import Detections
from objrel.models.detector import Detector
from objrel.models.imagenet import imagenet_classes
from objrel.models.preprocess import Preprocess
from objrel.models.safe_load import load_weights_into

# Architectures whose outputs are boxes, labels and scores, by name prefix.
DETECTION_FAMILIES = ("fasterrcnn", "retinanet", "ssd", "ssdlite", "fcos", "maskrcnn")
# Default score threshold for torchvision detectors: records below it are dropped (torchvision's
# own box_score_thresh of 0.05 keeps many weak boxes; 0.5 is the usual display threshold).
TORCHVISION_SCORE_THRESHOLD = 0.5
# Classifier input side when the weights name no crop size (torchvision's ImageNet default).
DEFAULT_CROP_SIZE = 224
# Architectures listed in the error for an unknown classifier name.
ARCHITECTURES_SHOWN = 12


def is_weights_name(weights: str | None) -> bool:
    """True for a torchvision weights name (``Enum_Weights.MEMBER``), False for a file path or None."""
    return bool(weights) and weights.count(".") == 1 and "_Weights." in weights


def load_torchvision_module(arch: str, weights: str | None, num_classes: int | None = None, **model_kwargs):
    """Build ``arch`` with its weights; returns ``(module, weights enum or None)``.

    weights:      a torchvision weights name (the weights then fix the outputs and ``num_classes`` is
                  ignored), a local state-dict file (every key must fit the network), or None (random weights).
    num_classes:  outputs of a network built without a weights name (default: the architecture's).
    model_kwargs: passed to ``torchvision.models.get_model``.
    """
    import torchvision.models as tvm

    if is_weights_name(weights):
        try:
            wenum = tvm.get_weight(weights)
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"unknown torchvision weights name {weights!r}") from exc
        try:
            return tvm.get_model(arch, weights=wenum, **model_kwargs), wenum
        except Exception as exc:  # the file is not in the torch cache and no hub is reachable
            raise ConfigError(
                f"could not load {weights}: it is not in the torch cache and cannot be downloaded here "
                f"({type(exc).__name__}). Pass a local state-dict file as weights instead."
            ) from exc
    head = {} if num_classes is None else {"num_classes": num_classes}
    module = tvm.get_model(arch, weights=None, **head, **model_kwargs)
    if weights:
        load_weights_into(module, weights, arch if num_classes is None else f"{arch} with {num_classes} classes")
    return module, None


def check_weights_file(path, architecture: str) -> None:
    """Load the state-dict file ``path`` into torchvision's ``architecture`` with its ImageNet head: ObjrelError
    for a file that needs full unpickling or does not fit (what ``objrel.data.uploads.add_weights`` checks)."""
    module, _ = load_torchvision_module(architecture, None)
    load_weights_into(module, path, architecture)


def classification_architectures() -> list[str]:
    """torchvision classification model names, sorted."""
    import torchvision.models as tvm

    return sorted(tvm.list_models(module=tvm))


def detection_architectures() -> list[str]:
    """torchvision detection model names of the supported families, sorted."""
    import torchvision.models as tvm
    import torchvision.models.detection as tvd

    return sorted(n for n in tvm.list_models(module=tvd) if n.startswith(DETECTION_FAMILIES))


def default_class_names(arch: str) -> list[str]:
    """The label list of the architecture's default (COCO) weights: 91 names with '__background__' and 'N/A'
    placeholders, read from torchvision's metadata (no download)."""
    import torchvision.models as tvm

    return list(tvm.get_model_weights(arch).DEFAULT.meta["categories"])


def torchvision_classifier(arch: str, weights: str | None = None, num_classes: int | None = None,
                           class_names=None, **kw) -> TorchClassifier:
    """Build the classifier ``arch`` (``resnet18``, ...); ``kw`` goes to ``TorchClassifier``.

    class_names: output names (default: the weights' categories, else ImageNet's 1000); with a
                 state-dict file or no weights, ``num_classes`` (default ``len(class_names)``) sizes the head.
    """
    available = classification_architectures()
    if arch not in available:
        raise ConfigError(f"unknown torchvision classification model {arch!r}; choices include "
                          f"{available[:ARCHITECTURES_SHOWN]} ...")
    pre = kw.pop("preprocess", None)
    names = list(class_names) if class_names else None
    if is_weights_name(weights):
        module, wenum = load_torchvision_module(arch, weights)
        names = names or list(wenum.meta.get("categories") or imagenet_classes())
        crop = getattr(wenum.transforms(), "crop_size", None)
        pre = pre or Preprocess(size=int(crop[0]) if crop else DEFAULT_CROP_SIZE)
    else:
        names = names or list(imagenet_classes())
        module, _ = load_torchvision_module(arch, weights, num_classes or len(names))
    return TorchClassifier(module, names, pre or Preprocess(), name=arch,
                           config={"weights": weights, "family": "torchvision"}, **kw)


class TorchvisionDetector(Detector):
    """Wraps a torchvision detection ``nn.Module`` in eval mode.

    The module receives a list of ``(3, H, W)`` float tensors in [0, 1] (it resizes and normalises
    inside) and returns per image ``boxes`` (xyxy pixels of the input), integer ``labels`` indexing
    ``class_names`` and ``scores`` in [0, 1].
    """

    def __init__(self, module: torch.nn.Module, class_names: Sequence[str], name: str,
                 score_threshold: float | None = TORCHVISION_SCORE_THRESHOLD, device: str = "cpu",
                 config: dict | None = None):
        super().__init__(name, class_names, score_threshold, {"family": "torchvision", **(config or {})})
        self.module = module.eval().to(device)
        self.device = device

    def _detect(self, images) -> list[Detections]:
        x = [torch.from_numpy(np.ascontiguousarray(im)).permute(2, 0, 1).float().div(255.0).to(self.device)
             for im in images]
        with torch.inference_mode():
            outs = self.module(x)
        res = []
        for o in outs:
            labels = o["labels"].cpu().numpy().astype(int)
            bad = [int(i) for i in labels if not 0 <= i < len(self.labels)]
            if bad:
                raise ValueError(f"model {self.name} returned label indices {bad} outside its "
                                 f"{len(self.labels)} class names")
            res.append(Detections.from_arrays(o["boxes"].float().cpu().numpy(), [self.labels[i] for i in labels],
                                              o["scores"].float().cpu().numpy()))
        return res


def torchvision_detector(arch: str, weights: str | None = None, class_names: Sequence[str] | None = None,
                         score_threshold: float | None = TORCHVISION_SCORE_THRESHOLD, device: str = "cpu",
                         **model_kwargs) -> TorchvisionDetector:
    """Build ``arch`` (``fasterrcnn_resnet50_fpn``, ``ssdlite320_mobilenet_v3_large``, ...).

    weights:     a state-dict file, a torchvision weights name (``FasterRCNN_ResNet50_FPN_Weights.COCO_V1``,
                 needs the file in the torch cache), or None (random weights, for plumbing checks).
    class_names: label names by model output index, background at 0 (default: COCO's 91 from the
                 architecture's metadata); their number sets the classifier head's size.
    model_kwargs: passed to the torchvision constructor (``min_size``, ``box_score_thresh``, ...).
    """
    archs = detection_architectures()
    if arch not in archs:
        raise ConfigError(f"unknown torchvision detection model {arch!r}; choices: {archs}")
    names = list(class_names) if class_names else None
    if is_weights_name(weights):
        module, wenum = load_torchvision_module(arch, weights, weights_backbone=None, **model_kwargs)
        names = names or list(wenum.meta["categories"])
    else:
        names = names or default_class_names(arch)
        module, _ = load_torchvision_module(arch, weights, len(names), weights_backbone=None, **model_kwargs)
    return TorchvisionDetector(module, names, f"torchvision:{arch}", score_threshold, device,
                               {"arch": arch, "weights": weights, "num_classes": len(names)})
