"""Streamlit panels for comment threads and gold items: an item's thread (Review, Agreement), the gold line of
calibration, and the admin's gold section (Users).

The panels only draw and pass what was typed to ``objrel.review.comments`` and ``objrel.review.gold``, which ask
the gate and keep review blind; every text from people goes through ``plain``.  A thread sits in a closed
expander, so it never pushes a page's decision down.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from objrel import access as A
from objrel.access import Actor
from objrel.app.text import plain
from objrel.errors import NotAllowed, StoreBusy
from objrel.store import Store

# Widget keys (prefixes; the item's suffix follows) of a thread panel.
TEXT_KEY_PREFIX = "thread_text_"
POST_KEY_PREFIX = "thread_post_"
RESOLVE_KEY_PREFIX = "thread_resolve_"
FLASH_KEY_PREFIX = "thread_flash_"
# Rows of the comment box.
COMMENT_BOX_HEIGHT = 68


def _post(actor_now: Callable[[], Actor], store: Store, run_id: int, relation: str, sample_id: str, suffix: str,
          on_event: Callable[[], None] | None) -> None:
    from objrel.review.comments import write_comment

    if on_event:
        on_event()
    text = st.session_state.get(f"{TEXT_KEY_PREFIX}{suffix}") or ""
    try:
        write_comment(actor_now(), store, run_id, relation, sample_id, text)
    except (ValueError, NotAllowed, StoreBusy) as exc:
        st.session_state[f"{FLASH_KEY_PREFIX}{suffix}"] = ("error", plain(exc))
        return
    st.session_state[f"{TEXT_KEY_PREFIX}{suffix}"] = ""
    st.session_state[f"{FLASH_KEY_PREFIX}{suffix}"] = ("success", "Comment posted.")


def _resolve(actor_now: Callable[[], Actor], store: Store, run_id: int, relation: str, sample_id: str, suffix: str,
             resolved: bool, on_event: Callable[[], None] | None) -> None:
    from objrel.review.comments import set_resolved

    if on_event:
        on_event()
    try:
        set_resolved(actor_now(), store, run_id, relation, sample_id, resolved)
    except (ValueError, NotAllowed, StoreBusy) as exc:
        st.session_state[f"{FLASH_KEY_PREFIX}{suffix}"] = ("error", plain(exc))
        return
    st.session_state[f"{FLASH_KEY_PREFIX}{suffix}"] = ("success", "Thread resolved." if resolved else
                                                       "Thread reopened.")


def thread_panel(actor: Actor, store: Store, run_id: int, relation: str, sample_id: str, suffix: str, *,
                 actor_now: Callable[[], Actor] | None = None, on_event: Callable[[], None] | None = None) -> None:
    """The item's comment thread in a closed expander: the entries ``actor`` may read, a box to comment, and
    resolve or reopen.  ``suffix``: the item's widget-key tail; ``actor_now``: who acts when a button is pressed
    (the live session's account then; default ``actor``); ``on_event``: called first in each callback (the
    Review page marks its own events).  Nothing is drawn for an account without a reviewing role."""
    from objrel.review.comments import thread

    if not A.permits(actor, A.SEE_COMMENTS):
        return
    try:
        shown = thread(actor, store, run_id, relation, sample_id)
    except (ValueError, NotAllowed) as exc:
        st.caption(plain(exc))
        return
    count = len(shown.comments)
    label = (f"Comments ({count}, {shown.state})" if count else "Comments") + (
        f" \u00b7 {shown.withheld} hidden until the sample closes" if shown.withheld else "")
    who = actor_now or (lambda: actor)
    flash = st.session_state.pop(f"{FLASH_KEY_PREFIX}{suffix}", None)
    with st.expander(label, expanded=flash is not None, key=f"thread_box_{suffix}"):
        if flash:
            (st.error if flash[0] == "error" else st.success)(flash[1])
        for line in shown.entries:
            words = plain(line.body) if line.body is not None else f"*{plain(_event(line.kind))}*"
            st.markdown(f"**{plain(line.author)}**: {words}")
        if shown.withheld:
            st.caption(f"{shown.withheld} entr{'ies' if shown.withheld != 1 else 'y'} by other parties show once "
                       "every reviewer has judged the whole sample (review stays blind until then).")
        elif not shown.entries:
            st.caption("No comments yet. Others read yours once the sample closes; an adjudicator reads them now.")
        can_write = A.permits(actor, A.COMMENT)
        st.text_area("Comment", key=f"{TEXT_KEY_PREFIX}{suffix}", height=COMMENT_BOX_HEIGHT, disabled=not can_write,
                     placeholder="A question or a remark on this item")
        left, right = st.columns(2)
        left.button("Post comment", key=f"{POST_KEY_PREFIX}{suffix}", disabled=not can_write,
                    on_click=_post, args=(who, store, run_id, relation, sample_id, suffix, on_event))
        if count:
            right.button("Reopen thread" if shown.resolved else "Resolve thread", key=f"{RESOLVE_KEY_PREFIX}{suffix}",
                         disabled=not A.permits(actor, A.RESOLVE_THREAD), on_click=_resolve,
                         args=(who, store, run_id, relation, sample_id, suffix, not shown.resolved, on_event))


def _event(kind: str) -> str:
    from objrel.review.comments import EVENT_WORDS

    return EVENT_WORDS.get(kind, kind)


def gold_lines(cal) -> list[str]:
    """Markdown lines of calibration's gold scores (``Calibration.gold``): one per reviewer; none without gold."""
    return [f"Gold items, {plain(s.reviewer)}: {plain(s.text)}" for s in getattr(cal, "gold", ()) or ()]


def gold_section(actor: Actor, store: Store) -> None:
    """The admin's gold items: mark a flagged item of a run with its known call (or unmark it), and every
    reviewer's accuracy on the run's gold items.  Drawn only for an account the gate lets mark gold."""
    from objrel import review
    from objrel.analysis.overview import tested_runs
    from objrel.review.gold import gold_view, mark_gold, unmark_gold

    if not A.permits(actor, A.MARK_GOLD):
        return
    st.subheader("Gold items")
    st.caption("Items with a known call, put unannounced into every reviewer's review queue; each reviewer's "
               "accuracy on them shows here now and in their calibration once the sample closes.")
    runs = tested_runs(store)
    if not runs:
        st.info("No run with tested inferences yet.")
        return
    c1, c2 = st.columns([3, 1])
    run_id = c1.selectbox("Run", [r.id for r in runs], index=len(runs) - 1, key="gold_run",
                          format_func=lambda i: f"run {i}")
    relation = c2.radio("Relation", review.RELATIONS, key="gold_relation", horizontal=True)
    flagged = list(store.flagged_sample_ids(run_id, relation))
    if flagged:
        with st.form("gold_form"):
            f1, f2 = st.columns([3, 2])
            sample_id = f1.selectbox("Flagged item", flagged, key="gold_item")
            call = f2.radio("Known call", review.VERDICTS, key="gold_call", horizontal=True,
                            format_func=review.VERDICT_LABELS.get)
            g1, g2 = st.columns(2)
            marked = g1.form_submit_button("Mark gold", key="gold_mark_btn")
            unmarked = g2.form_submit_button("Unmark", key="gold_unmark_btn")
        if marked or unmarked:
            try:
                if marked:
                    mark_gold(actor, store, run_id, relation, sample_id, call)
                    st.success(f"{plain(sample_id)} is gold: {plain(review.VERDICT_LABELS[call])}.")
                elif unmark_gold(actor, store, run_id, relation, sample_id):
                    st.success(f"{plain(sample_id)} is no longer gold.")
                else:
                    st.info(f"{plain(sample_id)} was not gold.")
            except (ValueError, NotAllowed, StoreBusy) as exc:
                st.error(plain(exc))
    else:
        st.caption(f"Run {run_id} has no flagged {plain(relation)} item.")
    try:
        view = gold_view(actor, store, run_id, relation)
    except (ValueError, NotAllowed) as exc:
        st.caption(plain(exc))
        return
    if view.items:
        st.dataframe([{"item": g.sample_id, "known call": g.call, "marked by": g.marked_by} for g in view.items],
                     hide_index=True, key="gold_items_table")
        st.dataframe([{"reviewer": s.reviewer, "gold items called": s.called, "right": s.correct,
                       "accuracy": None if s.accuracy is None else round(s.accuracy, 3)} for s in view.scores],
                     hide_index=True, key="gold_scores_table")
    else:
        st.caption("No gold item in this run and relation yet.")
