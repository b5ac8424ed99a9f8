"""One queue for the costly work the app starts: runs, LIME, reports, quick benchmarks, box re-tests and the
planted DeepInspect training (ARCHITECTURE.md
decision 12).

Every piece of such work asks ``admit`` for a slot before it starts anything, with the actor who asks for it:

* at most ``max_work()`` slots are held at once in this server process (``$OBJREL_MAX_WORK``, default
  :data:`DEFAULT_MAX_WORK`): each is a model in memory (1.3-1.5 GB for LIME or a run) or a report's pages;
* at most ``max_per_person()`` of them by one person (``$OBJREL_MAX_WORK_PER_PERSON``, default
  :data:`DEFAULT_MAX_PER_PERSON`), so one account cannot take the whole server;
* visitors without an account may ask only for *public* work (a report, which the caller then builds once per
  state and shares: ``objrel.analysis.shared_report``), and all of them together count as one person
  (:data:`ANONYMOUS_PERSON`): opening ten sessions buys nothing more than one;
* work with an ``exclusive`` key (the quick benchmark's folder) runs once at a time.

Over a cap the answer is ``objrel.errors.WorkRefused`` saying which cap and what holds it, and nothing
starts; the caller may leave its request waiting where it has a queue of its own (LIME jobs in the store).
The check and the reservation are one step under one lock, so requests at the same moment never both pass.

A slot is held by the caller's thread (``with admit(...)``: released at the block's end) or, once the work
runs in a child process, by that process (``Ticket.attach(proc)``): it ends when the process exits, whoever
reaps it.  The server's own operator (``objrel.access.SERVER``, the ``objrel`` command in a shell) is not
capped, but the slots it holds count against everyone else's.

This module stands at the bottom of the stage order (the standard library, ``objrel.errors`` and
``objrel.access`` only), so every stage that starts work can ask it.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from dataclasses import dataclass

from objrel.access import Actor
from objrel.errors import WorkRefused

# The kinds of work that go through the queue (refusals count the running work by kind).
RUN = "run"
LIME = "LIME"
REPORT = "report"
BENCHMARK = "benchmark"
RETEST = "re-test"
TRAINING = "training"
KINDS = (RUN, LIME, REPORT, BENCHMARK, RETEST, TRAINING)

# Slots held at once in one server process: each holds a model (1.3-1.5 GB) or a report being built.
MAX_WORK_ENV = "OBJREL_MAX_WORK"
DEFAULT_MAX_WORK = 3
# Slots one person holds at once: one account (or all visitors without one) cannot take the whole server.
MAX_PER_PERSON_ENV = "OBJREL_MAX_WORK_PER_PERSON"
DEFAULT_MAX_PER_PERSON = 2
# How the visitors without an account are counted and named: as one person.
ANONYMOUS_PERSON = "visitors without an account"
# A cap's value: a whole number of slots, 1 to 9999.
_WHOLE = re.compile(r"[0-9]{1,4}")


def _cap(env: str, default: int) -> int:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    if not _WHOLE.fullmatch(raw) or int(raw) < 1:
        raise ValueError(f"{env} must be a whole number of slots >= 1; got {raw!r}")
    return int(raw)


def max_work() -> int:
    """The cap on slots held at once in this server process: ``$OBJREL_MAX_WORK``, else ``DEFAULT_MAX_WORK``;
    ValueError naming the variable for a value that is not a whole number >= 1."""
    return _cap(MAX_WORK_ENV, DEFAULT_MAX_WORK)


def max_per_person() -> int:
    """The cap on slots one person holds at once: ``$OBJREL_MAX_WORK_PER_PERSON``, else
    ``DEFAULT_MAX_PER_PERSON``; ValueError naming the variable for a value that is not a whole number >= 1."""
    return _cap(MAX_PER_PERSON_ENV, DEFAULT_MAX_PER_PERSON)


def person_of(actor: Actor) -> str:
    """Who a slot is counted against: the account's name, or :data:`ANONYMOUS_PERSON` for every visitor
    without one."""
    return actor.name if actor.signed_in else ANONYMOUS_PERSON


@dataclass(frozen=True)
class Running:
    """One piece of work holding a slot: its ``kind`` (one of KINDS), the ``person`` it counts against,
    ``what`` it is in words, when it started (``started_at``, epoch seconds) and whether a child process
    holds it (``in_process`` False) or a thread of this process."""

    kind: str
    person: str
    what: str
    started_at: float
    in_process: bool


class _Slot:
    """A held slot (mutable: a child process takes it over)."""

    def __init__(self, kind: str, person: str, what: str, exclusive: str | None):
        self.kind, self.person, self.what, self.exclusive = kind, person, what, exclusive
        self.started_at = time.time()
        self.proc = None

    def live(self) -> bool:
        return self.proc is None or self.proc.poll() is None

    def view(self) -> Running:
        return Running(self.kind, self.person, self.what, self.started_at, self.proc is None)


_lock = threading.Lock()
_slots: dict[int, _Slot] = {}
_ids = itertools.count(1)


def _live() -> list[_Slot]:
    """The slots still held (those whose process ended are dropped); under ``_lock``."""
    for key in [k for k, s in _slots.items() if not s.live()]:
        del _slots[key]
    return list(_slots.values())


def running() -> list[Running]:
    """The work holding a slot now, oldest first."""
    with _lock:
        return [s.view() for s in sorted(_live(), key=lambda s: s.started_at)]


def _counted(slots: list[_Slot]) -> str:
    """``2 runs, 1 LIME``: the slots by kind, in words."""
    by_kind = {k: sum(1 for s in slots if s.kind == k) for k in KINDS}
    return ", ".join(f"{n} {k}{'s' if n > 1 and k != LIME else ''}" for k, n in by_kind.items() if n)


def _age(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


class Ticket:
    """A slot granted by ``admit``.  ``with ticket:`` releases it at the block's end unless the work went to a
    child process (``attach``); ``release`` gives it back at once."""

    def __init__(self, key: int):
        self._key = key
        self._attached = False

    def attach(self, proc) -> None:
        """The work now runs in the child process ``proc`` (a ``subprocess.Popen``): the slot is held until it
        exits."""
        with _lock:
            slot = _slots.get(self._key)
            if slot is not None:
                slot.proc = proc
                self._attached = True

    def release(self) -> None:
        """Give the slot back (the work ended, or never started)."""
        with _lock:
            _slots.pop(self._key, None)

    def __enter__(self) -> Ticket:
        return self

    def __exit__(self, *exc) -> None:
        if not self._attached:
            self.release()


def admit(actor: Actor, kind: str, what: str, *, public: bool = False, exclusive: str | None = None) -> Ticket:
    """A slot for ``actor``'s work ``what`` of ``kind`` (one of KINDS), or WorkRefused saying why not, with
    nothing started: a visitor without an account asking for work that is not ``public``; another work of
    the same ``exclusive`` key still running; the server's cap or the person's cap reached.  Check and
    reservation are one step: two requests at the same moment never both pass a cap."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if not isinstance(actor, Actor):
        raise TypeError(f"admit needs an objrel.access.Actor; got {type(actor).__name__}")
    if not actor.signed_in and not public:
        raise WorkRefused(f"nothing started: {what} is costly work for signed-in accounts only; sign in first")
    server_cap, person_cap = max_work(), max_per_person()
    person = person_of(actor)
    with _lock:
        slots = _live()
        same = [s for s in slots if exclusive is not None and s.exclusive == exclusive]
        if same:
            s = same[0]
            raise WorkRefused(f"nothing started: {s.what} is already running (started by {s.person} "
                              f"{_age(time.time() - s.started_at)} ago); wait for it to finish")
        if not actor.server:
            mine = [s for s in slots if s.person == person]
            if len(mine) >= person_cap:
                who = "visitors without an account already run" if person == ANONYMOUS_PERSON \
                    else f"{person} already runs"
                raise WorkRefused(f"nothing started: {who} {len(mine)} of the {person_cap} costly jobs one "
                                  f"person may run at once ({_counted(mine)}); {what} can start when one of "
                                  "them ends")
            if len(slots) >= server_cap:
                raise WorkRefused(f"nothing started: the server already runs {len(slots)} of the {server_cap} "
                                  f"costly jobs it runs at once ({_counted(slots)}); {what} can start when "
                                  "one of them ends")
        key = next(_ids)
        _slots[key] = _Slot(kind, person, what, exclusive)
    return Ticket(key)
