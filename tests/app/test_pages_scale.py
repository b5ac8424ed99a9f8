"""A page view reads the same amount from the store whatever the size of its runs.

Two stores built like ``benchmarks/synthetic_store.py`` builds them (the engine's rows, a second run, a review
day), with 1,000 and 20,000 samples. Pages over the review may read as much more as the review sample holds
(Cochran's formula caps it at 385 items, however large the run). Each page is viewed once (which computes and keeps
its results), then viewed again by a new process-like session (this process's copies and Streamlit's caches
dropped) and once more in the same session. For those two views the test counts the SQL statements and the work
SQLite does (its virtual machine's steps, through ``set_progress_handler``): a page that read every sample of a run
would do about 20 times the work on the bigger store.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
SIZES = (1_000, 20_000)
# Pages over the runs' results: their reads must not grow at all.
RESULT_PAGES = ("overview", "explore", "runs")
# Pages over the review: they show the drawn review sample (its calls, disagreements, queues), whose size grows
# with the flagged population up to Cochran's 385 and then stays; their reads may grow as the sample does.
REVIEW_PAGES = ("agreement", "my_work", "review")
# SQLite VM steps between two progress-handler calls.
STEP = 1000
# A view on the 20x bigger store may do this much more work (indexes one level deeper, longer ids) ...
MAX_GROWTH = 1.5
# ... plus this many steps (a handful of index probes).
SLACK_STEPS = 50 * STEP


def _builder():
    spec = importlib.util.spec_from_file_location("synthetic_store", ROOT / "benchmarks" / "synthetic_store.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("synthetic_store", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    build = _builder().build
    out = {}
    for n in SIZES:
        path = tmp_path_factory.mktemp(f"scale{n}") / "store.db"
        build(f"sqlite:///{path}", n, log=lambda msg: None)
        out[n] = f"sqlite:///{path}"
    return out


def _drawn(url: str) -> int:
    """Items drawn into the store's review samples (all runs and relations)."""
    import sqlite3

    con = sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        return con.execute("select count(*) from review_samples").fetchone()[0]
    finally:
        con.close()


class Meter:
    """Counts statements and SQLite VM steps of every engine in the process while ``on``."""

    def __init__(self):
        self.on = False
        self.statements = 0
        self.steps = 0

    def _tick(self) -> int:
        if self.on:
            self.steps += STEP
        return 0

    def before(self, conn, cursor, statement, parameters, context, executemany):
        raw = conn.connection.dbapi_connection
        if hasattr(raw, "set_progress_handler"):
            raw.set_progress_handler(self._tick, STEP)
        if self.on:
            self.statements += 1


@pytest.fixture
def meter():
    m = Meter()
    event.listen(Engine, "before_cursor_execute", m.before)
    yield m
    event.remove(Engine, "before_cursor_execute", m.before)


def _forget_process_state():
    import streamlit as st

    from objrel.store import kept

    kept.forget_process_copies()
    st.cache_data.clear()
    st.cache_resource.clear()


def _app(url: str, page: str) -> AppTest:
    os.environ["OBJREL_STORE"] = url
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["reviewer"] = "bench"
    at.switch_page(f"pages/{page}.py")
    return at


def _measured(meter: Meter, at: AppTest) -> tuple[int, int]:
    meter.statements = meter.steps = 0
    meter.on = True
    try:
        at.run()
    finally:
        meter.on = False
    assert not at.exception, [e.value for e in at.exception]
    return meter.statements, meter.steps


@pytest.mark.parametrize("page", RESULT_PAGES + REVIEW_PAGES)
def test_a_page_view_reads_as_much_from_a_20x_bigger_store(stores, meter, page, monkeypatch):
    monkeypatch.setenv("OBJREL_LIME_AHEAD", "0")
    seen = {}
    for n, url in stores.items():
        _forget_process_state()
        _app(url, page).run()                        # the first view: computes and keeps the page's results
        _forget_process_state()
        at = _app(url, page)
        cold = _measured(meter, at)                  # a new server process: reads the kept rows
        warm = _measured(meter, at)                  # the same session again
        seen[n] = (cold, warm)
    (small_cold, small_warm), (big_cold, big_warm) = seen[SIZES[0]], seen[SIZES[1]]
    # the review sample grows (at most) this many times between the stores; the runs grow 20 times
    sample_growth = _drawn(stores[SIZES[1]]) / _drawn(stores[SIZES[0]]) if page in REVIEW_PAGES else 1.0
    assert sample_growth < (SIZES[1] / SIZES[0]) / 4
    for what, small, big in (("new process", small_cold, big_cold), ("same session", small_warm, big_warm)):
        assert big[0] <= sample_growth * small[0] + 2, (
            f"{page} ({what}): {small[0]} statements at {SIZES[0]} samples, {big[0]} at {SIZES[1]}")
        assert big[1] <= MAX_GROWTH * sample_growth * small[1] + SLACK_STEPS, (
            f"{page} ({what}): SQLite did {small[1]} steps at {SIZES[0]} samples and {big[1]} at {SIZES[1]}")
