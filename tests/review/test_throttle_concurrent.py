"""Sign-in throttling that holds: guesses sent at the same moment count each other (threads, processes, SQLite
and PostgreSQL), and a stranger's failures on made-up names never make a real user wait."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.review import accounts
from objrel.store import Store

from tests.app.test_page_users import ROOT

# Guesses sent at once at one name.
GUESSES = 24
# Processes that share those guesses in the cross-process test (GUESSES / PROCESSES threads each).
PROCESSES = 4
# Checked guesses allowed beyond THROTTLE_AFTER_FAILURES: none should get through, since every guess of the
# burst reserves its try within THROTTLE_BASE_S (1 s) of the others; one more is legitimate only when a
# loaded machine stretches the burst past that first wait, so one is allowed and no more.
SLACK = 1
# The client that sends the simultaneous guesses (a client's failures at a name throttle that client there).
ATTACKER = "attacker"
# The scrypt cost in these tests: the real one (OWASP's minimum, ~0.45 s a hash), so a guess is as slow as
# the one an attacker sends.


def _counting(monkeypatch) -> list[int]:
    """Count the scrypt hashes run from now on (the real hash still runs)."""
    hashed: list[int] = []
    real = accounts._scrypt
    monkeypatch.setattr(accounts, "_scrypt", lambda *a, **k: hashed.append(1) or real(*a, **k))
    return hashed


def _burst(store: Store, name: str, n: int, barrier, client_of=lambda i: ATTACKER) -> list[accounts.SignIn]:
    """``n`` threads of one client (``ATTACKER``) send a wrong passphrase for ``name`` at the same moment."""
    results: list[accounts.SignIn | None] = [None] * n

    def guess(i: int) -> None:
        barrier.wait()
        results[i] = R.verify_reviewer(store, name, f"wrong guess {i}", client=client_of(i))

    threads = [threading.Thread(target=guess, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert all(r is not None for r in results), "a guess did not finish"
    return results


def _check_burst(results: list, hashes: int) -> None:
    checked = [r for r in results if r.wait_s == 0]
    refused = [r for r in results if r.wait_s > 0]
    assert not any(r.ok for r in results)
    assert accounts.THROTTLE_AFTER_FAILURES <= len(checked) <= accounts.THROTTLE_AFTER_FAILURES + SLACK, \
        f"{len(checked)} of {len(results)} simultaneous guesses were checked"
    assert len(checked) + len(refused) == len(results)
    assert hashes == len(checked)   # a refused guess hashes nothing


def test_simultaneous_guesses_at_one_name_are_counted_threads_sqlite(tmp_path, monkeypatch):
    store = Store(tmp_path / "burst.db")
    R.create_reviewer(store, "alice", "alice-passphrase")
    hashed = _counting(monkeypatch)
    results = _burst(store, "alice", GUESSES, threading.Barrier(GUESSES))
    _check_burst(results, len(hashed))
    # the attacker is throttled at the name now, whatever it sends, and nothing was hashed for that
    before = len(hashed)
    late = R.verify_reviewer(store, "ALICE", "alice-passphrase", client=ATTACKER)
    assert not late and late.wait_s > 0 and len(hashed) == before
    # alice's own browser was never refused anything: it signs in at once
    assert R.verify_reviewer(store, "ALICE", "alice-passphrase", client="alice-browser").ok
    store.dispose()


def test_simultaneous_guesses_at_an_unknown_name_are_counted_too(tmp_path, monkeypatch):
    """An unknown name costs the same dummy hash and is throttled the same way (no way to tell them apart)."""
    store = Store(tmp_path / "burst.db")
    monkeypatch.setattr(accounts, "_DUMMY_HASH", None)                  # made again, at the real cost
    accounts.verify_reviewer(store, "warm-up", "make the dummy hash")   # the dummy hash is made once, up front
    hashed = _counting(monkeypatch)
    results = _burst(store, "nobody-here", GUESSES, threading.Barrier(GUESSES))
    _check_burst(results, len(hashed))
    store.dispose()


def _guessing_process(path: str, n: int, barrier, out) -> None:
    from objrel.review import accounts as acc

    store = Store(path)
    hashed: list[int] = []
    real = acc._scrypt
    acc._scrypt = lambda *a, **k: hashed.append(1) or real(*a, **k)
    results = _burst(store, "alice", n, barrier)
    out.put(([(r.ok, r.wait_s) for r in results], len(hashed)))
    store.dispose()


@pytest.mark.subprocess
def test_simultaneous_guesses_from_several_processes_are_counted(tmp_path):
    path = str(tmp_path / "burst.db")
    store = Store(path)
    R.create_reviewer(store, "alice", "alice-passphrase")
    ctx = mp.get_context("spawn")
    per = GUESSES // PROCESSES
    barrier, out = ctx.Barrier(GUESSES), ctx.Queue()
    procs = [ctx.Process(target=_guessing_process, args=(path, per, barrier, out)) for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    got = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(30)
    results = [accounts.SignIn(ok, wait_s=w) for answers, _ in got for ok, w in answers]
    assert len(results) == GUESSES
    _check_burst(results, sum(h for _, h in got))
    store.dispose()


def test_simultaneous_guesses_are_counted_on_postgresql(pg_url, monkeypatch):
    store = Store(pg_url)
    R.create_reviewer(store, "pg-burst", "pg-burst-passphrase")
    hashed = _counting(monkeypatch)
    results = _burst(store, "pg-burst", GUESSES, threading.Barrier(GUESSES))
    _check_burst(results, len(hashed))
    assert R.verify_reviewer(store, "pg-burst", "pg-burst-passphrase", client=ATTACKER).wait_s > 0
    store.dispose()


# ---------------------------------------------------------------- a stranger cannot make others wait


@pytest.fixture
def fast_store(store, monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)
    R.create_reviewer(store, "alice", "alice-passphrase")
    return store


def test_failures_on_made_up_names_never_hold_up_a_name_nobody_failed_on(fast_store, monkeypatch):
    store = fast_store
    # a stranger behind the same address (one client key: what every visitor of a 127.0.0.1 bind shared)
    for i in range(5 * accounts.THROTTLE_AFTER_FAILURES):
        assert not R.verify_reviewer(store, f"made-up-{i}", "guess guess", client="127.0.0.1")
    hashed = _counting(monkeypatch)
    ok = R.verify_reviewer(store, "alice", "alice-passphrase", client="127.0.0.1")
    assert ok and ok.name == "alice" and ok.wait_s == 0 and hashed == [1]


def test_a_clients_failures_throttle_that_client_and_never_the_owner(fast_store):
    store = fast_store
    for _ in range(accounts.THROTTLE_AFTER_FAILURES):
        assert R.verify_reviewer(store, "alice", "wrong guess", client="anyone").wait_s == 0
    refused = R.verify_reviewer(store, "alice", "alice-passphrase", client="anyone")
    assert not refused and refused.wait_s > 0                     # the guesser's own failures throttle it
    assert R.verify_reviewer(store, "alice", "alice-passphrase", client="someone-else").ok   # the owner is let in
    # a client that failed at many names is slowed at every name, others are not
    for i in range(accounts.CLIENT_THROTTLE_AFTER_FAILURES):
        assert not R.verify_reviewer(store, f"name{i}", "guess guess", client="sprayer")
    assert R.verify_reviewer(store, "fresh-name", "guess guess", client="sprayer").wait_s > 0
    assert R.verify_reviewer(store, "name0", "guess again", client="other").wait_s == 0


def _page() -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / "review.py"), default_timeout=60).run()


def _sign_in(at: AppTest, name: str, passphrase: str) -> None:
    at.text_input(key="signin_name").set_value(name)
    at.text_input(key="signin_pass").set_value(passphrase)
    at.button(key="signin_submit").click().run()


def test_in_the_app_a_strangers_failures_on_made_up_names_leave_alice_free(fast_store, monkeypatch):
    """Two browser sessions of the app on one address (AppTest has none at all, as a 127.0.0.1 bind or a proxy
    gives every visitor the same one): the stranger's failures do not make alice wait."""
    monkeypatch.setenv("OBJREL_STORE", fast_store.url)
    stranger = _page()
    for i in range(4 * accounts.THROTTLE_AFTER_FAILURES):
        _sign_in(stranger, f"made-up-{i}", "guess guess")
        assert any("wrong passphrase" in e.value for e in stranger.error)   # never "try again": fresh names
    alice = _page()
    _sign_in(alice, "alice", "alice-passphrase")
    assert not alice.error and alice.session_state["reviewer"] == "alice"
    assert stranger.session_state["signin_client"] != alice.session_state["signin_client"]
    # a stranger's guesses at alice's own name throttle the stranger's session there (a longer first wait, so
    # the pages' own run time cannot outlast it), and alice, signing in afresh, is let in at once
    monkeypatch.setattr(accounts, "THROTTLE_BASE_S", 30.0)
    guesser = _page()
    for _ in range(accounts.THROTTLE_AFTER_FAILURES):
        _sign_in(guesser, "alice", "guess guess")
    _sign_in(guesser, "alice", "alice-passphrase")
    assert any("try again in" in e.value for e in guesser.error) and "reviewer" not in guesser.session_state
    late = _page()
    _sign_in(late, "alice", "alice-passphrase")
    assert not late.error and late.session_state["reviewer"] == "alice"


def test_a_flood_of_sign_ins_gets_busy_answers_instead_of_a_queue(tmp_path, monkeypatch):
    """While every hash slot is taken (a flood of sign-ins), a sign-in waits at most HASH_WAIT_S and is then
    refused as busy: nothing is counted against the name, and the same sign-in passes once a slot is free.
    (Before, tries queued behind the slots without end: a stranger's flood kept alice out for minutes.)"""
    monkeypatch.setattr(accounts, "SCRYPT_N", 2**10)
    monkeypatch.setattr(accounts, "HASH_WAIT_S", 0.5)
    store = Store(tmp_path / "busy.db")
    accounts.create_reviewer(store, "alice", "alice-passphrase")
    taken = [accounts._HASH_GATE.acquire(timeout=5) for _ in range(accounts.HASH_SLOTS)]
    try:
        assert all(taken)
        t0 = time.monotonic()
        answer = accounts.verify_reviewer(store, "alice", "alice-passphrase", client="session:a")
        waited = time.monotonic() - t0
    finally:
        for _ in taken:
            accounts._HASH_GATE.release()
    assert not answer and answer.busy and "busy with other sign-ins" in answer.message
    assert waited >= 0.4                           # it waited for a slot, HASH_WAIT_S, then answered
    from sqlalchemy import func, select

    from objrel.store import schema as S

    with store.engine.connect() as c:                  # the unchecked try left no failure row behind
        assert c.execute(select(func.count()).select_from(S.sign_in_failures)).scalar() == 0
    assert accounts.verify_reviewer(store, "alice", "alice-passphrase", client="session:a").ok
