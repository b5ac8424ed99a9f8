"""Widget state set before the widget is drawn: only when absent, or when the stored value is no longer valid."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def init_value(key: str, default) -> None:
    """Set ``key`` to ``default`` only when the session has no value for it."""
    if key not in st.session_state:
        st.session_state[key] = default


def keep_choice(key: str, default, options: Sequence) -> None:
    """Initialise a choice widget's state; reset it to ``default`` when it is no longer one of ``options``
    (for a multiselect, ``default`` is a list and every chosen value must still be an option)."""
    value = st.session_state.get(key)
    if isinstance(default, list):
        valid = isinstance(value, list) and all(v in options for v in value)
    else:
        valid = value in options
    if key not in st.session_state or not valid:
        st.session_state[key] = default


def keep_number(key: str, default, lo, hi) -> None:
    """Initialise a number widget's state; pull a stored value back into [lo, hi]."""
    init_value(key, default)
    value = st.session_state[key]
    if not lo <= value <= hi:
        st.session_state[key] = min(max(value, lo), hi)


# ---------------------------------------------------------------- a rerun the page's own widget started

# Set by a page's own widgets when they start a rerun (their on_click / on_change).  Such a rerun carries the
# query string the browser had when the widget was used, which can be older than the one the page last wrote: a
# second press sent before the first press's rerun reached the browser carries the item the first press left.
# It is the reviewer's own input, never a link to follow.
OWN_EVENT_KEY = "page_own_event"


def mark_own_event() -> None:
    """A widget callback: the rerun it starts comes from this page's own controls, not from a link."""
    st.session_state[OWN_EVENT_KEY] = True


def took_own_event() -> bool:
    """Whether this run was started by one of the page's own widgets (``mark_own_event``); forgets it."""
    return bool(st.session_state.pop(OWN_EVENT_KEY, False))


# ---------------------------------------------------------------- the review selection, shared by pages

# What Review and Agreement show (run, relation, queue, item) lives in the query string.  Streamlit drops the
# query string on a top-bar page switch and forgets a widget's state once a page without that widget ran, so
# the last selection is also kept under this page-independent key (not a widget's), and written back into the
# URL when a page opens without one.
SELECTION_KEY = "review_selection"
SELECTION_PARAMS = ("run", "relation", "queue", "item")


def remembered_selection() -> dict[str, str]:
    """The last selection Review or Agreement showed in this browser session ({} before any)."""
    return dict(st.session_state.get(SELECTION_KEY) or {})


def remember_selection(values: dict[str, str]) -> None:
    """Keep ``values`` (some of SELECTION_PARAMS, as text) as the session's selection; keys not given stay."""
    kept = remembered_selection()
    kept.update({k: str(v) for k, v in values.items() if k in SELECTION_PARAMS and v is not None})
    st.session_state[SELECTION_KEY] = kept


def arrival_params() -> dict[str, str]:
    """The selection a page opens with: the URL's when it names a run (a link, a reload), else the session's
    last one, which is written back into the URL so a reload or a shared link shows the same."""
    params = {k: v for k, v in st.query_params.to_dict().items() if k in SELECTION_PARAMS}
    if params.get("run"):
        return params
    kept = remembered_selection()
    if kept.get("run"):
        st.query_params.update(kept)
    return kept
