"""Shortcut: the planted-shortcut benchmark's tables and charts (``objrel bench shortcut``).

Reads the results JSON the bench writes; a button starts a quick benchmark as a separate
process.  Every table comes from objrel.studies.shortcut.bench.tables; this page only draws.
"""

import time
from pathlib import Path

import streamlit as st

from objrel.app import captions, charts
from objrel.app.caches import open_store
from objrel.app.captions import plain
from objrel.app.state import init_value
from objrel.app.tables import chart, share_columns, table
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.progress import job_progress, job_progress_text, job_run_text, share
from objrel.studies.shortcut import bench as B
from objrel.studies.shortcut.browse import FAILED, MODEL_CHOICES, MODEL_LABELS, RUNNING, TRUTH_CHOICES, TRUTH_LABELS, \
    default_results_path, quick_dir, quick_state, score_table_for

use_app_navigation()

JOB_KEY = "shortcut_job"
PATH_KEY = "shortcut_results_path"

init_value(PATH_KEY, default_results_path())


def open_quick(path):
    st.session_state[PATH_KEY] = path
    st.session_state.pop(JOB_KEY, None)


page_sidebar(open_store())
st.title("Shortcut benchmark")
st.caption("Models whose shortcut we planted: objects on backgrounds whose type names the class in 95% of the "
           "training scenes (biased) or in 1/K (unbiased). Counterfactual scenes tell which correct answers truly "
           "rely on the background, so objrel's relations get a precision *and* a recall; then repair by "
           "retraining (seed 001 s4.5) and relevancy-guided attacks (seed 002 s VIII).")

c1, c2 = st.columns([4, 1])
path = c1.text_input("Results file", key=PATH_KEY,
                     help="results.json written by `objrel bench shortcut --out DIR`")
quick_out = quick_dir(path)
if c2.button("Run a quick benchmark", key="shortcut_run_quick",
             help=f"Starts `objrel bench shortcut --quick --out {quick_out}` in its own process (about 30 s)."):
    pid, log = B.start_quick(quick_out)
    st.session_state[JOB_KEY] = {"pid": pid, "log": log, "out": quick_out, "started": time.time()}

job = st.session_state.get(JOB_KEY)
if job:
    @st.fragment(run_every=2)
    def job_status():
        quick = quick_state(job["pid"], job["out"])
        if quick.state == RUNNING:
            st.info(f"Quick benchmark running (process {job['pid']}, log {plain(job['log'])}) ...")
            # The benchmark writes no overall count: its time so far, the objrel run it is making (count, rate,
            # ETA, from its store) and the stage its log reported last.
            now = job_progress(job.get("started", time.time()), job["log"], Path(job["out"]) / B.STORE_FILE)
            if now.estimate is not None:
                st.progress(share(now.estimate), text=plain(job_run_text(now)))
            st.caption(plain(job_progress_text(now)))
        elif quick.state == FAILED:
            st.error(f"The quick benchmark stopped without results; see {plain(job['log'])}")
        else:
            st.success(f"Quick benchmark finished: {quick.results_file}")
            if st.button("Show the quick results", key="shortcut_open_quick", on_click=open_quick,
                         args=(quick.results_file,)):
                st.rerun(scope="app")

    job_status()

if not Path(path).is_file():
    st.info(f"No benchmark results at {path}. Run `objrel bench shortcut` (about 10 minutes on 2 CPU cores) or "
            "start a quick one with the button above.")
    st.stop()

try:
    results = B.load_results(path)
    T = B.tables(results)
except (ValueError, KeyError) as exc:
    st.error(f"{path} is not a shortcut-benchmark results file: {exc}")
    st.stop()

st.markdown(captions.shortcut_summary(results))

# ---------------------------------------------------------------- 1. flag ratios

st.header("Biased vs unbiased: how often objrel flags them")
ratios = T["ratios"]
chart(charts.flag_ratio_bars(ratios), "shortcut_ratios", "shortcut_flag_ratios")
st.caption("MR-1 / MR-2: share of correct test inferences flagged by the 3-colour votes; reliant (truth): share "
           "the counterfactuals call background-reliant. The biased model should be flagged far more often.")
table(ratios, "shortcut_ratios", "shortcut_ratios.csv", share_columns(
    ratios, ["accuracy", "swapped accuracy", "MR-1 ratio", "MR-2 ratio", "MR-1&2 ratio", "reliant (truth)"]))

# ---------------------------------------------------------------- 2. precision / recall

st.header("Precision and recall against the ground truth")
which = st.radio("Inferences of", MODEL_CHOICES, horizontal=True, key="shortcut_score_model",
                 format_func=MODEL_LABELS.get)
truth = st.radio("Ground truth", TRUTH_CHOICES, horizontal=True, key="shortcut_score_truth",
                 format_func=TRUTH_LABELS.get)
scores = score_table_for(results, which, truth)
if scores.empty:
    st.info("No scored detector in these results.")
else:
    chart(charts.precision_recall_bars(scores), "shortcut_scores", f"shortcut_precision_recall_{which}_{truth}")
    st.caption("TP: flagged and background-reliant; FP: flagged, not reliant; FN: reliant, not flagged. Counts are "
               "summed over seeds. Seed 000 could measure only precision (s7.3); the planted ground truth gives "
               "recall too.")
    table(scores, "shortcut_scores", f"shortcut_scores_{which}_{truth}.csv", share_columns(
        scores, ["precision", "precision_lo", "precision_hi", "recall", "recall_lo", "recall_hi"]))

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
with st.expander("Share search (seed 001 Tables 5-6)"):
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
               "l_a. Guided picks images with the lowest S_p / S_r first (seed 002 s VIII).")
    table(att, "shortcut_attack", "shortcut_attack.csv", share_columns(att, ["rate"]))
