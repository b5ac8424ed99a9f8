"""Explore: EMSE21's analyses over the runs in the store.

Per-label violations, object size (Fig. 8), model comparison (Tables 5/6), cross-model
overlap (Fig. 6), reliable vs unreliable accuracy (Tables 7/8), 3 vs 15 colours
(Table 4) and accuracy vs violation ratio (Fig. 10).  Every figure is computed by
objrel.analysis.flag_tables and the tests by objrel.analysis.significance; this page only picks runs and draws.
"""

import streamlit as st

from objrel.analysis import flag_tables as A
from objrel.analysis import significance as S
from objrel.app import captions, charts
from objrel.app.text import plain
from objrel.app.caches import cached_item_card, open_store
from objrel.app.formats import decimals, percent, pvalue
from objrel.app.state import keep_choice
from objrel.app.tables import PNG_HINT, chart, share_columns, table
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.store.detections import tested_unit_ids

use_app_navigation()

# Columns the page's tables show, so each fits at 1,400 px beside the sidebar; the CSV downloads hold every
# column: the object-size bins' index, edges and x value, the models' dataset (one at a time) and flag counts
# (the chart's bar labels), the untested and correct counts behind the reliable accuracy.
SIZE_TABLE_COLUMNS = ("interval", "tested", "flagged", "share")
MODEL_TABLE_COLUMNS = ("run", "name", "model", "evaluated", "correct", "accuracy", "mr1_ratio", "mr2_ratio",
                       "both_ratio")
# The overlap's image list: a thumbnail (longer side in pixels, JPEG) beside each file name.
OVERLAP_THUMB_PX = 64
OVERLAP_THUMB_QUALITY = 80
# Tested units offered in the detection view's list (a run can test a million).
UNIT_CHOICES = 500
# Images of the overlap list shown with thumbnails (those most runs flag; the list itself can hold the dataset).
OVERLAP_IMAGES = 48
RELIABLE_TABLE_COLUMNS = ("run", "model", "evaluated", "original", "unreliable", "unreliable_accuracy", "reliable",
                          "reliable_accuracy", "delta")



@st.cache_data(show_spinner=False, max_entries=512)
def overlap_image(url: str, run_id: int, sample_id: str, relation: str) -> tuple[str, str | None]:
    """An image's file name and a small JPEG of it as a data URI (None when its source cannot be read)."""
    import base64
    import io

    from PIL import Image

    card = cached_item_card(open_store(url), run_id, sample_id, relation)
    if card.source is None:
        return card.rel_path, None
    im = Image.fromarray(card.source.image)
    im.thumbnail((OVERLAP_THUMB_PX, OVERLAP_THUMB_PX))
    buf = io.BytesIO()
    im.convert("RGB").save(buf, format="JPEG", quality=OVERLAP_THUMB_QUALITY)
    return card.rel_path, "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def overlap_images(store, run_ids, relation: str):
    """The first ``OVERLAP_IMAGES`` images the selected runs flag (those most runs flag first), each with its file
    name and thumbnail (from the first run that flags it; the MR-2 panels stand in for MR-1&2), and how many
    images they flag in all."""
    per, total = A.flagged_by_sample_head(store, run_ids, relation, OVERLAP_IMAGES)
    shown_rel = A.MR2 if relation == A.BOTH else relation
    named = [overlap_image(store.url, int(runs.split(",")[0]), str(sid), shown_rel)
             for sid, runs in zip(per["sample_id"], per["runs"])]
    per.insert(0, "image", [uri for _, uri in named])
    per.insert(1, "file", [name for name, _ in named])
    return per, total


st.title("Explore")
st.caption("How often does each model rely on the background (MR-2 flags) or ignore the object (MR-1 flags)? "
           "Pick runs and a relation; every table downloads as CSV. " + PNG_HINT)

store = open_store()
page_sidebar(store)
catalog = A.run_catalog(store)
if catalog.empty:
    st.info("No runs with results yet. Start one with `objrel run --dataset demo` or `make run`, "
            "then come back here.")
    st.stop()

# ---------------------------------------------------------------- filters

datasets = sorted(catalog["dataset"].unique())
keep_choice("explore_dataset", datasets[0], datasets)
keep_choice("explore_relation", A.MR2, list(A.RELATIONS))
c1, c2, c3 = st.columns([1, 1, 1])
dataset = c1.selectbox("Dataset", datasets, key="explore_dataset",
                       help="Runs are compared on the same images, so one dataset at a time.")
in_dataset = catalog[catalog["dataset"] == dataset]
models = sorted(in_dataset["model"].unique())
keep_choice("explore_models", models, models)
chosen_models = c2.multiselect("Models", models, key="explore_models")
relation = c3.selectbox("Relation", list(A.RELATIONS), key="explore_relation",
                        help="MR-1: the object was corrupted and the prediction did not change or lose certainty. "
                             "MR-2: the background was corrupted and the prediction changed. MR-1&2: both.")
candidates = in_dataset[in_dataset["model"].isin(chosen_models)]
labels = {int(r): lab for r, lab in zip(candidates["run"], candidates["label"])}
run_options = list(labels)
keep_choice("explore_runs", run_options, run_options)
run_ids = st.multiselect("Runs", run_options, format_func=lambda r: labels[r], key="explore_runs")
if not run_ids:
    st.info("Select at least one run (and at least one model) above.")
    st.stop()
keep_choice("explore_focus_run", run_ids[0], run_ids)
stem = A.RELATION_COLUMN[relation]

# ---------------------------------------------------------------- per label

st.header("Per label")
c1, c2 = st.columns([2, 1])
focus = c1.selectbox("Run for the per-label view and the colour comparison", run_ids,
                     format_func=lambda r: labels[r], key="explore_focus_run")
keep_choice("explore_label_sort", "ratio", list(A.PER_LABEL_SORT_KEYS))
sort_key = c2.selectbox("Sort labels by", list(A.PER_LABEL_SORT_KEYS), key="explore_label_sort",
                        format_func={"correct": "correct inferences", "flagged": "flagged inferences",
                                     "ratio": "share flagged", "label": "class index"}.get)
labels_table = A.sort_per_label(A.per_label(store, focus), sort_key, relation)
if labels_table.empty:
    st.info("This run has no correct inference, so no label has anything to flag.")
else:
    chart(charts.per_label_bars(labels_table, stem, relation), "explore_labels", f"per_label_{relation}")
    st.caption(f"For each class, the share of the model's correct answers that {relation} flags as unreliable "
               "(bar labels: flagged / correct). A tall bar means the model often gets this class right for the "
               "wrong reasons.")
    table(labels_table, "explore_labels", f"run{focus}_per_label.csv",
          share_columns(labels_table, ("mr1_ratio", "mr2_ratio", "both_ratio")))

# ---------------------------------------------------------------- detections (detection runs only)

if store.get_run(focus).task == "detection":
    from objrel.review.items import detection_review_item

    st.header("Detections before and after")
    units = tested_unit_ids(store, focus, limit=UNIT_CHOICES)
    if len(units) == UNIT_CHOICES:
        st.caption(f"The first {UNIT_CHOICES} tested units, by image; the Review page walks through every flagged one.")
    if not units:
        st.info("This run has no tested detection unit yet.")
    else:
        keep_choice("explore_det_unit", units[0], units)
        unit = st.selectbox("Unit (image / record or missed object)", units, key="explore_det_unit")
        det_item = detection_review_item(store, focus, unit, relation)
        det_cols = st.columns(4)
        det_cols[0].image(det_item.source.image, width="stretch",
                          caption=captions.detection_source_caption(det_item.source))
        for col, p in zip(det_cols[1:], det_item.mutants):
            col.image(p.image, width="stretch", caption=captions.detection_thumb_caption(p))

# ---------------------------------------------------------------- object size

st.header("Object size")
bins = A.size_bins(store, run_ids, relation)
chart(charts.size_bars(bins, relation), "explore_size", f"object_size_{relation}")
st.caption("Correct answers grouped by how much of the picture the object covers (20 bins of 5 %, EMSE21 "
           "Fig. 8), pooled over the selected runs; each bar is the share flagged (labels: flagged / tested). "
           "Small objects often get flagged more: the model reads the background instead.")
shown = bins[bins["tested"] > 0]  # the chart shows every bin; the table only those with answers (CSV: all)
st.caption(f"Table: the {len(shown)} of {len(bins)} size bins with tested answers.")
table(shown[list(SIZE_TABLE_COLUMNS)], "explore_size", f"object_size_{relation}.csv", share_columns(bins, ["share"]),
      download=bins)

# ---------------------------------------------------------------- models

st.header("Models")
comparison = A.model_comparison(store, run_ids)
chart(charts.model_comparison_bars(comparison, labels), "explore_models", "model_comparison")
st.caption("One group per measure, one bar per run (EMSE21 Tables 5/6): accuracy, and the share of the correct "
           "answers each relation flags (bar labels: counts).")
table(comparison[list(MODEL_TABLE_COLUMNS)], "explore_models", "model_comparison.csv",
      share_columns(comparison, ("accuracy", "mr1_ratio", "mr2_ratio", "both_ratio")), download=comparison)

st.subheader("Do two runs flag the same answers? (McNemar)")
if len(run_ids) < 2:
    st.info("Select at least 2 runs to compare their flags sample by sample.")
elif relation == A.BOTH:
    st.info("McNemar's test compares one relation's flags: choose MR-1 or MR-2 above.")
else:
    keep_choice("explore_mcnemar_a", run_ids[0], run_ids)
    others = [r for r in run_ids if r != st.session_state.explore_mcnemar_a]
    keep_choice("explore_mcnemar_b", others[0], others)
    p1, p2 = st.columns(2)
    run_a = p1.selectbox("Run A", run_ids, format_func=lambda r: labels[r], key="explore_mcnemar_a")
    run_b = p2.selectbox("Run B", others, format_func=lambda r: labels[r], key="explore_mcnemar_b")
    try:
        mc = S.paired_flags(store, run_a, run_b, relation)
    except A.NotAvailable as exc:
        st.info(plain(exc))
    else:
        left, right = st.columns([3, 2])
        with left:
            chart(charts.mcnemar_bars(mc), "explore_mcnemar", f"mcnemar_{relation}")
        with right:
            m1, m2 = st.columns(2)
            m1.metric("p-value", pvalue(mc.pvalue), help=mc.method_label)
            m2.metric("Shared", mc.n, help="Samples both runs answered correctly and tested.")
            table(mc.table().rename_axis("run A \\ run B").reset_index(), "explore_mcnemar",
                  f"mcnemar_run{run_a}_run{run_b}_{relation}.csv")
        st.caption(f"McNemar's paired test on the {mc.n} samples both runs answered correctly: only the discordant "
                   f"pairs count, b = {mc.only_a} flagged by run A only and c = {mc.only_b} by run B only. "
                   f"p-value: {mc.method_label}. A small p-value says one model leans on shortcuts more often on "
                   "the same images.")

# ---------------------------------------------------------------- overlap

st.header("Do the models stumble on the same images?")
if len(run_ids) < A.MIN_OVERLAP_RUNS:
    st.info(f"Select at least {A.MIN_OVERLAP_RUNS} runs to compare which images they flag.")
else:
    overlap = A.cross_model_overlap(store, run_ids, relation)
    chart(charts.overlap_bars(overlap), "explore_overlap", f"overlap_{relation}")
    st.caption(f"Of the images that at least one selected run flags ({relation}), how many runs flag each one "
               "(EMSE21 Fig. 6; bar labels: images). Mostly 1 means the problem lies with the models, not the "
               "images; mostly all means the images themselves are hard.")
    table(overlap, "explore_overlap", f"overlap_{relation}.csv", share_columns(overlap, ["share"]))
    images, n_images = overlap_images(store, run_ids, relation)
    if n_images > len(images):
        st.caption(f"The {len(images)} images most runs flag, of {n_images} flagged in all (the table above "
                   "counts every one).")
    table(images, "explore_overlap_images", f"overlap_images_{relation}.csv",
          {"image": st.column_config.ImageColumn("image", width="small")}, download=images.drop(columns="image"))

# ---------------------------------------------------------------- reliable accuracy

st.header("Accuracy without the unreliable answers")
try:
    rel_acc = S.reliable_accuracy(store, run_ids, relation)
except A.NotAvailable as exc:
    st.info(plain(exc))
else:
    chart(charts.reliable_accuracy_bars(rel_acc.table, labels), "explore_reliable", f"reliable_accuracy_{relation}")
    st.caption(f"Accuracy on all answers (original), on the answers {relation} flags (unreliable) and on the rest "
               "(reliable), correct and incorrect answers alike (EMSE21 Tables 7/8). If removing the unreliable "
               "answers lifts accuracy a lot, the headline accuracy owes much to background shortcuts.")
    table(rel_acc.table[list(RELIABLE_TABLE_COLUMNS)], "explore_reliable", f"reliable_accuracy_{relation}.csv",
          share_columns(rel_acc.table, ("original", "unreliable_accuracy", "reliable_accuracy", "delta")),
          download=rel_acc.table)
    if rel_acc.wilcoxon is None:
        st.info(rel_acc.note)
    else:
        w = rel_acc.wilcoxon
        m1, m2, m3 = st.columns(3)
        m1.metric("Wilcoxon statistic", f"{w.statistic:g}")
        m2.metric("p-value", pvalue(w.pvalue), help="Reliable vs original accuracy, paired by run.")
        m3.metric("Paired runs", w.n)
        st.caption("Wilcoxon signed-rank test, paired by run, two-sided: a small p-value says removing the "
                   "unreliable answers changes accuracy consistently across models. "
                   f"p-value: {w.method_label}." +
                   (f" Note: {rel_acc.note}." if rel_acc.note else ""))

# ---------------------------------------------------------------- 3 vs 15 colours

st.header("3 colours or 15?")
if relation == A.BOTH:
    st.info("The colour comparison is made per relation: choose MR-1 or MR-2 above.")
elif not A.has_palette(store, focus):
    others = [labels[r] for r in run_ids if A.has_palette(store, r)]
    st.info(f"Run {plain(labels[focus])} has no 15-colour vote groups. "
            "To compare 3 with 15 colours (EMSE21 Table 4), "
            f"run the palette plan: `{A.PALETTE_PLAN_HINT}`"
            + (f"; or pick one of these runs above: {plain(', '.join(others))}." if others else "."))
else:
    cont = S.colour_contingency(store, focus, relation)
    m1, m2, m3 = st.columns(3)
    m1.metric("Cramér's V", decimals(cont.cramers_v), help=S.CRAMERS_V_STANDARD)
    m2.metric("chi-square p-value", pvalue(cont.pvalue))
    m3.metric("agreement", percent(cont.agreement))
    st.caption(f"For run {plain(labels[focus])}: how many answers the usual 3-colour vote and the 15-colour vote flag "
               f"({relation}). Pearson's chi-square test of independence (no continuity correction); Cramér's V "
               "near 1 means both votes agree, so 3 colours are enough. EMSE21 reports 0.743 and 0.835, computed "
               "from the Yates-corrected chi-square: that variant here is "
               f"{decimals(cont.cramers_v_yates)} (p {pvalue(cont.pvalue_yates)})."
               + (f" {cont.note}." if cont.note else ""))
    table(cont.table.rename_axis("vote").reset_index(), "explore_colours", f"run{focus}_colours_{relation}.csv")

# ---------------------------------------------------------------- accuracy vs violation ratio

st.header("Accuracy and unreliable answers")
try:
    corr = S.accuracy_violation_correlation(store, run_ids, relation)
except A.NotAvailable as exc:
    st.info(f"Correlation not available: {plain(exc)}.")
else:
    chart(charts.accuracy_scatter(corr, relation), "explore_corr", f"accuracy_vs_{relation}")
    m1, m2, m3 = st.columns(3)
    m1.metric("Pearson r", decimals(corr.r))
    m2.metric("p-value", pvalue(corr.pvalue))
    m3.metric("runs", corr.n)
    st.caption(f"Each dot is a run: its accuracy against the share of its correct answers that {relation} flags "
               "(EMSE21 Fig. 10). r near -1: more accurate models lean less on shortcuts; near 0: accuracy says "
               "nothing about it.")
    table(corr.table, "explore_corr", f"accuracy_vs_{relation}.csv", share_columns(corr.table, ("accuracy", "ratio")))
