"""objrel's Streamlit app, served behind objrel's web gate by serve.py (`make run`, or `streamlit run serve.py`;
the store comes from $OBJREL_STORE)."""

import streamlit as st

from objrel.app.icon import page_icon
from objrel.app.style import apply_style
from objrel.web.gate import serving

# The icon is an image drawn here and served by this server: a ":material/...:" or emoji icon would make the
# browser fetch the favicon from a font or emoji CDN.
st.set_page_config(page_title="objrel", page_icon=page_icon(), layout="wide")

# The default page is served at "/" whatever its url_path says (its url_path only names it inside
# Streamlit), so "/overview" gets a hidden page of its own that hands over to it.  The default never changes
# with the sign-in: a reload happens before the sign-in is read back from its cookie, and a default that moved
# would leave a reloaded URL naming a page that no longer exists.  Signed-in people find their work one click
# away (My work, and a pointer on the Overview).
OVERVIEW = st.Page("pages/overview.py", title="Overview", url_path="home", default=True, icon=":material/dashboard:")
MY_WORK = st.Page("pages/my_work.py", title="My work", url_path="my-work", icon=":material/assignment_ind:")


def overview_alias() -> None:
    st.switch_page(OVERVIEW)


PAGES = [
    OVERVIEW,
    MY_WORK,
    st.Page("pages/explore.py", title="Explore", url_path="explore", icon=":material/query_stats:"),
    st.Page("pages/review.py", title="Review", url_path="review", icon=":material/fact_check:"),
    st.Page("pages/agreement.py", title="Agreement", url_path="agreement", icon=":material/handshake:"),
    st.Page("pages/runs.py", title="Runs", url_path="runs", icon=":material/play_circle:"),
    st.Page("pages/inspect.py", title="Inspect", url_path="inspect", icon=":material/hub:"),
    st.Page("pages/shortcut.py", title="Shortcut", url_path="shortcut", icon=":material/science:"),
    st.Page("pages/users.py", title="Users", url_path="users", icon=":material/group:"),
    st.Page(overview_alias, title="Overview", url_path="overview", visibility="hidden"),
]
if st.context.headers.get("host") and not serving():
    # A browser reached app.py without the gate (`streamlit run app.py`): no origin check, no upload grants and no
    # session cookie, so nothing is shown.
    st.error("objrel serves its app with `make run` or `streamlit run serve.py`, which put its web gate in front.")
    st.stop()
apply_style()  # the app's CSS (narrow windows), once per run
st.navigation(PAGES, position="top").run()
