"""Functions the Streamlit pages call: every figure a page shows is computed here or deeper in objrel.

The Streamlit-specific parts are the caches (``st.cache_resource`` for the store and
models, ``st.cache_data`` for rebuilt review items); everything they wrap is plain objrel.
"""

from __future__ import annotations

import pandas as pd

from objrel.analysis.summary import summarize
from objrel.store import Store

# Review items kept per server process (thumbnails only: about 1.4 MB per item).
REVIEW_ITEM_CACHE = 16


def open_store(url: str | None = None) -> Store:
    """The store of $OBJREL_STORE (or ``url``), cached per process by Streamlit."""
    import streamlit as st

    from objrel.store import resolve_url

    @st.cache_resource(show_spinner=False)
    def _open(resolved: str) -> Store:
        return Store(resolved)

    return _open(resolve_url(url))


def run_model(store: Store, run_id: int):
    """The run's model, loaded once per server process."""
    import streamlit as st

    from objrel.config import RunConfig
    from objrel.models import load_classifier

    cfg = RunConfig.from_dict(store.get_run(run_id).config)

    @st.cache_resource(show_spinner="Loading the model ...")
    def _load(model: str, weights: str | None, task: str, threshold: float):
        return load_classifier(model, weights, task=task, threshold=threshold)

    return _load(cfg.model, cfg.weights, cfg.task, cfg.threshold)


def cached_review_item(store: Store, run_id: int, sample_id: str, relation: str):
    import streamlit as st

    from objrel.review.items import review_item

    @st.cache_data(max_entries=REVIEW_ITEM_CACHE, show_spinner=False)
    def _item(url: str, run_id: int, sample_id: str, relation: str):
        return review_item(store, run_id, sample_id, relation)

    return _item(store.url, int(run_id), str(sample_id), relation)


def run_label(r) -> str:
    return f"#{r.id} {r.name} ({r.status})"


def run_table(store: Store) -> pd.DataFrame:
    from objrel.engine.jobs import display_status

    rows = [{
        "run": r.id, "name": r.name, "model": r.model, "dataset": r.dataset, "status": display_status(r),
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


def striking_examples(store: Store, limit: int = 4) -> list[dict]:
    """Flagged correct inferences with the lowest object-relevancy score S (or flagged by both relations
    first): the examples that make the point to a stakeholder."""
    out = []
    for r in store.list_runs():
        f1 = set(store.flagged_sample_ids(r.id, "MR-1"))
        f2 = set(store.flagged_sample_ids(r.id, "MR-2"))
        if not (f1 | f2):
            continue
        for s in store.samples(r.id, status="tested"):
            sid = s["sample_id"]
            if sid in f1 or sid in f2:
                rel = "MR-1&2" if sid in f1 and sid in f2 else ("MR-1" if sid in f1 else "MR-2")
                out.append({"run_id": r.id, "sample_id": sid, "relation": rel, "image": s["rel_path"],
                            "s": s["s"], "both": sid in f1 and sid in f2})
    out.sort(key=lambda d: (not d["both"], d["s"] if d["s"] is not None else 1.0))
    return out[:limit]


def cached_size_bins(store: Store, run_id: int, relation: str) -> pd.DataFrame:
    """analysis.size_bins, computed once per server process for each state of the run (its n_done)."""
    import streamlit as st

    from objrel.analysis.studies import size_bins

    @st.cache_data(max_entries=32, show_spinner=False)
    def _bins(url: str, run_id: int, relation: str, n_done: int) -> pd.DataFrame:
        return size_bins(store, [run_id], relation)

    return _bins(store.url, int(run_id), relation, store.get_run(run_id).n_done)


def cached_flagged(store: Store, run_id: int, relation: str) -> list[str]:
    """Flagged sample ids (primary vote) of a run, cached for each state of the run (its n_done)."""
    import streamlit as st

    @st.cache_data(max_entries=32, show_spinner=False)
    def _flagged(url: str, run_id: int, relation: str, n_done: int) -> list[str]:
        return store.flagged_sample_ids(run_id, relation)

    return _flagged(store.url, int(run_id), relation, store.get_run(run_id).n_done)
