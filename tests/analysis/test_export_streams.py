"""``objrel export`` writes a run a page of samples at a time and writes what the whole-run records say."""

from __future__ import annotations

import csv
import io
import json

from objrel import csvsafe
from objrel.analysis import export as E


def test_the_paged_export_equals_the_records_whatever_the_page_size(flagged_store):
    store, run_id = flagged_store
    whole = E.records(store, run_id)
    assert len(whole) >= 3
    for chunk in (1, 2, len(whole) + 5):
        assert list(E.iter_records(store, run_id, chunk=chunk)) == whole


def test_the_csv_has_every_column_of_the_flat_rows_and_their_values(flagged_store):
    store, run_id = flagged_store
    flat = E.flat_rows(E.records(store, run_id))
    expected = list(csv.DictReader(io.StringIO(csvsafe.csv_text(flat))))
    got = list(csv.DictReader(io.StringIO(E.export_run(store, run_id, "csv"))))
    assert got == expected
    doc = json.loads(E.export_run(store, run_id, "json"))
    assert doc["inferences"] == json.loads(json.dumps(E.records(store, run_id), default=str))
    assert doc["run"]["id"] == run_id


def test_a_row_with_a_column_outside_the_header_is_refused_not_dropped():
    buf = io.StringIO()
    try:
        csvsafe.write_rows(buf, ["a"], [{"a": 1}, {"a": 2, "b": 3}])
    except ValueError as exc:
        assert "['b']" in str(exc)
    else:
        raise AssertionError("the value of column b would have been lost")


def test_writing_holds_one_page_not_the_run(flagged_store, monkeypatch):
    """With pages of one sample, each record is written before the next one is built: no list of the run's
    records is ever made."""
    store, run_id = flagged_store
    built = []
    real = E._record

    def spy(*args):
        built.append(1)
        return real(*args)

    monkeypatch.setattr(E, "_record", spy)
    built_at_write = []

    class Out(io.StringIO):
        def write(self, text):
            if len(built) and text.startswith(("\n    {", ",\n    {")):
                built_at_write.append(len(built))
            return super().write(text)

    n = E.write_run(store, run_id, Out(), "json", chunk=1)
    assert n >= 3 and built_at_write == list(range(1, n + 1))
