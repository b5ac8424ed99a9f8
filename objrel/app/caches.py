"""Streamlit caches around objrel reads: the store, a run's model, rebuilt review items, per-run tables
and inspection results.

Each function wraps one plain objrel call in ``st.cache_resource`` (shared objects: the store,
models, immutable results) or ``st.cache_data`` (copied values); per-run tables are keyed by the
run's ``n_done`` so a running run's figures refresh as it goes.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from objrel.store import Store

# Review items kept per server process (thumbnails only: about 1.4 MB per item).
REVIEW_ITEM_CACHE = 16
# Adjudication and overlap cards kept per server process (small thumbnails; two pages of Agreement's forms).
ITEM_CARD_CACHE = 32
# Run models kept per server process (EfficientNet-Lite0 holds about 20 MB).
RUN_MODEL_CACHE = 4
# Per-run tables kept per server process.
RUN_TABLE_CACHE = 32
# Inspection results kept per server process (a 1000-class result holds about 40 MB).
INSPECT_RESULT_CACHE = 8
INSPECT_UPLOAD_CACHE = 4


def open_store(url: str | None = None) -> Store:
    """The store of $OBJREL_STORE (or ``url``), opened once per process.  A store that cannot be used (not an
    objrel store, damaged, written by a newer objrel) shows its one-line StoreError and stops the page."""
    from objrel.errors import StoreError
    from objrel.store import resolve_url

    @st.cache_resource(show_spinner=False)
    def _open(resolved: str) -> Store:
        return Store(resolved)

    try:
        return _open(resolve_url(url))
    except StoreError as exc:
        st.error(str(exc))
        st.stop()


def run_model(store: Store, run_id: int):
    """The classifier a run used (``objrel.config.run_model``), loaded once per process and run."""
    from objrel.config import run_model as load_run_model

    @st.cache_resource(max_entries=RUN_MODEL_CACHE, show_spinner="Loading the model ...")
    def _load(url: str, run_id: int, _store: Store):
        return load_run_model(_store, run_id)

    return _load(store.url, int(run_id), store)


def cached_review_item(store: Store, run_id: int, sample_id: str, relation: str):
    """The review item of (run, sample, relation), kept in Streamlit's data cache per store URL."""
    from objrel.review.items import review_item

    @st.cache_data(max_entries=REVIEW_ITEM_CACHE, show_spinner=False)
    def _item(url: str, run_id: int, sample_id: str, relation: str):
        return review_item(store, run_id, sample_id, relation)

    return _item(store.url, int(run_id), str(sample_id), relation)


def cached_item_card(store: Store, run_id: int, sample_id: str, relation: str):
    """``objrel.review.items.item_card``: an adjudication card's thumbnails, rebuilt once per item."""

    @st.cache_data(max_entries=ITEM_CARD_CACHE, show_spinner=False)
    def _card(url: str, run_id: int, sample_id: str, relation: str):
        from objrel.review.items import item_card

        return item_card(store, run_id, sample_id, relation)

    return _card(store.url, run_id, sample_id, relation)


def cached_size_bins(store: Store, run_id: int, relation: str) -> pd.DataFrame:
    """analysis.size_bins, computed once per server process for each state of the run (its n_done)."""
    from objrel.analysis.flag_tables import size_bins

    @st.cache_data(max_entries=RUN_TABLE_CACHE, show_spinner=False)
    def _bins(url: str, run_id: int, relation: str, n_done: int) -> pd.DataFrame:
        return size_bins(store, [run_id], relation)

    return _bins(store.url, int(run_id), relation, store.get_run(run_id).n_done)


def cached_flagged(store: Store, run_id: int, relation: str) -> tuple[str, ...]:
    """Flagged sample ids (primary vote) of a run, read once per server process for each state of the run
    (``objrel.store.kept.run_stamp``) and shared, not copied, between sessions: a run can flag a million."""
    from objrel.store.kept import run_stamp

    @st.cache_resource(max_entries=RUN_TABLE_CACHE, show_spinner=False)
    def _flagged(url: str, run_id: int, relation: str, stamp: str) -> tuple[str, ...]:
        return tuple(store.flagged_sample_ids(run_id, relation))

    return _flagged(store.url, int(run_id), relation, run_stamp(store, run_id)[0])


# ---------------------------------------------------------------- inspection results (immutable once read)


@st.cache_resource(show_spinner=False, max_entries=INSPECT_RESULT_CACHE)
def _inspect_file(name: str, mtime: float):
    from objrel.access import SERVER
    from objrel.studies.deepinspect.browse import open_result

    del mtime
    return open_result(SERVER, name)


def inspect_file(actor, name: str, mtime: float):
    """The results folder's file ``name`` for ``actor`` (the gate asks first), read again only when it changes
    on disk."""
    from objrel.access import OPEN_RESULTS, authorize

    authorize(actor, OPEN_RESULTS, repr(name))
    return _inspect_file(name, mtime)


@st.cache_resource(show_spinner=False, max_entries=INSPECT_UPLOAD_CACHE)
def _inspect_upload(digest: str, _name: str, _data: bytes):
    from objrel.access import SERVER
    from objrel.studies.deepinspect.browse import read_upload

    return read_upload(SERVER, _name, _data)


def inspect_upload(actor, name: str, digest: str, data: bytes):
    """An uploaded result for a signed-in ``actor``, cached by its digest (never by its bytes, which would keep
    every upload in memory as a cache key); ``read_upload`` checks its size and contents."""
    from objrel.access import UPLOAD_RESULTS, authorize

    authorize(actor, UPLOAD_RESULTS, repr(name))
    return _inspect_upload(digest, name, data)


@st.cache_resource(show_spinner=False, max_entries=INSPECT_UPLOAD_CACHE)
def _planted_result(seed: int):
    from objrel.access import SERVER
    from objrel.studies.deepinspect.browse import train_planted

    return train_planted(SERVER, seed)


def planted_result(actor, seed: int):
    """The planted DeepInspect benchmark for ``seed`` (trains a small CNN: a few seconds), for an ``actor`` the
    gate lets train; cached per seed."""
    from objrel.access import TRAIN_PLANTED, authorize

    from objrel import work_queue

    authorize(actor, TRAIN_PLANTED, f"seed {int(seed)}")
    with work_queue.admit(actor, work_queue.TRAINING, f"the planted benchmark of seed {int(seed)}"):
        return _planted_result(int(seed))


@st.cache_resource(show_spinner="Ranking the class pairs ...", max_entries=INSPECT_RESULT_CACHE)
def ranked_tables(key: tuple, _result):
    """(confusion, bias) tables of one result, built once: 1,000 classes make 499,500 pairs (about 10 s)."""
    from objrel.studies.deepinspect import bias_table, confusion_table

    del key
    return confusion_table(_result), bias_table(_result)


# ---------------------------------------------------------------- LIME already computed (never computed here)

# The sample counts the Review page offers, most samples first: the first cached explanation found is shown.
LIME_CACHED_SAMPLES = (1000, 300, 100)


def _stored_lime_samples(store: Store, run_id: int, sample_id: str, keys: tuple[str, ...]) -> int | None:
    """The LIME sample count (of LIME_CACHED_SAMPLES, most first) at which every image of ``keys`` is in the
    store's cache for the source's top-1 label, or None while one is missing."""
    from objrel.explain import settings_string
    from objrel.store.explanations import stored_explanation

    source = (store.predictions(run_id, sample_id).get("source") or {}).get("prediction") or {}
    if not source.get("top_labels"):
        return None
    label = int(source["top_labels"][0])
    for n in LIME_CACHED_SAMPLES:
        if all(stored_explanation(store, run_id, sample_id, k, label, settings_string(n)) is not None for k in keys):
            return n
    return None


def cached_lime_overlays(store: Store, run_id: int, sample_id: str, mutation_key: str, outline: bool = True) -> list:
    """LIME overlays (``objrel.review.lime_pair.ExplainedImage``) of the source and ``mutation_key``'s mutant,
    the target region outlined unless ``outline`` is False, only when both are already in the store's cache
    ([] otherwise): a lookup, never a LIME computation."""
    keys = ("source", str(mutation_key))
    n = _stored_lime_samples(store, int(run_id), str(sample_id), keys)
    if n is None:
        return []
    return _lime_overlays(store.url, int(run_id), str(sample_id), str(mutation_key), n, bool(outline), store)


@st.cache_data(max_entries=REVIEW_ITEM_CACHE, show_spinner=False)
def _lime_overlays(url: str, run_id: int, sample_id: str, mutation_key: str, num_samples: int, outline: bool,
                   _store: Store) -> list:
    from objrel.review.lime_pair import cached_pair

    return cached_pair(_store, run_id, sample_id, mutation_key, num_samples, outline=outline) or []
