"""AppTest of the Agreement page's section on every reviewer together (Fleiss' kappa, Krippendorff's alpha, per
call, every pair) and of its long and wide export, on a temporary store that three reviewers judged."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.access import SERVER
from objrel.app.formats import decimals
from objrel.app.rater_panels import RATER_COLUMN
from objrel.review.many_raters import many_rater_agreement
from objrel.review.roles import actor_of
from objrel.store import Store
from tests.app.test_page_agreement import make_run

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "agreement.py")
SIDS = [f"s{i:03d}" for i in range(10)]
NAMES = ("alice", "bob", "dave")
# Per item: alice's, bob's and dave's calls; they agree on s000-s005 and split on the rest, mostly over uncertain.
CALLS = [("tp",) * 3] * 4 + [("fp",) * 3] * 2 + [("uncertain", "tp", "tp"), ("fp", "uncertain", "fp"),
                                                 ("tp", "tp", "uncertain"), ("tp", "fp", "tp")]


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def three_judged(tmp_path, monkeypatch):
    db = tmp_path / "raters.db"
    store = Store(db)
    for name in NAMES:
        R.create_reviewer(store, name, f"{name}-passphrase", roles=[R.REVIEWER])
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    rid = make_run(store, SIDS)
    assert len(R.draw_review_sample(SERVER, store, rid, "MR-1")) == len(SIDS)
    for sid, calls in zip(SIDS, CALLS):
        for name, call in zip(NAMES, calls):
            R.record_judgment(actor_of(store, name), store, rid, sid, "MR-1", call,
                              ["multiple-objects"] if call == "fp" else ())
    monkeypatch.setenv("OBJREL_STORE", str(db))
    return store, rid


def run_page(reviewer: str) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["reviewer"] = reviewer
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def frame_with(at: AppTest, *columns: str):
    """The first table with every one of ``columns`` (read-only tables carry no key in AppTest)."""
    return next(df.value for df in at.dataframe if set(columns) <= set(df.value.columns))


def test_the_adjudicator_sees_fleiss_kappa_alpha_per_call_and_every_pair(three_judged):
    store, rid = three_judged
    at = run_page("carol")
    assert any(h.value == "Every reviewer together" for h in at.subheader)
    drawn = R.review_sample_info(store, rid, "MR-1").sample_ids
    by_sid = dict(zip(SIDS, CALLS))
    expected = many_rater_agreement([by_sid[s] for s in drawn], NAMES)
    coefficients = frame_with(at, "how the interval is made", "items").set_index(RATER_COLUMN)
    assert coefficients.loc["Fleiss' kappa", "value"] == decimals(expected.fleiss.value)
    assert coefficients.loc["Krippendorff's alpha", "value"] == decimals(expected.alpha.value)
    assert coefficients.loc["Fleiss' kappa", "95% interval"] == (f"[{decimals(expected.fleiss.lo)}, "
                                                                 f"{decimals(expected.fleiss.hi)}]")
    assert "bootstrap" in coefficients.loc["Krippendorff's alpha", "how the interval is made"]
    per_call = frame_with(at, "items in dispute").set_index("call")
    assert per_call.loc["uncertain", "items in dispute"] == 3 and per_call.loc["true positive", "calls"] == 18
    assert float(per_call.loc["uncertain", "Fleiss' kappa"]) < float(per_call.loc["true positive", "Fleiss' kappa"])
    matrix = next(df.value for df in at.dataframe if list(df.value.columns) == list(NAMES))
    pair = R.agreement_coefficients([c[0] for c in CALLS], [c[2] for c in CALLS])
    assert matrix.loc["alice", "dave"] == matrix.loc["dave", "alice"] == decimals(pair.kappa.value)


def test_a_reviewer_sees_no_section_of_every_reviewer(three_judged):
    at = run_page("alice")
    assert not any(h.value == "Every reviewer together" for h in at.subheader)
    assert not any("items in dispute" in df.value.columns for df in at.dataframe)


def test_the_export_offers_the_calls_long_and_wide(three_judged):
    at = run_page("carol")
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download long CSV" in labels and "Download wide CSV" in labels


def test_the_section_shows_when_the_first_pair_shares_no_item(tmp_path, monkeypatch):
    """alice judged the first half, bob the second, dave every item: the pair alice-bob has nothing in common,
    yet every reviewer together still has two calls on each item."""
    db = tmp_path / "halves.db"
    store = Store(db)
    for name in NAMES:
        R.create_reviewer(store, name, f"{name}-passphrase", roles=[R.REVIEWER])
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    rid = make_run(store, SIDS)
    R.draw_review_sample(SERVER, store, rid, "MR-1")
    for i, (sid, calls) in enumerate(zip(SIDS, CALLS)):
        for name, call in zip(NAMES, calls):
            if (name == "alice" and i >= 5) or (name == "bob" and i < 5):
                continue
            R.record_judgment(actor_of(store, name), store, rid, sid, "MR-1", call,
                              ["multiple-objects"] if call == "fp" else ())
    monkeypatch.setenv("OBJREL_STORE", str(db))
    at = run_page("carol")
    assert any("have not judged any item in common" in t.value for t in at.text)
    coefficients = frame_with(at, "how the interval is made", "items").set_index(RATER_COLUMN)
    assert coefficients.loc["Fleiss' kappa", "items"] == len(SIDS)
    matrix = next(df.value for df in at.dataframe if list(df.value.columns) == list(NAMES))
    assert matrix.loc["alice", "bob"] == "undefined"
