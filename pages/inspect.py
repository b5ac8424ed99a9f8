"""Inspect: class-level confusion and bias (DeepInspect, DeepInspect s3-4).

The page shows an inspection result: a JSON file written by ``objrel inspect --out``
(picked from $OBJREL_INSPECT_DIR, default ``var/inspect``, or any path), an uploaded
one, or the planted benchmark computed here on demand (a few seconds; cached per seed).
Every number comes from objrel.studies.deepinspect; this page only picks and draws.
"""

import hashlib

import streamlit as st

from objrel import access
from objrel.app import captions, charts
from objrel.app.text import plain
from objrel.app.caches import inspect_file, inspect_upload, open_store, planted_result, ranked_tables
from objrel.app.state import init_value, keep_choice, keep_number
from objrel.app.tables import table
from objrel.app.upload_box import upload_box
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.errors import ObjrelError
from objrel.studies.deepinspect import evaluation_table, example_images
from objrel.studies.deepinspect.browse import MAX_UPLOAD_MB, examples_allowed, pair_choices, planted_lines, \
    result_files, results_dir
from objrel.studies.deepinspect.result import heatmap_classes, napvd_frame

use_app_navigation()

SOURCES = ("Results folder", "Upload", "Planted benchmark")
EXAMPLES = 4
EXAMPLE_PX = 96
MAX_HEATMAP_CLASSES = 40
MIN_HEATMAP_CLASSES = 3
DEFAULT_PAIRS_LISTED = 20
ERROR_TYPES = ("confusion", "bias")

actor = page_sidebar(open_store())
st.title("Inspect")
st.caption("Class-level bugs that per-image relations miss: two classes the model cannot tell apart (confusion, "
           "low NAPVD), and two classes it treats unequally in the presence of a third (bias, high avg_bias). "
           "DeepInspect reads them from how often each neuron fires per predicted class.")

keep_choice("inspect_source", SOURCES[0], SOURCES)
init_value("inspect_seed", 0)
source = st.radio("Result", SOURCES, key="inspect_source", horizontal=True)

result = None
show_examples = True
try:
    if source == "Results folder":
        files = result_files()
        if not files:
            st.info("No results file in the results folder yet. The server's operator writes one with "
                    "`objrel inspect --model MODEL --dataset ANNOTATIONS --out DIR/result.json` (DIR: the folder "
                    "$OBJREL_INSPECT_DIR names, var/inspect by default), or `objrel inspect --planted --out ...`.")
            st.stop()
        keep_choice("inspect_file", files[0], files)
        name = st.selectbox("Results file", files, key="inspect_file", help="The results folder's files, newest first.")
        key = ("file", name, (results_dir() / name).stat().st_mtime)
        result = inspect_file(actor, name, key[2])
    elif source == "Upload":
        if not access.permits(actor, access.UPLOAD_RESULTS):
            st.info("Uploading a results file is for signed-in accounts (sidebar). The results folder and the "
                    "planted benchmark are open to everyone.")
            st.stop()
        upload = upload_box(actor, access.UPLOAD_RESULTS, f"Results file (JSON, at most {MAX_UPLOAD_MB} MB)",
                            MAX_UPLOAD_MB * 1024 * 1024, type=["json"], key="inspect_upload")
        if upload is None:
            st.info("Upload a JSON file written by `objrel inspect --out`.")
            st.stop()
        data = upload.getvalue()
        key = ("upload", hashlib.sha256(data).hexdigest())
        result = inspect_upload(actor, upload.name, key[1], data)
        del data
        show_examples = False
    else:
        c1, c2 = st.columns([1, 3])
        seed = int(c1.number_input("Seed", min_value=0, max_value=10_000, step=1, key="inspect_seed"))
        c2.caption("Trains a small CNN on 32x32 images with a planted confusion (disc / blush) and a planted "
                   "bias (tagged / stripes), then inspects it: a few seconds on two cores.")
        can_train = access.permits(actor, access.TRAIN_PLANTED)
        if c2.button("Train and inspect", key="inspect_planted_run", disabled=not can_train,
                     help=None if can_train else "for run operators and admins"):
            st.session_state["inspect_planted_done"] = seed
        if st.session_state.get("inspect_planted_done") != seed:
            st.info("Press **Train and inspect** to compute the planted benchmark for this seed." if can_train else
                    "Training the planted benchmark is for run operators and admins (sign in, sidebar).")
            st.stop()
        with st.spinner("Training and inspecting the planted benchmark ..."):
            result = planted_result(actor, seed)
        key = ("planted", seed)
except (ValueError, ObjrelError) as exc:   # NotAllowed, a bad or over-deep file: one line, never a traceback
    st.error(f"Cannot show this result: {plain(exc)}")
    st.stop()
show_examples = show_examples and examples_allowed(result)

# ---------------------------------------------------------------- summary

st.caption(captions.inspect_summary(result))
conf, bias = ranked_tables(key, result)
m = st.columns(5)
m[0].metric("Images", f"{result.n_images:,}")
m[1].metric("Neurons", f"{result.n_neurons:,}", help=f"{len(result.layers)} conv / linear layers")
m[2].metric("Classes", result.n_classes, help="predicted classes analysed")
m[3].metric("Confusion flags", int(conf["flagged"].sum()), help="pairs with NAPVD < mean - 1 std")
m[4].metric("Bias flags", int(bias["flagged"].sum()), help="pairs with avg_bias > mean + 1 std")
if result.planted:
    for line, ranked in planted_lines(result):
        (st.success if ranked else st.info)(plain(line))

# ---------------------------------------------------------------- heatmap

st.subheader("NAPVD between classes")
if result.n_classes > MIN_HEATMAP_CLASSES:
    keep_number("inspect_heat_n", min(result.n_classes, MAX_HEATMAP_CLASSES), MIN_HEATMAP_CLASSES, result.n_classes)
    shown = st.slider("Classes shown (those of the most confused pairs first)", MIN_HEATMAP_CLASSES, result.n_classes,
                      key="inspect_heat_n")
else:
    shown = result.n_classes
st.plotly_chart(charts.napvd_heatmap(napvd_frame(result, heatmap_classes(result, shown))), width="stretch",
                key="inspect_heatmap")
st.caption(captions.NAPVD_HEATMAP_CAPTION)

# ---------------------------------------------------------------- ranked pairs

keep_number("inspect_top", min(DEFAULT_PAIRS_LISTED, len(conf)), 1, len(conf))
top = int(st.number_input("Pairs listed", min_value=1, max_value=len(conf), step=5, key="inspect_top"))
left, right = st.columns(2)
with left:
    st.subheader("Confusion")
    table(conf.head(top), "inspect_conf", "confusion.csv", download=conf)
with right:
    st.subheader("Bias")
    table(bias.head(top), "inspect_bias", "bias.csv", download=bias)

# ---------------------------------------------------------------- examples

st.subheader("Examples")
choices = {c.label: c for c in pair_choices(conf, bias, top)}
keep_choice("inspect_pair", next(iter(choices)), list(choices))
pair = choices[st.selectbox("Pair", list(choices), key="inspect_pair")]
for col, name in zip(st.columns(len(pair.classes)), pair.classes):
    with col:
        st.markdown(f"**{plain(name)}**" + (" (third class)" if name == pair.third else ""))
        images = example_images(result, name, EXAMPLES) if show_examples else []
        if not show_examples:
            st.caption("no example images: an uploaded result, or one whose dataset lies outside the allowed "
                       "data folders, names files the server does not open")
        elif images:
            st.image(images, width=EXAMPLE_PX, caption=[f"predicted {plain(name)}"] * len(images))
        else:
            st.caption("no example images available (files moved, or none kept)")

# ---------------------------------------------------------------- evaluation

st.subheader("Against the ground truth")
if not result.evaluations:
    st.info("This result has no ground truth: the images had no labels the model's classes could name. With "
            "labelled data, `objrel inspect` measures type1 / type2 confusion and confusion disparity from the "
            "model's errors and scores DeepInspect's precision, recall and AUCEC against them.")
else:
    keep_choice("inspect_error", ERROR_TYPES[0], ERROR_TYPES)
    error = st.radio("Error type", ERROR_TYPES, key="inspect_error", horizontal=True)
    st.plotly_chart(charts.aucec_figure(result, error), width="stretch", key="inspect_aucec")
    st.caption(f"Cost-effectiveness (DeepInspect s4.3): pairs inspected in DeepInspect's order against the "
               f"{result.ground_truth.kind} ground truth from {result.ground_truth.n_images:,} labelled images.")
    table(evaluation_table(result), "inspect_eval", "evaluation.csv")

if result.notes:
    with st.expander("Notes"):
        for note in result.notes:
            st.markdown(f"- {plain(note)}")
