"""The judgments export in long and wide form (one row per item and reviewer; one row per item with a column per
reviewer), built from ``judgment_export`` so each person gets only the calls they may see, on a real store."""

from __future__ import annotations

import csv
import io
import json

import pytest

from objrel import review as R
from objrel.access import SERVER
from objrel.review import accounts
from objrel.review.agreement import rater_table
from objrel.review.export import (LONG_COLUMNS, judgment_export, long_rows, to_long_csv, to_long_json, to_wide_csv,
                                  to_wide_json, wide_columns, wide_rows)
from objrel.review.roles import actor_of
from objrel.store import Store
from tests.review.test_review import make_run

REL = "MR-1"
ITEMS = [f"w{i:02d}" for i in range(5)]
NAMES = ("alice", "bob", "dave")
CALLS = {"w00": ("tp", "tp", "tp"), "w01": ("fp", "fp", "fp"), "w02": ("tp", "fp", "tp"),
         "w03": ("uncertain", "tp", "tp"), "w04": ("fp", "fp", "fp")}


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def team(tmp_path):
    store = Store(tmp_path / "export.db")
    for name in NAMES:
        R.create_reviewer(store, name, f"{name}-passphrase", roles=[R.REVIEWER])
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    rid = make_run(store, mr1=ITEMS)
    assert len(R.draw_review_sample(SERVER, store, rid, REL)) == len(ITEMS)
    who = {n: actor_of(store, n) for n in (*NAMES, "carol")}
    return store, rid, who


def _judge(store, rid, who, names, items=ITEMS):
    for sid in items:
        for name in names:
            call = CALLS[sid][NAMES.index(name)]
            R.record_judgment(who[name], store, rid, sid, REL, call, ["multiple-objects"] if call == "fp" else ())


def test_the_adjudicator_gets_every_call_long_and_wide_with_the_decision(team):
    store, rid, who = team
    _judge(store, rid, who, NAMES)
    R.adjudicate(who["carol"], store, rid, "w02", REL, "fp", ["multiple-objects"])
    rows = judgment_export(who["carol"], store, rid, REL)
    long = long_rows(rows)
    assert len(long) == len(ITEMS) * len(NAMES)
    assert {(d["item"], d["reviewer"]): d["call"] for d in long} == {
        (s, n): CALLS[s][i] for s in ITEMS for i, n in enumerate(NAMES)}
    assert wide_columns(rows) == ("run", "run_name", "relation", "item", "file", *NAMES, "adjudicated_call")
    wide = {d["item"]: d for d in wide_rows(rows)}
    assert [tuple(wide[s][n] for n in NAMES) for s in ITEMS] == [CALLS[s] for s in ITEMS]
    assert wide["w02"]["adjudicated_call"] == "fp" and wide["w03"]["adjudicated_call"] is None
    table = rater_table(store, rid, REL)     # the wide rows are the k-rater table Fleiss and alpha read
    assert table.reviewers == NAMES
    assert tuple(tuple(wide[s][n] for n in NAMES) for s in table.items) == table.calls
    parsed = list(csv.reader(io.StringIO(to_long_csv(rows))))
    assert tuple(parsed[0]) == LONG_COLUMNS and len(parsed) == 1 + len(long)
    wide_csv = list(csv.DictReader(io.StringIO(to_wide_csv(rows))))
    assert {d["item"]: (d["alice"], d["bob"], d["dave"]) for d in wide_csv} == CALLS
    assert json.loads(to_wide_json(rows))[0].keys() == set(wide_columns(rows))
    assert len(json.loads(to_long_json(rows))) == len(long)


def test_a_reviewer_on_an_open_sample_gets_only_her_own_column(team):
    store, rid, who = team
    _judge(store, rid, who, NAMES, ITEMS[:3])
    _judge(store, rid, who, ("alice",), ITEMS[3:])
    rows = judgment_export(who["bob"], store, rid, REL)
    assert wide_columns(rows) == ("run", "run_name", "relation", "item", "file", "bob", "adjudicated_call")
    assert {d["reviewer"] for d in long_rows(rows)} == {"bob"}
    assert "alice" not in to_wide_csv(rows).splitlines()[0]


def test_no_rows_give_the_headers_alone(team):
    assert to_long_csv([]).splitlines() == [",".join(LONG_COLUMNS)]
    assert to_wide_csv([]).splitlines() == ["run,run_name,relation,item,file,adjudicated_call"]


def test_the_command_line_writes_the_wide_and_long_shapes(team, tmp_path, capsys):
    from objrel.cli.main import main

    store, rid, who = team
    _judge(store, rid, who, NAMES)
    target = tmp_path / "wide.csv"
    assert main(["judgments", "export", "--store", store.url, "--shape", "wide", "--out", str(target)]) == 0
    wide = list(csv.DictReader(io.StringIO(target.read_text(encoding="utf-8"))))
    assert {d["item"]: (d["alice"], d["bob"], d["dave"]) for d in wide} == CALLS
    assert main(["judgments", "export", "--store", store.url, "--shape", "long", "--format", "json"]) == 0
    long = json.loads(capsys.readouterr().out)
    assert len(long) == len(ITEMS) * len(NAMES) and set(long[0]) == set(LONG_COLUMNS)
    with pytest.raises(SystemExit):
        main(["judgments", "export", "--store", store.url, "--shape", "tall"])
