"""Manual review of flagged inferences (seed 000 s5.1): accounts, blind judgments, agreement, consensus.

The workflow of seed 000 s5.1.2, one module per step (the rows live in ``objrel.store``):

1. **Accounts** (``accounts``): reviewers sign in with a passphrase (stored as a scrypt hash)
   or through OIDC.
2. **Sample** (``sampling``): ``draw_review_sample`` draws ``cochran_sample_size(N)`` of the N
   inferences the primary vote flagged for one relation of one run and stores the draw, so
   every reviewer sees the same items in the same order.
3. **Judge, blind** (``judgments``): each reviewer calls every item ``tp``, ``fp`` (with
   reasons) or ``uncertain``; ``review_queue`` only ever shows a reviewer their own calls.
4. **Agree, decide, count** (``agreement``): Cohen's kappa over the items two reviewers both
   judged, the disagreements, adjudication, the consensus (computed on read) and the precision
   tables (seed 000 Tables 1-3).

Writes are short transactions that retry when SQLite reports a lock, and every insert-or-update
is race-free: two reviewers (two processes) may write to one store at the same moment.
``items`` assembles what the Review page shows for one item; import it from its module.
"""

from objrel.review.accounts import (MIN_PASSPHRASE_LENGTH, Reviewer, create_reviewer, ensure_oidc_reviewer,
                                    reviewer_names, verify_reviewer)
from objrel.review.agreement import (PRECISION_COLUMNS, Agreement, Consensus, Disagreement, Kappa, adjudicate,
                                     agreement, cohen_kappa, consensus, disagreements, landis_koch_band,
                                     precision_table)
from objrel.review.judgments import (FP_REASONS, REASON_LABELS, RELATIONS, VERDICT_LABELS, VERDICTS, JudgedRun,
                                     Judgment, judged_runs, judgments, record_judgment)
from objrel.review.sampling import (DEFAULT_REVIEW_SEED, QueueItem, SampleDraw, cochran_sample_size,
                                    draw_review_sample, review_queue, review_sample_info)

__all__ = [
    # accounts
    "MIN_PASSPHRASE_LENGTH", "Reviewer", "create_reviewer", "ensure_oidc_reviewer", "reviewer_names",
    "verify_reviewer",
    # judgments
    "RELATIONS", "VERDICTS", "FP_REASONS", "VERDICT_LABELS", "REASON_LABELS", "Judgment", "JudgedRun",
    "record_judgment", "judgments", "judged_runs",
    # sampling
    "DEFAULT_REVIEW_SEED", "SampleDraw", "QueueItem", "cochran_sample_size", "draw_review_sample",
    "review_sample_info", "review_queue",
    # agreement
    "PRECISION_COLUMNS", "Kappa", "Agreement", "Consensus", "Disagreement", "landis_koch_band", "cohen_kappa",
    "agreement", "disagreements", "adjudicate", "consensus", "precision_table",
]
