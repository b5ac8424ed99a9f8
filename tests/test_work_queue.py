"""The work queue's rules on their own: caps from their variables, slots held by a block or a process, visitors
without an account as one person."""

from __future__ import annotations

import subprocess
import sys

import pytest

from objrel import work_queue as Q
from objrel.access import ANONYMOUS, SERVER
from objrel.errors import WorkRefused
from objrel.review.roles import actor_of
from objrel.review.accounts import create_reviewer
from objrel.store import Store

pytestmark = pytest.mark.subprocess


@pytest.fixture
def olga(tmp_path, monkeypatch):
    from objrel.review import accounts

    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)
    store = Store(tmp_path / "q.db")
    create_reviewer(store, "olga", "olga-passphrase-long", roles=("run-operator",))
    return actor_of(store, "olga")


def test_the_caps_come_from_their_variables_or_are_refused_naming_them(monkeypatch):
    monkeypatch.delenv(Q.MAX_WORK_ENV, raising=False)
    monkeypatch.delenv(Q.MAX_PER_PERSON_ENV, raising=False)
    assert (Q.max_work(), Q.max_per_person()) == (Q.DEFAULT_MAX_WORK, Q.DEFAULT_MAX_PER_PERSON)
    monkeypatch.setenv(Q.MAX_WORK_ENV, "5")
    assert Q.max_work() == 5
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv(Q.MAX_PER_PERSON_ENV, bad)
        with pytest.raises(ValueError, match=f"{Q.MAX_PER_PERSON_ENV} must be a whole number of slots >= 1; got"):
            Q.max_per_person()


def test_a_block_holds_its_slot_until_it_ends_even_on_error(olga, monkeypatch):
    monkeypatch.setenv(Q.MAX_PER_PERSON_ENV, "1")
    with pytest.raises(RuntimeError), Q.admit(olga, Q.RUN, "a run"):
        with pytest.raises(WorkRefused, match="olga already runs 1 of the 1 costly jobs one person may run"):
            Q.admit(olga, Q.REPORT, "a report", public=True)
        raise RuntimeError("the work failed")
    with Q.admit(olga, Q.REPORT, "a report", public=True):      # the failed block gave its slot back
        pass
    assert not [r for r in Q.running() if r.person == "olga"]


def test_a_slot_given_to_a_process_ends_when_the_process_exits(olga, monkeypatch):
    monkeypatch.setenv(Q.MAX_PER_PERSON_ENV, "1")
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    with Q.admit(olga, Q.BENCHMARK, "a benchmark") as ticket:
        ticket.attach(proc)
    try:
        with pytest.raises(WorkRefused, match="olga already runs"):    # held by the live process
            Q.admit(olga, Q.RUN, "a run")
    finally:
        proc.communicate(b"", timeout=30)
    with Q.admit(olga, Q.RUN, "a run"):
        pass


def test_visitors_start_only_public_work_and_count_as_one_person(monkeypatch):
    monkeypatch.setenv(Q.MAX_PER_PERSON_ENV, "1")
    with pytest.raises(WorkRefused, match="for signed-in accounts only"):
        Q.admit(ANONYMOUS, Q.LIME, "LIME")
    with Q.admit(ANONYMOUS, Q.REPORT, "a report", public=True):
        with pytest.raises(WorkRefused, match="visitors without an account already run 1 of the 1"):
            Q.admit(ANONYMOUS, Q.REPORT, "another report", public=True)    # another visitor's session
        with Q.admit(SERVER, Q.RUN, "the operator's run"):               # the shell's operator is not capped
            pass


def test_one_exclusive_work_at_a_time_whoever_asks(olga):
    with Q.admit(olga, Q.BENCHMARK, "a quick benchmark", exclusive="quick"):
        with pytest.raises(WorkRefused, match=r"a quick benchmark is already running \(started by olga"):
            Q.admit(SERVER, Q.BENCHMARK, "a quick benchmark", exclusive="quick")
