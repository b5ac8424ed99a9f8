"""Tables of the objrel store (SQLAlchemy Core; SQLite and PostgreSQL alike).

Only recipes live here, never mutant pixels: a mutant is rebuilt from its sample
row (image path, target objects), its mutation key (operator + params, from the
run's plan) and its seed.
"""

from __future__ import annotations

from sqlalchemy import (JSON, BigInteger, Boolean, Column, DateTime, Float, ForeignKey, Index, Integer, LargeBinary,
                        MetaData,
                        String, Table, Text, UniqueConstraint, func)

metadata = MetaData()

# Characters of a relation verdict: room for 'not evaluated' (a mutation a decided lazy vote skipped).
VERDICT_LENGTH = 16
# Characters of a reviewer's validity call on a mutant (objrel.review.VALIDITY: valid | invalid | unsure).
VALIDITY_LENGTH = 12

# The schema_version recorded in objrel_meta: 1-3 before objrel used Alembic (1: schema 1; 2: detection
# tables; 3: samples notes, attempts and the trust tables), 4 from revision 0005 on.  The schema itself is
# versioned by Alembic revisions (objrel/store/alembic/versions, objrel.store.revisions); this number only
# makes objrels from before Alembic refuse newer stores.  These tables are the head revision's schema: a
# change here is a new revision.
SCHEMA_VERSION = 4

meta = Table(
    "objrel_meta", metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs", metadata,
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
    # Live progress of the current invocation (objrel.engine.loop): forward passes done and expected, and when
    # they were last written (revision 0004).
    Column("passes_done", Integer),
    Column("passes_expected", Integer),
    Column("progress_at", DateTime(timezone=True)),
    # The lease of the process working on the run (objrel.store.leases, revision 0006): a random token and the
    # holder's host; its pid and last beat are ``pid`` and ``heartbeat_at``.
    Column("lease_token", String(64)),
    Column("lease_host", String(255)),
    # Run ids are never reused (revision 0005): SQLite would otherwise give a deleted newest run's id again.
    sqlite_autoincrement=True,
)

samples = Table(
    "samples", metadata,
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
    Column("dropped", JSON),         # invalid annotations left out of the region: [{category, code, reason}]
    Column("notes", JSON),           # what the store changed to keep the row (NUL bytes escaped, ...)
    UniqueConstraint("run_id", "sample_id", name="uq_sample"),
)
Index("ix_samples_run_status", samples.c.run_id, samples.c.status)
# A run's newest sample row in one index step: the stamp of its kept results (revision 0008).
Index("ix_samples_run_row", samples.c.run_id, samples.c.id)

predictions = Table(
    "predictions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("mutation_key", String(200), nullable=False),  # "source" for the source image
    Column("seed", String(24)),                           # derived mutation seed (as text: 63-bit)
    Column("prediction", JSON),                           # Prediction.to_dict(); null when n/a
    UniqueConstraint("run_id", "sample_id", "mutation_key", name="uq_prediction"),
)

verdicts = Table(
    "verdicts", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("mutation_key", String(200), nullable=False),
    Column("operator", String(60), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("verdict", String(VERDICT_LENGTH), nullable=False),  # holds | violated | n/a | not evaluated
    Column("source_certainty", Float),
    Column("mutant_certainty", Float),
    Column("label_changed", Boolean),
    Column("distance", Float),                       # ORMR V-A distance for this mutant
    Column("note", Text),
    UniqueConstraint("run_id", "sample_id", "mutation_key", name="uq_verdict"),
)
Index("ix_verdicts_run", verdicts.c.run_id, verdicts.c.relation)

votes = Table(
    "votes", metadata,
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

# ---------------------------------------------------------------- review (the app's tables)

reviewers = Table(
    "reviewers", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("pass_hash", String(200)),       # scrypt hash "scrypt$n$r$p$salt_hex$hash_hex"; null for OIDC users
    Column("oidc_subject", String(300)),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("settings", JSON),               # per-account settings, e.g. {"lime_after_call": true} (rev 0007)
)

judgments = Table(
    "judgments", metadata,
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
    Column("validity", String(VALIDITY_LENGTH)),     # the call on the mutant: valid | invalid | unsure (rev 0007)
    UniqueConstraint("run_id", "sample_id", "relation", "reviewer", name="uq_judgment"),
)
Index("ix_judgments_run", judgments.c.run_id, judgments.c.relation)

consensus = Table(
    "consensus", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("verdict", String(12), nullable=False),
    Column("reasons", JSON, nullable=False),
    Column("note", Text),
    Column("adjudicator", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("validity", String(VALIDITY_LENGTH)),     # the call on the mutant: valid | invalid | unsure (rev 0007)
    UniqueConstraint("run_id", "sample_id", "relation", name="uq_consensus"),
)

review_samples = Table(
    "review_samples", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("position", Integer, nullable=False),
    Column("seed", BigInteger, nullable=False),
    Column("population", Integer, nullable=False),   # flagged inferences the sample was drawn from
    Column("k", Integer),                            # reviewers per item (rev 0009); null: 2, as before teams
    UniqueConstraint("run_id", "relation", "sample_id", name="uq_review_sample"),
)

# Who judges which drawn item (rev 0009): an admin's assignment (``assigned_by``) or the draw's even spread over
# a pool (null).  A draw without rows is open to every reviewer, as before teams.
review_assignments = Table(
    "review_assignments", metadata,
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

explanations = Table(
    "explanations", metadata,
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
    "retests", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("box", JSON, nullable=False),        # the redrawn xyxy box
    Column("result", JSON, nullable=False),     # votes and verdicts of the re-test
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# ---------------------------------------------------------------- detection runs (objrel.store.detections)
# A detection run keeps one ``samples`` row per image and the source's records as that image's ``source``
# prediction; what it tests is a *unit* (a source record tied to its Associated Object, or an object the
# detector missed).  Votes stay in ``votes``, keyed by the unit's ``unit_id``, so review, judgments and
# review samples treat a unit as one inference of either task.

detection_units = Table(
    "detection_units", metadata,
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
    "detection_verdicts", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("image_id", String(300), nullable=False),
    Column("unit_key", String(16), nullable=False),
    Column("mutation_key", String(200), nullable=False),
    Column("operator", String(60), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("verdict", String(VERDICT_LENGTH), nullable=False),  # holds | violated | n/a | not evaluated
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

# ---------------------------------------------------------------- the trust model (objrel.store.accounts, reviews)
# Roles of an account (reviewer | adjudicator | run-operator | admin; several per account), failed
# sign-ins (for throttling), every version of every judgment, and the models an admin allows the app to run.

account_roles = Table(
    "account_roles", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("reviewer_id", Integer, ForeignKey("reviewers.id", ondelete="CASCADE"), nullable=False),
    Column("role", String(20), nullable=False),
    Column("granted_by", String(100)),                  # null: the server operator (CLI) or the demo build
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("reviewer_id", "role", name="uq_account_role"),
)

sign_in_failures = Table(
    "sign_in_failures", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name_key", String(100), nullable=False),    # the casefolded name that was typed
    Column("client", String(200), nullable=False),      # who asked (the app's session or address)
    Column("at", DateTime(timezone=True), nullable=False),
)
Index("ix_sign_in_failures_name", sign_in_failures.c.name_key, sign_in_failures.c.at)
Index("ix_sign_in_failures_client", sign_in_failures.c.client, sign_in_failures.c.at)

judgment_versions = Table(
    "judgment_versions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("version", Integer, nullable=False),         # 1, 2, ...: the current call is the highest
    Column("verdict", String(12), nullable=False),
    Column("reasons", JSON, nullable=False),
    Column("note", Text),
    Column("after_close", Boolean, nullable=False),     # made after the review sample closed (all k of each item)
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("validity", String(VALIDITY_LENGTH)),     # the call on the mutant: valid | invalid | unsure (rev 0007)
    UniqueConstraint("run_id", "sample_id", "relation", "reviewer", "version", name="uq_judgment_version"),
)

allowed_models = Table(
    "allowed_models", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("task", String(10), nullable=False),         # classifier | detector
    Column("name", String(200), nullable=False),        # a zoo name or detector spec (never "py:")
    Column("added_by", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("task", "name", name="uq_allowed_model"),
)

# Names are unique ignoring case: objrel.review.accounts admits only ASCII names, whose lower() is their casefold.
# (Revision 0003 adds it to older stores; objrel.store.accounts still tries on a store whose names prevented it.)
reviewers_name_key = Index("uq_reviewers_name_key", func.lower(reviewers.c.name), unique=True)

# ---------------------------------------------------------------- crash bookkeeping (objrel.engine.loop)
# One row per sample a run started and has not committed yet; a sample whose process died twice is
# recorded as skipped ('crashed-twice') on the next resume instead of being tried a third time.
attempts = Table(
    "attempts", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("sample_id", String(300), primary_key=True),
    Column("count", Integer, nullable=False),
)

# ---------------------------------------------------------------- the review day (revision 0007)
# A signed-in browser's session: only the SHA-256 of its random cookie token is kept (objrel.store.sessions);
# it ends at expires_at, or earlier when revoked (sign-out, a role change, an admin).
app_sessions = Table(
    "app_sessions", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("reviewer", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("last_seen_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True)),
    Column("revoked_because", String(40)),              # sign-out | role-change | admin | ...
)
Index("ix_app_sessions_reviewer", app_sessions.c.reviewer)

# Work the app starts in the background for a review sample (LIME computed ahead): its progress, read by pages.
review_jobs = Table(
    "review_jobs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(20), nullable=False),         # lime
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("status", String(12), nullable=False),       # queued | running | finished | failed | cancelled
    Column("done", Integer, nullable=False),
    Column("total", Integer, nullable=False),
    Column("pid", Integer),
    Column("host", String(255)),
    Column("error", Text),                              # one line, no path
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("finished_at", DateTime(timezone=True)),
)
Index("ix_review_jobs_run", review_jobs.c.run_id, review_jobs.c.relation, review_jobs.c.kind)

# ---------------------------------------------------------------- results kept per run (revision 0008)
# What a page shows of a run (its headline, per-label and size tables, statistics over several runs) computed
# once for each state of the runs it reads and kept as JSON (objrel.store.summaries, objrel.store.kept): a
# page view reads one small row instead of every sample of the run.  ``name`` says what was computed and with
# which arguments; ``stamp`` the state of the runs it was computed from; a row whose stamp is not the runs'
# current one is stale and computed again.  A result over several runs hangs on the first of them.
run_summaries = Table(
    "run_summaries", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("stamp", String(200), nullable=False),
    Column("payload", Text, nullable=False),
    Column("seconds", Float, nullable=False),            # how long computing it took
    Column("computed_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "name", name="uq_run_summary"),
)

# ---------------------------------------------------------------- comment threads and gold items (revision 0010)
# An item's comment thread (objrel.store.comments): comments and resolve/reopen events, never changed; the
# thread is resolved when its newest event is a resolve.  Readers see others' entries only once the sample closes.
item_comments = Table(
    "item_comments", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("author", String(100), nullable=False),
    Column("kind", String(12), nullable=False),          # comment | resolve | reopen
    Column("body", Text),                                # the comment's text; null for an event
    Column("created_at", DateTime(timezone=True), nullable=False),
)
Index("ix_item_comments_item", item_comments.c.run_id, item_comments.c.relation, item_comments.c.sample_id)

# Items an admin marked with a known call (objrel.review.gold), mixed unannounced into every reviewer's queue.
gold_items = Table(
    "gold_items", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("relation", String(8), nullable=False),
    Column("sample_id", String(300), nullable=False),
    Column("call", String(12), nullable=False),          # the known call: tp | fp | uncertain
    Column("marked_by", String(100), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("run_id", "relation", "sample_id", name="uq_gold_item"),
)
