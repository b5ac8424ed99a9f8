"""Model adapters: one protocol per task, and models by name (``zoo``)."""

from objrel.models.classifier import CallableClassifier, Classifier, TorchClassifier
from objrel.models.detector import CallableDetector, CombinedDetector, Detector
from objrel.models.efficientnet import LITE_SIZES
from objrel.models.imagenet import class_lookup, imagenet_classes
from objrel.models.preprocess import Preprocess
from objrel.models.safe_load import load_state_dict
from objrel.models.threads import torch_threads
from objrel.models.zoo import (DEFAULT_MODEL, cached_classifier, detector_choices, load_classifier, load_detector,
                               model_choices)

__all__ = [
    "Classifier", "TorchClassifier", "CallableClassifier", "Preprocess", "load_state_dict", "load_classifier",
    "cached_classifier", "imagenet_classes", "class_lookup", "DEFAULT_MODEL", "LITE_SIZES", "model_choices",
    "Detector", "CallableDetector", "CombinedDetector", "load_detector", "detector_choices",
    "torch_threads",
]
