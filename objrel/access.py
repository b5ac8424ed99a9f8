"""Who may do what: the one declared action table and the one gate every action passes.

The app is shared by reviewers, adjudicators, run operators and admins, and seen by visitors with no
account.  Every objrel function that writes, starts work (a run, a benchmark, training, LIME, a re-test,
an upload), opens a server path or reveals a reviewer's call takes the *actor* as its first argument and
calls ``authorize(actor, ACTION, target)`` before it does anything.  ``ACTIONS`` below is the whole
policy: a page that hides a button is not a permission, and a test crawls every page as every role
against this table (``tests/app/test_access_crawl.py``).

The gate trusts only actors it issued: an ``Actor`` carries a mark that only ``issue_actor`` sets, and
``issue_actor`` is handed once, at import, to the store's loader (``objrel.review.roles.actor_of``, which reads
the account and its roles from the store).  An ``Actor(...)`` built anywhere else (a page, a caller naming
whoever it likes, ``dataclasses.replace`` of an issued one) carries no mark, and ``authorize`` refuses it for
every action that needs a role.  ``ANONYMOUS`` and ``SERVER`` (the shell operator) are issued here.

This module is the bottom of the stage order: it imports nothing but ``objrel.errors`` and the standard
library, so every stage can ask the gate.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator
from collections.abc import Callable
from dataclasses import dataclass, field

from objrel.errors import NotAllowed

# ---------------------------------------------------------------- roles

REVIEWER = "reviewer"          # judges flagged inferences (blind)
ADJUDICATOR = "adjudicator"    # sees both reviewers' calls, decides their disagreements
RUN_OPERATOR = "run-operator"  # starts, cancels and resumes runs and benchmarks, uploads data, reads logs
ADMIN = "admin"                # invites accounts, grants roles, allows models
ROLES = (REVIEWER, ADJUDICATOR, RUN_OPERATOR, ADMIN)
ROLE_LABELS = {REVIEWER: "reviewer", ADJUDICATOR: "adjudicator", RUN_OPERATOR: "run operator", ADMIN: "admin"}

# Role sets the table below is written with (any one role of a set is enough).
EVERYONE = ()                                    # no role needed: visitors without an account too
ANY_ACCOUNT = ROLES                              # any signed-in account that holds a role
JUDGE_ROLES = (REVIEWER,)
REVIEW_ROLES = (REVIEWER, ADJUDICATOR, ADMIN)    # the review's parties and overseers
PAIR_ROLES = (ADJUDICATOR, ADMIN)
INSPECT_ROLES = (REVIEWER, ADJUDICATOR, ADMIN)   # LIME and box re-tests cost CPU and write the store
OPERATE_ROLES = (RUN_OPERATOR, ADMIN)
MANAGE_ROLES = (ADMIN,)

# What an action does, for the crawl test and the README: each kind is one side effect it may cause.
WRITES = "writes the store"
STARTS = "starts work (a process, training or a model)"
READS_PATH = "opens a file on the server"
REVEALS = "reveals a reviewer's calls"
KINDS = (WRITES, STARTS, READS_PATH, REVEALS)


@dataclass(frozen=True)
class Rule:
    """One row of the action table: the roles any one of which permits ``action``; ``kinds``: its side
    effects; ``what``: the action in words, as refusals say it."""

    action: str
    roles: tuple[str, ...]
    kinds: tuple[str, ...]
    what: str

    @property
    def public(self) -> bool:
        """True when the action needs no role (anyone, signed in or not, may do it)."""
        return not self.roles


# Actions: one name each, stated once.
JUDGE = "judge"
ADJUDICATE = "adjudicate"
SEE_CALLS = "see-calls"
SEE_CALIBRATION = "see-calibration"
EXPORT_JUDGMENTS = "export-judgments"
DRAW_SAMPLE = "draw-review-sample"
REDRAW_SAMPLE = "redraw-review-sample"
EXPLAIN = "explain"
RETEST = "retest"
START_RUN = "start-run"
RESUME_RUN = "resume-run"
CANCEL_RUN = "cancel-run"
RENAME_RUN = "rename-run"
DELETE_RUN = "delete-run"
READ_LOG = "read-run-log"
UPLOAD_DATA = "upload-data"
UPLOAD_WEIGHTS = "upload-weights"
START_BENCHMARK = "start-benchmark"
TRAIN_PLANTED = "train-planted"
OPEN_RESULTS = "open-results"
SEE_PROGRESS = "see-benchmark-progress"
UPLOAD_RESULTS = "upload-results"
INVITE = "invite-account"
GRANT_ROLE = "grant-role"
REVOKE_ROLE = "revoke-role"
ALLOW_MODEL = "allow-model"
ASSIGN_REVIEWERS = "assign-reviewers"
SEE_WORKLOAD = "see-workload"
COMMENT = "comment"
RESOLVE_THREAD = "resolve-thread"
SEE_COMMENTS = "see-comments"
MARK_GOLD = "mark-gold"
SEE_GOLD = "see-gold-accuracy"

_RULES = (
    Rule(JUDGE, JUDGE_ROLES, (WRITES,), "judge flagged inferences"),
    Rule(ADJUDICATE, PAIR_ROLES, (WRITES, REVEALS), "adjudicate disagreements"),
    Rule(SEE_CALLS, PAIR_ROLES, (REVEALS,), "see reviewers' calls"),
    # a reviewer only for a closed sample they closed (objrel.review.calibration checks that through a Target)
    Rule(SEE_CALIBRATION, REVIEW_ROLES, (REVEALS,), "see a closed review sample's calibration"),
    # a reviewer gets their own rows and the rows of samples they closed (objrel.review.export)
    Rule(EXPORT_JUDGMENTS, REVIEW_ROLES, (REVEALS,), "export judgments"),
    Rule(DRAW_SAMPLE, INSPECT_ROLES, (WRITES,), "draw a review sample"),
    Rule(REDRAW_SAMPLE, MANAGE_ROLES, (WRITES,), "replace a drawn review sample"),
    Rule(EXPLAIN, INSPECT_ROLES, (STARTS, WRITES), "compute LIME explanations"),
    Rule(RETEST, INSPECT_ROLES, (STARTS, WRITES), "re-test a sample with a redrawn box"),
    Rule(START_RUN, OPERATE_ROLES, (STARTS, WRITES, READS_PATH), "start runs"),
    Rule(RESUME_RUN, OPERATE_ROLES, (STARTS, WRITES, READS_PATH), "resume runs"),
    Rule(CANCEL_RUN, OPERATE_ROLES, (WRITES,), "cancel runs"),
    Rule(RENAME_RUN, OPERATE_ROLES, (WRITES,), "rename runs"),
    Rule(DELETE_RUN, OPERATE_ROLES, (WRITES,), "delete runs"),
    Rule(READ_LOG, OPERATE_ROLES, (READS_PATH,), "read run logs"),
    Rule(UPLOAD_DATA, OPERATE_ROLES, (WRITES,), "upload datasets"),
    Rule(UPLOAD_WEIGHTS, OPERATE_ROLES, (WRITES,), "upload weights"),
    Rule(START_BENCHMARK, OPERATE_ROLES, (STARTS, WRITES), "start a benchmark"),
    Rule(TRAIN_PLANTED, OPERATE_ROLES, (STARTS,), "train and inspect the planted benchmark"),
    Rule(OPEN_RESULTS, EVERYONE, (READS_PATH,), "open a results file from the results folder"),
    Rule(SEE_PROGRESS, EVERYONE, (READS_PATH,), "see how far a running benchmark is (its lock and store)"),
    Rule(UPLOAD_RESULTS, ANY_ACCOUNT, (), "upload a results file to view"),
    Rule(INVITE, MANAGE_ROLES, (WRITES,), "invite accounts"),
    Rule(GRANT_ROLE, MANAGE_ROLES, (WRITES,), "grant roles"),
    Rule(REVOKE_ROLE, MANAGE_ROLES, (WRITES,), "revoke roles"),
    Rule(ALLOW_MODEL, MANAGE_ROLES, (WRITES,), "register models for the app"),
    # k reviewers per drawn item, and which reviewers judge which item (objrel.review.teams)
    Rule(ASSIGN_REVIEWERS, MANAGE_ROLES, (WRITES,), "assign reviewers to review sample items"),
    # how many items each reviewer has and has judged, never what they called (objrel.review.teams)
    Rule(SEE_WORKLOAD, MANAGE_ROLES, (), "see every reviewer's workload"),
    # comment threads on an item (objrel.review.comments): another party's entries only once the sample closes
    Rule(COMMENT, REVIEW_ROLES, (WRITES,), "write on an item's comment thread"),
    Rule(RESOLVE_THREAD, REVIEW_ROLES, (WRITES,), "resolve or reopen an item's comment thread"),
    Rule(SEE_COMMENTS, REVIEW_ROLES, (REVEALS,), "read an item's comment thread"),
    # gold items (objrel.review.gold): a known call, mixed into every reviewer's queue unannounced
    Rule(MARK_GOLD, MANAGE_ROLES, (WRITES,), "mark gold items with a known call"),
    Rule(SEE_GOLD, MANAGE_ROLES, (REVEALS,), "see gold items and each reviewer's accuracy on them"),
)
ACTIONS: dict[str, Rule] = {}
for _rule in _RULES:
    if _rule.action in ACTIONS:
        raise RuntimeError(f"action {_rule.action!r} is declared twice in the action table")
    if set(_rule.roles) - set(ROLES) or set(_rule.kinds) - set(KINDS):
        raise RuntimeError(f"action {_rule.action!r} names an unknown role or kind")
    ACTIONS[_rule.action] = _rule


def allowed_roles(action: str) -> tuple[str, ...]:
    """The roles that permit ``action`` (empty: everyone); ValueError for an action not in the table."""
    return rule(action).roles


def rule(action: str) -> Rule:
    """The table's rule for ``action``; ValueError naming the declared actions when it has none."""
    try:
        return ACTIONS[action]
    except KeyError:
        raise ValueError(f"unknown action {action!r}; the table declares {', '.join(sorted(ACTIONS))}") from None


# ---------------------------------------------------------------- actors and targets


@dataclass(frozen=True)
class Actor:
    """Who asks: an account's name and the roles the store gave it (read when the request began), or a
    visitor with no account (``name`` None, no roles).  ``server`` marks the machine's own operator (the
    ``objrel`` command run in a shell on the server), which holds every role."""

    name: str | None
    roles: frozenset[str] = frozenset()
    server: bool = False
    # The gate's mark (``_ISSUED``) when ``issue_actor`` made this actor; never set by the constructor, never
    # copied by ``dataclasses.replace``, not part of equality.
    _mark: object = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "roles", frozenset(self.roles))
        bad = self.roles - set(ROLES)
        if bad:
            raise ValueError(f"roles must be among {', '.join(ROLES)}; got {', '.join(sorted(bad))}")
        if self.name is not None and (not isinstance(self.name, str) or not self.name):
            raise ValueError(f"an actor's name is a non-empty string or None; got {self.name!r}")

    @property
    def signed_in(self) -> bool:
        """True when an account is signed in (the server operator and nobody are not)."""
        return self.name is not None

    def holds(self, roles: Iterable[str]) -> bool:
        """True when the actor holds at least one of ``roles``."""
        return bool(self.roles & set(roles))

    @property
    def label(self) -> str:
        """How messages name the actor: the quoted account name, "the server operator" or "nobody signed in"."""
        return repr(self.name) if self.name else ("the server operator" if self.server else "nobody signed in")

    @property
    def issued(self) -> bool:
        """True when the gate issued this actor (``issue_actor``): only such an actor may do what needs a role."""
        return self._mark is _ISSUED

    def __reduce__(self):
        # a copy in another process could not carry the mark: it travels as a plain (unissued) actor
        return (Actor, (self.name, self.roles, self.server))


# The mark of an issued actor: this object, which nothing outside this module holds.
_ISSUED = object()
# Who may issue actors: the one module that loads accounts from the store.
ACTOR_LOADER = "objrel.review.roles"
_loader_claimed = False
_claim_lock = threading.Lock()


def _issue(name: str | None, roles: Iterable[str] = (), server: bool = False) -> Actor:
    actor = Actor(name, frozenset(roles), server)
    object.__setattr__(actor, "_mark", _ISSUED)
    return actor


def claim_actor_loader(module: str) -> Callable[[str, Iterable[str]], Actor]:
    """Hand ``module`` (it must be ``ACTOR_LOADER``) the function that issues actors the gate trusts:
    ``issue(name, roles) -> Actor``.  Claimed once per process, at the loader's import; RuntimeError for any
    other claimant or a second claim, so no other code can come by it."""
    global _loader_claimed
    with _claim_lock:
        if module != ACTOR_LOADER or _loader_claimed:
            raise RuntimeError(f"actors the gate trusts are issued only by {ACTOR_LOADER} (once, at its import); "
                               f"{module!r} asked{' after it' if _loader_claimed else ''}")
        _loader_claimed = True
    return lambda name, roles: _issue(name, roles)


ANONYMOUS = _issue(None)
SERVER = _issue("server", ROLES, server=True)


@dataclass(frozen=True)
class Target:
    """What an action is aimed at, as far as the gate needs it.

    ``what``: the target in words (``run 3``, ``MR-2 item cat.jpg of run 3``); ``owner``: the account whose
    own data it is (a reviewer may always see their own calls); ``excluded``: accounts that may not do the
    action on this target whatever their roles, because ``excluded_because`` (an adjudicator who judged the
    item; a reviewer who adjudicated it)."""

    what: str = ""
    owner: str | None = None
    excluded: frozenset[str] = field(default_factory=frozenset)
    excluded_because: str = ""

    def __post_init__(self):
        object.__setattr__(self, "excluded", frozenset(self.excluded))


# ---------------------------------------------------------------- the gate

_watchers: list[list] = []
_watch_lock = threading.Lock()


def _as_target(target: Target | str | None) -> Target:
    return Target(target) if isinstance(target, str) else (target or Target())


# Why an actor the gate did not issue is refused.
NOT_ISSUED = ("this account and its roles were not read from the store, and only accounts and roles the store "
              "holds are trusted, never a name and roles stated by the caller")


def _refusal(actor: Actor, r: Rule, target: Target) -> str | None:
    """None when ``r`` lets ``actor`` act on ``target``; else why not: ``""`` for want of a role that permits
    it (NotAllowed words that itself), ``NOT_ISSUED`` for an actor the gate did not issue, or the reason the
    actor is excluded from this target."""
    if r.public:
        return None if actor.name is None or actor.name not in target.excluded else (
            target.excluded_because or "they are a party to it")
    if not actor.issued:
        return NOT_ISSUED
    if r.roles and not actor.holds(r.roles) and not (target.owner is not None and target.owner == actor.name):
        return ""
    if actor.name is not None and actor.name in target.excluded:
        return target.excluded_because or "they are a party to it"
    return None


def authorize(actor: Actor, action: str, target: Target | str | None = None) -> Actor:
    """Let ``actor`` do ``action`` on ``target``, or raise NotAllowed saying who, what and why.

    ``actor`` must be an ``Actor`` (a bare name is refused: roles come from the store, never from the
    caller's word), and, for any action that needs a role, one the gate issued (``Actor.issued``: loaded
    from the store by ``objrel.review.roles.actor_of``, or ``SERVER``); any other is refused.  Returns the
    actor, so callers can write ``who = authorize(actor, ...).name``."""
    if not isinstance(actor, Actor):
        raise TypeError(f"authorize needs an objrel.access.Actor as its first argument; got {type(actor).__name__}")
    r, target = rule(action), _as_target(target)
    reason = _refusal(actor, r, target)
    _notify(actor, action, target, reason is None)
    if reason is not None:
        doing = f"{r.what} ({target.what})" if target.what else r.what
        raise NotAllowed(actor.name, doing, r.roles, tuple(sorted(actor.roles)), reason=reason or None)
    return actor


def permits(actor: Actor, action: str, target: Target | str | None = None) -> bool:
    """True when ``authorize`` would let ``actor`` do ``action`` (for pages deciding what to offer; the
    function that acts still calls ``authorize``)."""
    return _refusal(actor, rule(action), _as_target(target)) is None


def _notify(actor: Actor, action: str, target: Target, granted: bool) -> None:
    with _watch_lock:
        for log in _watchers:
            log.append((actor, action, target, granted))


@contextlib.contextmanager
def watch() -> Iterator[list]:
    """Collect every decision the gate makes while the block runs, as (actor, action, target, granted)
    tuples, in this process (the crawl test holds what happened against the table with it)."""
    log: list = []
    with _watch_lock:
        _watchers.append(log)
    try:
        yield log
    finally:
        with _watch_lock:
            _watchers.remove(log)
