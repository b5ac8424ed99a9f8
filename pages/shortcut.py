"""Shortcut: the planted-shortcut benchmark's tables and charts (``objrel bench shortcut``).

Reads the results JSON the bench writes; a button starts a quick benchmark as a separate
process.  Every table comes from objrel.studies.shortcut.bench.tables; this page only draws.
"""

from pathlib import Path

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from objrel.engine.jobs import pid_alive
from objrel.studies.shortcut import bench as B
from objrel.app.widgets import use_app_navigation

use_app_navigation()

DEFAULT_PATH = str(Path(B.DEFAULT_OUT) / B.RESULTS_FILE)
PCT = st.column_config.NumberColumn(format="percent")
JOB_KEY = "shortcut_job"

if "shortcut_results_path" not in st.session_state:
    st.session_state["shortcut_results_path"] = DEFAULT_PATH


def table(df, key, file_name, pct_columns=()):
    st.dataframe(df, hide_index=True, width="stretch", key=f"{key}_table",
                 column_config={c: PCT for c in pct_columns if c in df.columns})
    st.download_button("Download CSV", df.to_csv(index=False), file_name=file_name, mime="text/csv",
                       key=f"{key}_csv", on_click="ignore")


def chart(fig, key, file_name):
    st.plotly_chart(fig, width="stretch", key=f"{key}_chart",
                    config={"toImageButtonOptions": {"format": "png", "filename": file_name}})


def open_quick(path):
    st.session_state["shortcut_results_path"] = path
    st.session_state.pop(JOB_KEY, None)


st.title("Shortcut benchmark")
st.caption("Models whose shortcut we planted: objects on backgrounds whose type names the class in 95% of the "
           "training scenes (biased) or in 1/K (unbiased). Counterfactual scenes tell which correct answers truly "
           "rely on the background, so objrel's relations get a precision *and* a recall; then repair by "
           "retraining (seed 001 s4.5) and relevancy-guided attacks (seed 002 s VIII).")

c1, c2 = st.columns([4, 1])
path = c1.text_input("Results file", key="shortcut_results_path",
                     help="results.json written by `objrel bench shortcut --out DIR`")
quick_out = str(Path(path).parent / "quick")
if c2.button("Run a quick benchmark", key="shortcut_run_quick",
             help=f"Starts `objrel bench shortcut --quick --out {quick_out}` in its own process (about 30 s)."):
    pid, log = B.start_quick(quick_out)
    st.session_state[JOB_KEY] = {"pid": pid, "log": log, "out": quick_out}

job = st.session_state.get(JOB_KEY)
if job:
    @st.fragment(run_every=2)
    def job_status():
        if pid_alive(job["pid"]):
            st.info(f"Quick benchmark running (process {job['pid']}, log {job['log']}) ...")
            return
        results_file = str(Path(job["out"]) / B.RESULTS_FILE)
        if Path(results_file).is_file():
            st.success(f"Quick benchmark finished: {results_file}")
            if st.button("Show the quick results", key="shortcut_open_quick", on_click=open_quick,
                         args=(results_file,)):
                st.rerun(scope="app")
        else:
            st.error(f"The quick benchmark stopped without results; see {job['log']}")

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

cfg = results["config"]
st.markdown(f"**{'Quick' if cfg['quick'] else 'Full'} run**: {len(results['seeds'])} seed(s), K = {cfg['n_classes']} "
            f"classes, rho = {cfg['rho']} vs 1/K, {cfg['n_train']} training / {cfg['n_test']} test scenes, "
            f"plan `{cfg['plan']}`. Times: " + ", ".join(f"{k} {v:.0f} s" for k, v in results["timings"].items()))

# ---------------------------------------------------------------- 1. flag ratios

st.header("Biased vs unbiased: how often objrel flags them")
ratios = T["ratios"]
means = ratios[ratios["seed"].astype(str) == "mean"] if (ratios["seed"].astype(str) == "mean").any() else ratios
long = means.melt(id_vars=["model"], value_vars=["MR-1 ratio", "MR-2 ratio", "MR-1&2 ratio", "reliant (truth)"],
                  var_name="measure", value_name="share")
fig = px.bar(long, x="measure", y="share", color="model", barmode="group",
             labels={"share": "share of correct inferences", "measure": ""})
fig.update_layout(yaxis_tickformat=".0%")
chart(fig, "shortcut_ratios", "shortcut_flag_ratios")
st.caption("MR-1 / MR-2: share of correct test inferences flagged by the 3-colour votes; reliant (truth): share "
           "the counterfactuals call background-reliant. The biased model should be flagged far more often.")
table(ratios, "shortcut_ratios", "shortcut_ratios.csv",
      ["accuracy", "swapped accuracy", "MR-1 ratio", "MR-2 ratio", "MR-1&2 ratio", "reliant (truth)"])

# ---------------------------------------------------------------- 2. precision / recall

st.header("Precision and recall against the ground truth")
which = st.radio("Inferences of", ["both", "biased", "unbiased"], horizontal=True, key="shortcut_score_model",
                 format_func={"both": "both models pooled", "biased": "biased model",
                              "unbiased": "unbiased model"}.get)
truth = st.radio("Ground truth", ["reliant", "matched"], horizontal=True, key="shortcut_score_truth",
                 format_func={"reliant": "background-reliant (every detector)",
                              "matched": "matched facet (MR-2: swap-dependent; MR-1: background-sufficient)"}.get)
scores = T[f"scores_{which}"] if truth == "reliant" else B.score_table(
    B.pooled_scores(results, None if which == "both" else which, "matched"))
if scores.empty:
    st.info("No scored detector in these results.")
else:
    fig = go.Figure()
    for metric, colour in (("precision", "#1f77b4"), ("recall", "#ff7f0e")):
        v = scores[metric].astype(float)
        fig.add_bar(name=metric, x=scores["detector"], y=v, marker_color=colour,
                    error_y={"type": "data", "symmetric": False,
                             "array": (scores[f"{metric}_hi"].astype(float) - v).clip(lower=0),
                             "arrayminus": (v - scores[f"{metric}_lo"].astype(float)).clip(lower=0)})
    fig.update_layout(barmode="group", yaxis_tickformat=".0%", yaxis_range=[0, 1.05],
                      yaxis_title="with Wilson 95% interval")
    chart(fig, "shortcut_scores", f"shortcut_precision_recall_{which}_{truth}")
    st.caption("TP: flagged and background-reliant; FP: flagged, not reliant; FN: reliant, not flagged. Counts are "
               "summed over seeds. Seed 000 could measure only precision (s7.3); the planted ground truth gives "
               "recall too.")
    table(scores, "shortcut_scores", f"shortcut_scores_{which}_{truth}.csv",
          ["precision", "precision_lo", "precision_hi", "recall", "recall_lo", "recall_hi"])

# ---------------------------------------------------------------- 3. repair

st.header("Repair by retraining on violating mutants")
rep = T["repair"]
per_seed = rep[rep["seed"].astype(str) != "mean"]
long = per_seed.melt(id_vars=["seed", "when"], value_vars=["MR-2 ratio", "swapped accuracy", "accuracy"],
                     var_name="measure", value_name="value")
long["seed"] = long["seed"].astype(str)
fig = px.bar(long, x="seed", y="value", color="when", facet_col="measure", barmode="group",
             category_orders={"when": ["before", "control", "after"]})
fig.update_layout(yaxis_tickformat=".0%")
chart(fig, "shortcut_repair", "shortcut_repair")
st.caption("Before: the biased model; control: fine-tuned as long on its original training images only; after: "
           "fine-tuned with its violating mutants added at the share the "
           "validation split picked (lowest MR-2 ratio within 2 points of the original accuracy). Swapped accuracy: "
           "every test object on a background of another class's type.")
table(rep, "shortcut_repair", "shortcut_repair.csv",
      ["share", "MR-1 ratio", "MR-2 ratio", "accuracy", "swapped accuracy"])
sweep = T["sweep"]
with st.expander("Share search (seed 001 Tables 5-6)"):
    tuned = sweep[sweep["share asked"].astype(str) != "original"].copy()
    tuned["seed"] = tuned["seed"].astype(str)
    fig = px.line(tuned, x="share", y=["val MR-2 ratio", "test MR-2 ratio", "swapped accuracy"], line_dash="seed",
                  markers=True, labels={"share": "share of added mutants in the training set", "value": ""})
    fig.update_layout(yaxis_tickformat=".0%")
    chart(fig, "shortcut_sweep", "shortcut_share_search")
    table(sweep, "shortcut_sweep", "shortcut_share_search.csv",
          ["share", "val accuracy", "val MR-2 ratio", "test accuracy", "test MR-2 ratio", "swapped accuracy"])

# ---------------------------------------------------------------- 4. attack

st.header("Transplanting attack: relevancy-guided vs random")
att = T["attack"]
if att.empty:
    st.info("No attack results.")
else:
    att = att.assign(scenario=att["scenario"].map({1: "1: object not recognised", 2: "2: label without object"}))
    fig = px.bar(att, x="scenario", y="successes", color="strategy", facet_col="model", barmode="group",
                 text="successes")
    chart(fig, "shortcut_attack", "shortcut_attack")
    st.caption("Scenario 1: an object of l_a transplanted into an image of l_b; success when the model no longer "
               "says l_a. Scenario 2: an object of l_b transplanted into an image of l_a; success when it still says "
               "l_a. Guided picks images with the lowest S_p / S_r first (seed 002 s VIII).")
    table(pd.DataFrame(T["attack"]), "shortcut_attack", "shortcut_attack.csv", ["rate"])
