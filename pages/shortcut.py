"""Shortcut: the planted-shortcut benchmark's tables and charts (``objrel bench shortcut``).

Reads the results JSON the bench writes; a button starts a quick benchmark as a separate
process.  Every table comes from objrel.studies.shortcut.tables.tables; this page only draws.
"""

import time

import streamlit as st

from objrel import access
from objrel.app import captions, charts
from objrel.app.caches import open_store
from objrel.app.current_actor import current_actor
from objrel.app.text import plain
from objrel.app.state import keep_choice
from objrel.app.tables import chart, share_columns, table
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.errors import ObjrelError
from objrel.progress import format_duration, job_progress_text, job_run_text, share
from objrel.studies.shortcut.tables import tables as bench_tables
from objrel.studies.shortcut.browse import BOTH_MODELS, FAILED, MODEL_CHOICES, MODEL_LABELS, QUICK_DIR, RUNNING, \
    THRESHOLD_CHOICES, THRESHOLD_LABELS, TRUTH_CHOICES, TRUTH_LABELS, base_rate_text, draw_choices, open_results, \
    quick_duration_text, quick_expected_s, quick_job, quick_progress, quick_time_share, results_files, \
    score_table_for, start_quick_benchmark

use_app_navigation()

FILE_KEY = "shortcut_results_file"

store = open_store()
actor = page_sidebar(store)
# How long a quick benchmark takes: measured on the development machine, or the last one here (browse).
expected = quick_expected_s(actor)
st.title("Shortcut benchmark")
st.caption("Models whose shortcut we planted: objects on backgrounds whose type names the class in 95% of the "
           "training scenes (biased) or in 1/K (unbiased). Counterfactual scenes tell which correct answers truly "
           "rely on the background, so objrel's relations get a precision *and* a recall; then repair by "
           "retraining (DetReport s4.5) and relevancy-guided attacks (ORMR s VIII).")

files = results_files()
c1, c2 = st.columns([4, 1])
if files:
    keep_choice(FILE_KEY, files[0], files)
    name = c1.selectbox("Results", files, key=FILE_KEY,
                        format_func=lambda n: "quick benchmark" if n.startswith(QUICK_DIR + "/") else "full benchmark")
else:
    name = None
if access.permits(actor, access.START_BENCHMARK):
    if c2.button("Run a quick benchmark", key="shortcut_run_quick",
                 help=f"Starts `objrel bench shortcut --quick` in its own process ({quick_duration_text(expected)}); "
                      "its progress shows here while it runs."):
        try:
            start_quick_benchmark(actor)
        except (ValueError, ObjrelError) as exc:
            st.error(plain(exc))


@st.fragment(run_every=2)
def job_status():
    # the session is read again on every refresh: a signed-out or revoked run operator reads no more log lines
    actor = current_actor(store)
    job = quick_job(actor)
    if job is None:
        return
    if job.state == RUNNING:
        elapsed = time.time() - job.started_at
        st.info(f"Quick benchmark running, started by {plain(job.started_by)} {format_duration(elapsed)} ago; it "
                f"takes {plain(quick_duration_text(expected))}.")
        st.progress(quick_time_share(job, expected), text=f"{format_duration(elapsed)} so far")
        # The benchmark writes no overall count: its time so far, the objrel run it is making (count, rate,
        # ETA, from its store) and the stage its log reported last.
        now = quick_progress(actor, job)
        if now.estimate is not None:
            st.progress(share(now.estimate), text=plain(job_run_text(now)))
        st.caption(plain(job_progress_text(now)))
    elif job.state == FAILED and access.permits(actor, access.READ_LOG):
        st.error("The last quick benchmark stopped without results; its log is quick.log in the quick folder.")


job_status()

if name is None:
    st.info("No benchmark results yet. The server's operator runs `objrel bench shortcut` (about 10 minutes on 2 "
            "CPU cores); run operators can start a quick one with the button above.")
    st.stop()

try:
    results = open_results(actor, name)
    T = bench_tables(results)
except (ValueError, KeyError, ObjrelError) as exc:
    st.error(f"These results cannot be shown: {plain(exc)}")
    st.stop()

st.markdown(captions.shortcut_summary(results))

# ---------------------------------------------------------------- 1. flag ratios

st.header("Biased vs unbiased: how often objrel flags them")
ratios = T["ratios"]
chart(charts.flag_ratio_bars(ratios), "shortcut_ratios", "shortcut_flag_ratios")
st.caption("MR-1 / MR-2: share of correct test inferences flagged by the 3-colour votes; reliant (truth): share "
           "the counterfactuals call background-reliant (some swap or bare background, over every draw, changes the "
           "answer); reliant (majority): share whose reliance rate is at least 0.5. The biased model should be "
           "flagged far more often.")
table(ratios, "shortcut_ratios", "shortcut_ratios.csv", share_columns(
    ratios, ["accuracy", "swapped accuracy", "MR-1 ratio", "MR-2 ratio", "MR-1&2 ratio", "reliant (truth)",
             "reliant (majority)"]))

# ---------------------------------------------------------------- 2. precision / recall

st.header("Precision and recall against the ground truth")
which = st.radio("Inferences of", MODEL_CHOICES, horizontal=True, key="shortcut_score_model",
                 format_func=MODEL_LABELS.get)
truth = st.radio("Ground truth", TRUTH_CHOICES, horizontal=True, key="shortcut_score_truth",
                 format_func=TRUTH_LABELS.get)
draw_options = draw_choices(results)
c1, c2 = st.columns(2)
draws = c1.radio("Counterfactual backgrounds per other class's type", draw_options, index=len(draw_options) - 1,
                 horizontal=True, key="shortcut_score_draws")
threshold = c2.radio("Reliant when the reliance rate is", THRESHOLD_CHOICES, horizontal=True,
                     key="shortcut_score_threshold", format_func=THRESHOLD_LABELS.get)
st.caption("Reliance rate: the larger of the swap-flip rate (the share of swaps onto other classes' backgrounds "
           "that change the answer) and the background-sufficiency rate. "
           + base_rate_text(results, which, draws, threshold))
scores = score_table_for(results, which, truth, draws, threshold)
if scores.empty:
    st.info("No scored detector in these results.")
else:
    chart(charts.precision_recall_bars(scores), "shortcut_scores", f"shortcut_precision_recall_{which}_{truth}")
    st.caption("TP: flagged and background-reliant; FP: flagged, not reliant; FN: reliant, not flagged. Counts are "
               "summed over seeds. EMSE21 could measure only precision (s7.3); the planted ground truth gives "
               "recall too.")
    table(scores, "shortcut_scores", f"shortcut_scores_{which}_{truth}.csv", share_columns(
        scores, ["precision", "precision_lo", "precision_hi", "recall", "recall_lo", "recall_hi"]))
auc = T["auc"]
auc = auc[(auc["draws"] == draws) & (auc["threshold"] == threshold)]
st.subheader("How well S ranks reliant inferences")
st.caption("ROC AUC of ORMR's S_p, S_r and S against the swap-flip rate at this setting; a low S (the object "
           "matters little) is read as reliant, so 1 is a perfect ranking, 0.5 chance and below 0.5 the reverse.")
table(auc, "shortcut_auc", f"shortcut_auc_{draws}_{threshold}.csv")

# ---------------------------------------------------------------- multi-label and detection arms

st.header("Multi-label and detection arms")
arm = st.radio("Arm", ("multi", "detection"), horizontal=True, key="shortcut_arm",
               format_func={"multi": "multi-label models", "detection": "stand-in detector"}.get)
if arm == "detection":
    st.warning("A construction demo, not a measurement: the stand-in detector is a hand-written rule that names "
               "small objects by the background colour, so MR-2's colour fills find its reliance by construction. "
               "The note column marks figures its counts fix (a detector that flags every unit).")
    arm_model = BOTH_MODELS
else:
    arm_model = st.radio("Multi-label model", MODEL_CHOICES, horizontal=True, key="shortcut_arm_model",
                         format_func=MODEL_LABELS.get)
    st.caption("Both trained on multi-label scenes (biased: rho; unbiased: 1/K) and tested on the same biased "
               "scenes. " + base_rate_text(results, arm_model, draws, threshold, arm))
arm_scores = score_table_for(results, arm_model, "reliant", draws, threshold, arm)
if arm_scores.empty:
    st.info("This arm was not run in these results.")
else:
    table(arm_scores, "shortcut_arm_scores", f"shortcut_{arm}_{draws}_{threshold}.csv", share_columns(
        arm_scores, ["precision", "precision_lo", "precision_hi", "recall", "recall_lo", "recall_hi"]))

# ---------------------------------------------------------------- 3. repair

st.header("Repair by retraining on violating mutants")
rep = T["repair"]
chart(charts.repair_bars(rep), "shortcut_repair", "shortcut_repair")
st.caption("Before: the biased model; control: fine-tuned as long on its original training images only; after: "
           "fine-tuned with its violating mutants added at the share the "
           "validation split picked (lowest MR-2 ratio within 2 points of the original accuracy). Swapped accuracy: "
           "every test object on a background of another class's type.")
table(rep, "shortcut_repair", "shortcut_repair.csv",
      share_columns(rep, ["share", "MR-1 ratio", "MR-2 ratio", "accuracy", "swapped accuracy"]))
sweep = T["sweep"]
with st.expander("Share search (DetReport Tables 5-6)"):
    chart(charts.share_search_lines(sweep), "shortcut_sweep", "shortcut_share_search")
    table(sweep, "shortcut_sweep", "shortcut_share_search.csv", share_columns(
        sweep, ["share", "val accuracy", "val MR-2 ratio", "test accuracy", "test MR-2 ratio", "swapped accuracy"]))

# ---------------------------------------------------------------- 4. attack

st.header("Transplanting attack: relevancy-guided vs random")
att = T["attack"]
if att.empty:
    st.info("No attack results.")
else:
    chart(charts.attack_bars(att), "shortcut_attack", "shortcut_attack")
    st.caption("Scenario 1: an object of l_a transplanted into an image of l_b; success when the model no longer "
               "says l_a. Scenario 2: an object of l_b transplanted into an image of l_a; success when it still says "
               "l_a. Guided picks images with the lowest S_p / S_r first (ORMR s VIII).")
    table(att, "shortcut_attack", "shortcut_attack.csv", share_columns(att, ["rate"]))
