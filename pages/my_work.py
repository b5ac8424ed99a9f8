"""My work: the signed-in person's review queues (judged of total, the next open item) and the disagreements
they may decide, each a click away from the item or run.  Every number comes from ``objrel.review.my_work``,
which reads only what the account may see (a reviewer's own calls; disagreements for adjudicators and admins)."""

from urllib.parse import urlencode

import streamlit as st

from objrel.app import review_panels
from objrel.app.caches import open_store
from objrel.app.text import plain
from objrel.app.state import remember_selection
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.review.my_work import SAMPLE_QUEUE, my_work

use_app_navigation()

REVIEW_PAGE = "pages/review.py"
AGREEMENT_PAGE = "pages/agreement.py"

store = open_store()
actor = page_sidebar(store)
st.title("My work")
if not actor.signed_in:
    st.info("Sign in (sidebar) to see your review queues and the disagreements you may decide. The Overview page "
            "shows every run to everyone.")
    st.stop()

work = my_work(actor, store)


def open_page(page: str, params: dict[str, str]) -> None:
    """Open Review or Agreement on ``params`` (kept as the session's selection, so the page opens there even
    where a page switch drops the query string).  Run on its own (no app navigation), the page offers a link."""
    from streamlit.errors import StreamlitPageNotFoundError

    remember_selection(params)
    try:
        st.switch_page(page, query_params=params)
    except StreamlitPageNotFoundError:
        st.markdown(f"[Open]({page.removeprefix('pages/').removesuffix('.py')}?{urlencode(params)})")


if not work.queues and not work.disputes:
    st.info("Nothing waits for you: no review sample has been drawn for you and no disagreement is yours to "
            "decide. Open a run on the Review page to draw its sample.")

if work.queues:
    st.subheader("Review queues")
    review_panels.my_pace(actor, store, [(q.run_id, q.relation) for q in work.queues], "in all your queues")
    st.caption("Each drawn review sample (run x relation): the items you judged of those you are to judge (the "
               "whole sample, or the items an admin assigned to you). Your calls stay blind: no one else's is "
               "counted here.")
    for q in work.queues:
        c1, c2, c3 = st.columns([4, 2, 2])
        team = f" (your {q.total} of the sample's items, {q.k} reviewers each)" if q.assigned else (
            f" ({q.k} reviewers per item)" if q.k != 2 else "")
        c1.markdown(f"**Run {q.run_id}, {q.relation}**: {plain(q.run_name)}{team}")
        c2.progress(q.judged / q.total if q.total else 0.0, text=f"{q.judged} of {q.total} judged")
        params = {"run": str(q.run_id), "relation": q.relation, "queue": SAMPLE_QUEUE, "item": q.next_item or ""}
        if c3.button("Next open item" if not q.done else "Look through", key=f"home_queue_{q.run_id}_{q.relation}",
                     type="primary" if not q.done else "secondary"):
            open_page(REVIEW_PAGE, params)

if work.disputes:
    st.subheader("Disagreements to decide")
    st.caption("Items two reviewers called differently, per run and relation; you decide those you did not judge.")
    for d in work.disputes:
        c1, c2, c3 = st.columns([4, 2, 2])
        c1.markdown(f"**Run {d.run_id}, {d.relation}**: {plain(d.run_name)}")
        c2.markdown(f"{d.open} open, {d.decided} decided")
        if c3.button("Decide" if d.open else "Look through", key=f"home_dispute_{d.run_id}_{d.relation}",
                     type="primary" if d.open else "secondary"):
            open_page(AGREEMENT_PAGE, {"run": str(d.run_id), "relation": d.relation})
