"""runs page (being built)."""

import streamlit as st

st.title("Runs")
st.info("This page is being built.")
