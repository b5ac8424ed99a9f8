"""Overview: the runs in the store and each run's headline row (seed 000 Tables 5/6)."""

import pandas as pd
import streamlit as st

from objrel.app_support import open_store, run_table, summary_table

st.title("objrel")
st.caption("Does the model look at the object, or at the background? MR-1 corrupts the object and expects the "
           "prediction to change or lose certainty; MR-2 corrupts the background and expects it to stay.")

store = open_store()
runs = run_table(store)
if runs.empty:
    st.info(f"No runs in {store!r} yet. Start one with `objrel run --dataset demo` or `make run`.")
    st.stop()

st.subheader("Runs")
st.dataframe(runs, hide_index=True, width="stretch", key="overview_runs")

st.subheader("Headline per run (correct inferences flagged by the 3-colour vote)")
st.dataframe(pd.DataFrame(summary_table(store)), hide_index=True, width="stretch", key="overview_summary")
