"""The stakeholder report as the app serves it: built once per state of its run and shared by every session.

``objrel.analysis.report.build_report`` takes seconds and its HTML is tens of MB (thumbnails and plotly.js
inlined).  Building it is public (visitors without an account read reports), so a page that built it per
session let ten sessions hold ten copies of the same report.  Here a report is keyed by the store, the run and
the run's *state* (``report_state``: the run's results stamp and name, the reviewers' current calls, the
adjudications and the drawn review samples); the first request for a state builds it in a slot of the work
queue (``objrel.work_queue``, as public work), requests for the same state meanwhile wait for that build, and
later ones get the same string.  The newest :data:`KEEP_REPORTS` reports are kept in this server process; a
changed state builds a new one.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from concurrent.futures import Future

from objrel import work_queue
from objrel.access import Actor
from objrel.store import Store
from objrel.store import reviews as review_rows
from objrel.store.kept import run_stamp

# Reports kept per server process, the newest last (each tens of MB); an older one is built again when asked.
KEEP_REPORTS = 3
# The relations whose reviews a report shows.
REPORT_RELATIONS = ("MR-1", "MR-2")

_lock = threading.Lock()
_reports: OrderedDict[tuple, Future] = OrderedDict()


def report_state(store: Store, run_id: int) -> str:
    """A digest of everything the report of run ``run_id`` shows: the run's results stamp and name, every
    reviewer's current call version, the adjudications and the drawn review samples.  Equal digests, equal
    reports (but for the time it was generated)."""
    rid = int(run_id)
    stamp, _ = run_stamp(store, rid)
    parts = [stamp, store.get_run(rid).name, repr(sorted(review_rows.current_versions(store, rid).items()))]
    for rel in REPORT_RELATIONS:
        adjudicated = review_rows.adjudications(store, rid, rel)
        parts.append(repr(sorted((sid, sorted(row.items())) for sid, row in adjudicated.items())))
        parts.append(repr(review_rows.review_sample(store, rid, rel)))
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def _key(store: Store, run_id: int) -> tuple:
    return store.url, int(run_id), report_state(store, run_id)


def ready_report(store: Store, run_id: int) -> str | None:
    """The report of run ``run_id`` in its present state when one was built (None otherwise, or while it is
    being built).  Builds nothing: a page may ask on every redraw."""
    with _lock:
        fut = _reports.get(_key(store, run_id))
    if fut is None or not fut.done() or fut.exception() is not None:
        return None
    return fut.result()


def report_html(actor: Actor, store: Store, run_id: int) -> str:
    """The report of run ``run_id`` in its present state: the one kept, the one being built (waited for), or
    built now in a slot of the work queue for ``actor`` (anyone may: reports are public).  WorkRefused, with
    nothing built, when the server's cap or the cap of ``actor`` (every visitor without an account counting
    as one person) is reached."""
    key = _key(store, run_id)
    with _lock:
        fut = _reports.get(key)
        mine = fut is None or (fut.done() and fut.exception() is not None)
        if mine:
            fut = _reports[key] = Future()
        _reports.move_to_end(key)
        while len(_reports) > KEEP_REPORTS:
            _reports.popitem(last=False)
    if not mine:
        return fut.result()
    try:
        with work_queue.admit(actor, work_queue.REPORT, f"the report of run {int(run_id)}", public=True):
            from objrel.analysis.report import build_report

            fut.set_result(build_report(store, int(run_id)))
    except BaseException as exc:
        fut.set_exception(exc)
        with _lock:
            if _reports.get(key) is fut:
                del _reports[key]
    return fut.result()


def forget() -> None:
    """Drop every kept report (a test, or a store replaced under the same URL)."""
    with _lock:
        _reports.clear()
