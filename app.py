"""objrel's Streamlit app: `streamlit run app.py` (the store comes from $OBJREL_STORE)."""

import streamlit as st

from objrel.app.icon import page_icon

# The icon is an image drawn here and served by this server: a ":material/...:" or emoji icon would make the
# browser fetch the favicon from a font or emoji CDN.
st.set_page_config(page_title="objrel", page_icon=page_icon(), layout="wide")

PAGES = [
    st.Page("pages/overview.py", title="Overview", url_path="overview", default=True, icon=":material/dashboard:"),
    st.Page("pages/explore.py", title="Explore", url_path="explore", icon=":material/query_stats:"),
    st.Page("pages/review.py", title="Review", url_path="review", icon=":material/fact_check:"),
    st.Page("pages/agreement.py", title="Agreement", url_path="agreement", icon=":material/handshake:"),
    st.Page("pages/runs.py", title="Runs", url_path="runs", icon=":material/play_circle:"),
    st.Page("pages/inspect.py", title="Inspect", url_path="inspect", icon=":material/hub:"),
    st.Page("pages/shortcut.py", title="Shortcut", url_path="shortcut", icon=":material/science:"),
    st.Page("pages/users.py", title="Users", url_path="users", icon=":material/group:"),
]
st.navigation(PAGES, position="top").run()
