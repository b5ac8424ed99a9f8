"""Review domain logic: accounts, judgments, Cochran samples, Cohen's kappa, consensus, precision.

Every expected number below is worked out by hand in the comments; none is copied from the
code's output.  z(97.5%) = 1.959964, so Cochran's n0 = 1.959964^2 * 0.25 / 0.05^2 = 384.1459.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import sqlite3
import threading

import numpy as np
import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from objrel import review as R
from objrel.access import ANONYMOUS, SERVER
from objrel.errors import NotAllowed
from objrel.review import accounts
from objrel.review.roles import actor_of
from objrel.store import Store, transactions
from objrel.store import schema as S

Z95 = 1.959964
N0 = Z95 ** 2 * 0.25 / 0.05 ** 2  # 384.1459


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    """Cheap scrypt for the tests (the stored hash records n, so verify still uses the right cost)."""
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)


# ---------------------------------------------------------------- fixtures: runs with flagged samples


def _vote(sid: str, relation: str, flagged: bool, primary: bool = True, group: str | None = None) -> dict:
    return {"sample_id": sid, "group_name": group or f"fill:{relation}:{'primary' if primary else 'palette'}",
            "relation": relation, "is_primary": primary, "k": 2, "n": 3, "applicable": 3,
            "violations": 2 if flagged else 0, "flagged": flagged}


def make_run(store: Store, mr1=(), mr2=(), clean=(), palette_only=(), model="m", task="single") -> int:
    """A finished run whose samples are flagged as asked:

    mr1 / mr2: flagged by the primary vote of that relation; clean: flagged by nothing;
    palette_only: flagged for MR-1 by a non-primary vote only (must not count as flagged).
    """
    rid = store.create_run(name=f"run {model}", model=model, model_config={}, task=task, class_names=["a", "b"],
                           dataset="d", dataset_config={"root": "/"}, plan={"groups": []}, config={}, seed=0,
                           n_total=0)
    ids = dict.fromkeys([*mr1, *mr2, *clean, *palette_only])
    for sid in ids:
        votes = [_vote(sid, "MR-1", sid in mr1), _vote(sid, "MR-2", sid in mr2)]
        if sid in palette_only:
            votes.append(_vote(sid, "MR-1", True, primary=False))
        store.write_sample(rid, {"sample_id": sid, "rel_path": f"{sid}.png", "status": "tested", "correct": True},
                           predictions=[], verdicts=[], votes=votes)
    store.update_run(rid, status="finished")
    return rid


def ids(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(n)]


@pytest.fixture
def two_reviewers(store):
    R.create_reviewer(store, "alice", "alice-passphrase")
    R.create_reviewer(store, "bob", "bob-passphrase")
    return store


# ---------------------------------------------------------------- Cochran


def test_cochran_hand_values():
    # n = n0 / (1 + (n0 - 1) / N), rounded up
    assert math.isclose(N0, 384.1459, abs_tol=1e-3)
    assert R.cochran_sample_size(10_000) == 370  # 384.1459 / 1.0383146 = 369.97
    assert R.cochran_sample_size(1_000) == 278   # 384.1459 / 1.3831459 = 277.73
    assert R.cochran_sample_size(100) == 80      # 384.1459 / 4.831459  = 79.51
    assert R.cochran_sample_size(10) == 10       # 384.1459 / 39.31459  = 9.77
    assert R.cochran_sample_size(1) == 1         # n0 / n0 = 1 exactly: must not round up to 2
    assert R.cochran_sample_size(0) == 0


def test_cochran_matches_seed000_tables_2_and_3():
    # seed 000 Table 2 (MR-2) and Table 3 sample sizes: Total -> Sample Size
    for total, size in [(3_634, 348), (4_942, 357), (6_622, 364), (957, 275), (4_732, 356)]:
        assert R.cochran_sample_size(total) == size, total


def test_cochran_other_confidence_and_margin():
    # 99%: z = 2.575829, n0 = 2.575829^2 * 0.25 / 0.0025 = 663.49; N = 1000: 663.49 / 1.66249 = 399.09
    assert R.cochran_sample_size(1_000, confidence=0.99) == 400
    # 10% margin: n0 = 3.841459 * 0.25 / 0.01 = 96.04; N = 10000: 96.04 / 1.0095036 = 95.13
    assert R.cochran_sample_size(10_000, margin=0.10) == 96
    # p = 0.1: n0 = 3.841459 * 0.09 / 0.0025 = 138.29; N = 10000: 138.29 / 1.013729 = 136.42
    assert R.cochran_sample_size(10_000, p=0.1) == 137


@pytest.mark.parametrize("kwargs, match", [
    ({"population": -1}, "non-negative integer"), ({"population": 2.5}, "non-negative integer"),
    ({"population": 10, "confidence": 1.0}, "confidence"), ({"population": 10, "margin": 0}, "margin"),
    ({"population": 10, "p": 1.5}, "p must"),
])
def test_cochran_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        R.cochran_sample_size(**kwargs)


# ---------------------------------------------------------------- Cohen's kappa


def test_kappa_two_categories_by_hand():
    a = ["tp"] * 6 + ["fp"] * 4
    b = ["tp"] * 5 + ["fp"] + ["fp"] * 3 + ["tp"]
    k = R.cohen_kappa(a, b)
    # agreement on 5 tp + 3 fp = 8 of 10; p_e = 0.6 * 0.6 + 0.4 * 0.4 = 0.52
    assert k.n == 10
    assert k.observed == pytest.approx(0.8)
    assert k.expected == pytest.approx(0.52)
    assert k.kappa == pytest.approx(0.28 / 0.48)  # 0.583333
    # Fleiss-Cohen-Everitt (1969) SE, 1 - kappa = 5/12, rows = columns = (0.6, 0.4):
    # A = 0.5 (1 - 1.2 * 5/12)^2 + 0.3 (1 - 0.8 * 5/12)^2 = 0.125 + 0.133333 = 0.258333
    # B = (5/12)^2 (0.1 (0.6 + 0.4)^2 + 0.1 (0.4 + 0.6)^2) = 0.034722
    # C = (7/12 - 0.52 * 5/12)^2 = 0.366667^2 = 0.134444
    # var = (A + B - C) / (10 * 0.48^2) = 0.158611 / 2.304 = 0.068842 -> se = 0.262377
    assert k.se_method == "fleiss"
    assert k.se == pytest.approx(0.262377, abs=1e-6)
    # 0.583333 -+ 1.959964 * 0.262377 = 0.583333 -+ 0.514249 -> [0.069084, 1.097582] -> upper clipped to 1
    assert k.ci_low == pytest.approx(0.069084, abs=1e-5)
    assert k.ci_high == 1.0
    # Cohen (1960): se = sqrt(0.8 * 0.2 / (10 * 0.48^2)) = sqrt(0.16 / 2.304) = 0.2635231
    k60 = R.cohen_kappa(a, b, se_method="cohen1960")
    assert k60.se_method == "cohen1960" and k60.kappa == k.kappa
    assert k60.se == pytest.approx(0.2635231, abs=1e-6)
    # 0.583333 -+ 1.959964 * 0.2635231 = 0.583333 -+ 0.516496 -> [0.066837, 1.099829] -> upper clipped to 1
    assert k60.ci_low == pytest.approx(0.066837, abs=1e-5)
    assert k.band == "moderate"
    # rows: a's calls (tp, fp, uncertain), columns: b's calls
    assert k.confusion == ((5, 1, 0), (1, 3, 0), (0, 0, 0))
    frame = k.confusion_frame("alice", "bob")
    assert frame.loc["alice: tp", "bob: fp"] == 1 and frame.loc["alice: fp", "bob: fp"] == 3
    d = k.to_dict()
    assert d["confusion"][0] == [5, 1, 0] and d["band"] == "moderate"


def test_kappa_three_categories_by_hand():
    a = ["tp", "tp", "tp", "fp", "fp", "uncertain", "uncertain", "tp", "fp", "uncertain"]
    b = ["tp", "tp", "fp", "fp", "uncertain", "uncertain", "tp", "tp", "fp", "uncertain"]
    k = R.cohen_kappa(a, b)
    # agree at items 1, 2, 4, 6, 8, 9, 10 -> p_o = 0.7; marginals a = b = (0.4, 0.3, 0.3)
    # p_e = 0.16 + 0.09 + 0.09 = 0.34; kappa = 0.36 / 0.66 = 0.545455
    assert k.observed == pytest.approx(0.7)
    assert k.expected == pytest.approx(0.34)
    assert k.kappa == pytest.approx(0.545455, abs=1e-6)
    # Cohen (1960): se = sqrt(0.21 / (10 * 0.66^2)) = sqrt(0.21 / 4.356) = 0.219567; z se = 0.430343
    k60 = R.cohen_kappa(a, b, se_method="cohen1960")
    assert k60.se == pytest.approx(0.219567, abs=1e-6)
    assert (k60.ci_low, k60.ci_high) == (pytest.approx(0.115112, abs=1e-5), pytest.approx(0.975798, abs=1e-5))
    # Fleiss-Cohen-Everitt (default): table [[3,1,0],[0,2,1],[1,0,2]] / 10, 1 - kappa = 0.454545:
    # A = 0.3 (1 - 0.8 * .454545)^2 + 0.2 (1 - 0.6 * .454545)^2 + 0.2 (1 - 0.6 * .454545)^2 = 0.333058
    # off-diagonal cells (a tp, b fp), (a fp, b unc), (a unc, b tp), each 0.1, weights (p_.i + p_j.)^2:
    # B = .454545^2 * 0.1 ((0.4 + 0.3)^2 + (0.3 + 0.3)^2 + (0.3 + 0.4)^2) = 0.027686
    # C = (0.545455 - 0.34 * 0.454545)^2 = 0.152810;  var = 0.207934 / 4.356 = 0.047735 -> se = 0.218484
    assert k.se == pytest.approx(0.218484, abs=1e-6)
    assert k.confusion == ((3, 1, 0), (0, 2, 1), (1, 0, 2))


def test_kappa_perfect_total_disagreement_and_undefined():
    perfect = R.cohen_kappa(["tp", "fp", "tp", "uncertain"], ["tp", "fp", "tp", "uncertain"])
    assert perfect.kappa == pytest.approx(1.0) and perfect.se == 0.0
    assert (perfect.ci_low, perfect.ci_high) == (pytest.approx(1.0), pytest.approx(1.0))
    assert perfect.band == "almost perfect"
    # p_o = 0, p_e = 0.5 * 0.5 + 0.5 * 0.5 = 0.5 -> kappa = -0.5 / 0.5 = -1
    opposite = R.cohen_kappa(["tp", "fp"], ["fp", "tp"])
    assert opposite.kappa == pytest.approx(-1.0) and opposite.band == "poor"
    # every call tp by both: p_o = p_e = 1, kappa = 0/0 -> undefined, not 1
    same = R.cohen_kappa(["tp"] * 5, ["tp"] * 5)
    assert same.observed == 1.0 and same.expected == 1.0
    assert same.kappa is None and same.se is None and same.ci_low is None and same.band == "undefined"


@pytest.mark.parametrize("kappa, band", [
    (-0.01, "poor"), (0.0, "slight"), (0.2, "slight"), (0.21, "fair"), (0.4, "fair"), (0.41, "moderate"),
    (0.6, "moderate"), (0.61, "substantial"), (0.8, "substantial"), (0.81, "almost perfect"),
    (0.955, "almost perfect"), (1.0, "almost perfect"), (None, "undefined"),
])
def test_landis_koch_bands(kappa, band):
    assert R.landis_koch_band(kappa) == band


def test_kappa_band_edge_is_not_lost_to_rounding():
    # p_o = 0.6, p_e = 0.5 -> kappa = 0.1 / 0.5 = 0.2 exactly in arithmetic: "slight", not "fair"
    a = ["tp"] * 5 + ["fp"] * 5
    b = ["tp"] * 3 + ["fp"] * 2 + ["tp"] * 2 + ["fp"] * 3
    k = R.cohen_kappa(a, b)
    assert k.kappa == pytest.approx(0.2) and k.band == "slight"


def test_kappa_rejects_bad_input():
    with pytest.raises(ValueError, match="same items: 2 calls against 1"):
        R.cohen_kappa(["tp", "fp"], ["tp"])
    with pytest.raises(ValueError, match="at least one item"):
        R.cohen_kappa([], [])
    with pytest.raises(ValueError, match="outside the categories"):
        R.cohen_kappa(["tp", "maybe"], ["tp", "fp"])


# ---------------------------------------------------------------- accounts


def test_passphrase_is_stored_hashed_and_verified(store):
    rev = R.create_reviewer(store, "  alice ", "correct horse")
    assert rev.name == "alice" and rev.kind == "password"
    R.create_reviewer(store, "bob", "correct horse")
    with store.engine.connect() as c:
        hashes = dict(c.execute(select(S.reviewers.c.name, S.reviewers.c.pass_hash)).all())
    h = hashes["alice"]
    assert "correct horse" not in h and h != "correct horse"
    scheme, n, r, p, salt, digest = h.split("$")
    assert (scheme, n, r, p) == ("scrypt", str(2 ** 10), "8", "1")
    assert len(bytes.fromhex(salt)) == 16 and len(bytes.fromhex(digest)) == 32
    assert hashes["bob"] != h  # same passphrase, different random salt
    assert R.verify_reviewer(store, "alice", "correct horse")
    assert R.verify_reviewer(store, " alice", "correct horse")
    assert not R.verify_reviewer(store, "alice", "correct horsE")
    assert not R.verify_reviewer(store, "nobody", "correct horse")
    assert R.reviewer_names(store) == ["alice", "bob"]


def test_default_scrypt_cost_is_owasp_minimum(store, monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 17)
    R.create_reviewer(store, "carol", "a long passphrase")
    with store.engine.connect() as c:
        h = c.execute(select(S.reviewers.c.pass_hash)).scalar_one()
    assert h.startswith("scrypt$131072$8$1$")
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)  # a later, cheaper setting still verifies the old hash
    assert R.verify_reviewer(store, "carol", "a long passphrase")


def test_account_refusals(store):
    with pytest.raises(ValueError, match="2 to 40 characters; got 0"):
        R.create_reviewer(store, "   ", "long enough")
    with pytest.raises(ValueError, match="at least 8 characters; got 7"):
        R.create_reviewer(store, "dave", "1234567")
    R.create_reviewer(store, "dave", "12345678")  # exactly 8 is fine
    with pytest.raises(ValueError, match="taken"):
        R.create_reviewer(store, "dave", "another passphrase")
    with pytest.raises(ValueError, match="taken"):
        R.create_reviewer(store, "DAVE", "another passphrase")
    assert R.reviewer_names(store) == ["dave"]


def test_oidc_accounts(store):
    R.create_reviewer(store, "alice", "alice-passphrase")
    erin = R.ensure_oidc_reviewer(store, "erin@example.org", "sub-1")
    assert erin.kind == "oidc"
    assert R.ensure_oidc_reviewer(store, "erin@example.org", "sub-1").name == "erin@example.org"
    # the provider now reports another name for the same subject: same account
    assert R.ensure_oidc_reviewer(store, "Erin E.", "sub-1").name == "erin@example.org"
    with pytest.raises(ValueError, match="belongs to another account"):
        R.ensure_oidc_reviewer(store, "alice", "sub-2")
    with pytest.raises(ValueError, match="belongs to another account"):
        R.ensure_oidc_reviewer(store, "erin@example.org", "sub-3")
    assert not R.verify_reviewer(store, "erin@example.org", "anything at all")  # no passphrase to match
    assert R.reviewer_names(store) == ["alice", "erin@example.org"]


# ---------------------------------------------------------------- judgments


def test_second_call_updates_the_same_row(two_reviewers):
    store = two_reviewers
    rid = make_run(store, mr1=["s1"])
    first = R.record_judgment(actor_of(store, "alice"), store, rid, "s1", "MR-1", "tp")
    second = R.record_judgment(actor_of(store, "alice"), store, rid, "s1", "MR-1", "fp",
                               ["incomplete-removal", "multiple-objects"])
    assert second.verdict == "fp"
    assert second.reasons == ("multiple-objects", "incomplete-removal")  # FP_REASONS order
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    with store.engine.connect() as c:
        assert c.execute(select(func.count()).select_from(S.judgments)).scalar() == 1
    third = R.record_judgment(actor_of(store, "alice"), store, rid, "s1", "MR-1", "tp")
    assert third.reasons == () and third.note is None  # the update clears the old reasons
    R.record_judgment(actor_of(store, "bob"), store, rid, "s1", "MR-1", "uncertain")
    assert [(j.reviewer, j.verdict) for j in R.judgments(store, rid)] == [("alice", "tp"), ("bob", "uncertain")]
    assert [j.reviewer for j in R.judgments(store, rid, "MR-1", reviewer="bob")] == ["bob"]
    assert R.judgments(store, rid, "MR-2") == []


def test_judgments_only_on_flagged_inferences(two_reviewers):
    store = two_reviewers
    rid = make_run(store, mr1=["f1"], mr2=["f2"], clean=["c1"], palette_only=["p1"])
    R.record_judgment(actor_of(store, "alice"), store, rid, "f1", "MR-1", "tp")
    R.record_judgment(actor_of(store, "alice"), store, rid, "f2", "MR-2", "tp")
    for sid, rel in [("f1", "MR-2"), ("f2", "MR-1"), ("c1", "MR-1"), ("p1", "MR-1"), ("nope", "MR-1")]:
        with pytest.raises(ValueError, match="not flagged by the primary"):
            R.record_judgment(actor_of(store, "alice"), store, rid, sid, rel, "tp")
    with pytest.raises(ValueError, match="not flagged"):
        R.record_judgment(actor_of(store, "alice"), store, rid + 1, "f1", "MR-1", "tp")  # no such run
    with pytest.raises(NotAllowed, match="nobody signed in may not judge .* needs the role reviewer; it has no role"):
        R.record_judgment(actor_of(store, "mallory"), store, rid, "f1", "MR-1", "tp")
    assert len(R.judgments(store, rid)) == 2


@pytest.mark.parametrize("verdict, reasons, note, match", [
    ("maybe", (), None, "verdict must be one of 'tp', 'fp', 'uncertain'"),
    ("tp", ("multiple-objects",), None, "only for verdict 'fp'"),
    ("uncertain", ("other",), "x", "only for verdict 'fp'"),
    ("fp", ("glare",), None, "false-positive reason must be one of"),
    ("fp", ("other",), None, "'other' needs a note"),
    ("fp", ("other",), "   ", "'other' needs a note"),
    ("fp", ("multiple-objects", "multiple-objects"), None, "repeat"),
])
def test_judgment_input_checks(two_reviewers, verdict, reasons, note, match):
    rid = make_run(two_reviewers, mr1=["s1"])
    with pytest.raises(ValueError, match=match):
        R.record_judgment(actor_of(two_reviewers, "alice"), two_reviewers, rid, "s1", "MR-1", verdict, reasons, note)
    with pytest.raises(ValueError, match="relation must be one of"):
        R.record_judgment(actor_of(two_reviewers, "alice"), two_reviewers, rid, "s1", "MR-3", "tp")


def test_fp_reasons_and_other_note(two_reviewers):
    rid = make_run(two_reviewers, mr1=["s1", "s2"])
    j = R.record_judgment(actor_of(two_reviewers, "alice"), two_reviewers, rid, "s1", "MR-1", "fp", ["other"],
                          "  annotation is wrong ")
    assert j.reasons == ("other",) and j.note == "annotation is wrong"
    # fp without a reason (MR-2 style)
    k = R.record_judgment(actor_of(two_reviewers, "alice"), two_reviewers, rid, "s2", "MR-1", "fp")
    assert k.reasons == ()
    assert j.to_dict()["reasons"] == ["other"]


# ---------------------------------------------------------------- the review sample


def test_draw_is_cochran_sized_seeded_and_stable(store):
    flagged = ids("s", 120)
    rid = make_run(store, mr1=flagged, clean=ids("c", 5))
    drawn = R.draw_review_sample(SERVER, store, rid, "MR-1", seed=7)
    # 384.1459 / (1 + 383.1459 / 120) = 384.1459 / 4.192883 = 91.62 -> 92
    assert len(drawn) == 92 and len(set(drawn)) == 92 and set(drawn) <= set(flagged)
    expected = [flagged[i] for i in np.random.default_rng(7).choice(120, size=92, replace=False)]
    assert drawn == expected
    assert R.draw_review_sample(SERVER, store, rid, "MR-1", seed=7) == drawn
    info = R.review_sample_info(store, rid, "MR-1")
    assert (info.seed, info.population, info.size) == (7, 120, 92)
    with pytest.raises(ValueError, match="already has a MR-1 review sample drawn with seed 7"):
        R.draw_review_sample(SERVER, store, rid, "MR-1", seed=8)
    redrawn = R.draw_review_sample(SERVER, store, rid, "MR-1", seed=8, redraw=True)
    assert redrawn == [flagged[i] for i in np.random.default_rng(8).choice(120, size=92, replace=False)]
    assert R.review_sample_info(store, rid, "MR-1").seed == 8
    with store.engine.connect() as c:
        assert c.execute(select(func.count()).select_from(S.review_samples)).scalar() == 92
    assert R.draw_review_sample(SERVER, store, rid, "MR-2") == []  # nothing flagged for MR-2
    with pytest.raises(ValueError, match="no run 999"):
        R.draw_review_sample(SERVER, store, 999, "MR-1")
    assert R.review_sample_info(store, rid, "MR-2") is None


def test_concurrent_first_draws_store_one_sample(tmp_path):
    path = tmp_path / "draw.db"
    rid = make_run(Store(path), mr1=ids("s", 60))
    results, errors = {}, {}
    barrier = threading.Barrier(4)

    def draw(k: int, seed: int):
        s = Store(path)  # its own engine and connections, like another server process
        barrier.wait()
        try:
            results[k] = R.draw_review_sample(SERVER, s, rid, "MR-1", seed=seed)
        except ValueError as exc:
            errors[k] = str(exc)

    threads = [threading.Thread(target=draw, args=(k, k % 2)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    stored = R.review_sample_info(Store(path), rid, "MR-1")
    # 384.1459 / (1 + 383.1459 / 60) = 384.1459 / 7.385765 = 52.01 -> 53
    assert stored.size == 53
    with Store(path).engine.connect() as c:
        positions = sorted(c.execute(select(S.review_samples.c.position)).scalars())
    assert positions == list(range(53))  # one draw, not two interleaved
    assert len(results) + len(errors) == 4
    for k, drawn in results.items():  # the callers with the winning seed got the stored draw ...
        assert k % 2 == stored.seed and drawn == list(stored.sample_ids)
    for k, msg in errors.items():     # ... the others were told which seed is stored
        assert k % 2 != stored.seed and f"seed {stored.seed}" in msg


def test_review_queue_is_blind(two_reviewers):
    store = two_reviewers
    rid = make_run(store, mr1=ids("s", 6))
    drawn = R.draw_review_sample(SERVER, store, rid, "MR-1")
    assert len(drawn) == 6  # 384.1459 / (1 + 383.1459 / 6) = 5.92 -> 6: everything
    for sid in drawn:
        R.record_judgment(actor_of(store, "alice"), store, rid, sid, "MR-1", "fp", ["other"], "alice-secret-note")
    bob = R.review_queue(actor_of(store, "bob"), store, rid, "MR-1")
    assert [q.sample_id for q in bob] == drawn and [q.position for q in bob] == list(range(6))
    assert not any(q.judged_by_me for q in bob)
    assert all(q.my_verdict is None and q.my_reasons == () and q.my_note is None for q in bob)
    R.record_judgment(actor_of(store, "bob"), store, rid, drawn[2], "MR-1", "tp")
    bob = R.review_queue(actor_of(store, "bob"), store, rid, "MR-1")
    assert [q.my_verdict for q in bob] == [None, None, "tp", None, None, None]
    blob = repr([q.to_dict() for q in bob])
    assert "fp" not in blob and "alice" not in blob and "other" not in blob
    alice = R.review_queue(actor_of(store, "alice"), store, rid, "MR-1")
    assert all(q.my_verdict == "fp" and q.my_note == "alice-secret-note" for q in alice)


def test_review_queue_draws_with_the_default_seed_when_nothing_is_drawn(two_reviewers):
    flagged = ids("s", 500)
    rid = make_run(two_reviewers, mr1=flagged)
    queue = R.review_queue(actor_of(two_reviewers, "alice"), two_reviewers, rid, "MR-1")
    # 384.1459 / (1 + 383.1459 / 500) = 384.1459 / 1.766292 = 217.49 -> 218
    assert len(queue) == 218
    assert [q.sample_id for q in queue] == [flagged[i] for i in
                                           np.random.default_rng(0).choice(500, size=218, replace=False)]
    assert R.review_sample_info(two_reviewers, rid, "MR-1").seed == R.DEFAULT_REVIEW_SEED


# ---------------------------------------------------------------- agreement, disagreement, consensus

# The 10-item case of test_kappa_two_categories_by_hand, stored: a = tp x6, fp x4; b = tp x5, fp, fp x3, tp.
CALLS_A = ["tp"] * 6 + ["fp"] * 4
CALLS_B = ["tp"] * 5 + ["fp"] + ["fp"] * 3 + ["tp"]


def _store_calls(store, rid, sids, a_calls, b_calls, relation="MR-1"):
    for sid, a, b in zip(sids, a_calls, b_calls):
        R.record_judgment(actor_of(store, "alice"), store, rid, sid, relation, a,
                          ["multiple-objects"] if a == "fp" else ())
        R.record_judgment(actor_of(store, "bob"), store, rid, sid, relation, b,
                          ["multiple-objects"] if b == "fp" else ())


def test_agreement_over_items_both_judged(two_reviewers):
    store = two_reviewers
    sids = ids("s", 12)
    rid = make_run(store, mr1=sids)
    _store_calls(store, rid, sids[:10], CALLS_A, CALLS_B)
    R.record_judgment(actor_of(store, "alice"), store, rid, sids[10], "MR-1", "uncertain")  # only alice: not in kappa
    assert R.agreement(store, rid, "MR-1", "alice", "bob").n_both == 0        # nothing drawn: no pair to compare
    assert len(R.draw_review_sample(SERVER, store, rid, "MR-1")) == 12        # all twelve are drawn
    ag = R.agreement(store, rid, "MR-1", "alice", "bob")
    assert (ag.n_a, ag.n_b, ag.n_both) == (11, 10, 10)
    assert ag.kappa.kappa == pytest.approx(0.583333, abs=1e-6) and ag.kappa.band == "moderate"
    assert ag.pairs[5] == ("s005", "tp", "fp") and ag.pairs[9] == ("s009", "fp", "tp")
    frame = ag.calls_frame()
    assert list(frame.columns) == ["sample", "alice", "bob", "agree"] and int(frame["agree"].sum()) == 8
    assert ag.to_dict()["kappa"]["n"] == 10
    empty = R.agreement(store, rid, "MR-2", "alice", "bob")
    assert empty.n_both == 0 and empty.kappa is None
    with pytest.raises(ValueError, match="two different reviewers"):
        R.agreement(store, rid, "MR-1", "alice", "alice")


def test_disagreements_adjudication_and_consensus(two_reviewers):
    store = two_reviewers
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    R.create_reviewer(store, "dave", "dave-passphrase", roles=[R.ADMIN])
    sids = ids("s", 10)
    rid = make_run(store, mr1=sids)
    assert len(R.draw_review_sample(SERVER, store, rid, "MR-1")) == 10   # all ten: both judge every one, closing it
    _store_calls(store, rid, sids, CALLS_A, CALLS_B)
    # s006: both fp but for different reasons -> a "reasons" disagreement, kappa unaffected
    R.record_judgment(actor_of(store, "bob"), store, rid, "s006", "MR-1", "fp", ["incomplete-removal"])
    dis = {d.sample_id: d for d in R.disagreements(store, rid, "MR-1", "alice", "bob")}   # in draw order
    assert sorted((k, d.kind) for k, d in dis.items()) == [("s005", "verdict"), ("s006", "reasons"),
                                                            ("s009", "verdict")]
    assert dis["s005"].verdict_a == "tp" and dis["s005"].verdict_b == "fp" \
        and dis["s005"].reasons_b == ("multiple-objects",)
    assert not any(d.resolved for d in dis.values())
    # agreed automatically: s000-s004 (tp) and s007, s008 (fp, same reason) = 7 items
    agreed = R.consensus(store, rid, "MR-1")
    assert [c.sample_id for c in agreed] == ["s000", "s001", "s002", "s003", "s004", "s007", "s008"]
    assert all(c.source == "agreed" and c.reviewers == ("alice", "bob") for c in agreed)
    with store.engine.connect() as c:  # computed on read: nothing materialised
        assert c.execute(select(func.count()).select_from(S.consensus)).scalar() == 0

    done = R.adjudicate(actor_of(store, "carol"), store, rid, "s005", "MR-1", "fp", ["multiple-objects"], None)
    assert (done.verdict, done.source, done.adjudicator) == ("fp", "adjudicated", "carol")
    with pytest.raises(NotAllowed,
                       match="'alice' may not adjudicate .*needs the role adjudicator or admin; alice has reviewer"):
        R.adjudicate(actor_of(store, "alice"), store, rid, "s005", "MR-1", "uncertain", (), "could not tell")
    assert R.grant_roles(actor_of(store, "dave"), store, "alice", R.ADJUDICATOR) == ("adjudicator", "reviewer")
    with pytest.raises(NotAllowed, match="'alice' may not adjudicate .*they judged this item, so they are a party"):
        # a party, not a judge
        R.adjudicate(actor_of(store, "alice"), store, rid, "s005", "MR-1", "uncertain", (), "could not tell")
    # upsert
    again = R.adjudicate(actor_of(store, "dave"), store, rid, "s005", "MR-1", "uncertain", (), "could not tell")
    assert again.verdict == "uncertain" and again.adjudicator == "dave"
    with store.engine.connect() as c:
        rows = c.execute(select(S.consensus.c.sample_id, S.consensus.c.verdict)).all()
    assert rows == [("s005", "uncertain")]
    dis = {d.sample_id: d for d in R.disagreements(store, rid, "MR-1", "alice", "bob")}
    assert dis["s005"].resolved and dis["s005"].resolved_verdict == "uncertain" and dis["s005"].resolved_by == "dave"
    by_id = {c.sample_id: c for c in R.consensus(store, rid, "MR-1")}
    assert len(by_id) == 8 and by_id["s005"].verdict == "uncertain"
    # a reviewer who changes a call later breaks the computed consensus: no stale row
    R.record_judgment(actor_of(store, "bob"), store, rid, "s000", "MR-1", "uncertain")
    assert "s000" not in {c.sample_id for c in R.consensus(store, rid, "MR-1")}
    # an item both reviewers agreed on is theirs: no adjudication overrides it (F14)
    with pytest.raises(ValueError, match="'s001' of run 1 is not a disagreement: 2 reviewer call.s., in agreement"):
        R.adjudicate(actor_of(store, "carol"), store, rid, "s001", "MR-1", "fp", ["incomplete-removal"], None)
    assert {c.sample_id: c.verdict for c in R.consensus(store, rid, "MR-1")}["s001"] == "tp"
    with pytest.raises(NotAllowed, match="nobody signed in may not adjudicate .*needs the role adjudicator or admin"):
        R.adjudicate(actor_of(store, "zed"), store, rid, "s002", "MR-1", "tp", (), None)
    with pytest.raises(ValueError, match="not flagged"):
        R.adjudicate(actor_of(store, "carol"), store, rid, "s002", "MR-2", "tp", (), None)
    with pytest.raises(ValueError, match="needs a note"):
        R.adjudicate(actor_of(store, "carol"), store, rid, "s002", "MR-1", "fp", ["other"], "")


def test_one_judgment_is_not_consensus(two_reviewers):
    rid = make_run(two_reviewers, mr1=["s1"])
    R.record_judgment(actor_of(two_reviewers, "alice"), two_reviewers, rid, "s1", "MR-1", "tp")
    assert R.consensus(two_reviewers, rid, "MR-1") == []


def test_judged_runs_lists_relations_and_reviewers(two_reviewers):
    store = two_reviewers
    make_run(store, mr1=["x"], model="unjudged")
    rid = make_run(store, mr1=["a"], mr2=["a"], model="judged")
    R.record_judgment(actor_of(store, "bob"), store, rid, "a", "MR-2", "tp")
    R.record_judgment(actor_of(store, "alice"), store, rid, "a", "MR-1", "tp")
    R.record_judgment(actor_of(store, "alice"), store, rid, "a", "MR-2", "tp")
    (run,) = R.judged_runs(store)
    assert run.run_id == rid and run.model == "judged"
    assert run.relations == ("MR-1", "MR-2")
    assert run.reviewers_of("MR-1") == ("alice",) and run.reviewers_of("MR-2") == ("alice", "bob")


# ---------------------------------------------------------------- precision (seed 000 Tables 1-3)


def _judge_both(store, rid, sid, verdict, reasons=(), note_a=None, note_b=None):
    R.record_judgment(actor_of(store, "alice"), store, rid, sid, "MR-1", verdict, reasons, note_a)
    R.record_judgment(actor_of(store, "bob"), store, rid, sid, "MR-1", verdict, reasons, note_b)


def test_precision_table_from_consensus(two_reviewers):
    store = two_reviewers
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    a = make_run(store, mr1=ids("a", 10), clean=["ok1", "ok2"], model="ResNet")
    b = make_run(store, mr1=ids("b", 3), model="MobileNet")
    assert len(R.draw_review_sample(SERVER, store, a, "MR-1")) == 10  # 384.1459 / 39.31459 = 9.77 -> 10: all
    assert len(R.draw_review_sample(SERVER, store, b, "MR-1")) == 3   # 384.1459 / 128.7153 = 2.98 -> 3
    for sid in ids("a", 5):
        _judge_both(store, a, sid, "tp")
    _judge_both(store, a, "a005", "fp", ["multiple-objects"])
    _judge_both(store, a, "a006", "fp", ["multiple-objects", "incomplete-removal"])
    _judge_both(store, a, "a007", "fp", ["other"], "blurry", "too dark")
    _judge_both(store, a, "a008", "uncertain")
    R.record_judgment(actor_of(store, "alice"), store, a, "a009", "MR-1", "tp")
    R.record_judgment(actor_of(store, "bob"), store, a, "a009", "MR-1", "fp")
    R.record_judgment(actor_of(store, "alice"), store, b, "b000", "MR-1", "tp")  # one judgment only: pending
    R.record_judgment(actor_of(store, "alice"), store, b, "b001", "MR-1", "tp")
    R.record_judgment(actor_of(store, "bob"), store, b, "b001", "MR-1", "tp")

    row = R.precision_table(store, a, "MR-1").iloc[0]
    # 9 decided (a009 unresolved): tp 5/9 = 55.6%, fp 3/9 = 33.3%
    assert (row["model"], row["flagged"], row["sample size"], row["reviewed"]) == ("ResNet", 10, 10, 9)
    assert (row["true positive"], row["true positive %"]) == (5, 55.6)
    assert (row["false positive"], row["false positive %"]) == (3, 33.3)
    assert (row["multiple objects"], row["incomplete removal"], row["multiple & incomplete"], row["other"]) \
        == (2, 1, 1, 1)
    assert (row["fp without reason"], row["uncertain"], row["unresolved"], row["pending"]) == (0, 1, 1, 0)

    R.adjudicate(actor_of(store, "carol"), store, a, "a009", "MR-1", "fp", (), None)
    table = R.precision_table(store, [a, b], "MR-1")
    assert list(table["model"]) == ["ResNet", "MobileNet", "Total"]
    ra, rb, total = (table.iloc[i] for i in range(3))
    # run a: 10 decided, tp 5 (50.0%), fp 4 (40.0%), one fp without reason
    assert (ra["reviewed"], ra["true positive %"], ra["false positive"], ra["false positive %"]) == (10, 50.0, 4, 40.0)
    assert (ra["fp without reason"], ra["unresolved"]) == (1, 0)
    # run b: its sample is open (b000 and b002 lack bob's call), so b001's agreed tp counts nowhere yet
    assert (rb["flagged"], rb["sample size"], rb["reviewed"], rb["true positive"], rb["unresolved"]) \
        == (3, 3, 0, 0, 0)
    assert math.isnan(rb["true positive %"]) and rb["pending"] == 3
    # total: 13 flagged, 13 drawn, 10 decided (run a), tp 5/10 = 50.0%, fp 4/10 = 40.0%
    assert (total["flagged"], total["sample size"], total["reviewed"]) == (13, 13, 10)
    assert (total["true positive"], total["true positive %"], total["false positive %"]) == (5, 50.0, 40.0)
    assert (total["multiple objects"], total["other"], total["uncertain"], total["pending"]) == (2, 1, 1, 3)
    # closing b (both judged every drawn item) counts it: b001 tp, b000 and b002 agreed fp
    for sid in ("b000", "b002"):
        R.record_judgment(actor_of(store, "alice"), store, b, sid, "MR-1", "fp")
        R.record_judgment(actor_of(store, "bob"), store, b, sid, "MR-1", "fp")
    rb = R.precision_table(store, b, "MR-1").iloc[0]
    assert (rb["reviewed"], rb["true positive"], rb["false positive"], rb["unresolved"], rb["pending"]) \
        == (3, 1, 2, 0, 0)
    assert list(table.columns) == list(R.PRECISION_COLUMNS)
    mr2 = R.precision_table(store, a, "MR-2").iloc[0]
    assert mr2["flagged"] == 0 and mr2["reviewed"] == 0 and math.isnan(mr2["true positive %"])


def test_precision_counts_only_the_drawn_items(two_reviewers):
    store = two_reviewers
    flagged = ids("s", 50)
    rid = make_run(store, mr1=flagged)
    drawn = R.draw_review_sample(SERVER, store, rid, "MR-1")
    assert len(drawn) == 45  # 384.1459 / (1 + 383.1459 / 50) = 384.1459 / 8.662918 = 44.34 -> 45
    outside = sorted(set(flagged) - set(drawn))
    assert len(outside) == 5
    for sid in drawn:                           # both judge every drawn item: the sample closes
        _judge_both(store, rid, sid, "tp")
    _judge_both(store, rid, outside[0], "fp")  # decided, but not part of the random sample
    row = R.precision_table(store, rid, "MR-1").iloc[0]
    assert (row["flagged"], row["sample size"], row["reviewed"], row["true positive"], row["false positive"]) \
        == (50, 45, 45, 45, 0)
    assert row["pending"] == 0


def test_precision_table_without_a_draw_counts_nothing(two_reviewers):
    """Without a draw there is no sample to close: every flagged item stays pending, whatever is judged."""
    rid = make_run(two_reviewers, mr1=ids("s", 4))
    for sid in ids("s", 4):
        _judge_both(two_reviewers, rid, sid, "tp")
    row = R.precision_table(two_reviewers, rid, "MR-1").iloc[0]
    assert (row["sample size"], row["reviewed"], row["unresolved"], row["pending"]) == (0, 0, 0, 4)
    assert R.consensus(two_reviewers, rid, "MR-1") == []
    with pytest.raises(ValueError, match="no run 99"):
        R.precision_table(two_reviewers, [99], "MR-1")


def test_wilson_interval_by_hand():
    from objrel.intervals import wilson_interval

    # z = 1.959964, z^2 = 3.841459.  5 of 8: denominator 1 + z^2/8 = 1.480182, centre (0.625 + z^2/16) / 1.480182
    # = 0.584447, half-width z sqrt(0.625 * 0.375 / 8 + z^2 / 256) / 1.480182 = 0.278710
    assert wilson_interval(5, 8) == pytest.approx((0.305742, 0.863156), abs=1e-5)
    # 0 of 5: centre = half-width = (z^2 / 10) / (1 + z^2 / 5) = 0.217241; the low end is exactly 0
    assert wilson_interval(0, 5) == pytest.approx((0.0, 0.434482), abs=1e-5)
    assert wilson_interval(5, 5)[1] == 1.0 and wilson_interval(0, 0) is None


def test_precision_summary_and_kappas_by_hand(two_reviewers):
    from objrel.review.agreement import PRECISION_SUMMARY_COLUMNS, pair_kappas, precision_summary

    store = two_reviewers
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    rid = make_run(store, mr1=ids("s", 10), model="ResNet")
    assert len(R.draw_review_sample(SERVER, store, rid, "MR-1")) == 10
    # alice: tp x6, fp x4; bob: tp x5, fp, fp x3, tp -> agreed: 5 tp (s000-s004) and 3 fp (s006-s008)
    calls_a = ["tp"] * 6 + ["fp"] * 4
    calls_b = ["tp"] * 5 + ["fp"] * 4 + ["tp"]
    for sid, a, b in zip(ids("s", 10), calls_a, calls_b):
        R.record_judgment(actor_of(store, "alice"), store, rid, sid, "MR-1", a)
        R.record_judgment(actor_of(store, "bob"), store, rid, sid, "MR-1", b)
    table = R.precision_table(store, rid, "MR-1")
    judged = R.judged_runs(store)
    # p_o = 0.8, p_e = 0.6^2 + 0.4^2 = 0.52: kappa = 0.28 / 0.48 = 0.5833, for adjudicators and admins only
    kappas = pair_kappas(actor_of(store, "carol"), store, judged, "MR-1")
    assert kappas == {rid: pytest.approx(0.28 / 0.48)}
    assert pair_kappas(actor_of(store, "alice"), store, judged, "MR-1") is None
    assert pair_kappas(ANONYMOUS, store, judged, "MR-1") is None
    row = precision_summary(table, kappas).iloc[0]
    assert tuple(precision_summary(table, kappas).columns) == PRECISION_SUMMARY_COLUMNS
    # 8 decided, tp 5: precision 62.5 %, Wilson 95 % [30.6 %, 86.3 %] (test_wilson_interval_by_hand)
    assert (row["flagged"], row["drawn"], row["decided"], row["TP"], row["FP"]) == (10, 10, 8, 5, 3)
    assert row["precision"] == 62.5 and row["95% CI"] == "[30.6%, 86.3%]"
    assert row["kappa"] == pytest.approx(0.5833, abs=1e-4)
    assert "kappa" not in precision_summary(table).columns       # a reviewer's view: no kappa


# ---------------------------------------------------------------- writes under contention


def test_write_retries_when_the_database_is_locked(store, monkeypatch):
    monkeypatch.setattr(transactions, "WRITE_RETRY_DELAY_S", 0.0)
    calls = []

    def flaky(c):
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("UPDATE judgments", {}, sqlite3.OperationalError("database is locked"))
        return "written"

    assert transactions.write(store, flaky) == "written" and len(calls) == 3

    def broken(c):
        raise OperationalError("SELECT", {}, sqlite3.OperationalError("no such table: x"))

    with pytest.raises(OperationalError, match="no such table"):
        transactions.write(store, broken)


def test_judgments_wait_for_a_writer_holding_the_lock(two_reviewers, tmp_path):
    store = two_reviewers
    rid = make_run(store, mr1=["s1"])
    db = store.engine.url.database
    holder = sqlite3.connect(db, timeout=30, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # another process's write transaction
    timer = threading.Timer(0.4, holder.commit)
    timer.start()
    j = R.record_judgment(actor_of(store, "alice"), store, rid, "s1", "MR-1", "tp")  # waits, then writes
    timer.join()
    holder.close()
    assert j.verdict == "tp" and [x.verdict for x in R.judgments(store, rid)] == ["tp"]


N_ITEMS = 150
N_RACE = 60


def _reviewer_process(path: str, run_id: int, reviewer: str, reverse: bool, barrier) -> None:
    """Judge every item (in order or reversed, so the two reviewers interleave on the same rows),
    then change every third one."""
    store = Store(path)
    items = ids("s", N_ITEMS)
    if reverse:
        items.reverse()
    barrier.wait(timeout=120)
    first = "tp" if reviewer == "alice" else "fp"
    for sid in items:
        R.record_judgment(actor_of(store, reviewer), store, run_id, sid, "MR-1", first,
                          ["multiple-objects"] if first == "fp" else ())
    for sid in items:
        if int(sid[1:]) % 3 == 0:
            R.record_judgment(actor_of(store, reviewer), store, run_id, sid, "MR-1", "uncertain", (),
                              f"{reviewer} changed {sid}")


def _racing_process(path: str, run_id: int, verdict: str, barrier) -> None:
    """Two of these write the *same* reviewer's judgments at once: the insert-versus-update race."""
    store = Store(path)
    barrier.wait(timeout=120)
    for sid in ids("s", N_RACE):
        R.record_judgment(actor_of(store, "carol"), store, run_id, sid, "MR-1", verdict)


@pytest.mark.subprocess
def test_two_reviewers_in_separate_processes_lose_no_write(tmp_path):
    path = str(tmp_path / "contended.db")
    store = Store(path)
    for name in ("alice", "bob", "carol"):
        R.create_reviewer(store, name, f"{name}-passphrase")
    rid = make_run(store, mr1=ids("s", N_ITEMS))
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    procs = [ctx.Process(target=_reviewer_process, args=(path, rid, "alice", False, barrier)),
             ctx.Process(target=_reviewer_process, args=(path, rid, "bob", True, barrier)),
             ctx.Process(target=_racing_process, args=(path, rid, "tp", barrier)),
             ctx.Process(target=_racing_process, args=(path, rid, "fp", barrier))]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]

    got = {(j.sample_id, j.reviewer): j for j in R.judgments(store, rid, "MR-1")}
    assert len(got) == 2 * N_ITEMS + N_RACE  # one row per (sample, reviewer): no duplicate, none lost
    for i, sid in enumerate(ids("s", N_ITEMS)):
        a, b = got[(sid, "alice")], got[(sid, "bob")]
        if i % 3 == 0:  # the update is the last value
            assert (a.verdict, a.note) == ("uncertain", f"alice changed {sid}")
            assert (b.verdict, b.reasons, b.note) == ("uncertain", (), f"bob changed {sid}")
        else:
            assert (a.verdict, a.reasons) == ("tp", ())
            assert (b.verdict, b.reasons) == ("fp", ("multiple-objects",))
    carol = [got[(sid, "carol")] for sid in ids("s", N_RACE)]
    assert all(j.verdict in ("tp", "fp") for j in carol)
    # kappa of every item (R.agreement counts a drawn review sample only, and nothing was drawn here):
    # 50 items (i % 3 == 0) both uncertain, 100 items tp vs fp: p_o = 50/150 = 1/3;
    # marginals alice (tp 2/3, fp 0, unc 1/3), bob (tp 0, fp 2/3, unc 1/3): p_e = 1/9;
    # kappa = (1/3 - 1/9) / (8/9) = 0.25
    sids = ids("s", N_ITEMS)
    kappa = R.cohen_kappa([got[(s, "alice")].verdict for s in sids], [got[(s, "bob")].verdict for s in sids])
    assert kappa.kappa == pytest.approx(0.25)


# ---------------------------------------------------------------- the same on PostgreSQL


@pytest.mark.subprocess
def test_review_workflow_and_write_races_on_postgresql(pg_url):
    """On a server database a concurrent insert of the same key raises IntegrityError (SQLite's
    write lock prevents that race): the retried transaction must turn it into an update."""
    store = Store(pg_url)
    assert store.engine.dialect.name == "postgresql"
    for name in ("alice", "bob", "carol"):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=[R.REVIEWER, R.ADJUDICATOR])
    rid = make_run(store, mr1=ids("s", N_RACE), model="pg")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_racing_process, args=(pg_url, rid, v, barrier)) for v in ("tp", "fp")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=180)
    assert [p.exitcode for p in procs] == [0, 0]
    carol = R.judgments(store, rid, "MR-1", reviewer="carol")
    assert len(carol) == N_RACE and {j.verdict for j in carol} <= {"tp", "fp"}

    rid = make_run(store, mr1=ids("s", N_RACE), model="pg-review")  # a fresh run: carol's calls stay apart
    drawn = R.draw_review_sample(SERVER, store, rid, "MR-1", seed=3)
    # 384.1459 / (1 + 383.1459 / 60) = 52.01 -> 53
    assert drawn == [ids("s", N_RACE)[i] for i in np.random.default_rng(3).choice(60, size=53, replace=False)]
    _store_calls(store, rid, drawn[:10], CALLS_A, CALLS_B)
    assert R.agreement(store, rid, "MR-1", "alice", "bob").kappa.kappa == pytest.approx(0.28 / 0.48)
    R.adjudicate(actor_of(store, "carol"), store, rid, drawn[5], "MR-1", "tp", (), None)
    R.adjudicate(actor_of(store, "carol"), store, rid, drawn[5], "MR-1", "fp", ["other"], "glare")
    assert R.precision_table(store, rid, "MR-1").iloc[0]["reviewed"] == 0   # the sample is open: nothing counts
    _store_calls(store, rid, drawn[10:], ["tp"] * 43, ["tp"] * 43)           # both judge the rest: closed
    row = R.precision_table(store, rid, "MR-1").iloc[0]
    # agreed: 5 tp + 3 fp (items 0-4, 6-8) and 43 tp; adjudicated item 5 fp; item 9 unresolved
    assert (row["reviewed"], row["true positive"], row["false positive"], row["other"], row["unresolved"]) \
        == (52, 48, 4, 1, 1)
    assert R.reviewer_names(store) == ["alice", "bob", "carol"]


# ---------------------------------------------------------------- kappa standard errors vs statsmodels


@pytest.mark.parametrize("seed", range(8))
def test_kappa_fleiss_se_matches_statsmodels(seed):
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    rng = np.random.default_rng(seed)
    n = int(rng.integers(20, 301))
    cats = ("tp", "fp", "uncertain")
    a = rng.choice(3, size=n, p=[0.5, 0.35, 0.15])
    # rater b agrees with a most of the time, otherwise draws at random
    b = np.where(rng.random(n) < rng.uniform(0.3, 0.9), a, rng.choice(3, size=n))
    k = R.cohen_kappa([cats[i] for i in a], [cats[i] for i in b])
    ref = sm_kappa(np.array(k.confusion, dtype=float))
    assert k.kappa == pytest.approx(ref.kappa, abs=1e-12)
    assert k.se == pytest.approx(ref.std_kappa, rel=1e-10)
    assert k.ci_low == pytest.approx(max(-1.0, ref.kappa_low), abs=1e-10)
    assert k.ci_high == pytest.approx(min(1.0, ref.kappa_upp), abs=1e-10)
    # Cohen 1960 by its own formula
    k60 = R.cohen_kappa([cats[i] for i in a], [cats[i] for i in b], se_method="cohen1960")
    assert k60.se == pytest.approx(math.sqrt(k.observed * (1 - k.observed) / (n * (1 - k.expected) ** 2)))


def test_kappa_se_undefined_when_one_rater_constant():
    # a says tp throughout: p_o = p_e = share of b's tp calls, kappa = 0 and Fleiss' variance is 0:
    # A = p_11 (1 - (1 + c1))^2 = c1^3, B = c1^2 (1 - c1), C = c1^2 -> A + B - C = 0.  A zero-width
    # interval would claim certainty; se and the interval are undefined (statsmodels: NaN or rounding noise)
    k = R.cohen_kappa(["tp"] * 5, ["tp", "fp", "fp", "uncertain", "tp"])
    assert k.kappa == 0.0 and k.se is None and (k.ci_low, k.ci_high) == (None, None)
    assert "one reviewer called every item true positive" in k.note
    k = R.cohen_kappa(["tp", "fp", "fp", "tp"] * 10, ["fp"] * 40)
    assert k.kappa == 0.0 and k.se is None and "one reviewer called every item false positive" in k.note
    # Cohen 1960's approximation is not 0 there: sqrt(0.4 * 0.6 / (5 * 0.6^2)) = 0.365148
    k60 = R.cohen_kappa(["tp"] * 5, ["tp", "fp", "fp", "uncertain", "tp"], se_method="cohen1960")
    assert k60.se == pytest.approx(0.365148, abs=1e-6)
    with pytest.raises(ValueError, match="se_method"):
        R.cohen_kappa(["tp", "fp"], ["tp", "fp"], se_method="wald")
    assert R.cohen_kappa(["tp", "fp"], ["tp", "tp"]).to_dict()["se_method"] == "fleiss"
