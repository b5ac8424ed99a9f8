"""Costly work is bounded per server and per person, and every action re-reads the session (issue 40: E2, E3,
E4, R1).

* E2: LIME computed on a reviewer's click, and the LIME process started for a drawn review sample, take a slot
  of the one work queue: with the caps reached nothing is computed and no process starts (the job waits).
* E3: the stakeholder report is built once per state of its run, whatever number of visitors' sessions ask
  for it, and every session gets that one report.
* E4: three quick-benchmark starts at the same moment start one benchmark process; the others are refused.
* R1: the Runs page's refreshing fragment and its Cancel button act as the live session's account: a run
  operator signed out elsewhere cancels nothing (a real served app in chromium).
"""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from pathlib import Path

import pytest

from objrel import review as R
from objrel.review.roles import actor_of
from objrel.store import Store

from tests.fixtures.colour_model import factory

ROOT = Path(__file__).resolve().parents[2]
RELATION = "MR-2"
# LIME samples per explanation: enough for LIME to fit, few enough to take a moment with the colour model.
FEW = 20
WAIT_S = 60


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


def account(store: Store, name: str, roles: tuple[str, ...]):
    """The actor of a new account ``name`` with ``roles``, loaded from the store as the app loads it."""
    R.create_reviewer(store, name, f"{name}-passphrase-long", roles=roles)
    return actor_of(store, name)


def attempt(call):
    """What ``call()`` returned, or the exception it raised."""
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the test looks at what came back either way
        return exc


def refused(outcome) -> bool:
    return isinstance(outcome, Exception) and "nothing started" in str(outcome)


def first_mutant(store: Store, rid: int, sid: str) -> str:
    from objrel.review.lime_ahead import ahead_keys

    return ahead_keys(store, rid, sid, RELATION)[1]


# ---------------------------------------------------------------- E2: LIME


def test_lime_over_the_caps_computes_nothing_and_starts_no_process(flagged_store, monkeypatch):
    from objrel.review.explanations import cached_explanation
    from objrel.review.lime_ahead import LIME_KIND, start_lime_job
    from objrel.review.lime_pair import explain_pair
    from objrel.store import review_jobs
    from objrel.store import reviews as review_rows

    monkeypatch.setenv("OBJREL_MAX_WORK", "1")              # one costly job on this server at a time
    monkeypatch.setenv("OBJREL_MAX_WORK_PER_PERSON", "1")
    store, rid = flagged_store
    alice = account(store, "alice", (R.REVIEWER,))
    bob = account(store, "bob", (R.REVIEWER,))
    model = factory()
    review_rows.store_review_sample(store, rid, RELATION, 0, lambda population: population[:3], replace=False)

    inside, go_on, first = threading.Event(), threading.Event(), {}

    def hold(share, text):          # alice's LIME stays at work until the test has asked for more
        inside.set()
        go_on.wait(WAIT_S)

    worker = threading.Thread(target=lambda: first.update(
        pair=attempt(lambda: explain_pair(alice, store, model, rid, "1", first_mutant(store, rid, "1"), FEW,
                                          progress=hold))))
    worker.start()
    started = []
    try:
        assert inside.wait(WAIT_S), "alice's LIME never began"
        more = {who.name: attempt(lambda who=who, sid=sid: explain_pair(who, store, model, rid, sid,
                                                                        first_mutant(store, rid, sid), FEW))
                for who, sid in ((alice, "2"), (bob, "3"))}
        # opening a drawn sample starts its LIME ahead: with the server's slot taken, the job waits in the queue
        ahead = attempt(lambda: start_lime_job(bob, store, rid, RELATION, num_samples=FEW, tied=True))
        row = review_jobs.latest_job(store, LIME_KIND, rid, RELATION)
        if row is not None and row["pid"] is not None:
            started.append(int(row["pid"]))
    finally:
        go_on.set()
        worker.join(WAIT_S)
        for pid in started:          # a LIME process the old code started: ended by its id
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    print(f"alice's second LIME: {more['alice']!r}; bob's LIME: {more['bob']!r}; LIME ahead: {ahead!r}; "
          f"LIME processes started: {started}")
    assert refused(more["alice"]), f"alice's second LIME at once was computed: {more['alice']!r}"
    assert refused(more["bob"]), f"bob's LIME beyond the server's cap was computed: {more['bob']!r}"
    for sid in ("2", "3"):
        assert cached_explanation(store, rid, sid, "source", num_samples=FEW) is None, f"sample {sid} was explained"
    assert started == [], f"a LIME process started beyond the server's cap: {started}"
    assert ahead.waiting and ahead.status == "queued", ahead
    assert len(first["pair"]) == 2, first["pair"]      # the work that held the slot finished as usual


# ---------------------------------------------------------------- E3: reports


SESSIONS = 10


def test_ten_visitors_sessions_get_one_report_built_once(flagged_store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    import objrel.analysis.report as report_module

    store, rid = flagged_store
    monkeypatch.setenv("OBJREL_STORE", store.url)
    real, built = report_module.build_report, []

    def counted(*args, **kwargs):        # the real build, counted
        built.append(args[1] if len(args) > 1 else kwargs.get("run_id"))
        return real(*args, **kwargs)

    monkeypatch.setattr(report_module, "build_report", counted)
    served = []
    for _ in range(SESSIONS):            # ten visitors without an account, each in a session of their own
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()    # Overview, the first page
        assert not at.exception, [e.value for e in at.exception]
        at.button(key="overview_report_btn").click().run()
        assert not at.exception, [e.value for e in at.exception]
        served.append([d for d in at.get("download_button") if d.proto.id and "overview_report_dl" in d.proto.id])
    print(f"reports built for {SESSIONS} sessions: {len(built)}")
    assert all(served), "a session was not offered the report"
    assert built == [rid], f"expected one build of run {rid}'s report for {SESSIONS} sessions, got {len(built)}"


# ---------------------------------------------------------------- E4: quick benchmarks


STARTS = 3


def bench_processes(out: Path) -> list[int]:
    """The pids of quick-benchmark processes writing under ``out`` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"objrel.studies.shortcut.bench" in cmd and any(str(out).encode() in c for c in cmd):
            found.append(int(entry.name))
    return found


@pytest.mark.subprocess
def test_three_quick_benchmark_starts_at_once_start_one_process(tmp_path):
    from objrel.studies.shortcut.browse import start_quick_benchmark

    store = Store(tmp_path / "accounts.db")
    olga = account(store, "olga", (R.RUN_OPERATOR,))
    root = tmp_path / "shortcut"
    gate = threading.Barrier(STARTS)
    outcomes: list = [None] * STARTS

    def start(i: int) -> None:
        gate.wait()
        outcomes[i] = attempt(lambda: start_quick_benchmark(olga, root))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(STARTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT_S)
    procs = bench_processes(root)
    for pid in procs:                # the benchmarks themselves are not the point: ended by their ids
        os.kill(pid, signal.SIGTERM)
    print(f"{STARTS} starts at once: {len(procs)} benchmark processes; outcomes {outcomes!r}")
    assert len(procs) == 1, f"expected one quick-benchmark process for {STARTS} starts at once, got {len(procs)}"
    assert sum(1 for o in outcomes if isinstance(o, Exception) and "already running" in str(o)) == STARTS - 1


# ---------------------------------------------------------------- R1: the Runs page's fragment and Cancel


@pytest.mark.browser
@pytest.mark.subprocess
def test_a_run_operator_signed_out_elsewhere_cancels_nothing_from_an_open_runs_page(tmp_path, flagged_store):
    import datetime as dt

    from playwright.sync_api import sync_playwright

    from objrel.review import sessions

    from tests.e2e.app_server import serving
    from tests.e2e.test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, click_until_url, passphrase, settled

    store, rid = flagged_store
    R.create_reviewer(store, "olga", passphrase("olga"), roles=(R.RUN_OPERATOR,))
    t0 = dt.datetime.now(dt.timezone.utc)
    # a run at work: its process is this test's (alive), so the page shows it running with a Cancel button
    store.update_run(rid, status="running", pid=os.getpid(), started_at=t0, heartbeat_at=t0)
    with serving(tmp_path, store.url) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            page.goto(base)
            page.get_by_label("Name").fill("olga")
            page.get_by_label("Passphrase").fill(passphrase("olga"))
            page.get_by_role("button", name="Sign in", exact=True).click()
            page.get_by_text("Signed in as olga").wait_for(timeout=WAIT_S * 1000)
            # through the app's top bar, in the same browser session
            click_until_url(page, page.get_by_role("link", name=re.compile(r"Runs$")).first, "runs")
            cancel = page.get_by_role("button", name="Cancel", exact=True)
            cancel.wait_for(timeout=WAIT_S * 1000)
            settled(page)
            # olga signs out everywhere (another tab, another browser): her sessions end in the store
            assert sessions.end_sessions(store, "olga", sessions.SIGN_OUT_EVERYWHERE) >= 1
            time.sleep(5)                # the page's history refreshes every 2 s on its own
            clicked = cancel.count() > 0
            if clicked:
                cancel.first.click(timeout=5000)
                time.sleep(5)
            asked = store.cancel_requested(rid)
        finally:
            browser.close()
    print(f"Cancel still offered after the sign-out: {clicked}; run {rid} asked to stop: {asked}")
    assert not asked, "a run operator whose sessions had ended cancelled a run from the page she had open"
    assert not clicked, "the page still offered Cancel once the session had ended"
