"""Class-level confusion and bias in image classifiers: DeepInspect (DeepInspect, sections 3-4).

Per-image relations (MR-1 / MR-2) miss bugs that live between classes: a model that
cannot tell two classes apart (*confusion*), or that treats two classes unequally in
the presence of a third (*bias*).  DeepInspect finds them without labels, from how the
model's neurons fire per predicted class:

1. coverage (``coverage``): forward hooks on every conv / linear layer; a neuron is
   active for an input when its per-layer min-max scaled output exceeds Th (0.5);
   ``rho[j, i] = P(neuron j active | predicted class i)`` accumulates batch by batch.
2. scores (``metrics``): NAPVD(a, b) = ||rho[:, a] - rho[:, b]||_2 (low: confusion);
   bias(a, b, c) and avg_bias(a, b) with the far-triplet filter (high: bias);
   pairs beyond one standard deviation of the mean are flagged.
3. ground truth (``groundtruth``): type1 / type2 confusion and confusion disparity from
   the model's errors on labelled images; ``evaluation``: precision, recall, AUCEC,
   random and optimal curves, and the weight-vector baseline.
4. ``planted``: a synthetic benchmark with a planted confusion pair and a planted bias.

Entry points: ``Inspector`` (stream any batches), ``inspect_dataset`` (an objrel
dataset), ``run_planted`` (the benchmark); results are ``InspectResult`` JSON files.
"""

# Each public name and the submodule that defines it.  They are imported on first use, so reading a result
# (``browse``, ``result``) does not load torch, which only ``coverage`` and the pipelines need.
_HOMES = {
    "ACTIVATION_THRESHOLD": "constants", "DEFAULT_BATCH_SIZE": "constants", "FAR_STD": "constants",
    "FLAG_STD": "constants", "MIN_CLASS_IMAGES": "constants",
    "ActivationCounter": "coverage", "ActivityHooks": "coverage", "layer_activity": "coverage",
    "predicted_members": "coverage",
    "Evaluation": "evaluation", "aucec": "evaluation", "cost_effectiveness": "evaluation",
    "last_linear": "evaluation", "optimal_curve": "evaluation", "precision_recall": "evaluation",
    "weight_distances": "evaluation",
    "example_images": "examples",
    "ErrorCounter": "groundtruth", "avg_confusion_disparity": "groundtruth", "type1_confusion": "groundtruth",
    "type2_confusion": "groundtruth",
    "avg_bias": "metrics", "bias": "metrics", "far_cutoff": "metrics", "flag_high": "metrics", "flag_low": "metrics",
    "napvd": "metrics", "pair_indices": "metrics", "pair_values": "metrics",
    "Inspector": "pipeline", "analyse": "pipeline", "dataset_batches": "pipeline", "inspect_dataset": "pipeline",
    "BIAS_PAIR": "planted_ranks", "CONFUSION_PAIR": "planted_ranks", "PlantedSpec": "planted", "run_planted": "planted",
    "GroundTruth": "result", "InspectResult": "result", "WeightBaseline": "result", "bias_table": "result",
    "confusion_table": "result", "evaluation_table": "result", "pair_rank": "result",
}

__all__ = [
    "ACTIVATION_THRESHOLD", "DEFAULT_BATCH_SIZE", "FAR_STD", "FLAG_STD", "MIN_CLASS_IMAGES",
    "ActivationCounter", "ActivityHooks", "layer_activity", "predicted_members",
    "Evaluation", "aucec", "cost_effectiveness", "last_linear", "optimal_curve", "precision_recall",
    "weight_distances", "ErrorCounter", "avg_confusion_disparity", "type1_confusion", "type2_confusion",
    "avg_bias", "bias", "far_cutoff", "flag_high", "flag_low", "napvd", "pair_indices", "pair_values",
    "Inspector", "analyse", "dataset_batches", "inspect_dataset", "BIAS_PAIR", "CONFUSION_PAIR", "PlantedSpec",
    "run_planted", "GroundTruth", "InspectResult", "WeightBaseline", "bias_table", "confusion_table",
    "evaluation_table", "example_images", "pair_rank",
]


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'objrel.studies.deepinspect' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"objrel.studies.deepinspect.{home}"), name)
