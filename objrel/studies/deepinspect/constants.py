"""Named thresholds of the DeepInspect analysis, each with the effect of changing it."""

# Neuron activation threshold Th (DeepInspect s3.1, s7): a neuron is active for an input when
# its per-layer min-max scaled output is strictly greater than this.  Lower it and more
# neurons fire for every class, pulling the class columns together (below ~0.25 the paper
# saw every pair look alike); raise it and rarely firing neurons carry all the signal.
ACTIVATION_THRESHOLD = 0.5

# Flagging cut-offs, in standard deviations of the score over all class pairs (DeepInspect
# s4.2-4.3).  A pair is a suspected confusion when NAPVD < mean - this * std, a suspected
# bias when avg_bias > mean + this * std; the ground truth uses mean + this * std of
# type1/type2 confusion and of avg_cd.  Larger values flag fewer pairs (higher precision,
# lower recall).
FLAG_STD = 1.0

# Far-triplet filter for avg_bias (DeepInspect s4.3): a third class c is left out of
# avg_bias(a, b) when both NAPVD(c, a) and NAPVD(c, b) exceed mean + this * std of all
# pairwise NAPVDs.  Larger values keep more distant triplets in the average.
FAR_STD = 1.0

# Classes predicted fewer times than this are left out of the analysis: their activation
# column is an estimate from too few images (a class never predicted has no column at all).
MIN_CLASS_IMAGES = 1

# Images per forward pass when streaming a dataset through the hooked model.  Peak memory
# grows with it (one batch of feature maps at a time); it does not grow with the dataset.
DEFAULT_BATCH_SIZE = 32

# Example images kept per predicted class for the app page (references, not pixels).
EXAMPLES_PER_CLASS = 4

# Points of the cost-effectiveness curve are exact (one per inspected pair); the random
# baseline is its expectation, the line y = x.  Cost cut-offs reported beside AUCEC:
TOP_FRACTION = 0.01   # "Top 1%" of ranked pairs, as in DeepInspect Tables 3-4 (at least one pair)
