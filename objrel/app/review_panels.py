"""The Review page's pieces for one review item: headline metrics, the image panels, the detail tables,
LIME, the object-size histogram and the box re-test.  Each draws what objrel computes; widget keys
start with ``review_`` (or carry the run and sample where a value belongs to one item)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from objrel.app import captions, charts
from objrel.app.caches import cached_lime_overlays, cached_size_bins, run_model
from objrel import access
from objrel.access import Actor
from objrel.app.text import plain
from objrel.app.formats import decimals, percent
from objrel.app.state import init_value, mark_own_event
from objrel.app.style import FIRST_SCREEN_KEY
from objrel.app.tables import frame, static_table
from objrel.errors import NotAllowed, ObjrelError
from objrel.relations.common import NOT_APPLICABLE
from objrel.review.items import ItemCard, ReviewItem, draw_box, selection_box, thumbnail
from objrel.store import Store

PANEL_COLUMNS = 4               # the source, then the mutants three to a row
IMAGE_FORMAT = "JPEG"           # review thumbnails are photos: JPEG encodes and loads faster than PNG
LIME_SAMPLE_CHOICES = (100, 300, 1000)
LIME_DEFAULT_SAMPLES = 300
NEW_BOX_PREVIEW_PX = 320
BOX_SELECT_SIDE = 640           # the box-drawing figure's image (its axes are full-size pixels)
CARD_COLUMNS = 6                # an adjudication card: the source and up to five mutants in one row


def headline(item: ReviewItem, relation: str) -> None:
    """The item's metrics row: ground truth, object area, S_p, S_r and the relation's vote."""
    # Short labels and values (help says the rest): five metrics fit beside the sign-in sidebar at 1,400 px.
    truth = plain(", ".join(item.ground_truth) or "-")    # class names from the data: value and tooltip are markdown
    m = st.columns([2, 1, 1, 1, 1.2])
    m[0].metric("Ground truth", truth, help=truth)
    m[1].metric("Object area", percent(item.area_ratio), help="Share of the image the target region covers.")
    basis = f" {item.scoring}." if item.scoring else ""
    reading = captions.relevancy_note(item)
    reading = f" {reading}" if reading else ""
    # the box-only flag goes under the value (a grey delta, no arrow): beside it, it ran into the next metric
    m[2].metric("S_p", decimals(item.s_p), delta=captions.score_flag(item.s_p, item.box_only), delta_color="off",
                delta_arrow="off", help=f"Relevancy score of the object-preserving mutations.{basis}{reading}")
    m[3].metric("S_r", decimals(item.s_r), delta=captions.score_flag(item.s_r, item.box_only), delta_color="off",
                delta_arrow="off", help=f"Relevancy score of the object-removing mutations.{basis}{reading}")
    m[4].metric(f"{relation} violated", captions.vote_count(item, relation),
                help=f"{relation} primary vote: {captions.vote_text(item, relation)}.")
    note = captions.box_only_note(item)
    if note:
        st.caption(note)


FIRST_SCREEN_IMAGES = 4        # the source and up to three violating mutants
FIRST_SCREEN_COLUMNS = 2       # two to a row, beside the judging form


def first_screen_images(item: ReviewItem, relation: str) -> None:
    """The images that decide the call, two to a row: the source with its target outlined, then the mutants
    of ``relation`` whose check was violated (the relation's other mutants when none was), each with its label
    and certainty (or IoU) before -> after."""
    shown = [p for p in item.mutants if p.relation == relation and p.verdict == "violated"]
    if not shown:
        shown = [p for p in item.mutants if p.relation == relation]
    panels = [(item.source, captions.source_image_caption(item.is_detection)),
              *((p, p.key) for p in shown[:FIRST_SCREEN_IMAGES - 1])]
    with st.container(key=FIRST_SCREEN_KEY):
        for row in range(0, len(panels), FIRST_SCREEN_COLUMNS):
            cols = st.columns(FIRST_SCREEN_COLUMNS)
            for col, (panel, caption) in zip(cols, panels[row:row + FIRST_SCREEN_COLUMNS]):
                with col:
                    st.image(panel.image, caption=caption, width="stretch", output_format=IMAGE_FORMAT)
                    st.markdown(captions.panel_caption(panel, item.is_detection))


def evidence(actor: Actor, store: Store, item: ReviewItem, relation: str, called: bool) -> None:
    """The rest of the evidence, one panel at a time (every mutation with its top-5, LIME, the object-size
    histogram, the box editor): the switch keeps the reviewer's choice with their account, and only the
    chosen panel is computed."""
    from objrel.app.review_keys import EVIDENCE_KEY, EVIDENCE_KEYS
    from objrel.review.settings import EVIDENCE_LABELS, EVIDENCE_PANEL, EVIDENCE_PANELS, my_settings

    if EVIDENCE_KEY not in st.session_state:
        st.session_state[EVIDENCE_KEY] = (my_settings(actor, store)[EVIDENCE_PANEL] if actor.signed_in
                                          else EVIDENCE_PANELS[0])
    keys = dict(zip(EVIDENCE_PANELS, EVIDENCE_KEYS))
    choice = st.segmented_control("More evidence", EVIDENCE_PANELS, key=EVIDENCE_KEY,
                                  format_func=lambda p: f"{EVIDENCE_LABELS[p]} ({keys[p]})",
                                  on_change=_save_evidence_choice, args=(actor, store))
    if choice == "mutations":
        image_panels(item)
        details(item)
    elif choice == "lime":
        lime(actor, store, item, called=called)
    elif choice == "size":
        size_histogram(store, item, relation)
    elif choice == "box":
        box_retest(actor, store, item)


def _save_evidence_choice(actor: Actor, store: Store) -> None:
    from objrel.app.current_actor import current_actor
    from objrel.app.review_keys import EVIDENCE_KEY
    from objrel.review.settings import EVIDENCE_PANEL, set_my_setting

    mark_own_event()
    actor = current_actor(store)     # the live session's account with its roles now, not when the page was drawn
    choice = st.session_state.get(EVIDENCE_KEY)
    if choice is None or not access.permits(actor, access.JUDGE):
        return        # a panel closed, or an account without settings of its own: kept for this session only
    try:
        set_my_setting(actor, store, EVIDENCE_PANEL, choice)
    except (ValueError, NotAllowed):
        pass


def image_panels(item: ReviewItem) -> None:
    """The source, then the relation under review's mutants on the first row and the other's below."""
    cols = st.columns(PANEL_COLUMNS)
    with cols[0]:
        st.image(item.source.image, caption=captions.source_image_caption(item.is_detection), width="stretch",
                 output_format=IMAGE_FORMAT)
        st.markdown(captions.panel_caption(item.source, item.is_detection))
    for i, panel in enumerate(item.mutants):
        with cols[i % (PANEL_COLUMNS - 1) + 1]:
            st.image(panel.image, caption=panel.key, width="stretch", output_format=IMAGE_FORMAT)
            st.markdown(captions.panel_caption(panel, item.is_detection))


def _top_table(panel) -> dict:
    return {"label": [a for a, _ in panel.top], "p": [b for _, b in panel.top]}


def details(item: ReviewItem) -> None:
    """Top-5 labels (classifiers) or every detection (detectors) before and after one mutant; every other
    mutation's verdict."""
    title = ("Detections before and after, and every other mutation" if item.is_detection
             else "Top-5 before and after, and every other mutation")
    st.markdown(f"**{title}**")       # in view: evidence is never folded away
    with st.container():
        choice = st.selectbox("Mutant", [p.key for p in item.mutants], key="review_top5_choice",
                              on_change=mark_own_event)
        chosen = next(p for p in item.mutants if p.key == choice)
        t1, t2 = st.columns(2)
        if item.is_detection:
            t1.caption("source")
            static_table(pd.DataFrame(list(item.source.detections)), where=t1)
            t2.caption(choice)
            static_table(pd.DataFrame(list(chosen.detections)), where=t2)
        else:
            t1.caption("source: top-5")
            static_table(pd.DataFrame(_top_table(item.source)), where=t1)
            t2.caption(f"{choice}: top-5")
            static_table(pd.DataFrame(_top_table(chosen)), where=t2)
        if item.others:
            static_table(pd.DataFrame(item.others))


def lime(actor: Actor, store: Store, item: ReviewItem, called: bool = False) -> None:
    """LIME in view: the overlays already computed for this item (read from the store's cache, never computed
    on page load) with a toggle, or a placeholder; the reviewer's setting may hold it back until their call."""
    st.markdown("**LIME: where does the model look?**")
    if item.is_detection:
        st.caption("LIME explains classifier outputs; it is not available for detection runs.")
        return
    applied = [p.key for p in item.mutants if p.verdict != NOT_APPLICABLE]   # a mutant that was made
    if not applied:
        st.caption("No mutation of this item was applied, so there is no mutant to explain.")
        return
    after_call = _lime_after_call(actor, store)
    if after_call and not called:
        st.caption("LIME appears once you have made your call on this item (your setting below).")
    else:
        t1, t2 = st.columns(2)
        shown = t1.toggle("Show LIME", value=True, key="review_lime_show", on_change=mark_own_event)
        outline = t2.toggle("Outline the target", value=True, key="review_lime_outline", on_change=mark_own_event)
        if shown:
            _lime_overlays(store, item, outline)
        st.caption("LIME fits a local linear model over superpixels (fixed random state, cached in the store). "
                   "The object share is the part of the positive LIME weight inside the target region: a model "
                   "that looks at the object puts most of it there.")
    if access.permits(actor, access.JUDGE):
        st.toggle("Reveal LIME only after my first call", value=after_call, key="review_lime_after_call",
                  on_change=_save_lime_after_call, args=(actor, store))
    _lime_on_demand(actor, store, item, applied)


LIME_NOT_COMPUTED = "LIME not computed yet."
# Seconds between looks at the store while the LIME job ahead is still explaining this item.
LIME_POLL_S = 3


def _lime_overlays(store: Store, item: ReviewItem, outline: bool) -> None:
    """The item's cached overlays; while the background job ahead has not reached them, its progress, looked
    at again every LIME_POLL_S seconds (only this part of the page reruns, nothing blocks)."""
    from objrel.review.lime_ahead import lime_job_status

    key = item.violating_mutant(item.relation).key

    def draw() -> None:
        overlays = cached_lime_overlays(store, item.run_id, item.sample_id, key, outline)
        if overlays:
            for col, explained in zip(st.columns(PANEL_COLUMNS), overlays):
                col.image(explained.image, caption=f"LIME {explained.key}", width="stretch")
                col.metric("LIME object share", percent(explained.object_share))
            return
        job = lime_job_status(store, item.run_id, item.relation)
        if job is not None and not job.finished:
            st.progress(job.share, text=plain(job.text()) + " - this item's overlays appear here when ready")
        else:
            st.caption(LIME_NOT_COMPUTED + (f" {plain(job.text())}" if job is not None else ""))

    job = lime_job_status(store, item.run_id, item.relation)
    waiting = (job is not None and not job.finished
               and not cached_lime_overlays(store, item.run_id, item.sample_id, key, outline))
    st.fragment(draw, run_every=LIME_POLL_S if waiting else None)()


def _lime_after_call(actor: Actor, store: Store) -> bool:
    if not access.permits(actor, access.JUDGE):
        return False
    from objrel.review.settings import LIME_AFTER_CALL, my_settings

    return bool(my_settings(actor, store)[LIME_AFTER_CALL])


def _save_lime_after_call(actor: Actor, store: Store) -> None:
    from objrel.app.current_actor import current_actor
    from objrel.review.settings import LIME_AFTER_CALL, set_my_setting

    mark_own_event()
    try:
        set_my_setting(current_actor(store), store, LIME_AFTER_CALL, bool(st.session_state["review_lime_after_call"]))
    except (ValueError, NotAllowed):   # signed out meanwhile: kept for this session only
        pass


def _lime_on_demand(actor: Actor, store: Store, item: ReviewItem, applied: list[str]) -> None:
    """Compute LIME for the source and one mutant now (minutes of CPU): only on the reviewer's click."""
    c1, c2, c3 = st.columns([2, 2, 1])
    key = c1.selectbox("Explain the source and", applied, key="review_lime_choice", on_change=mark_own_event)
    n = c2.select_slider("LIME samples", LIME_SAMPLE_CHOICES, value=LIME_DEFAULT_SAMPLES, key="review_lime_n",
                         on_change=mark_own_event)
    if not c3.button("Compute LIME", key="review_lime_btn", on_click=mark_own_event):
        return
    from objrel.review.lime_pair import explain_pair

    bar = st.progress(0.0, text="LIME ...")
    try:
        shown = explain_pair(actor, store, run_model(store, item.run_id), item.run_id, item.sample_id, key, n,
                             progress=lambda share, text: bar.progress(share, text=text))
    except (ValueError, ObjrelError) as exc:   # NotAllowed, or a mutant that cannot be rebuilt: one line
        bar.empty()
        st.error(plain(exc))
        return
    bar.empty()
    for col, explained in zip(st.columns(len(shown)), shown):
        col.image(explained.image, caption=f"LIME {explained.key}", width="stretch")
        col.metric("LIME object share", percent(explained.object_share))


def size_histogram(store: Store, item: ReviewItem, relation: str) -> None:
    """The run's object-size histogram with this item's size marked."""
    st.markdown("**Object size: where does this item sit?**")
    bins = cached_size_bins(store, item.run_id, relation)
    fig = charts.size_histogram(bins, item.area_ratio, relation)
    # the "this item" label goes above the plot area, where no bar is (inside, it covered the bar it marks)
    fig.update_annotations(yref="paper", y=1.0, yanchor="bottom")
    fig.update_layout(margin={"t": HIST_LABEL_MARGIN_PX})
    st.plotly_chart(fig, key="review_size_hist")


HIST_LABEL_MARGIN_PX = 28      # room above the histogram for its "this item" label


def my_history(actor: Actor, store: Store, run_id: int, relation: str, sample_id: str) -> None:
    """The signed-in reviewer's own versions of their call on this item, newest first (in view)."""
    from objrel import review

    try:
        versions = review.judgment_history(actor, store, run_id, sample_id, relation, actor.name)
    except (ValueError, NotAllowed):
        return
    if not versions:
        return
    st.markdown(f"**Your calls on this item** ({len(versions)} version{'s' if len(versions) != 1 else ''})")
    frame(pd.DataFrame([{"version": v.version, "call": review.VERDICT_LABELS.get(v.verdict, v.verdict),
                   "reasons": captions.reason_words(v.reasons), "note": v.note or "",
                   "mutant": review.VALIDITY_LABELS.get(v.validity, v.validity or ""),
                   "after the sample closed": "yes" if v.after_close else "no",
                   "time (UTC)": v.created_at.strftime("%Y-%m-%d %H:%M:%S")} for v in reversed(versions)]),
          "review_history")


def calibration(actor: Actor, store: Store, run_id: int, relation: str) -> None:
    """Once the review sample is closed: kappa, the disagreements and their adjudications for each reviewer
    (``objrel.review.calibration``)."""
    from objrel.review import calibration as calibrate

    try:
        cal = calibrate(actor, store, run_id, relation)
    except NotAllowed:
        st.caption("Your calibration (agreement with the other reviewer, the disagreements and their decisions) "
                   "appears here once both reviewers have judged every item of this sample.")
        return
    except ValueError as exc:
        st.caption(plain(exc))
        return
    if cal is None:
        return
    st.markdown(f"**Calibration: run {int(run_id)}, {plain(relation)}**")
    from objrel.store.reviews import item_files

    files = item_files(store, int(run_id), [d.sample_id for d in cal.disagreements])
    for line in captions.calibration_lines(cal, files):
        st.markdown(line)
    from objrel.app.threads import gold_lines

    for line in gold_lines(cal):      # each reviewer's accuracy on the gold items (objrel.review.gold)
        st.markdown(line)


def box_retest(actor: Actor, store: Store, item: ReviewItem) -> None:
    """Redraw the target box and re-test the sample with the run's model and primary votes."""
    with st.container():
        st.markdown("**Redraw the target box and re-test**")
        if item.is_detection:
            st.caption("Re-testing with a redrawn box is available for classifier runs.")
            return
        st.caption("Imperfect annotations cause most false positives (EMSE21 s5.1.3). Draw the target box on the "
                   "source with the mouse (or type its corners below) and re-test this sample with the run's model "
                   "and primary votes.")
        w, h = item.size
        suffix = f"{item.run_id}_{item.sample_id}"
        keys = [f"rb_{c}_{suffix}" for c in ("x1", "y1", "x2", "y2")]
        for key, value in zip(keys, item.target_box()):
            init_value(key, int(value))
        from objrel.review.rebuild import source_of

        source, _ = source_of(store, item.run_id, item.sample_id)
        chart_key = f"rb_draw_{suffix}"
        # the box drawn on the figure (its selection state arrives before the figure is drawn again)
        drawn = selection_box((st.session_state.get(chart_key) or {}).get("selection"), (w, h))
        if drawn is not None and drawn != st.session_state.get(f"rb_drawn_{suffix}"):
            # a new drawing: it becomes the box (typing in the corners afterwards still wins)
            st.session_state[f"rb_drawn_{suffix}"] = drawn
            for key, value in zip(keys, drawn):
                st.session_state[key] = value
        current = tuple(int(st.session_state[k]) for k in keys)
        st.plotly_chart(charts.box_select_figure(thumbnail(source, BOX_SELECT_SIDE), (w, h), current),
                        on_select=mark_own_event, selection_mode="box", key=chart_key,
                        config={"modeBarButtonsToRemove": ["lasso2d"]})
        b = st.columns(4)
        box = (b[0].number_input("x1", 0, w - 1, key=keys[0], on_change=mark_own_event),
               b[1].number_input("y1", 0, h - 1, key=keys[1], on_change=mark_own_event),
               b[2].number_input("x2", 1, w, key=keys[2], on_change=mark_own_event),
               b[3].number_input("y2", 1, h, key=keys[3], on_change=mark_own_event))
        st.image(thumbnail(draw_box(source, box)), caption="new box", width=NEW_BOX_PREVIEW_PX)
        if not st.button("Re-test with this box", key="review_retest_btn", on_click=mark_own_event):
            return
        from objrel.engine.retest import retest_with_box

        try:
            with st.spinner("Re-testing ..."):
                result = retest_with_box(actor, store, item.run_id, item.sample_id, box,
                                         model=run_model(store, item.run_id))
        except (ValueError, NotAllowed) as exc:
            st.error(plain(exc))
            return
        for line in captions.retest_lines(result):
            st.write(line)


def item_card(card: ItemCard) -> None:
    """An adjudication card's item: file name, the source and the relation's mutants as thumbnails (or why
    there are none), and a link that opens the item in Review."""
    from objrel.review.queue import review_url

    st.markdown(captions.card_title(card))
    badge = captions.incorrect_badge(card.correct)
    if badge:
        st.markdown(badge)
    if card.source is None:
        st.caption(captions.card_problem(card))
    else:
        cols = st.columns(CARD_COLUMNS)
        cols[0].image(card.source.image, caption="source", width="stretch")
        for col, panel in zip(cols[1:], card.mutants):
            col.image(panel.image, caption=captions.card_mutant_caption(panel), width="stretch")
    st.markdown(captions.review_link(review_url(card.run_id, card.relation, card.sample_id)))


def pace_line(pace) -> str:
    """One reviewer's pace in words: ``12.4 s per item (median), 262 items an hour, from 30 calls``."""
    from objrel.review.throughput import BREAK_S

    if pace.seconds_per_item is None:
        return (f"{pace.calls} call{'s' if pace.calls != 1 else ''} so far: the pace shows from two calls less than "
                f"{BREAK_S / 60:.0f} minutes apart.")
    per_hour = "-" if pace.items_per_hour is None else f"{pace.items_per_hour:.0f}"
    return (f"a median **{pace.seconds_per_item:.1f} s** between two calls; **{per_hour}** items an hour of "
            f"working time (all gaps counted, pauses over {BREAK_S / 60:.0f} minutes left out); {pace.calls} calls")


def my_pace(actor: Actor, store: Store, queues, where: str) -> None:
    """The signed-in reviewer's own pace over ``queues`` ([(run id, relation), ...]), which ``where`` names
    ("in all your queues", "on run 2, MR-2"); nothing without calls."""
    from objrel.review.throughput import my_pace as pace_of

    pace = pace_of(actor, store, queues)
    if pace.calls:
        st.markdown(f"**Your pace** {plain(where)}: {pace_line(pace)}")


def team_pace(actor: Actor, store: Store, run_id: int, relation: str) -> None:
    """Every reviewer's pace on one run and relation (for adjudicators and admins: when calls were made, never
    what they were)."""
    from objrel.review.throughput import team_pace as paces

    try:
        rows = paces(actor, store, run_id, relation)
    except NotAllowed:
        return
    if not rows:
        return
    st.markdown("**Pace of each reviewer** (seconds per item: the median gap between two calls; items an hour: "
                "calls over working time; gaps over the break length count as breaks)")
    frame(pd.DataFrame([{"reviewer": p.reviewer, "calls": p.calls,
                         "s per item": None if p.seconds_per_item is None else round(p.seconds_per_item, 1),
                         "items an hour": None if p.items_per_hour is None else round(p.items_per_hour)}
                        for p in rows]), "agreement_pace")
