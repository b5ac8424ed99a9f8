"""Manual review of flagged inferences (EMSE21 s5.1): accounts, blind judgments, agreement, consensus.

The workflow of EMSE21 s5.1.2, one module per step (the rows live in ``objrel.store``):

1. **Accounts and roles** (``accounts``, ``roles``): people sign in with a passphrase (stored as
   a scrypt hash, throttled after failures) or through OIDC; each account holds roles (reviewer,
   adjudicator, run operator, admin), and every write checks them here, server-side.
2. **Sample** (``sampling``): ``draw_review_sample`` draws ``cochran_sample_size(N)`` of the N
   inferences the primary vote flagged for one relation of one run and stores the draw, so
   every reviewer sees the same items in the same order.
3. **Judge, blind** (``judgments``): each reviewer calls every item ``tp``, ``fp`` (with
   reasons) or ``uncertain``; ``review_queue`` only ever shows a reviewer their own calls.
4. **Agree, decide, count** (``agreement``, ``coefficients``): Cohen's kappa, Gwet's AC1 and PABAK
   over the items two reviewers both judged, the disagreements, adjudication, the consensus (computed
   on read) and the precision tables (EMSE21 Tables 1-3); an item whose mutant is decided invalid is
   counted apart.
5. **Calibrate and export** (``calibration``, ``export``): once a sample closes its reviewers see
   their agreement, disagreements and adjudications; calls export as CSV or JSON.

Writes are short transactions that retry when SQLite reports a lock, and every insert-or-update
is race-free: two reviewers (two processes) may write to one store at the same moment.
``items`` assembles what the Review page shows for one item; import it from its module.
"""

from objrel.review.accounts import (MIN_PASSPHRASE_LENGTH, Reviewer, SignIn, create_reviewer, list_accounts,
                                    ensure_oidc_reviewer, invite, normalise_name, reviewer_names, verify_reviewer)
from objrel.review.agreement import (NOT_ADJUDICATED, PRECISION_COLUMNS, Agreement, Consensus, Disagreement, Kappa,
                                     PairView, SampleState, adjudicate, agreement, cohen_kappa, consensus,
                                     disagreements, landis_koch_band, pair_view, precision_table, sample_state,
                                     validity_agreement)
from objrel.review.calibration import Calibration, calibration
from objrel.review.coefficients import (AgreementCoefficients, CategoryShare, Coefficient, Prevalence,
                                        agreement_coefficients, items_for_width)
from objrel.review.export import ExportRow, judgment_export, to_csv, to_json
from objrel.review.judgments import (FP_REASONS, REASON_LABELS, RELATIONS, VALIDITY, VALIDITY_LABELS, VERDICT_LABELS,
                                     VERDICTS, JudgedRun, Judgment, JudgmentVersion, judged_runs, judgment_history,
                                     judgments, my_history, record_judgment)
from objrel.review.roles import (ADJUDICATOR, ADMIN, REVIEWER, ROLE_LABELS, ROLES, RUN_OPERATOR, actor_of,
                                 grant_roles, revoke_role, roles_of)
from objrel.review.sampling import (DEFAULT_REVIEW_SEED, QueueItem, SampleDraw, cochran_sample_size,
                                    draw_review_sample, review_queue, review_sample_info)
from objrel.review.sessions import (SESSION_LIFETIME, end_session, end_sessions, live_sessions, session_user,
                                    start_session)

__all__ = [
    # accounts
    "MIN_PASSPHRASE_LENGTH", "Reviewer", "SignIn", "list_accounts", "create_reviewer", "ensure_oidc_reviewer", "invite",
    "normalise_name", "reviewer_names", "verify_reviewer",
    # roles
    "REVIEWER", "ADJUDICATOR", "RUN_OPERATOR", "ADMIN", "ROLES", "ROLE_LABELS", "roles_of", "actor_of",
    "grant_roles", "revoke_role",
    # sessions
    "SESSION_LIFETIME", "start_session", "session_user", "end_session", "end_sessions", "live_sessions",
    # judgments
    "RELATIONS", "VERDICTS", "FP_REASONS", "VERDICT_LABELS", "REASON_LABELS", "VALIDITY", "VALIDITY_LABELS",
    "Judgment", "JudgedRun", "JudgmentVersion", "record_judgment", "judgments", "judged_runs", "judgment_history",
    "my_history",
    # sampling
    "DEFAULT_REVIEW_SEED", "SampleDraw", "QueueItem", "cochran_sample_size", "draw_review_sample",
    "review_sample_info", "review_queue",
    # agreement
    "PRECISION_COLUMNS", "Kappa", "Agreement", "Consensus", "Disagreement", "landis_koch_band", "cohen_kappa",
    "agreement", "disagreements", "adjudicate", "consensus", "precision_table", "SampleState", "PairView",
    "sample_state", "pair_view", "validity_agreement", "NOT_ADJUDICATED",
    # coefficients beyond kappa, calibration, export
    "Coefficient", "CategoryShare", "Prevalence", "AgreementCoefficients", "agreement_coefficients",
    "items_for_width", "Calibration", "calibration", "ExportRow", "judgment_export", "to_csv", "to_json",
]
