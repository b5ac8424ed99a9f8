"""The trust model of the shared app: roles checked server-side, names that cannot pose as others,
throttled sign-in, a bounded number of concurrent hashes, blind review until the sample closes,
versioned judgments."""

from __future__ import annotations

import datetime as dt
import multiprocessing as mp
import os
import threading
import time

import pytest

from objrel import review as R
from objrel.access import ANONYMOUS, SERVER
from objrel.errors import NotAllowed
from objrel.review import accounts
from objrel.review.lime_pair import explain_pair
from objrel.review.roles import actor_of
from objrel.store import Store
from objrel.store import accounts as account_rows

from tests.review.test_review import ids, make_run


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def team(store):
    """alice and bob review, carol adjudicates, root is admin, olga operates runs."""
    for name, roles in (("alice", [R.REVIEWER]), ("bob", [R.REVIEWER]), ("carol", [R.ADJUDICATOR]),
                        ("root", [R.ADMIN]), ("olga", [R.RUN_OPERATOR])):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    return store


# ---------------------------------------------------------------- roles


def test_roles_are_stored_and_several_per_account(team):
    assert R.roles_of(team, "alice") == ("reviewer",)
    assert R.grant_roles(actor_of(team, "root"), team, "alice", [R.ADJUDICATOR, R.RUN_OPERATOR]) == \
        ("adjudicator", "reviewer", "run-operator")
    assert R.revoke_role(actor_of(team, "root"), team, "alice", R.RUN_OPERATOR) == ("adjudicator", "reviewer")
    assert R.roles_of(team, "nobody") == () and R.roles_of(team, None) == ()
    assert {a["name"]: a["roles"] for a in R.list_accounts(team)}["alice"] == ("adjudicator", "reviewer")


def test_only_admins_grant_invite_and_no_admin_demotes_themselves(team):
    with pytest.raises(NotAllowed, match="'carol' may not grant roles \\(to 'bob'\\): it needs the role admin; "
                                         "carol has adjudicator"):
        R.grant_roles(actor_of(team, "carol"), team, "bob", R.ADJUDICATOR)
    with pytest.raises(NotAllowed,
                       match="'alice' may not invite accounts \\('mallory'\\): it needs the role admin; "
                             "alice has reviewer"):
        R.invite(actor_of(team, "alice"), team, "mallory", "mallory-passphrase", [R.ADMIN])
    with pytest.raises(NotAllowed, match="nobody signed in may not invite accounts"):
        R.invite(ANONYMOUS, team, "mallory", "mallory-passphrase", [R.ADMIN])
    assert "mallory" not in R.reviewer_names(team)
    dora = R.invite(actor_of(team, "root"), team, "dora", "dora-passphrase", [R.REVIEWER, R.ADJUDICATOR])
    assert R.roles_of(team, dora.name) == ("adjudicator", "reviewer")
    with pytest.raises(ValueError, match="roles must be among .* got 'god'"):
        R.invite(actor_of(team, "root"), team, "eve", "eve-passphrase", ["god"])
    with pytest.raises(NotAllowed, match="revoke their own admin role"):
        R.revoke_role(actor_of(team, "root"), team, "root", R.ADMIN)
    assert R.roles_of(team, "root") == ("admin",)


def test_judging_needs_the_reviewer_role(team):
    rid = make_run(team, mr1=["f1"])
    for who, held in (("carol", "adjudicator"), ("root", "admin"), ("olga", "run-operator")):
        with pytest.raises(NotAllowed, match=f"'{who}' may not judge .* needs the role reviewer; {who} has {held}"):
            R.record_judgment(actor_of(team, who), team, rid, "f1", "MR-1", "tp")
    assert R.record_judgment(actor_of(team, "alice"), team, rid, "f1", "MR-1", "tp").verdict == "tp"
    assert [j.reviewer for j in R.judgments(team, rid)] == ["alice"]


def test_adjudication_needs_the_role_and_never_a_party(team):
    rid = make_run(team, mr1=["f1", "f2"])
    R.record_judgment(actor_of(team, "alice"), team, rid, "f1", "MR-1", "tp")
    R.record_judgment(actor_of(team, "bob"), team, rid, "f1", "MR-1", "fp", ["multiple-objects"])
    with pytest.raises(NotAllowed, match="'olga' may not adjudicate .* adjudicator or admin; olga has run-operator"):
        R.adjudicate(actor_of(team, "olga"), team, rid, "f1", "MR-1", "tp", (), None)
    R.grant_roles(actor_of(team, "root"), team, "bob", R.ADJUDICATOR)
    with pytest.raises(NotAllowed, match="'bob' may not adjudicate .*'f1'.*they judged this item"):
        R.adjudicate(actor_of(team, "bob"), team, rid, "f1", "MR-1", "fp", ["multiple-objects"], None)
    assert R.adjudicate(actor_of(team, "carol"), team, rid, "f1", "MR-1", "tp", (), None).adjudicator == "carol"
    # admins may too
    assert R.adjudicate(actor_of(team, "root"), team, rid, "f1", "MR-1", "fp", (), None).adjudicator == "root"
    with pytest.raises(ValueError, match="'f2' of run 1 is not a disagreement: 0 reviewer call.s., too few"):
        R.adjudicate(actor_of(team, "carol"), team, rid, "f2", "MR-1", "tp", (), None)   # nobody judged f2


def test_lime_needs_a_reviewer_role_before_any_work(team):
    class Exploding:
        def __call__(self, *a, **k):
            raise AssertionError("the model must not run for a refused request")

    with pytest.raises(NotAllowed, match="'olga' may not compute LIME explanations .*: it needs the role reviewer or "
                                         "adjudicator or admin; olga has run-operator"):
        explain_pair(actor_of(team, "olga"), team, Exploding(), 1, "s", "fill", 10)
    with pytest.raises(NotAllowed, match="nobody signed in"):
        explain_pair(ANONYMOUS, team, Exploding(), 1, "s", "fill", 10)


# ---------------------------------------------------------------- names


@pytest.mark.parametrize("name, match", [
    ("\u0430lice", "U\\+0430 CYRILLIC SMALL LETTER A"),          # Cyrillic a posing as alice
    ("al\u200bice", "U\\+200B ZERO WIDTH SPACE"),
    ("bob\u202e", "U\\+202E RIGHT-TO-LEFT OVERRIDE"),
    ("a", "2 to 40 characters; got 1"),
    ("x" * 41, "2 to 40 characters; got 41"),
    ("tab\tname", "U\\+0009 control character"),
])
def test_names_outside_the_allowed_set_are_refused(store, name, match):
    with pytest.raises(ValueError, match=match):
        R.create_reviewer(store, name, "long enough passphrase")
    assert R.reviewer_names(store) == []


def test_names_are_nfkc_normalised_and_unique_ignoring_case(store):
    assert R.create_reviewer(store, "\uff34rudy", "trudy-passphrase").name == "Trudy"  # fullwidth T -> T
    for twin in ("TRUDY", "trudy", " Trudy "):
        with pytest.raises(ValueError, match="taken"):
            R.create_reviewer(store, twin, "other-passphrase")
    assert R.verify_reviewer(store, "tRuDy", "trudy-passphrase").name == "Trudy"  # sign-in ignores case


def _sign_up(path: str, name: str, barrier, results) -> None:
    from objrel.review import accounts as acc

    acc.SCRYPT_N = 2 ** 10
    store = Store(path)
    barrier.wait()
    try:
        acc.create_reviewer(store, name, f"{name}-passphrase")
        results.put((name, "ok"))
    except ValueError as exc:
        results.put((name, str(exc)))


@pytest.mark.subprocess
def test_concurrent_sign_ups_of_one_name_in_two_processes_make_one_account(tmp_path, monkeypatch):
    path = str(tmp_path / "race.db")
    Store(path).dispose()
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_sign_up, args=(path, name, barrier, results)) for name in ("Trudy", "TRUDY")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    got = dict(results.get(timeout=5) for _ in procs)
    assert sorted(v == "ok" for v in got.values()) == [False, True], got
    assert any("taken" in v for v in got.values())
    assert len(R.reviewer_names(Store(path))) == 1


def test_the_store_refuses_a_case_twin_even_past_the_python_check(store, monkeypatch):
    """The unique index on lower(name) decides a race the in-transaction check cannot see."""
    R.create_reviewer(store, "Trudy", "trudy-passphrase")
    monkeypatch.setattr(account_rows, "_taken", lambda c, name: False)   # as if the check ran before the insert
    with pytest.raises(ValueError, match="taken"):
        R.create_reviewer(store, "TRUDY", "trudy-passphrase")
    assert R.reviewer_names(store) == ["Trudy"]


# ---------------------------------------------------------------- sign-in throttling


def test_throttle_wait_grows_and_is_capped():
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    fails = [t0 + dt.timedelta(seconds=i) for i in range(10)]
    last = fails[-1]
    assert accounts.throttle_wait(fails[:2], last) == 0.0
    assert accounts.throttle_wait(fails[:3], fails[2]) == accounts.THROTTLE_BASE_S
    assert accounts.throttle_wait(fails[:5], fails[4]) == 4 * accounts.THROTTLE_BASE_S
    assert accounts.throttle_wait(fails[:5], fails[4] + dt.timedelta(seconds=3)) == 1.0
    assert accounts.throttle_wait(fails * 3, last) == accounts.THROTTLE_MAX_S


def test_failed_sign_ins_throttle_that_client_at_the_name_without_hashing(store, monkeypatch):
    R.create_reviewer(store, "alice", "alice-passphrase")
    for _ in range(accounts.THROTTLE_AFTER_FAILURES):
        result = R.verify_reviewer(store, "alice", "wrong guess", client="10.0.0.1")
        assert not result and result.wait_s == 0 and result.message == "Unknown name or wrong passphrase."
    hashed = []
    real = accounts._check_passphrase
    monkeypatch.setattr(accounts, "_check_passphrase", lambda *a: hashed.append(1) or real(*a))
    refused = R.verify_reviewer(store, "ALICE", "alice-passphrase", client="10.0.0.1")  # the right one, too soon
    assert not refused and 0 < refused.wait_s <= accounts.THROTTLE_BASE_S and hashed == []
    assert "try again in 1 s" in refused.message
    time.sleep(refused.wait_s + 0.05)
    ok = R.verify_reviewer(store, "alice", "alice-passphrase", client="10.0.0.1")
    assert ok and ok.name == "alice" and hashed == [1]
    assert R.verify_reviewer(store, "alice", "wrong", client="10.0.0.1").wait_s == 0  # success forgot the failures


def test_one_client_guessing_many_names_is_slowed_at_every_name(store, monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2**10)
    for i in range(accounts.CLIENT_THROTTLE_AFTER_FAILURES):
        assert not R.verify_reviewer(store, f"name{i}", "guess guess", client="10.9.9.9")
    assert R.verify_reviewer(store, "name1", "guess guess", client="10.9.9.9").wait_s > 0
    assert R.verify_reviewer(store, "another", "guess guess", client="10.9.9.9").wait_s > 0
    assert R.verify_reviewer(store, "name1", "guess guess", client="10.1.1.1").wait_s == 0  # others go on


def test_at_most_hash_slots_scrypt_hashes_run_at_once(monkeypatch):
    running, peak, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def slow_scrypt(*a, **k):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        release.wait(5)
        with lock:
            running[0] -= 1
        return b"x" * 32

    monkeypatch.setattr(accounts.hashlib, "scrypt", slow_scrypt)
    threads = [threading.Thread(target=accounts._hash_passphrase, args=("p",)) for _ in range(accounts.HASH_SLOTS + 1)]
    for t in threads:
        t.start()
    deadline = time.time() + 5
    while time.time() < deadline and running[0] < accounts.HASH_SLOTS:
        time.sleep(0.01)
    time.sleep(0.2)   # time for a third hash to start, were it allowed to
    assert running[0] == accounts.HASH_SLOTS == max(1, (os.cpu_count() or 2) // 2)   # one more waits at the gate
    release.set()
    for t in threads:
        t.join(5)
    assert peak[0] == accounts.HASH_SLOTS and running[0] == 0


# ---------------------------------------------------------------- blind review, closing, versions


def test_the_sample_closes_when_two_reviewers_judged_every_drawn_item(team):
    rid = make_run(team, mr1=ids("s", 4))
    drawn = R.draw_review_sample(SERVER, team, rid, "MR-1")
    assert len(drawn) == 4 and not R.sample_state(team, rid, "MR-1").closed
    for sid in drawn:
        R.record_judgment(actor_of(team, "alice"), team, rid, sid, "MR-1", "tp")
    assert R.sample_state(team, rid, "MR-1").closed_by == ("alice",)
    # blind: bob's queue shows his calls only, never alice's
    assert all(not q.judged_by_me for q in R.review_queue(actor_of(team, "bob"), team, rid, "MR-1"))
    for sid in drawn[:-1]:
        R.record_judgment(actor_of(team, "bob"), team, rid, sid, "MR-1", "fp", ["other"], "glare")
    assert not R.sample_state(team, rid, "MR-1").closed
    with pytest.raises(NotAllowed, match="'bob' may not see reviewers' calls \\(the calls of alice and bob\\)"):
        R.pair_view(actor_of(team, "bob"), team, rid, "MR-1", "alice", "bob")
    R.record_judgment(actor_of(team, "bob"), team, rid, drawn[-1], "MR-1", "tp")
    state = R.sample_state(team, rid, "MR-1")
    assert state.closed and state.closed_by == ("alice", "bob")
    assert R.pair_view(actor_of(team, "carol"), team, rid, "MR-1", "alice", "bob").state.closed


def test_changes_are_new_versions_with_who_and_when_never_overwritten(team):
    rid = make_run(team, mr1=ids("s", 2))
    drawn = R.draw_review_sample(SERVER, team, rid, "MR-1")
    for who in ("alice", "bob"):
        for sid in drawn:
            R.record_judgment(actor_of(team, who), team, rid, sid, "MR-1", "tp")
    assert R.sample_state(team, rid, "MR-1").closed
    sid = drawn[0]
    R.record_judgment(actor_of(team, "alice"), team, rid, sid, "MR-1", "fp", ["incomplete-removal"],
                      "the tail survived")
    history = R.judgment_history(actor_of(team, "alice"), team, rid, sid, "MR-1", "alice")
    assert [(v.version, v.verdict, v.after_close) for v in history] == [(1, "tp", False), (2, "fp", True)]
    assert history[1].note == "the tail survived" and history[1].created_at >= history[0].created_at
    assert history[1].created_at.tzinfo is not None
    # the current call is the latest version
    assert [j.verdict for j in R.judgments(team, rid, "MR-1", reviewer="alice") if j.sample_id == sid] == ["fp"]
    with pytest.raises(NotAllowed, match="'bob' may not see reviewers' calls \\(alice's calls\\)"):
        R.judgment_history(actor_of(team, "bob"), team, rid, sid, "MR-1", "alice")
    assert len(R.judgment_history(actor_of(team, "carol"), team, rid, sid, "MR-1", "alice")) == 2


def test_the_same_call_again_adds_no_version_and_keeps_its_time(team):
    """Found in chromium: a call pressed twice at once was stored as two identical versions of the item's
    history.  The same verdict, reasons, note and validity again is no change."""
    rid = make_run(team, mr1=ids("s", 2))
    sid = R.draw_review_sample(SERVER, team, rid, "MR-1")[0]
    alice = actor_of(team, "alice")
    first = R.record_judgment(alice, team, rid, sid, "MR-1", "fp", ["other"], "glare")
    again = R.record_judgment(alice, team, rid, sid, "MR-1", "fp", ["other"], "  glare ")   # the note is trimmed
    assert again.updated_at == first.updated_at
    assert [v.version for v in R.judgment_history(alice, team, rid, sid, "MR-1", "alice")] == [1]
    for verdict, reasons, note, validity in (("fp", ["other"], "glare", "valid"),
                                             ("fp", ["other"], "glare, left", "valid"), ("tp", [], None, "valid")):
        R.record_judgment(alice, team, rid, sid, "MR-1", verdict, reasons, note, validity=validity)
    history = R.judgment_history(alice, team, rid, sid, "MR-1", "alice")
    assert [(v.version, v.verdict, v.note, v.validity) for v in history] == [
        (1, "fp", "glare", None), (2, "fp", "glare", "valid"), (3, "fp", "glare, left", "valid"),
        (4, "tp", None, "valid")]


# ---------------------------------------------------------------- the one gate (issue: trust by construction)


def test_every_action_is_declared_once_with_known_roles():
    """The action table is the policy: every action names roles from ROLES and side effects from KINDS; what
    may write, start work, open a path or reveal calls is never open to visitors, except reading the results
    folder."""
    from objrel import access as A

    assert len(A.ACTIONS) == len(set(A.ACTIONS))
    for rule in A.ACTIONS.values():
        assert set(rule.roles) <= set(A.ROLES) and set(rule.kinds) <= set(A.KINDS)
        if rule.public:   # reading the results folders and a benchmark's progress only
            assert rule.action in (A.OPEN_RESULTS, A.SEE_PROGRESS) and rule.kinds == (A.READS_PATH,)
    with pytest.raises(TypeError, match="needs an objrel.access.Actor"):
        A.authorize("root", A.INVITE)          # a bare name is not an actor: roles come from the store
    with pytest.raises(ValueError, match="unknown action 'fly'"):
        A.authorize(A.SERVER, "fly")


def test_an_adjudicator_never_judges_an_item_they_decided(team):
    """F14: an account with the reviewer and adjudicator roles adjudicates an item, then tries to judge it: the
    judgment is refused (on main both were accepted)."""
    rid = make_run(team, mr1=["f1"])
    R.grant_roles(actor_of(team, "root"), team, "carol", R.REVIEWER)      # carol: adjudicator and reviewer
    R.record_judgment(actor_of(team, "alice"), team, rid, "f1", "MR-1", "tp")
    R.record_judgment(actor_of(team, "bob"), team, rid, "f1", "MR-1", "fp", ["multiple-objects"])
    R.adjudicate(actor_of(team, "carol"), team, rid, "f1", "MR-1", "tp", (), None)
    with pytest.raises(NotAllowed, match="'carol' may not judge .*they adjudicated this item"):
        R.record_judgment(actor_of(team, "carol"), team, rid, "f1", "MR-1", "fp", ["multiple-objects"])
    assert sorted(j.reviewer for j in R.judgments(team, rid)) == ["alice", "bob"]


def test_adjudication_decides_disagreements_only(team):
    """F14: an item both reviewers agreed on cannot be overridden through the library."""
    rid = make_run(team, mr1=["f1"])
    R.record_judgment(actor_of(team, "alice"), team, rid, "f1", "MR-1", "tp")
    R.record_judgment(actor_of(team, "bob"), team, rid, "f1", "MR-1", "tp")
    with pytest.raises(ValueError, match="is not a disagreement: 2 reviewer call.s., in agreement"):
        R.adjudicate(actor_of(team, "carol"), team, rid, "f1", "MR-1", "fp", ["other"], "override")
    from objrel.store import reviews as review_rows

    assert review_rows.adjudications(team, rid, "MR-1") == {}       # nothing stored over the agreed calls


def test_a_review_sample_is_drawn_by_a_reviewing_role_and_redrawn_only_by_an_admin(team):
    """F15: without an account (or as a reviewer) a stored review sample cannot be replaced; on main
    draw_review_sample(redraw=True) replaced it for anyone."""
    from objrel.access import ANONYMOUS

    rid = make_run(team, mr1=[f"f{i}" for i in range(40)])
    with pytest.raises(NotAllowed, match="nobody signed in may not draw a review sample"):
        R.draw_review_sample(ANONYMOUS, team, rid, "MR-1")
    first = R.draw_review_sample(actor_of(team, "alice"), team, rid, "MR-1")
    for who in (ANONYMOUS, actor_of(team, "alice"), actor_of(team, "carol")):
        with pytest.raises(NotAllowed, match="may not replace a drawn review sample"):
            R.draw_review_sample(who, team, rid, "MR-1", seed=7, redraw=True)
    assert R.review_sample_info(team, rid, "MR-1").sample_ids == tuple(first)
    again = R.draw_review_sample(actor_of(team, "root"), team, rid, "MR-1", seed=7, redraw=True)
    assert R.review_sample_info(team, rid, "MR-1").seed == 7 and len(again) == len(first)


def test_judging_and_adjudicating_one_item_at_once_never_both_pass(team):
    """One account with the reviewer and adjudicator roles judges and adjudicates the same disagreement at the
    same moment, ten times: at most one of the two writes lands each time (each item's writes are serialised,
    so the second sees the first)."""
    items = [f"f{i}" for i in range(10)]
    rid = make_run(team, mr1=items)
    R.grant_roles(actor_of(team, "root"), team, "carol", R.REVIEWER)
    carol = actor_of(team, "carol")
    for sid in items:
        R.record_judgment(actor_of(team, "alice"), team, rid, sid, "MR-1", "tp")
        R.record_judgment(actor_of(team, "bob"), team, rid, sid, "MR-1", "fp", ["multiple-objects"])
    for sid in items:
        start = threading.Barrier(2)
        done = {}

        def judge(sid=sid, start=start, done=done):
            start.wait()
            try:
                done["judge"] = R.record_judgment(carol, team, rid, sid, "MR-1", "uncertain")
            except NotAllowed:
                pass

        def decide(sid=sid, start=start, done=done):
            start.wait()
            try:
                done["adjudicate"] = R.adjudicate(carol, team, rid, sid, "MR-1", "tp", (), None)
            except NotAllowed:
                pass

        threads = [threading.Thread(target=judge), threading.Thread(target=decide)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert len(done) == 1, (sid, sorted(done))
