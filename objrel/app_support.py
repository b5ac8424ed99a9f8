"""Functions the Streamlit pages call: every figure a page shows is computed here, not in the page."""

from __future__ import annotations

import pandas as pd

from .stats import summarize
from .store import Store


def open_store(url: str | None = None) -> Store:
    """The store of $OBJREL_STORE (or ``url``), cached per process by Streamlit."""
    import streamlit as st

    @st.cache_resource
    def _open(resolved: str) -> Store:
        return Store(resolved)

    from .store import resolve_url

    return _open(resolve_url(url))


def run_table(store: Store) -> pd.DataFrame:
    rows = [{
        "run": r.id, "name": r.name, "model": r.model, "dataset": r.dataset, "status": r.status,
        "samples": f"{r.n_done}/{r.n_total}", "tested": r.n_tested, "skipped": r.n_skipped,
        "created": r.created_at.strftime("%Y-%m-%d %H:%M"),
    } for r in store.list_runs()]
    return pd.DataFrame(rows)


def summary_table(store: Store) -> list[dict]:
    out = []
    for r in store.list_runs():
        if r.n_done == 0:
            continue
        s = summarize(store, r.id)
        out.append({"run": r.id, **s.table_row(), "correct": s.correct, "evaluated": s.evaluated})
    return out
