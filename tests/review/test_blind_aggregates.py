"""Aggregates stay blind: nothing computed from two reviewers' calls (consensus, the precision tables of the
Agreement page, the stakeholder report) moves with one reviewer's call while the review sample is open, so a
reviewer cannot read the other's hidden calls by watching them; once both have closed the sample, they count."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.access import SERVER
from objrel.analysis.report import OPEN_SAMPLE_NOTE, build_report
from objrel.review import accounts
from objrel.review.agreement import precision_summary
from objrel.review.roles import actor_of

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "agreement.py")
REL = "MR-1"
# bob's hidden calls on four of the six flagged items (by sample id order); alice tries to read them
BOB_HIDDEN = (("tp", ()), ("fp", ("multiple-objects",)), ("uncertain", ()), ("fp", ("incomplete-removal",)))
# what alice calls while probing: a true positive, then a false positive with bob's most likely reason
PROBES = (("tp", ()), ("fp", ("multiple-objects",)))


@pytest.fixture
def team(flagged_store, monkeypatch):
    """The flagged colour-model run (six inferences flagged by MR-1), reviewers alice and bob, adjudicator
    carol, and the six items drawn for review."""
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)
    store, rid = flagged_store
    for name, role in (("alice", R.REVIEWER), ("bob", R.REVIEWER), ("carol", R.ADJUDICATOR)):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=[role])
    drawn = R.draw_review_sample(SERVER, store, rid, REL)
    assert len(drawn) == 6   # Cochran's n for a population of 6: all of them
    monkeypatch.setenv("OBJREL_STORE", store.url)
    return store, rid, sorted(drawn)


def _report_tables(store, rid) -> str:
    """The report's reviewer section (the rest carries the time it was generated)."""
    html = build_report(store, rid)
    return html[html.index("<h2>Verified by reviewers"):html.index("<h2>Examples</h2>")]


def _seen(store, rid) -> tuple:
    """Everything computed from both reviewers' calls that a reviewer (or anyone) is shown."""
    table = R.precision_table(store, [rid], REL)
    return (table.to_json(), precision_summary(table).to_json(), tuple(R.consensus(store, rid, REL)),
            _report_tables(store, rid))


def _page_tables(viewer: str) -> list:
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["reviewer"] = viewer
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return [df.value.to_json() for df in at.dataframe]


def _attack(store, rid, items) -> dict[str, str]:
    """alice's probe: call each item one way, then the other, and read the other reviewer's call from how the
    shown numbers move (an agreed call adds a decided item; a different one moves the unresolved count)."""
    recovered = {}
    for sid in items:
        moved = False
        for verdict, reasons in PROBES:
            before, decided_before = _seen(store, rid), R.precision_table(store, rid, REL).iloc[0]["reviewed"]
            R.record_judgment(actor_of(store, "alice"), store, rid, sid, REL, verdict, reasons)
            moved = moved or _seen(store, rid) != before
            if R.precision_table(store, rid, REL).iloc[0]["reviewed"] > decided_before:
                recovered[sid] = verdict          # bob made this very call
                break
        if sid not in recovered and moved:
            recovered[sid] = "neither probe"      # bob's call is known to differ from both probes
    return recovered


def test_one_reviewers_calls_move_nothing_shown_while_the_sample_is_open(team):
    store, rid, items = team
    for sid, (verdict, reasons) in zip(items, BOB_HIDDEN):
        R.record_judgment(actor_of(store, "bob"), store, rid, sid, REL, verdict, reasons)
    start, page_start = _seen(store, rid), _page_tables("alice")
    # the open sample counts nowhere: every drawn item pending, no consensus, the report says so
    row = R.precision_table(store, rid, REL).iloc[0]
    assert (row["sample size"], row["reviewed"], row["unresolved"], row["pending"]) == (6, 0, 0, 6)
    assert R.consensus(store, rid, REL) == []

    recovered = _attack(store, rid, items[:len(BOB_HIDDEN)])
    assert recovered == {}                                           # none of bob's four calls recovered
    assert "MR-1: " + OPEN_SAMPLE_NOTE in start[3]
    assert _seen(store, rid) == start and _page_tables("alice") == page_start   # nor for a stakeholder
    assert _page_tables("bob") == _page_tables("alice")

    # alice judges the last two items (her calls on the first four stay her last probe: fp, multiple objects)
    for sid in items[len(BOB_HIDDEN):]:
        before = _seen(store, rid)
        R.record_judgment(actor_of(store, "alice"), store, rid, sid, REL, "tp")
        assert _seen(store, rid) == before
    assert not R.sample_state(store, rid, REL).closed                 # bob has not judged every item
    # bob's last two calls close the sample: from then on the tables count both reviewers' calls
    R.record_judgment(actor_of(store, "bob"), store, rid, items[4], REL, "tp")
    assert _seen(store, rid) == start                                  # still open until his very last call
    R.record_judgment(actor_of(store, "bob"), store, rid, items[5], REL, "fp", ["multiple-objects"])
    assert R.sample_state(store, rid, REL).closed
    # alice said fp (multiple objects) on items 0-3 and tp on 4-5; bob tp, fp (multiple objects), uncertain,
    # fp (incomplete removal), tp, fp (multiple objects): agreed on item 1 (fp) and item 4 (tp) only
    row = R.precision_table(store, rid, REL).iloc[0]
    assert (row["reviewed"], row["true positive"], row["false positive"], row["multiple objects"]) == (2, 1, 1, 1)
    assert (row["unresolved"], row["pending"]) == (4, 0)
    assert [(c.sample_id, c.verdict) for c in R.consensus(store, rid, REL)] == [(items[1], "fp"), (items[4], "tp")]
    closed = _seen(store, rid)
    assert closed != start and OPEN_SAMPLE_NOTE not in closed[3] and "<h3>MR-1</h3>" in closed[3]
    assert "MR-2: no reviewed items yet." in closed[3]                # nothing drawn for MR-2
    assert _page_tables("alice") != page_start


def test_an_adjudication_in_an_open_sample_moves_nothing_shown(team):
    """An adjudicator may decide a disagreement before the sample closes; that decision is not counted either
    (it would tell the reviewers which of their items were disagreements)."""
    store, rid, items = team
    R.record_judgment(actor_of(store, "alice"), store, rid, items[0], REL, "tp")
    R.record_judgment(actor_of(store, "bob"), store, rid, items[0], REL, "fp", ["multiple-objects"])
    before = _seen(store, rid)
    R.adjudicate(actor_of(store, "carol"), store, rid, items[0], REL, "fp", ["multiple-objects"], None)
    assert _seen(store, rid) == before and R.consensus(store, rid, REL) == []
