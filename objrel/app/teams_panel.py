"""The admin's review teams section (Users): k reviewers per item of a drawn review sample, each item's team
(spread evenly over a pool, or one item's team by hand), and every reviewer's workload.

The panel only draws and passes what was chosen to ``objrel.review.teams``, which asks the gate
(``ASSIGN_REVIEWERS``, ``SEE_WORKLOAD``) and checks the plan; no call is shown, only counts.
"""

from __future__ import annotations

import streamlit as st

from objrel import access as A
from objrel.access import Actor
from objrel.app.text import plain
from objrel.errors import NotAllowed, StoreBusy
from objrel.store import Store

FLASH_KEY = "teams_flash"
# The most reviewers per item the form offers (a team larger than this is rarely worth the reviewers' time).
MAX_K = 10


def _drawn_samples(store: Store) -> list[tuple[int, str, str]]:
    """(run id, run name, relation) of every drawn review sample, runs oldest first."""
    from objrel import review

    return [(int(run.id), run.name, relation) for run in store.list_runs() for relation in review.RELATIONS
            if review.review_sample_info(store, run.id, relation) is not None]


def _act(what, message: str) -> None:
    try:
        what()
    except (ValueError, NotAllowed, StoreBusy) as exc:
        st.error(plain(exc))
    else:
        st.session_state[FLASH_KEY] = message
        st.rerun()


def teams_section(actor: Actor, store: Store) -> None:
    """Review teams and workload, drawn only for an account the gate lets assign reviewers."""
    from objrel import review
    from objrel.review import teams as T
    from objrel.review.judgments import may_still_judge

    if not A.permits(actor, A.ASSIGN_REVIEWERS):
        return
    st.subheader("Review teams")
    st.caption("How many reviewers judge each item of a drawn review sample (k), and who. Without teams every "
               "reviewer may judge every item and the sample closes once k of them judged all of it; with teams "
               "each item is judged by its k reviewers only, and the sample closes once each of them is done. "
               "Review stays blind until then.")
    if FLASH_KEY in st.session_state:
        st.success(st.session_state.pop(FLASH_KEY))
    samples = _drawn_samples(store)
    if not samples:
        st.info("No review sample has been drawn yet: the first reviewer to open a run on the Review page draws it.")
    else:
        choice = st.selectbox("Review sample", range(len(samples)), index=len(samples) - 1, key="teams_sample",
                              format_func=lambda i: f"run {samples[i][0]}, {samples[i][2]}: {samples[i][1]}")
        run_id, _name, relation = samples[choice]
        draw = review.review_sample_info(store, run_id, relation)
        teams = T.teams(store, run_id, relation)
        reviewers = sorted(may_still_judge(store))
        st.markdown(f"{draw.size} drawn items, k = {draw.k}; "
                    f"{'assigned to teams' if teams else 'open to every reviewer'}.")
        with st.form("teams_k"):
            k = st.number_input("Reviewers per item (k)", min_value=2, max_value=MAX_K, value=min(draw.k, MAX_K),
                                step=1, key="teams_k_value", disabled=bool(teams),
                                help="fixed once the sample is assigned to teams")
            set_k = st.form_submit_button("Set k", key="teams_k_btn", disabled=bool(teams))
        if set_k:
            _act(lambda: T.set_reviewers_per_item(actor, store, run_id, relation, int(k)),
                 f"Run {run_id}, {relation}: {int(k)} reviewers per item.")
        with st.form("teams_spread"):
            pool = st.multiselect("Pool", reviewers, default=reviewers, key="teams_pool")
            spread = st.form_submit_button("Spread the sample evenly over the pool", key="teams_spread_btn")
        if spread:
            _act(lambda: T.spread_reviewers(actor, store, run_id, relation, pool),
                 f"Run {run_id}, {relation}: each item has {draw.k} reviewers from a pool of {len(pool)}.")
        with st.form("teams_item"):
            c1, c2 = st.columns([2, 3])
            item = c1.selectbox("Item", draw.sample_ids, key="teams_item")
            team = c2.multiselect(f"Its {draw.k} reviewers", reviewers, default=list(teams.get(item, ())),
                                  key="teams_item_team")
            assign = st.form_submit_button("Assign this item", key="teams_item_btn")
        if assign:
            _act(lambda: T.assign_reviewers(actor, store, run_id, relation, {item: team}),
                 f"Run {run_id}, {relation}: {plain(item)} goes to {', '.join(map(plain, team))}.")
    if A.permits(actor, A.SEE_WORKLOAD):
        rows = T.workload(actor, store)
        st.markdown("**Workload**: each reviewer's items of each drawn sample and how many they judged.")
        if rows:
            st.dataframe([{"run": w.run_id, "relation": w.relation, "k": w.k, "reviewer": w.reviewer,
                           "items": w.items, "judged": w.judged, "progress": f"{100 * w.share:.0f}%",
                           "team": "assigned" if w.assigned else "open"} for w in rows],
                         hide_index=True, key="teams_workload")
        else:
            st.caption("No reviewer has an item yet.")
