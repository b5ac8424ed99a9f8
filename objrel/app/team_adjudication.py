"""The Agreement page's section for review teams: every item of a sample judged by more than two reviewers (k > 2,
or assigned to teams) whose calls are not all alike, with all its calls and a decision form.  A pair's view can
miss such an item (the two chosen reviewers may agree while a third does not); this section lists every one.

The panel draws and passes the decision on to ``objrel.review.adjudicate``; ``objrel.review.agreement.team_view``
asks the gate (the calls of an open sample stay hidden from its parties).  Every text from people goes through
``plain``.
"""

from __future__ import annotations

import streamlit as st

from objrel.access import Actor
from objrel.app.captions import call_text, validity_words
from objrel.app.text import plain
from objrel.errors import NotAllowed, StoreBusy
from objrel.store import Store

# The open items that get a form at once (more appear as these are decided).
MAX_TEAM_FORMS = 10


def _needs_section(state) -> bool:
    """Teams beyond a pair: a pair's view covers a sample of two reviewers per item open to everyone."""
    return bool(state.team) or state.k > 2


def team_section(actor: Actor, store: Store, run_id: int, relation: str, flash_key: str) -> None:
    """Items without consensus among all their reviewers, each with a decision form, for an adjudicator or
    admin; nothing for a sample of two reviewers per item open to everyone (the pair view shows those)."""
    from objrel import review
    from objrel.review.agreement import sample_state, team_view

    if not _needs_section(sample_state(store, run_id, relation)):
        return
    try:
        view = team_view(actor, store, run_id, relation)
    except NotAllowed as exc:
        st.info(plain(exc))
        return
    st.subheader("Items without consensus among all their reviewers", anchor="team-disagreements")
    st.caption(f"Each item of this sample is judged by {view.state.k} reviewers; an item whose calls are not all "
               f"alike is decided here. {view.open} open, {len(view.disagreements) - view.open} decided.")
    for d in [d for d in view.disagreements if not d.resolved][:MAX_TEAM_FORMS]:
        key = f"team_{run_id}_{relation}_{d.sample_id}"
        with st.form(key=f"{key}_form"):
            st.markdown(f"**Item {plain(d.sample_id)}** (position {d.position + 1}, {d.kind} disagreement)")
            st.markdown("\n".join(f"- {plain(j.reviewer)}: {call_text(j.verdict, j.reasons, j.note)}; "
                                  f"{validity_words(j.validity)}" for j in d.calls))
            verdict = st.radio("Decision", review.VERDICTS, key=f"{key}_verdict", horizontal=True, index=None,
                               format_func=review.VERDICT_LABELS.get)
            reasons = st.multiselect("False-positive reasons (only with a false positive)", review.FP_REASONS,
                                     key=f"{key}_reasons", format_func=review.REASON_LABELS.get)
            note = st.text_input("Note (required with the reason \u201cother\u201d)", key=f"{key}_note")
            submitted = st.form_submit_button("Save decision", key=f"{key}_submit")
        if submitted:
            if verdict is None:
                st.error(f"{plain(d.sample_id)}: choose a decision first.")
                continue
            try:
                review.adjudicate(actor, store, run_id, d.sample_id, relation, verdict,
                                  reasons if verdict == "fp" else (), note or None)
            except (ValueError, NotAllowed, StoreBusy) as exc:
                st.error(f"{plain(d.sample_id)}: {plain(exc)}")
                continue
            st.session_state[flash_key] = f"Item {plain(d.sample_id)}: decided {verdict} by {plain(actor.name)}."
            st.rerun()
