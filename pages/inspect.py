"""Inspect: class-level confusion and bias (DeepInspect, seed 004 s3-4).

The page shows an inspection result: a JSON file written by ``objrel inspect --out``
(picked from $OBJREL_INSPECT_DIR, default ``var/inspect``, or any path), an uploaded
one, or the planted benchmark computed here on demand (a few seconds; cached per seed).
Every number comes from objrel.studies.deepinspect; this page only picks and draws.
"""

import hashlib
import os
from pathlib import Path

import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from objrel.studies.deepinspect import InspectResult, bias_table, confusion_table, evaluation_table, example_images
from objrel.studies.deepinspect.planted import PlantedSpec, format_planted_ranks, planted_ranks, run_planted
from objrel.studies.deepinspect.result import aucec_curves, heatmap_classes, napvd_frame
from objrel.app.widgets import use_app_navigation

use_app_navigation()

RESULTS_DIR = Path(os.environ.get("OBJREL_INSPECT_DIR", "var/inspect"))
SOURCES = ("Results file", "Upload", "Planted benchmark")
# Largest upload accepted (ARCHITECTURE.md decision 9); a 1000-class result is about 40 MB.
MAX_UPLOAD_MB = 200
EXAMPLES = 4
METHOD_STYLE = {"deepinspect": "solid", "weights": "dashdot", "random": "dash", "optimal": "dot"}


@st.cache_resource(show_spinner=False, max_entries=8)
def load_file(path: str, mtime: float) -> InspectResult:
    """A results file, cached until it changes on disk (the result is immutable)."""
    del mtime
    return InspectResult.load(path)


@st.cache_resource(show_spinner=False, max_entries=4)
def load_upload(data: bytes) -> InspectResult:
    return InspectResult.load(data)


@st.cache_resource(show_spinner=False, max_entries=4)
def planted_result(seed: int) -> InspectResult:
    return run_planted(PlantedSpec(seed=seed))


@st.cache_resource(show_spinner="Ranking the class pairs ...", max_entries=8)
def ranked_tables(key: tuple, _result: InspectResult):
    """(confusion, bias) tables of one result, built once: 1,000 classes make 499,500 pairs (about 10 s)."""
    del key
    return confusion_table(_result), bias_table(_result)


def init_state(key, default, lo=None, hi=None):
    """Initialise a widget's state when absent, and pull a stored number back into [lo, hi]."""
    if key not in st.session_state:
        st.session_state[key] = default
    elif lo is not None and not lo <= st.session_state[key] <= hi:
        st.session_state[key] = min(max(st.session_state[key], lo), hi)


def newest_result() -> str:
    files = sorted(RESULTS_DIR.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) \
        if RESULTS_DIR.is_dir() else []
    return str(files[0]) if files else ""


st.title("Inspect")
st.caption("Class-level bugs that per-image relations miss: two classes the model cannot tell apart (confusion, "
           "low NAPVD), and two classes it treats unequally in the presence of a third (bias, high avg_bias). "
           "DeepInspect (seed 004) reads them from how often each neuron fires per predicted class.")

init_state("inspect_source", SOURCES[0])
init_state("inspect_path", newest_result())
init_state("inspect_seed", 0)
source = st.radio("Result", SOURCES, key="inspect_source", horizontal=True)

result = None
try:
    if source == "Results file":
        path = st.text_input("Results file", key="inspect_path",
                             help=f"A JSON file written by `objrel inspect --out`; the newest in {RESULTS_DIR}/ is "
                                  "filled in.")
        if not path or not Path(path).is_file():
            st.info(f"No results file{f' at {path}' if path else ''}. Write one with "
                    f"`objrel inspect --model MODEL --dataset ANNOTATIONS --out {RESULTS_DIR}/result.json`, or "
                    "`objrel inspect --planted --out ...` for the synthetic benchmark, then come back here.")
            st.stop()
        key = ("file", str(Path(path).resolve()), Path(path).stat().st_mtime)
        result = load_file(*key[1:])
    elif source == "Upload":
        upload = st.file_uploader("Results file (JSON)", type=["json"], key="inspect_upload")
        if upload is None:
            st.info("Upload a JSON file written by `objrel inspect --out`.")
            st.stop()
        if upload.size > MAX_UPLOAD_MB * 2**20:
            st.error(f"{upload.name} is {upload.size / 2**20:.0f} MB; the limit is {MAX_UPLOAD_MB} MB. Open it "
                     "by path instead.")
            st.stop()
        data = upload.getvalue()
        key = ("upload", hashlib.sha256(data).hexdigest())
        result = load_upload(data)
    else:
        c1, c2 = st.columns([1, 3])
        seed = int(c1.number_input("Seed", min_value=0, max_value=10_000, step=1, key="inspect_seed"))
        c2.caption("Trains a small CNN on 32x32 images with a planted confusion (disc / blush) and a planted "
                   "bias (tagged / stripes), then inspects it: a few seconds on two cores.")
        if c2.button("Train and inspect", key="inspect_planted_run"):
            st.session_state["inspect_planted_done"] = seed
        if st.session_state.get("inspect_planted_done") != seed:
            st.info("Press **Train and inspect** to compute the planted benchmark for this seed.")
            st.stop()
        with st.spinner("Training and inspecting the planted benchmark ..."):
            result = planted_result(seed)
        key = ("planted", seed)
except ValueError as exc:
    st.error(f"Cannot read this result: {exc}")
    st.stop()

# ---------------------------------------------------------------- summary

st.caption(f"**{result.model.get('name', '?')}** on **{result.source.get('name', result.source.get('kind'))}**, "
           f"Th = {result.activation_threshold}, {result.task}-label; computed in {result.seconds:.1f} s.")
conf, bias = ranked_tables(key, result)
m = st.columns(5)
m[0].metric("Images", f"{result.n_images:,}")
m[1].metric("Neurons", f"{result.n_neurons:,}", help=f"{len(result.layers)} conv / linear layers")
m[2].metric("Classes", result.n_classes, help="predicted classes analysed")
m[3].metric("Confusion flags", int(conf["flagged"].sum()), help="pairs with NAPVD < mean - 1 std")
m[4].metric("Bias flags", int(bias["flagged"].sum()), help="pairs with avg_bias > mean + 1 std")
if result.planted:
    for line in format_planted_ranks(planted_ranks(result)):
        (st.info if "not ranked" in line else st.success)(line)

# ---------------------------------------------------------------- heatmap

st.subheader("NAPVD between classes")
if result.n_classes > 3:
    init_state("inspect_heat_n", min(result.n_classes, 40), 3, result.n_classes)
    shown = st.slider("Classes shown (those of the most confused pairs first)", 3, result.n_classes,
                      key="inspect_heat_n")
else:
    shown = result.n_classes
frame = napvd_frame(result, heatmap_classes(result, shown))
fig = px.imshow(frame, color_continuous_scale="Viridis_r", aspect="auto",
                labels={"color": "NAPVD", "x": "", "y": ""})
fig.update_layout(height=max(320, 18 * len(frame)))
st.plotly_chart(fig, width="stretch", key="inspect_heatmap")
st.caption("Euclidean distance between the classes' neuron activation probability vectors (seed 004 Eq. 2); "
           "dark cells are pairs the model may not separate.")

# ---------------------------------------------------------------- ranked pairs

init_state("inspect_top", min(20, len(conf)), 1, len(conf))
top = int(st.number_input("Pairs listed", min_value=1, max_value=len(conf), step=5, key="inspect_top"))
left, right = st.columns(2)
with left:
    st.subheader("Confusion")
    st.dataframe(conf.head(top), hide_index=True, width="stretch", key="inspect_conf_table")
    st.download_button("Download CSV", conf.to_csv(index=False), file_name="confusion.csv", mime="text/csv",
                       key="inspect_conf_csv", on_click="ignore")
with right:
    st.subheader("Bias")
    st.dataframe(bias.head(top), hide_index=True, width="stretch", key="inspect_bias_table")
    st.download_button("Download CSV", bias.to_csv(index=False), file_name="bias.csv", mime="text/csv",
                       key="inspect_bias_csv", on_click="ignore")

# ---------------------------------------------------------------- examples

st.subheader("Examples")
choices = [f"confusion #{r.rank}: {r.a} / {r.b}" for r in conf.head(top).itertuples()] + \
          [f"bias #{r.rank}: {r.a} / {r.b} (third: {r.third})" for r in bias.head(top).itertuples()]
init_state("inspect_pair", choices[0])
if st.session_state["inspect_pair"] not in choices:
    st.session_state["inspect_pair"] = choices[0]
picked = st.selectbox("Pair", choices, key="inspect_pair")
index = choices.index(picked)
row = conf.iloc[index] if index < min(top, len(conf)) else bias.iloc[index - min(top, len(conf))]
classes = [row["a"], row["b"]] + ([row["third"]] if "third" in row and row["third"] else [])
cols = st.columns(len(classes))
for col, name in zip(cols, classes):
    with col:
        st.markdown(f"**{name}**" + (" (third class)" if name == row.get("third") and len(classes) == 3 else ""))
        images = example_images(result, name, EXAMPLES)
        if images:
            st.image(images, width=96, caption=[f"predicted {name}"] * len(images))
        else:
            st.caption("no example images available (files moved, or none kept)")

# ---------------------------------------------------------------- evaluation

st.subheader("Against the ground truth")
if not result.evaluations:
    st.info("This result has no ground truth: the images had no labels the model's classes could name. With "
            "labelled data, `objrel inspect` measures type1 / type2 confusion and confusion disparity from the "
            "model's errors and scores DeepInspect's precision, recall and AUCEC against them.")
else:
    init_state("inspect_error", "confusion")
    error = st.radio("Error type", ["confusion", "bias"], key="inspect_error", horizontal=True)
    curves = aucec_curves(result, error)
    fig = go.Figure()
    for method, part in curves.groupby("method", sort=False):
        ev = result.evaluation(error, method)
        label = f"{method} (AUCEC {ev.aucec:.3f})" if ev and ev.aucec is not None else method
        fig.add_trace(go.Scatter(x=part["inspected"], y=part["found"], mode="lines", name=label,
                                 line={"dash": METHOD_STYLE.get(method, "solid")}))
    di = result.evaluation(error, "deepinspect")
    if di and di.n_pairs:
        fig.add_vline(x=di.n_flagged / di.n_pairs, line_color="red", line_dash="dash",
                      annotation_text="1-std cut-off")
    fig.update_layout(xaxis_title="share of pairs inspected", yaxis_title="share of true errors found",
                      height=380, xaxis_range=[0, 1], yaxis_range=[0, 1.02])
    st.plotly_chart(fig, width="stretch", key="inspect_aucec")
    st.caption(f"Cost-effectiveness (seed 004 s4.3): pairs inspected in DeepInspect's order against the "
               f"{result.ground_truth.kind} ground truth from {result.ground_truth.n_images:,} labelled images.")
    table = evaluation_table(result)
    st.dataframe(table, hide_index=True, width="stretch", key="inspect_eval_table")
    st.download_button("Download CSV", table.to_csv(index=False), file_name="evaluation.csv", mime="text/csv",
                       key="inspect_eval_csv", on_click="ignore")

if result.notes:
    with st.expander("Notes"):
        for note in result.notes:
            st.markdown(f"- {note}")
