"""Class-level confusion and bias in image classifiers: DeepInspect (seed 004, sections 3-4).

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

from objrel.studies.deepinspect.constants import (ACTIVATION_THRESHOLD, DEFAULT_BATCH_SIZE, FAR_STD, FLAG_STD,
                                                  MIN_CLASS_IMAGES)
from objrel.studies.deepinspect.coverage import ActivationCounter, ActivityHooks, layer_activity, predicted_members
from objrel.studies.deepinspect.evaluation import (Evaluation, aucec, cost_effectiveness, last_linear, optimal_curve,
                                                   precision_recall, weight_distances)
from objrel.studies.deepinspect.examples import example_images
from objrel.studies.deepinspect.groundtruth import (ErrorCounter, avg_confusion_disparity, type1_confusion,
                                                    type2_confusion)
from objrel.studies.deepinspect.metrics import (avg_bias, bias, far_cutoff, flag_high, flag_low, napvd, pair_indices,
                                                pair_values)
from objrel.studies.deepinspect.pipeline import Inspector, analyse, dataset_batches, inspect_dataset
from objrel.studies.deepinspect.planted import BIAS_PAIR, CONFUSION_PAIR, PlantedSpec, run_planted
from objrel.studies.deepinspect.result import (GroundTruth, InspectResult, WeightBaseline, bias_table, confusion_table,
                                               evaluation_table, pair_rank)

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
