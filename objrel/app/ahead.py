"""Review items made ahead of the reviewer: while one item is looked at, the next ones are rebuilt.

An item (``objrel.review.items.review_item``: the source and its mutants rebuilt from their recipes, as
thumbnails, with their predictions read from the store) takes a few hundred milliseconds to make.  The Review
page asks for the items a reviewer may open next (the next one, the next one not yet called) with
``prepare``; one worker thread per server process makes them in the background, and ``review_item`` then
returns the ready item at once (or waits for the one being made, never makes it twice).

Items are immutable once made: a store's predictions and recipes do not change under a finished run.  The
newest ``KEEP_ITEMS`` are kept per server process (thumbnails only: about 1.4 MB an item).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor

from objrel.store import Store

# Items kept per server process, the newest first; an older one is made again when asked for.
KEEP_ITEMS = 32
# Threads making items ahead: one, so the work ahead never competes with the pages for more than a core.
WORKERS = 1

_lock = threading.Lock()
_items: OrderedDict[tuple, Future] = OrderedDict()
_pool: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="objrel-review-ahead")
    return _pool


def _make(store: Store, run_id: int, sample_id: str, relation: str):
    from objrel.review.items import review_item as build

    return build(store, run_id, sample_id, relation)


def _future(store: Store, run_id: int, sample_id: str, relation: str, background: bool) -> tuple[Future, bool]:
    """The item's future (made now in the background or left for the caller: ``(future, True)`` when the caller
    must make it)."""
    key = (store.url, int(run_id), str(sample_id), str(relation))
    with _lock:
        fut = _items.get(key)
        if fut is not None and not (fut.done() and fut.exception() is not None):
            _items.move_to_end(key)
            return fut, False
        if background:
            fut = _executor().submit(_make, store, int(run_id), str(sample_id), str(relation))
        else:
            fut = Future()
        _items[key] = fut
        while len(_items) > KEEP_ITEMS:
            _items.popitem(last=False)
        return fut, not background


def review_item(store: Store, run_id: int, sample_id: str, relation: str):
    """The review item of (run, sample, relation): the one made ahead, or made now.  An item that could not be
    made raises its error here (and is tried again on the next request)."""
    fut, mine = _future(store, run_id, sample_id, relation, background=False)
    if mine:
        try:
            fut.set_result(_make(store, int(run_id), str(sample_id), str(relation)))
        except BaseException as exc:
            fut.set_exception(exc)
    return fut.result()


def prepare(store: Store, run_id: int, sample_ids, relation: str) -> None:
    """Start making the items of ``sample_ids`` in the background (those not already made or being made)."""
    for sid in dict.fromkeys(s for s in sample_ids if s is not None):
        _future(store, run_id, sid, relation, background=True)


def forget() -> None:
    """Drop every item kept (a test, or a store replaced under the same URL)."""
    with _lock:
        _items.clear()
