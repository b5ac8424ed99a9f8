"""Overview: the runs in the store, each run's headline row (EMSE21 Tables 5/6), striking examples,
links into the other pages and a one-click stakeholder report."""

import pandas as pd
import streamlit as st

from objrel.analysis.overview import detection_summary_table, run_history, striking_examples, summary_table, \
    runs_that_tested_nothing, tested_runs
from objrel.app import captions, run_captions
from objrel.app.caches import cached_review_item, open_store
from objrel.app.state import keep_choice
from objrel.app.tables import frame
from objrel.app.text import plain
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.review.queue import ALL_FLAGGED, link_params

use_app_navigation()

st.title("objrel")
st.caption("Does the model look at the object, or at the background? MR-1 corrupts the object and expects the "
           "prediction to change or lose certainty; MR-2 corrupts the background and expects it to stay. "
           "Correct inferences that break a relation were made for reasons other than the object.")

store = open_store()
actor = page_sidebar(store)
if actor.signed_in:
    st.page_link("pages/my_work.py", label=f"My work: {plain(actor.name)}'s review queues and open disagreements",
                 icon=":material/assignment_ind:")
runs = run_history(store.list_runs())
if runs.empty:
    st.info("No runs yet. Start one on the Runs page, with `objrel run --dataset demo`, or `make run`.")
    st.page_link("pages/runs.py", label="Start a run", icon=":material/play_circle:")
    st.stop()

links = st.columns(4)
links[0].page_link("pages/explore.py", label="Explore distributions", icon=":material/query_stats:")
links[1].page_link("pages/review.py", label="Review flagged inferences", icon=":material/fact_check:")
links[2].page_link("pages/agreement.py", label="Reviewer agreement", icon=":material/handshake:")
links[3].page_link("pages/runs.py", label="Start or watch runs", icon=":material/play_circle:")

# Runs that tested nothing have no headline (every ratio would be '-'): a warning with the reasons instead.
empty = runs_that_tested_nothing(store)
for t in empty:
    st.warning(run_captions.nothing_tested_text(t), icon=":material/warning:")
empty_ids = {t.run_id for t in empty}
headline = [row for row in summary_table(store) if row["run"] not in empty_ids]
detection_headline = [row for row in detection_summary_table(store) if row["run"] not in empty_ids]
if headline:
    st.subheader("Headline per run")
    st.caption("Correct inferences flagged by the 2-of-3 colour vote; ratios over correct inferences.")
    frame(pd.DataFrame(headline), key="overview_summary")
if detection_headline:
    st.subheader("Detection runs")
    st.caption("Units are ground-truth objects and unmatched detections; flagged units are those detected on the "
               "source (T = 1). Missing / incorrect detections count MR-2 verdicts (unit x mutation).")
    frame(pd.DataFrame(detection_headline), key="overview_detection_summary")

st.subheader("Runs")
frame(runs, key="overview_runs")

st.subheader("Striking examples")
show_incorrect = st.toggle("Show incorrect inferences", key="overview_show_incorrect",
                           help="Runs tested with test_all also test incorrect inferences; a flag on a wrong "
                                "answer says little about the reasons of a right one, so they are hidden by default.")
examples = striking_examples(store, include_incorrect=show_incorrect)
if not examples:
    st.info("No flagged inference to show" + ("." if show_incorrect else " among the correct ones."))
else:
    st.caption("Flagged by both relations first, then by the lowest object-relevancy score S.")
    cols = st.columns(len(examples))
    for col, ex in zip(cols, examples):
        rel = ex["review_relation"]
        item = cached_review_item(store, ex["run_id"], ex["sample_id"], rel)
        mutant = item.violating_mutant(rel)
        col.image(item.source.image, caption=f"{plain(ex['image'])} (run {ex['run_id']})", width="stretch")
        col.image(mutant.image, caption=mutant.key, width="stretch")
        badge = captions.incorrect_badge(ex["correct"], item.is_detection)
        if badge:
            col.markdown(badge)
        col.markdown(captions.example_caption(ex, item, mutant))
        col.page_link("pages/review.py", label="Open in Review",
                      query_params={**link_params(ex["run_id"], rel, ex["sample_id"]), "queue": ALL_FLAGGED})

st.subheader("Stakeholder report")
finished = {r.id: r for r in tested_runs(store)}
if finished:
    keep_choice("overview_report_run", next(iter(finished)), list(finished))
    pick = st.selectbox("Run", list(finished), format_func=lambda i: captions.run_label(finished[i]),
                        key="overview_report_run")
    # One report per state of the run, built once for every session (objrel.analysis.shared_report): a session
    # keeps no copy of its own.
    from objrel.analysis.shared_report import ready_report, report_html
    from objrel.errors import WorkRefused

    if st.button("Build the HTML report", key="overview_report_btn"):
        with st.spinner("Building the report ..."):
            try:
                report_html(actor, store, pick)
            except WorkRefused as exc:
                st.warning(captions.plain(exc))
    built = ready_report(store, pick)
    if built is not None:
        st.download_button("Download report (one self-contained HTML file)", built,
                           file_name=f"objrel-run{pick}.html", mime="text/html", key="overview_report_dl")
