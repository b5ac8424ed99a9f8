"""Column names of the analysis reads, shared by classifier and detection runs."""

# Columns of ``flagged_inferences`` rows; the label columns only when asked for.
INFERENCE_COLUMNS = ("sample_id", "status", "correct", "area_ratio")
LABEL_COLUMNS = ("gt_labels", "predicted")
FLAG_COLUMNS = ("mr1", "mr2")
# The relation each flag column reports.
FLAG_RELATIONS = {"mr1": "MR-1", "mr2": "MR-2"}
