"""Review: judge flagged inferences one by one, blind to the other reviewer.

One screen per item: the source with its target and the mutants that violated the relation, and beside them
the judging form (call, false-positive reasons, the mutant's validity, a note).  A call is one form submit
that carries the item it was drawn for; the keyboard (``objrel.app.review_keys``) clicks the same controls
whatever has the focus.  The rest of the evidence is one switch below; the next items are made ahead.
"""

import streamlit as st

from objrel import access, review
from objrel.analysis.overview import tested_runs
from objrel.app import ahead, captions, review_keys, review_panels, threads
from objrel.app.text import plain
from objrel.app.caches import cached_flagged, open_store
from objrel.app.state import arrival_params, init_value, keep_choice, mark_own_event, remember_selection, \
    took_own_event
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.errors import NotAllowed, ObjrelError, StoreBusy
from objrel.review.lime_ahead import ensure_lime_job
from objrel.app.current_actor import current_actor
from objrel.review.my_work import my_work
from objrel.review.queue import ALL_FLAGGED, QUEUE_LABELS, QUEUE_MODES, REVIEW_SAMPLE, ReviewLink, is_new_link, \
    link_params, open_queue, record_call

use_app_navigation()

ERROR_KEY = "review_error"
FLASH_KEY = "review_saved"      # the line that confirms a saved call, shown after the move to the next item
LAST_SAVED_KEY = "review_last_saved"   # (item, that line, the item it moved to) of the last save: shown again
                                       # beside a refused second press
GOTO_KEY = "review_goto"
LINK_KEY = "review_link_written"
TITLE_KEY = "review_title"            # the page heading's container (app/style.py keeps it small)
CALLED_KEY = "review_called"           # (run, relation, queue, sample id) of this session's last saved call: undo

store = open_store()
actor = page_sidebar(store)
with st.container(key=TITLE_KEY):          # a compact heading: the item's screen starts high on the page
    st.title("Review flagged inferences", anchor=False)

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
    # only a reviewer's first visit draws the review sample: anyone else who opens the page only looks
    queue = open_queue(actor, store, run_id, relation, mode, flagged, draw=can_judge)
except (NotAllowed, ValueError) as exc:
    st.info(f"No review sample of run {run_id} ({relation}) has been drawn yet: {plain(exc)}")
    offer_choices()
    st.stop()
if mode == REVIEW_SAMPLE and can_judge:
    # LIME of the sample is computed ahead by the server's LIME queue (one job per sample, started by a reviewer
    # at work; a detection run starts nothing); the LIME panel shows its progress.
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


def go_to_position(target: int | None) -> None:
    """Open the item at queue position ``target`` (skip, undo); nothing when there is none."""
    mark_own_event()
    if target is not None:
        st.session_state[pos_key] = queue.clamp(target)
        st.session_state.pop(ERROR_KEY, None)


sample_id = queue.at(pos)
written = {**link_params(run_id, relation, sample_id), "queue": mode}
st.query_params.update(written)
st.session_state[LINK_KEY] = st.query_params.to_dict()
remember_selection(written)

# The buttons that act on this item have keys of their own: a click on the last item's buttons,
# still on screen while this one draws, then runs with the item they were drawn for, never with this one.
suffix = review_keys.item_suffix(run_id, relation, sample_id)
called = st.session_state.get(CALLED_KEY)
undo_to = (queue.sample_ids.index(called[3]) if called and called[:3] == (run_id, relation, mode)
           and called[3] in queue.sample_ids else None)
skip_to = queue.next_open(pos)
nav = st.columns([1.3, 1.1, 1.1, 1.1, 3.6, 2])
nav[0].button("Previous", key=f"{review_keys.PREV_KEY_PREFIX}{suffix}", on_click=move, args=(-1, pos),
              disabled=queue.is_first(pos), help="P: the item before this one")
nav[1].button("Next", key=f"{review_keys.NEXT_KEY_PREFIX}{suffix}", on_click=move, args=(1, pos),
              disabled=queue.is_last(pos), help="N: the item after this one")
nav[2].button("Skip", key=f"{review_keys.SKIP_KEY_PREFIX}{suffix}", on_click=go_to_position, args=(skip_to,),
              disabled=skip_to is None or skip_to == pos, help="S: the next item you have not called")
nav[3].button("Undo", key=f"{review_keys.UNDO_KEY_PREFIX}{suffix}", on_click=go_to_position, args=(undo_to,),
              disabled=undo_to is None or undo_to == pos,
              help="Z: back to the item you called last, to call it again (every call is kept as a version)")
nav[4].progress(queue.judged_share, text=captions.queue_progress(queue, pos))
nav[5].markdown(captions.my_call(queue.my_call(sample_id)))

item = ahead.review_item(store, run_id, sample_id, relation)
st.subheader(f"{plain(item.rel_path)}  (sample {plain(sample_id)})", anchor=False)
badge = captions.incorrect_badge(item.correct, item.is_detection)
if badge:
    st.markdown(badge + " The model got this one wrong on the source; the run tested every inference (test_all).")
evidence_col, decision_col = st.columns([3, 2], gap="medium")
with evidence_col:
    review_panels.first_screen_images(item, relation)


def judge(verdict: str, run_id: int, relation: str, sample_id: str, rel_path: str) -> None:
    # A callback runs at the start of the next rerun: ask the store for the account's roles now, not as they
    # were when this page was drawn (a role revoked meanwhile no longer counts).  The run, relation and item
    # are the ones the form was drawn for, and the call is saved only while that item is still the one the
    # page is on.
    mark_own_event()
    if queue.at(st.session_state.get(pos_key, pos)) != sample_id:
        # drawn for an item the page has since left (the form of the last item stays on screen until the
        # new one is drawn, and a key pressed twice submits it twice): saving it would change that item's call
        st.session_state[ERROR_KEY] = captions.call_on_a_left_item(rel_path, verdict)
        saved_item, saved_line, _ = st.session_state.get(LAST_SAVED_KEY) or (None, None, None)
        if saved_item == (run_id, relation, sample_id):   # the second of a double press: the first press's
            st.session_state[FLASH_KEY] = saved_line       # save stays in view beside the refusal
        return
    suffix = review_keys.item_suffix(run_id, relation, sample_id)      # the form's values as sent with the submit
    now = current_actor(store)     # the live session's account with its roles now (signed out: nobody)
    reasons = [r for i, r in enumerate(review.FP_REASONS)
               if st.session_state.get(f"{review_keys.REASON_KEY_PREFIX}{i}_{suffix}")]
    note = st.session_state.get(f"{review_keys.NOTE_KEY_PREFIX}{suffix}") or ""
    validity = st.session_state.get(f"{review_keys.VALIDITY_KEY_PREFIX}{suffix}")
    try:
        record_call(now, store, run_id, sample_id, relation, verdict, reasons, note, validity=validity)
    except StoreBusy:       # nothing saved: the page stays on the item, its form as sent, for a second press
        st.session_state[ERROR_KEY] = captions.busy_call(rel_path, verdict)
        return
    except (ValueError, NotAllowed) as exc:
        st.session_state[ERROR_KEY] = plain(exc)
        return
    st.session_state.pop(ERROR_KEY, None)
    st.session_state[FLASH_KEY] = captions.saved_call(run_id, relation, rel_path, verdict, validity)
    st.session_state[CALLED_KEY] = (run_id, relation, mode, sample_id)
    move(1)
    moved_to = review_keys.item_suffix(run_id, relation, queue.at(st.session_state[pos_key]))
    st.session_state[LAST_SAVED_KEY] = ((run_id, relation, sample_id), st.session_state[FLASH_KEY], moved_to)


saved = queue.my_call(sample_id)
saved_reasons, saved_note = queue.my_saved(sample_id)
# a revisited item shows the stored reasons, validity and note (what the reviewer typed since stays)
for i, reason in enumerate(review.FP_REASONS):
    init_value(f"{review_keys.REASON_KEY_PREFIX}{i}_{suffix}", reason in saved_reasons)
init_value(f"{review_keys.NOTE_KEY_PREFIX}{suffix}", saved_note)
init_value(f"{review_keys.VALIDITY_KEY_PREFIX}{suffix}", queue.my_validity_call(sample_id))
call = (run_id, relation, sample_id, item.rel_path)
with decision_col, st.container(key=review_keys.DECISION_KEY, border=True):
    # what the last press did, where the reviewer looks after pressing: above the call buttons
    flash = st.session_state.pop(FLASH_KEY, None)
    if flash:
        st.success(flash)
    if st.session_state.get(ERROR_KEY):     # a refused press (after a save's line: the second of a double press)
        st.error(st.session_state[ERROR_KEY])
    end = captions.queue_end(queue, pos)
    if end:
        (st.success if queue.done else st.info)(end)
    with st.form(key=f"review_form_{suffix}", border=False, enter_to_submit=False):
        st.markdown("**Your call**", help="Blind: the other reviewer's call shows only in calibration, once you "
                    "have both judged every item of the sample. A call saves and opens the next item.")
        for verdict in ("tp", "fp", "uncertain"):
            # the saved call's button is marked; no button is before a call (a highlighted one would nudge)
            st.form_submit_button(review.VERDICT_LABELS[verdict].capitalize(),
                                  key=f"{review_keys.CALL_KEY_PREFIX}{verdict}_{suffix}", on_click=judge,
                                  args=(verdict, *call), type="primary" if saved == verdict else "secondary",
                                  disabled=not can_judge, width="stretch",
                                  help=f"{review_keys.CALL_KEYS[verdict]}: save this call and open the next item")
        st.caption("False-positive reasons (EMSE21 s5.1)")
        for i, reason in enumerate(review.FP_REASONS):
            st.checkbox(f"{i + 1} {review.REASON_LABELS[reason]}", key=f"{review_keys.REASON_KEY_PREFIX}{i}_{suffix}")
        st.radio("Is the mutant a valid test?", review.VALIDITY, key=f"{review_keys.VALIDITY_KEY_PREFIX}{suffix}",
                 format_func=lambda v: review.VALIDITY_LABELS.get(v, v), horizontal=True,
                 help="Valid: the object really removed (MR-1) or the background really replaced (MR-2), with no "
                      "artefact. Invalid mutants are counted apart. Keys V, I, Q.")
        st.text_input("Note", key=f"{review_keys.NOTE_KEY_PREFIX}{suffix}", placeholder="/ to write, Esc to leave")
    with st.expander("Keys"):
        st.markdown(review_keys.legend_markdown())
    if end:
        st.markdown(captions.agreement_link())
    # the item's comment thread, closed below the form (objrel.review.comments keeps it blind until close)
    threads.thread_panel(actor, store, run_id, relation, sample_id, suffix, actor_now=lambda: current_actor(store),
                         on_event=mark_own_event)
if not can_judge:
    st.caption("Without the reviewer role the call buttons are off (objrel.review refuses the write anyway).")
st.html(review_keys.key_script(), unsafe_allow_javascript=True)

review_panels.headline(item, relation)
scores_note = captions.lazy_scores_note(item, by_id[run_id])
if scores_note:
    st.caption(scores_note)
review_panels.evidence(actor, store, item, relation, called=saved is not None)
if can_judge and saved is not None:
    review_panels.my_history(actor, store, run_id, relation, sample_id)
if queue.done and mode == REVIEW_SAMPLE:
    review_panels.calibration(actor, store, run_id, relation)

# The items the reviewer may open next are made while this one is looked at.
ahead.prepare(store, run_id, [queue.at(queue.step(pos, 1)), queue.at(skip_to) if skip_to is not None else None],
              relation)
