"""Review of flagged inferences: accounts, judgments, the review sample, agreement and precision."""
from objrel.review.judgments import *  # noqa: F401,F403  (temporary facade during the move)
