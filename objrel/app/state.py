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
