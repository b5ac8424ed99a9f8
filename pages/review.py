"""Review: judge flagged inferences one by one, blind to the other reviewer."""

import streamlit as st

from objrel import access, review
from objrel.analysis.overview import tested_runs
from objrel.app import captions, review_panels
from objrel.app.captions import plain
from objrel.app.caches import cached_flagged, cached_review_item, open_store
from objrel.app.state import keep_choice
from objrel.app.widgets import page_sidebar, signed_in, use_app_navigation
from objrel.errors import NotAllowed
from objrel.review.roles import actor_of
from objrel.review.queue import QUEUE_LABELS, QUEUE_MODES, REVIEW_SAMPLE, ReviewLink, is_new_link, \
    link_params, open_queue, record_call

use_app_navigation()

ERROR_KEY = "review_error"
GOTO_KEY = "review_goto"
LINK_KEY = "review_link_written"

store = open_store()
actor = page_sidebar(store)
st.title("Review flagged inferences")

runs = tested_runs(store)
if not runs:
    st.info("No run with tested inferences yet. Start one on the Runs page or with `objrel run`.")
    st.stop()
by_id = {r.id: r for r in runs}

# A deep link (?run=&relation=&queue=&item=) sets the selection: on a session's first visit, and whenever the
# query names another item than the one this page wrote last (a link from Overview or Agreement).  What the
# link leaves open is filled with a run and relation that have flagged inferences.
params = st.query_params.to_dict()
if "review_run" not in st.session_state or is_new_link(params, st.session_state.get(LINK_KEY)):
    link = ReviewLink.parse(params, list(by_id), lambda r, rel: len(cached_flagged(store, r, rel)))
    st.session_state.review_run = link.run_id
    st.session_state.review_relation = link.relation
    st.session_state.review_mode = link.mode
    st.session_state[GOTO_KEY] = link.item
    for key in [k for k in st.session_state if str(k).startswith("review_pos_")]:
        del st.session_state[key]     # the link names where to stand
keep_choice("review_run", list(by_id)[-1], list(by_id))   # a run deleted since keeps no stale choice

c1, c2, c3 = st.columns([3, 1, 2])
run_id = c1.selectbox("Run", list(by_id), format_func=lambda i: captions.run_label(by_id[i]), key="review_run")
relation = c2.radio("Relation", review.RELATIONS, key="review_relation", horizontal=True)
mode = c3.radio("Queue", QUEUE_MODES, key="review_mode", horizontal=True, format_func=QUEUE_LABELS.get,
                help="The review sample is drawn once per run and relation with Cochran's formula "
                     "(95% confidence, 5% margin, finite-population correction) from a stored seed.")

if not actor.signed_in:
    st.info("Sign in (sidebar) to review: every judgment records who made it and when.")
    st.stop()
can_judge = access.permits(actor, access.JUDGE)
if not can_judge:
    st.info("Your account has no reviewer role, so your calls would not be recorded; you may look through the "
            "items. An admin grants roles on the Users page.")

flagged = cached_flagged(store, run_id, relation)
if not flagged:
    st.info(f"No inference of run {run_id} is flagged by {relation}.")
    st.stop()

try:
    queue = open_queue(actor, store, run_id, relation, mode, flagged)
except NotAllowed as exc:
    st.info(f"No review sample of run {run_id} ({relation}) has been drawn yet, and {exc}.")
    st.stop()
if mode == REVIEW_SAMPLE:
    st.caption(captions.queue_caption(queue))

pos_key = f"review_pos_{run_id}_{relation}_{mode}"
if pos_key not in st.session_state:
    st.session_state[pos_key] = queue.start(st.session_state.pop(GOTO_KEY, None))
pos = queue.clamp(st.session_state[pos_key])


def move(step: int) -> None:
    st.session_state[pos_key] = queue.step(st.session_state[pos_key], step)


sample_id = queue.at(pos)
written = {**link_params(run_id, relation, sample_id), "queue": mode}
st.query_params.update(written)
st.session_state[LINK_KEY] = written

nav = st.columns([1.4, 1.2, 4, 2])
nav[0].button("Previous", key="review_prev", on_click=move, args=(-1,), shortcut="P", disabled=queue.is_first(pos))
nav[1].button("Next", key="review_next", on_click=move, args=(1,), shortcut="N", disabled=queue.is_last(pos))
nav[2].progress(queue.judged_share, text=captions.queue_progress(queue, pos))
nav[3].markdown(captions.my_call(queue.my_call(sample_id)))
end = captions.queue_end(queue, pos)
if end:
    done = st.columns([3, 1])
    (done[0].success if queue.done else done[0].info)(end)
    done[1].markdown(captions.agreement_link())

item = cached_review_item(store, run_id, sample_id, relation)
st.subheader(f"{plain(item.rel_path)}  (sample {plain(sample_id)})")
badge = captions.incorrect_badge(item.correct, item.is_detection)
if badge:
    st.markdown(badge + " The model got this one wrong on the source; the run tested every inference (test_all).")
review_panels.headline(item, relation)
scores_note = captions.lazy_scores_note(item, by_id[run_id])
if scores_note:
    st.caption(scores_note)
review_panels.image_panels(item)
review_panels.details(item)
review_panels.lime(actor, store, item)
review_panels.size_histogram(store, item, relation)
review_panels.box_retest(actor, store, item)

st.divider()
st.markdown("**Your judgment** (blind: the other reviewer's call is never shown here)")
j1, j2 = st.columns([2, 3])
reasons = j1.multiselect("False-positive reasons", list(review.FP_REASONS), key=f"review_reasons_{sample_id}",
                         help="seed 000 s5.1: several target objects; the object was not completely removed; "
                              "other (say why in the note)")
note = j2.text_input("Note", key=f"review_note_{sample_id}")


def judge(verdict: str) -> None:
    # A callback runs at the start of the next rerun: ask the store for the account's roles now, not as they
    # were when this page was drawn (a role revoked meanwhile no longer counts).
    now = actor_of(store, signed_in())
    try:
        record_call(now, store, run_id, sample_id, relation, verdict, reasons, note)
    except (ValueError, NotAllowed) as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    st.session_state.pop(ERROR_KEY, None)
    move(1)


b = st.columns(3)
# Streamlit shows each shortcut as a badge on its button; without the reviewer role the buttons are off
# (objrel.review refuses the write anyway).
b[0].button("True positive", key="judge_tp", on_click=judge, args=("tp",), shortcut="T", type="primary",
            disabled=not can_judge)
b[1].button("False positive", key="judge_fp", on_click=judge, args=("fp",), shortcut="F", disabled=not can_judge)
b[2].button("Uncertain", key="judge_uncertain", on_click=judge, args=("uncertain",), shortcut="U",
            disabled=not can_judge)
if st.session_state.get(ERROR_KEY):
    st.error(st.session_state[ERROR_KEY])
