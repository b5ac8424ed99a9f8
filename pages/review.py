"""Review: judge flagged inferences one by one, blind to the other reviewer."""

import time

import streamlit as st

from objrel import access, review
from objrel.analysis.overview import tested_runs
from objrel.app import captions, review_panels
from objrel.app.captions import plain
from objrel.app.caches import cached_flagged, cached_review_item, open_store
from objrel.app.style import scroll_to_top
from objrel.app.state import arrival_params, init_value, keep_choice, mark_own_event, remember_selection, \
    took_own_event
from objrel.app.widgets import page_sidebar, signed_in, use_app_navigation
from objrel.errors import NotAllowed, ObjrelError
from objrel.review.lime_ahead import ensure_lime_job
from objrel.review.roles import actor_of
from objrel.review.my_work import my_work
from objrel.review.queue import ALL_FLAGGED, MIN_LOOK_S, QUEUE_LABELS, QUEUE_MODES, REVIEW_SAMPLE, ReviewLink, \
    is_new_link, link_params, min_look_s, open_queue, record_call, too_soon

use_app_navigation()

ERROR_KEY = "review_error"
FLASH_KEY = "review_saved"      # the line that confirms a saved call, shown after the move to the next item
LAST_SAVED_KEY = "review_last_saved"   # (item, that line, the item it moved to) of the last save: shown again
                                       # beside a refused second press
OPENED_KEY = "review_opened"           # (the item's button suffix, time.monotonic() when the page had first been
                                       # drawn whole for it on this visit): a call sooner than min_look_s() is refused
GOTO_KEY = "review_goto"
LINK_KEY = "review_link_written"
# Answers to "is the mutant a valid test?" (objrel.review.VALIDITY once the library has it).
VALIDITY = getattr(review, "VALIDITY", ("valid", "invalid", "unsure"))
VALIDITY_LABELS = getattr(review, "VALIDITY_LABELS", {"valid": "valid test", "invalid": "invalid mutant",
                                                     "unsure": "unsure"})

store = open_store()
actor = page_sidebar(store)
st.title("Review flagged inferences")
try:
    look_s = min_look_s()
except ValueError as exc:      # a mistyped $OBJREL_REVIEW_MIN_LOOK_S: said, and the default used
    st.error(str(exc))
    look_s = MIN_LOOK_S

runs = tested_runs(store)
if not runs:
    st.info("No run with tested inferences yet. Start one on the Runs page or with `objrel run`.")
    st.stop()
by_id = {r.id: r for r in runs}


def open_work_params() -> dict[str, str]:
    """Where the signed-in person's open work is: their first queue with open items (reviewers), else the
    first run with open disagreements (adjudicators); {} when they have none."""
    work = my_work(actor, store)
    q = work.first_open_queue
    if q is not None:
        return {"run": str(q.run_id), "relation": q.relation, "queue": REVIEW_SAMPLE, "item": q.next_item or ""}
    d = work.first_open_dispute
    return {"run": str(d.run_id), "relation": d.relation, "queue": ALL_FLAGGED} if d is not None else {}


def go_to(params: dict[str, str]) -> None:
    st.query_params.clear()
    st.query_params.update(params)


def offer_choices() -> None:
    """Buttons to the signed-in person's open work (nothing is opened without their choice)."""
    work = my_work(actor, store)
    entries = [*work.open_queues, *work.open_disputes]
    for i, e in enumerate(entries):
        params = {"run": str(e.run_id), "relation": e.relation,
                  "queue": REVIEW_SAMPLE if hasattr(e, "judged") else ALL_FLAGGED}
        if getattr(e, "next_item", None):
            params["item"] = e.next_item
        st.button(captions.work_choice(e), key=f"review_choice_{i}", on_click=go_to, args=(params,))
    if not entries:
        st.caption("You have no open review work; pick a run above.")


# The selection (?run=&relation=&queue=&item=) comes from the URL (a link, a reload), else from the session's
# last selection (Streamlit drops both the query string and this page's widget state on a page switch), else
# from the signed-in person's open work.  A link followed while the page is open is read again, but not on a
# rerun that one of this page's own widgets started: its query string is the one the browser had when the
# widget was used, and after a quick second press that still names the item the first press left (the page
# jumped back to the item just saved).  A run the link names that cannot be reviewed is said, never replaced.
params = st.query_params.to_dict()
arrived = "review_run" not in st.session_state
own_event = took_own_event()
if arrived or (not own_event and is_new_link(params, st.session_state.get(LINK_KEY))):
    wanted = arrival_params() if arrived else params
    if not wanted.get("run") and actor.signed_in:
        wanted = open_work_params()
    link = ReviewLink.parse(wanted, list(by_id), lambda r, rel: len(cached_flagged(store, r, rel)))
    if link.unknown_run is not None:
        st.warning(captions.unknown_run_text(link.unknown_run))
        offer_choices()
        pick = st.selectbox("Run", list(by_id), index=None, placeholder="Choose a run",
                            format_func=lambda i: captions.run_label(by_id[i]), key="review_pick_run")
        if pick is not None:
            go_to({"run": str(pick)})
            st.rerun()
        st.stop()
    st.session_state.review_run = link.run_id
    st.session_state.review_relation = link.relation
    st.session_state.review_mode = link.mode
    st.session_state[GOTO_KEY] = link.item
    for key in [k for k in st.session_state if str(k).startswith("review_pos_")]:
        del st.session_state[key]     # the link names where to stand
keep_choice("review_run", list(by_id)[-1], list(by_id))   # a run deleted while the page is open

c1, c2, c3 = st.columns([3, 1, 2])
run_id = c1.selectbox("Run", list(by_id), format_func=lambda i: captions.run_label(by_id[i]), key="review_run",
                      on_change=mark_own_event)
relation = c2.radio("Relation", review.RELATIONS, key="review_relation", horizontal=True, on_change=mark_own_event)
mode = c3.radio("Queue", QUEUE_MODES, key="review_mode", horizontal=True, format_func=QUEUE_LABELS.get,
                on_change=mark_own_event,
                help="The review sample is drawn once per run and relation with Cochran's formula "
                     "(95% confidence, 5% margin, finite-population correction) from a stored seed.")
chosen = {"run": str(run_id), "relation": relation, "queue": mode}
remember_selection(chosen)
if st.query_params.to_dict().get("run") != chosen["run"] or st.query_params.get("relation") != relation:
    st.query_params.pop("item", None)    # an item of another run or relation: written again once one is shown
st.query_params.update(chosen)
st.session_state[LINK_KEY] = st.query_params.to_dict()

if not actor.signed_in:
    st.info("Sign in (sidebar) to review: every judgment records who made it and when.")
    st.stop()
can_judge = access.permits(actor, access.JUDGE)
if not can_judge:
    st.info("Your account has no reviewer role, so your calls would not be recorded; you may look through the "
            "items. An admin grants roles on the Users page.")

flagged = cached_flagged(store, run_id, relation)
if not flagged:
    st.info(captions.nothing_for_you_text(run_id, relation))
    offer_choices()
    st.stop()

try:
    queue = open_queue(actor, store, run_id, relation, mode, flagged)
except NotAllowed as exc:
    st.info(f"No review sample of run {run_id} ({relation}) has been drawn yet, and {exc}.")
    offer_choices()
    st.stop()
if mode == REVIEW_SAMPLE:
    st.caption(captions.queue_caption(queue))
    # LIME of the sample is computed ahead by one background process (started once per sample; a detection run,
    # or an account that may not explain, starts nothing); the LIME panel shows its progress.
    try:
        ensure_lime_job(actor, store, run_id, relation)
    except (ValueError, ObjrelError):
        pass

pos_key = f"review_pos_{run_id}_{relation}_{mode}"
if pos_key not in st.session_state:
    st.session_state[pos_key] = queue.start(st.session_state.pop(GOTO_KEY, None))
pos = queue.clamp(st.session_state[pos_key])


def move(step: int, drawn_at: int | None = None) -> None:
    """Step through the queue from ``drawn_at``, the position the clicked button was drawn at (a click while
    the page draws the next item counts from the item the reviewer saw), else from the current position."""
    mark_own_event()
    start = st.session_state[pos_key] if drawn_at is None else drawn_at
    st.session_state[pos_key] = queue.step(start, step)
    st.session_state.pop(ERROR_KEY, None)        # a refusal is about the item left, not the next one


sample_id = queue.at(pos)
written = {**link_params(run_id, relation, sample_id), "queue": mode}
st.query_params.update(written)
st.session_state[LINK_KEY] = st.query_params.to_dict()
remember_selection(written)

flash = st.session_state.pop(FLASH_KEY, None)
if flash:
    st.success(flash)
    scroll_to_top(f"{run_id}-{relation}-{sample_id}-{queue.n_judged}")   # the next item opens in view
    # after a save the page opens at its top: a press refused just after it (a double press) says so here
    if st.session_state.get(ERROR_KEY):
        st.error(st.session_state[ERROR_KEY])
# The buttons that act on this item have keys of their own: a click on the last item's buttons,
# still on screen while this one draws, then runs with the item they were drawn for, never with this one.
suffix = f"{run_id}_{relation}_{sample_id}"
nav = st.columns([1.8, 1.5, 4, 2.2])
nav[0].button("Previous", key=f"review_prev_{suffix}", on_click=move, args=(-1, pos), shortcut="P",
              disabled=queue.is_first(pos))
nav[1].button("Next", key=f"review_next_{suffix}", on_click=move, args=(1, pos), shortcut="N",
              disabled=queue.is_last(pos))
nav[2].progress(queue.judged_share, text=captions.queue_progress(queue, pos))
nav[3].markdown(captions.my_call(queue.my_call(sample_id)))
end = captions.queue_end(queue, pos)
if end:
    done = st.columns([3, 1])
    (done[0].success if queue.done else done[0].info)(end)
    done[1].markdown(captions.agreement_link())
if queue.done and mode == REVIEW_SAMPLE:
    review_panels.calibration(actor, store, run_id, relation)

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
review_panels.lime(actor, store, item, called=queue.my_call(sample_id) is not None)
review_panels.size_histogram(store, item, relation)
review_panels.box_retest(actor, store, item)

st.divider()
st.markdown("**Your judgment** (blind: the other reviewer's call is shown only as calibration, once both of you "
            "have judged every item of the sample)")
saved_reasons, saved_note = queue.my_saved(sample_id)
# a revisited item shows the stored reasons and note (what the reviewer typed since stays)
init_value(f"review_reasons_{suffix}", list(saved_reasons))
init_value(f"review_note_{suffix}", saved_note)
init_value(f"review_validity_{suffix}", queue.my_validity_call(sample_id))
j1, j2, j3 = st.columns([2, 3, 2])
j1.multiselect("False-positive reasons", list(review.FP_REASONS), key=f"review_reasons_{suffix}",
               format_func=review.REASON_LABELS.get, on_change=mark_own_event,
               help="seed 000 s5.1: several target objects; the object was not completely removed; "
                    "other (say why in the note)")
j2.text_input("Note", key=f"review_note_{suffix}", on_change=mark_own_event)
j3.radio("Is the mutant a valid test?", VALIDITY, key=f"review_validity_{suffix}", horizontal=True,
         on_change=mark_own_event,
         format_func=lambda v: VALIDITY_LABELS.get(v, v),
         help="Valid: the object really removed (MR-1) or the background really replaced (MR-2), with no "
              "artefact. Invalid mutants are counted apart.")


def judge(verdict: str, run_id: int, relation: str, sample_id: str, rel_path: str) -> None:
    # A callback runs at the start of the next rerun: ask the store for the account's roles now, not as they
    # were when this page was drawn (a role revoked meanwhile no longer counts).  The run, relation and item
    # are the ones drawn with the button, and the call is saved only while that item is still the one the
    # page is on.
    mark_own_event()
    if queue.at(st.session_state.get(pos_key, pos)) != sample_id:
        # drawn for an item the page has since left (the buttons of the last item stay on screen until the
        # new ones are drawn): saving it would change that item's call and skip the one now shown
        st.session_state[ERROR_KEY] = captions.call_on_a_left_item(rel_path, verdict)
        saved_item, saved_line, _ = st.session_state.get(LAST_SAVED_KEY) or (None, None, None)
        if saved_item == (run_id, relation, sample_id):   # the second of a double press: the first press's
            st.session_state[FLASH_KEY] = saved_line       # save stays in view beside the refusal
        return
    suffix = f"{run_id}_{relation}_{sample_id}"      # the widgets' values as sent with the click
    opened_item, opened_at = st.session_state.get(OPENED_KEY) or (None, None)
    clicked_at = time.monotonic()
    if opened_item != suffix or too_soon(opened_at, clicked_at, look_s):
        # a press on an item the page was still drawing (the press stopped that drawing), or had drawn a moment
        # ago: a key meant for the item before, or typed for a field that the redraw replaced
        waited = clicked_at - opened_at if opened_item == suffix else None
        st.session_state[ERROR_KEY] = captions.call_too_soon(rel_path, verdict, waited)
        _, saved_line, moved_to = st.session_state.get(LAST_SAVED_KEY) or (None, None, None)
        if moved_to == suffix:                            # the save that opened this item stays in view
            st.session_state[FLASH_KEY] = saved_line
        return
    now = actor_of(store, signed_in())
    reasons = st.session_state.get(f"review_reasons_{suffix}") or []
    note = st.session_state.get(f"review_note_{suffix}") or ""
    validity = st.session_state.get(f"review_validity_{suffix}")
    try:
        record_call(now, store, run_id, sample_id, relation, verdict, reasons, note, validity=validity)
    except (ValueError, NotAllowed) as exc:
        st.session_state[ERROR_KEY] = str(exc)
        return
    st.session_state.pop(ERROR_KEY, None)
    st.session_state[FLASH_KEY] = captions.saved_call(run_id, relation, rel_path, verdict, validity)
    move(1)
    moved_to = f"{run_id}_{relation}_{queue.at(st.session_state[pos_key])}"
    st.session_state[LAST_SAVED_KEY] = ((run_id, relation, sample_id), st.session_state[FLASH_KEY], moved_to)


# A call that was not saved says so just above the call buttons, where the reviewer looks after pressing one
# (below them, at 900 px it fell under the fold), unless a save's line above already said it (the page then
# opens at its top).
if st.session_state.get(ERROR_KEY) and not flash:
    st.error(st.session_state[ERROR_KEY])
b = st.columns(3)
# Streamlit shows each shortcut as a badge on its button; without the reviewer role the buttons are off
# (objrel.review refuses the write anyway).
call = (run_id, relation, sample_id, item.rel_path)
saved = queue.my_call(sample_id)


def kind(verdict: str) -> str:
    """The saved call's button is marked; no button is before a call (a highlighted one would nudge)."""
    return "primary" if saved == verdict else "secondary"


b[0].button("True positive", key=f"judge_tp_{suffix}", on_click=judge, args=("tp", *call), shortcut="T",
            type=kind("tp"), disabled=not can_judge)
b[1].button("False positive", key=f"judge_fp_{suffix}", on_click=judge, args=("fp", *call), shortcut="F",
            type=kind("fp"), disabled=not can_judge)
b[2].button("Uncertain", key=f"judge_uncertain_{suffix}", on_click=judge, args=("uncertain", *call), shortcut="U",
            type=kind("uncertain"), disabled=not can_judge)
if can_judge and queue.my_call(sample_id) is not None:
    review_panels.my_history(actor, store, run_id, relation, sample_id)

# The item counts as open once the page has been drawn whole for it (not again on each rerun), and a call is
# timed from here.  A press that stops this drawing finds another item's opening and is refused.  The browser
# passes on a key pressed while it was still showing the item only after it (in chromium here 1.0-1.7 s after
# this point, for a key pressed twice 0.4-1.0 s apart), which is why MIN_LOOK_S is 2 s.
if (st.session_state.get(OPENED_KEY) or (None,))[0] != suffix:
    st.session_state[OPENED_KEY] = (suffix, time.monotonic())
