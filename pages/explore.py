"""explore page (being built)."""

import streamlit as st

st.title("Explore")
st.info("This page is being built.")
