"""objrel's Streamlit app: `streamlit run app.py` (the store comes from $OBJREL_STORE)."""

import streamlit as st

st.set_page_config(page_title="objrel", page_icon=":material/center_focus_strong:", layout="wide")

pages = [
    st.Page("pages/overview.py", title="Overview", url_path="overview", default=True,
            icon=":material/dashboard:"),
]
st.navigation(pages).run()
