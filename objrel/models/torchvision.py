"""torchvision detection models (Faster R-CNN, RetinaNet, SSD / SSDlite, FCOS; Mask R-CNN's boxes) by name.

Weights never download: ``weights`` is a local state-dict file (loaded with
``torch.load(weights_only=True)``), a torchvision weights name whose file is already in the
torch cache, or ``None`` for an untrained network (plumbing checks only).  The backbone is
never fetched either (``weights_backbone=None``).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from objrel.errors import ConfigError
from objrel.models.safe_load import load_state_dict
from objrel.models.detector import Detector
from objrel.models.detections import Detections

# Architectures whose outputs are boxes, labels and scores, by name prefix.
DETECTION_FAMILIES = ("fasterrcnn", "retinanet", "ssd", "ssdlite", "fcos", "maskrcnn")
# Default score threshold for torchvision detectors: records below it are dropped (torchvision's
# own box_score_thresh of 0.05 keeps many weak boxes; 0.5 is the usual display threshold).
TORCHVISION_SCORE_THRESHOLD = 0.5


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
    import torchvision.models as tvm

    archs = detection_architectures()
    if arch not in archs:
        raise ConfigError(f"unknown torchvision detection model {arch!r}; choices: {archs}")
    if weights and weights.count(".") == 1 and "_Weights." in weights:
        try:
            wenum = tvm.get_weight(weights)
        except (ValueError, KeyError) as exc:
            raise ConfigError(f"unknown torchvision weights name {weights!r}") from exc
        try:
            module = tvm.get_model(arch, weights=wenum, weights_backbone=None, **model_kwargs)
        except Exception as exc:  # the file is not in the torch cache and no hub is reachable
            raise ConfigError(
                f"could not load {weights}: it is not in the torch cache and cannot be downloaded here "
                f"({type(exc).__name__}). Pass a local state-dict file as weights instead."
            ) from exc
        names = list(class_names) if class_names else list(wenum.meta["categories"])
    else:
        names = list(class_names) if class_names else default_class_names(arch)
        module = tvm.get_model(arch, weights=None, weights_backbone=None, num_classes=len(names), **model_kwargs)
        if weights:
            try:
                module.load_state_dict(load_state_dict(weights), strict=True)
            except RuntimeError as exc:
                raise ConfigError(f"weights file {weights} does not fit {arch} with {len(names)} classes: "
                                  f"{str(exc).splitlines()[0]}") from exc
    return TorchvisionDetector(module, names, f"torchvision:{arch}", score_threshold, device,
                               {"arch": arch, "weights": weights, "num_classes": len(names)})
