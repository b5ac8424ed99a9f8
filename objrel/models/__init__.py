"""Model adapters: one protocol per task (ARCHITECTURE.md decision 3)."""

from objrel.models.classifier import CallableClassifier, Classifier, TorchClassifier
from objrel.models.imagenet import class_lookup, imagenet_classes
from objrel.models.preprocess import Preprocess
from objrel.models.safe_load import load_state_dict
from objrel.models.zoo import DEFAULT_MODEL, LITE_SIZES, cached_classifier, load_classifier, model_choices

__all__ = [
    "Classifier", "TorchClassifier", "CallableClassifier", "Preprocess", "load_state_dict", "load_classifier",
    "cached_classifier", "imagenet_classes", "class_lookup", "DEFAULT_MODEL", "LITE_SIZES", "model_choices",
]
