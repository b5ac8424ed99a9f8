"""Runs: start a run or a re-run as a background process, watch it, cancel it."""

import streamlit as st

from objrel.engine import jobs
from objrel.app.caches import open_store, run_label, run_table
from objrel.config import RunConfig
from objrel.models import LITE_SIZES
from objrel.mutations import PRESETS, operators
from objrel.app.widgets import use_app_navigation

use_app_navigation()

store = open_store()
st.title("Runs")
st.caption("Runs started here are separate processes: they keep going if you close the page, and every page "
           "sees their progress through the store.")

runs = store.list_runs()

with st.expander("Start a run", expanded=not runs):
    base = None
    if runs:
        names = ["(new run)"] + [r.id for r in runs]
        pick = st.selectbox("Start from the settings of", names, key="runs_base",
                            format_func=lambda v: v if isinstance(v, str) else run_label(store.get_run(v)))
        base = None if isinstance(pick, str) else RunConfig.from_dict(store.get_run(pick).config)
    cfg = base or RunConfig()
    with st.form("runs_form"):
        c1, c2 = st.columns(2)
        model = c1.text_input("Model", cfg.model, key="runs_model",
                              help=f"{', '.join(LITE_SIZES)}, torchvision:<arch>, or py:module:factory")
        weights = c1.text_input("Weights file (optional)", cfg.weights or "", key="runs_weights")
        dataset = c2.text_input("Dataset (annotation file, or 'demo')", cfg.dataset, key="runs_dataset")
        images = c2.text_input("Images folder (optional)", cfg.images or "", key="runs_images")
        c3, c4, c5 = st.columns(3)
        plan = c3.selectbox("Plan", list(PRESETS), index=list(PRESETS).index(cfg.plan), key="runs_plan")
        extra = c3.multiselect("Extra operators", [o.name for o in operators() if o.grid],
                               default=list(cfg.operators), key="runs_ops")
        vote_k = c4.number_input("Violations needed of 3 colours", 1, 3, cfg.vote_k or 2, key="runs_vote_k")
        dilate = c4.number_input("Dilate region (px)", 0, 50, cfg.dilate, key="runs_dilate")
        test_all = c5.toggle("Test incorrect inferences too", cfg.test_all, key="runs_all")
        seed = c5.number_input("Seed", 0, 2**31 - 1, cfg.seed, key="runs_seed")
        name = st.text_input("Name (optional)", "", key="runs_name")
        go = st.form_submit_button("Start run", type="primary")
    if go:
        try:
            new = RunConfig(model=model.strip(), weights=weights.strip() or None, dataset=dataset.strip(),
                            images=images.strip() or None, plan=plan, operators=tuple(extra),
                            vote_k=int(vote_k), dilate=int(dilate), test_all=bool(test_all), seed=int(seed),
                            name=name.strip() or None, task=cfg.task, threshold=cfg.threshold)
            with st.spinner("Starting the run process ..."):
                job = jobs.start_run(store.url, new)
            st.success(f"Run {job.run_id} started (process {job.pid}; log {job.log}).")
        except Exception as exc:  # shown to the user, the page stays up
            st.error(f"Could not start the run: {exc}")


@st.fragment(run_every=2)
def live():
    table = run_table(store)
    if table.empty:
        st.info("No runs yet.")
        return
    active = [r for r in store.list_runs() if jobs.display_status(r) in ("running", "pending")]
    for r in active:
        frac = r.n_done / r.n_total if r.n_total else 0.0
        c1, c2 = st.columns([5, 1])
        c1.progress(frac, text=f"{run_label(r)}: {r.n_done}/{r.n_total} samples, {r.n_skipped} skipped")
        if r.status == "running" and c2.button("Cancel", key=f"cancel_{r.id}"):
            jobs.cancel(store, r.id)
    st.dataframe(table, hide_index=True, width="stretch", key="runs_table")


st.subheader("History")
live()

stopped = [r for r in runs if jobs.display_status(r) in ("stalled", "cancelled", "failed", "pending")
           and r.n_done < r.n_total]
if stopped:
    st.subheader("Resume a stopped run")
    pick = st.selectbox("Run", [r.id for r in stopped], format_func=lambda i: run_label(store.get_run(i)),
                        key="runs_resume_pick")
    if st.button("Resume", key="runs_resume_btn"):
        job = jobs.start_run(store.url, resume=pick)
        st.success(f"Run {job.run_id} resumed (process {job.pid}).")
