"""The store's tables as the first Alembic revisions made them, frozen: the revisions create and read
tables through these definitions, never through ``objrel.store.schema`` (which moves on with later
revisions).  Do not edit: a change of the schema is a new revision.

* ``SCHEMA_1``: the tables of schema 1 (revision 0001), classifier and detection runs alike in ``samples``;
* ``SCHEMA_2``: the detection tables revision 0002 adds;
* ``SCHEMA_3``: the crash bookkeeping and trust tables of revision 0003;
* ``SCHEMA_7``: the review-day tables of revision 0007 (app sessions, background review jobs);
* ``SCHEMA_8``: the kept per-run results of revision 0008 (``run_summaries``);
* ``SCHEMA_9``: the review assignments of revision 0009 (``review_assignments``; ``review_samples.k`` is a column);
* ``SCHEMA_10``: the comment threads and gold items of revision 0010 (``item_comments``, ``gold_items``).
"""

from __future__ import annotations

from sqlalchemy import (JSON, BigInteger, Boolean, Column, DateTime, Float, ForeignKey, Index, Integer, LargeBinary,
                        MetaData, String, Table, Text, UniqueConstraint)

schema_1 = MetaData()
# The tables of revisions 0002 and 0003 refer to schema 1's ``runs`` and ``reviewers``, so they live in the
# same MetaData; each revision creates only its own (``create_all(tables=...)``).  The case-insensitive index
# on reviewers' names (0003) is made in SQL there, so that creating schema 1 does not make it.
meta = Table(
    "objrel_meta", schema_1,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(200), nullable=False),
    Column("status", String(20), nullable=False),  # pending | running | finished | failed | cancelled
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("heartbeat_at", DateTime(timezone=True)),
    Column("model", String(200), nullable=False),
    Column("model_config", JSON, nullable=False),
    Column("task", String(10), nullable=False),
    Column("class_names", JSON, nullable=False),
    Column("dataset", String(200), nullable=False),
    Column("dataset_config", JSON, nullable=False),
    Column("plan", JSON, nullable=False),
    Column("config", JSON, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("n_total", Integer, nullable=False, default=0),
    Column("n_done", Integer, nullable=False, default=0),
    Column("n_skipped", Integer, nullable=False, default=0),
    Column("n_tested", Integer, nullable=False, default=0),
    Column("pid", Integer),
    Column("cancel_requested", Boolean, nullable=False, default=False),
    Column("error", Text),
    Column("timings", JSON),
)

samples = Table(
    "samples", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("rel_path", Text, nullable=False),
    Column("status", String(12), nullable=False),  # tested | untested | skipped
    Column("skip_code", String(40)),
    Column("skip_reason", Text),
    Column("width", Integer),
    Column("height", Integer),
    Column("gt_labels", JSON),       # class indices of the ground truth
    Column("gt_categories", JSON),   # dataset category names
    Column("predicted", JSON),       # the source's predicted labels
    Column("correct", Boolean),
    Column("objects", JSON),         # target objects used for the region (TargetObject.to_dict)
    Column("region_source", String(20)),
    Column("area_ratio", Float),
    Column("s_p", Float),
    Column("s_r", Float),
    Column("s", Float),
    Column("elapsed_ms", Float),
    UniqueConstraint("run_id", "sample_id", name="uq_sample"),
)
Index("ix_samples_run_status", samples.c.run_id, samples.c.status)

predictions = Table(
    "predictions", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("mutation_key", String(200), nullable=False),  # "source" for the source image
    Column("seed", String(24)),                           # derived mutation seed (as text: 63-bit)
    Column("prediction", JSON),                           # Prediction.to_dict(); null when n/a
    UniqueConstraint("run_id", "sample_id", "mutation_key", name="uq_prediction"),
)

verdicts = Table(
    "verdicts", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("mutation_key", String(200), nullable=False),
    Column("operator", String(60), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("verdict", String(10), nullable=False),  # holds | violated | n/a
    Column("source_certainty", Float),
    Column("mutant_certainty", Float),
    Column("label_changed", Boolean),
    Column("distance", Float),                       # ORMR V-A distance for this mutant
    Column("note", Text),
    UniqueConstraint("run_id", "sample_id", "mutation_key", name="uq_verdict"),
)
Index("ix_verdicts_run", verdicts.c.run_id, verdicts.c.relation)

votes = Table(
    "votes", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("group_name", String(80), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("is_primary", Boolean, nullable=False),
    Column("k", Integer, nullable=False),
    Column("n", Integer, nullable=False),
    Column("applicable", Integer, nullable=False),
    Column("violations", Integer, nullable=False),
    Column("flagged", Boolean, nullable=False),
    UniqueConstraint("run_id", "sample_id", "group_name", name="uq_vote"),
)
Index("ix_votes_flagged", votes.c.run_id, votes.c.relation, votes.c.flagged)


reviewers = Table(
    "reviewers", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("pass_hash", String(200)),       # scrypt hash "scrypt$n$r$p$salt_hex$hash_hex"; null for OIDC users
    Column("oidc_subject", String(300)),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

judgments = Table(
    "judgments", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("verdict", String(12), nullable=False),   # tp | fp | uncertain
    Column("reasons", JSON, nullable=False),         # fp reasons: multiple-objects | incomplete-removal | other
    Column("note", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "sample_id", "relation", "reviewer", name="uq_judgment"),
)
Index("ix_judgments_run", judgments.c.run_id, judgments.c.relation)

consensus = Table(
    "consensus", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("verdict", String(12), nullable=False),
    Column("reasons", JSON, nullable=False),
    Column("note", Text),
    Column("adjudicator", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "sample_id", "relation", name="uq_consensus"),
)

review_samples = Table(
    "review_samples", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("position", Integer, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("population", Integer, nullable=False),   # flagged inferences the sample was drawn from
    UniqueConstraint("run_id", "relation", "sample_id", name="uq_review_sample"),
)

explanations = Table(
    "explanations", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("mutation_key", String(200), nullable=False),  # "source" or a mutation key
    Column("label", Integer, nullable=False),
    Column("settings", String(200), nullable=False),      # e.g. "lime:n=1000:seg=quickshift:seed=0"
    Column("segments_png", LargeBinary, nullable=False),  # 16-bit PNG of the superpixel labels
    Column("weights", JSON, nullable=False),              # {segment id: LIME weight}
    Column("object_share", Float),                        # positive weight inside the target region / all positive
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "sample_id", "mutation_key", "label", "settings", name="uq_explanation"),
)

retests = Table(
    "retests", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("box", JSON, nullable=False),        # the redrawn xyxy box
    Column("result", JSON, nullable=False),     # votes and verdicts of the re-test
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# ---- revision 0002

detection_units = Table(
    "detection_units", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("image_id", String(300), nullable=False),    # samples.sample_id of the unit's image
    Column("unit_key", String(16), nullable=False),     # "r<j>": source record j; "o<k>": missed object k
    Column("unit_id", String(300), nullable=False),     # the inference id in votes, judgments, review rows
    Column("kind", String(8), nullable=False),          # record | missed
    Column("object_index", Integer, nullable=False),    # the associated object's index in samples.objects
    Column("label", String(200), nullable=False),       # the object's category (= the record's label)
    Column("label_index", Integer, nullable=False),     # index of label in runs.class_names
    Column("object", JSON, nullable=False),             # TargetObject.to_dict: box xyxy pixels, mask
    Column("area_ratio", Float),                        # object region pixels / image pixels
    Column("t_source", Integer, nullable=False),        # test T on the source: 0 | 1
    Column("iou_source", Float, nullable=False),        # IoU of rcd with the object; 0 without rcd
    Column("record_index", Integer),                    # rcd: index in the source's records; null: none
    Column("record_label", String(200)),
    Column("record_score", Float),
    Column("record_box", JSON),                         # xyxy pixels
    Column("tested", Boolean, nullable=False),
    Column("s_p", Float),
    Column("s_r", Float),
    Column("s", Float),
    UniqueConstraint("run_id", "image_id", "unit_key", name="uq_detection_unit"),
    UniqueConstraint("run_id", "unit_id", name="uq_detection_unit_id"),
)
Index("ix_detection_units_run", detection_units.c.run_id, detection_units.c.tested)

detection_verdicts = Table(
    "detection_verdicts", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("image_id", String(300), nullable=False),
    Column("unit_key", String(16), nullable=False),
    Column("mutation_key", String(200), nullable=False),
    Column("operator", String(60), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("verdict", String(10), nullable=False),      # holds | violated | n/a
    Column("outcome", String(40)),                      # objrel.relations.detect.OUTCOMES; null: no mutant
    Column("t_source", Integer, nullable=False),
    Column("t_mutant", Integer),                        # null when the check did not run
    Column("iou_source", Float, nullable=False),
    Column("iou_mutant", Float),                        # IoU of rcd' with the object
    Column("label_changed", Boolean),
    Column("distance", Float),                          # ORMR V-B distance for this mutant
    Column("seed", String(24)),                         # derived mutation seed (as text: 63-bit)
    Column("record_index", Integer),                    # rcd': index in the mutant's records; null: none
    Column("record_label", String(200)),
    Column("record_score", Float),
    Column("record_box", JSON),                         # xyxy pixels
    Column("detections", JSON),                         # every record on the mutant; null: no mutant made
    Column("note", Text),                               # why the mutation was not applicable
    UniqueConstraint("run_id", "image_id", "unit_key", "mutation_key", name="uq_detection_verdict"),
)
Index("ix_detection_verdicts_run", detection_verdicts.c.run_id, detection_verdicts.c.relation)

# ---- revision 0003

account_roles = Table(
    "account_roles", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("reviewer_id", Integer, ForeignKey("reviewers.id", ondelete="CASCADE"), nullable=False),
    Column("role", String(20), nullable=False),
    Column("granted_by", String(100)),                  # null: the server operator (CLI) or the demo build
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("reviewer_id", "role", name="uq_account_role"),
)

sign_in_failures = Table(
    "sign_in_failures", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name_key", String(100), nullable=False),    # the casefolded name that was typed
    Column("client", String(200), nullable=False),      # who asked (the app's session or address)
    Column("at", DateTime(timezone=True), nullable=False),
)
Index("ix_sign_in_failures_name", sign_in_failures.c.name_key, sign_in_failures.c.at)
Index("ix_sign_in_failures_client", sign_in_failures.c.client, sign_in_failures.c.at)

judgment_versions = Table(
    "judgment_versions", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("version", Integer, nullable=False),         # 1, 2, ...: the current call is the highest
    Column("verdict", String(12), nullable=False),
    Column("reasons", JSON, nullable=False),
    Column("note", Text),
    Column("after_close", Boolean, nullable=False),     # made after both reviewers closed the review sample
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "sample_id", "relation", "reviewer", "version", name="uq_judgment_version"),
)

allowed_models = Table(
    "allowed_models", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("task", String(10), nullable=False),         # classifier | detector
    Column("name", String(200), nullable=False),        # a zoo name or detector spec (never "py:")
    Column("added_by", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("task", "name", name="uq_allowed_model"),
)

attempts = Table(
    "attempts", schema_1,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("sample_id", String(300), primary_key=True),
    Column("count", Integer, nullable=False),
)

SCHEMA_1 = (meta, runs, samples, predictions, verdicts, votes, reviewers, judgments, consensus, review_samples,
            explanations, retests)
SCHEMA_2 = (detection_units, detection_verdicts)
SCHEMA_3 = (account_roles, sign_in_failures, judgment_versions, allowed_models, attempts)

# ---------------------------------------------------------------- revision 0007: the review day
app_sessions = Table(
    "app_sessions", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("reviewer", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_seen_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True)),
    Column("revoked_because", String(40)),
)
Index("ix_app_sessions_reviewer", app_sessions.c.reviewer)

review_jobs = Table(
    "review_jobs", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(20), nullable=False),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("status", String(12), nullable=False),
    Column("done", Integer, nullable=False),
    Column("total", Integer, nullable=False),
    Column("pid", Integer),
    Column("host", String(255)),
    Column("error", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
)
Index("ix_review_jobs_run", review_jobs.c.run_id, review_jobs.c.relation, review_jobs.c.kind)

SCHEMA_7 = (app_sessions, review_jobs)

# ---------------------------------------------------------------- revision 0008: results kept per run
run_summaries = Table(
    "run_summaries", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("stamp", String(200), nullable=False),
    Column("payload", Text, nullable=False),
    Column("seconds", Float, nullable=False),
    Column("computed_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "name", name="uq_run_summary"),
)

SCHEMA_8 = (run_summaries,)

# ---------------------------------------------------------------- revision 0009: review teams (k reviewers)
# Who reviews which drawn item: an admin's assignment (``assigned_by``) or the draw's even spread (null).
review_assignments = Table(
    "review_assignments", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("assigned_by", String(100)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "relation", "sample_id", "reviewer", name="uq_review_assignment"),
)
Index("ix_review_assignments_reviewer", review_assignments.c.reviewer, review_assignments.c.run_id,
      review_assignments.c.relation)

SCHEMA_9 = (review_assignments,)

# ---------------------------------------------------------------- revision 0010: comment threads and gold items
item_comments = Table(
    "item_comments", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("author", String(100), nullable=False),
    Column("kind", String(12), nullable=False),
    Column("body", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
Index("ix_item_comments_item", item_comments.c.run_id, item_comments.c.relation, item_comments.c.sample_id)

gold_items = Table(
    "gold_items", schema_1,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("call", String(12), nullable=False),
    Column("marked_by", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "relation", "sample_id", name="uq_gold_item"),
)

SCHEMA_10 = (item_comments, gold_items)
