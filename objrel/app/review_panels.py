"""The Review page's pieces for one review item: headline metrics, the image panels, the detail tables,
LIME, the object-size histogram and the box re-test.  Each draws what objrel computes; widget keys
start with ``review_`` (or carry the run and sample where a value belongs to one item)."""

from __future__ import annotations

import streamlit as st

from objrel.app import captions, charts
from objrel.app.caches import cached_size_bins, run_model
from objrel.app.formats import decimals, percent
from objrel.errors import NotAllowed
from objrel.review.items import ReviewItem, draw_box, thumbnail
from objrel.store import Store

PANEL_COLUMNS = 4               # the source, then the mutants three to a row
LIME_SAMPLE_CHOICES = (100, 300, 1000)
LIME_DEFAULT_SAMPLES = 300
NEW_BOX_PREVIEW_PX = 320


def headline(item: ReviewItem, relation: str) -> None:
    m = st.columns(5)
    m[0].metric("Ground truth", ", ".join(item.ground_truth) or "-")
    m[1].metric("Object area ratio", percent(item.area_ratio))
    m[2].metric("S_p (preserving)", decimals(item.s_p))
    m[3].metric("S_r (removing)", decimals(item.s_r))
    m[4].metric(f"{relation} vote", captions.vote_text(item, relation))


def image_panels(item: ReviewItem) -> None:
    """The source, then the relation under review's mutants on the first row and the other's below."""
    cols = st.columns(PANEL_COLUMNS)
    with cols[0]:
        st.image(item.source.image, caption=captions.source_image_caption(item.is_detection), width="stretch")
        st.markdown(captions.panel_caption(item.source, item.is_detection))
    for i, panel in enumerate(item.mutants):
        with cols[i % (PANEL_COLUMNS - 1) + 1]:
            st.image(panel.image, caption=panel.key, width="stretch")
            st.markdown(captions.panel_caption(panel, item.is_detection))


def _top_table(panel) -> dict:
    return {"label": [a for a, _ in panel.top], "p": [b for _, b in panel.top]}


def details(item: ReviewItem) -> None:
    """Top-5 labels (classifiers) or every detection (detectors) before and after one mutant; every other
    mutation's verdict."""
    title = ("Detections before and after, and every other mutation" if item.is_detection
             else "Top-5 before and after, and every other mutation")
    with st.expander(title):
        choice = st.selectbox("Mutant", [p.key for p in item.mutants], key="review_top5_choice")
        chosen = next(p for p in item.mutants if p.key == choice)
        t1, t2 = st.columns(2)
        if item.is_detection:
            t1.caption("source")
            t1.dataframe(list(item.source.detections), hide_index=True, key="review_top5_src")
            t2.caption(choice)
            t2.dataframe(list(chosen.detections), hide_index=True, key="review_top5_mut")
        else:
            t1.dataframe(_top_table(item.source), hide_index=True, key="review_top5_src")
            t2.dataframe(_top_table(chosen), hide_index=True, key="review_top5_mut")
        if item.others:
            st.dataframe(item.others, hide_index=True, key="review_others")


def lime(store: Store, item: ReviewItem, viewer: str | None) -> None:
    with st.expander("LIME: where does the model look?"):
        if item.is_detection:
            st.caption("LIME explains classifier outputs; it is not available for detection runs.")
            return
        st.caption("LIME fits a local linear model over superpixels (fixed random state, cached in the store). "
                   "The object share is the part of the positive LIME weight inside the target region: a model "
                   "that looks at the object puts most of it there.")
        key = st.selectbox("Explain the source and", [p.key for p in item.mutants], key="review_lime_choice")
        n = st.select_slider("LIME samples", LIME_SAMPLE_CHOICES, value=LIME_DEFAULT_SAMPLES, key="review_lime_n")
        if not st.button("Compute LIME", key="review_lime_btn"):
            return
        from objrel.review.lime_pair import explain_pair

        bar = st.progress(0.0, text="LIME ...")
        try:
            shown = explain_pair(store, run_model(store, item.run_id), item.run_id, item.sample_id, key, n,
                                 progress=lambda share, text: bar.progress(share, text=text), actor=viewer)
        except NotAllowed as exc:
            bar.empty()
            st.error(str(exc))
            return
        bar.empty()
        for col, explained in zip(st.columns(len(shown)), shown):
            col.image(explained.image, caption=f"LIME {explained.key}", width="stretch")
            col.metric("LIME object share", percent(explained.object_share))


def size_histogram(store: Store, item: ReviewItem, relation: str) -> None:
    with st.expander("Object size: where does this item sit?"):
        bins = cached_size_bins(store, item.run_id, relation)
        st.plotly_chart(charts.size_histogram(bins, item.area_ratio, relation), key="review_size_hist")


def box_retest(store: Store, item: ReviewItem, reviewer: str) -> None:
    """Redraw the target box and re-test the sample with the run's model and primary votes."""
    with st.expander("Redraw the target box and re-test"):
        if item.is_detection:
            st.caption("Re-testing with a redrawn box is available for classifier runs.")
            return
        st.caption("Imperfect annotations cause most false positives (seed 000 s5.1.3). Move the box and re-test "
                   "this sample with the run's model and primary votes.")
        w, h = item.size
        x1, y1, x2, y2 = item.target_box()
        suffix = f"{item.run_id}_{item.sample_id}"
        b = st.columns(4)
        box = (b[0].number_input("x1", 0, w - 1, int(x1), key=f"rb_x1_{suffix}"),
               b[1].number_input("y1", 0, h - 1, int(y1), key=f"rb_y1_{suffix}"),
               b[2].number_input("x2", 1, w, int(x2), key=f"rb_x2_{suffix}"),
               b[3].number_input("y2", 1, h, int(y2), key=f"rb_y2_{suffix}"))
        from objrel.mutations.rebuild import source_of

        source, _ = source_of(store, item.run_id, item.sample_id)
        st.image(thumbnail(draw_box(source, box)), caption="new box", width=NEW_BOX_PREVIEW_PX)
        if not st.button("Re-test with this box", key="review_retest_btn"):
            return
        from objrel.engine.retest import retest_with_box

        try:
            with st.spinner("Re-testing ..."):
                result = retest_with_box(store, item.run_id, item.sample_id, box, reviewer,
                                         model=run_model(store, item.run_id))
        except (ValueError, NotAllowed) as exc:
            st.error(str(exc))
            return
        for line in captions.retest_lines(result):
            st.write(line)
