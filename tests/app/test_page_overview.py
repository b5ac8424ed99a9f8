"""AppTest of the Overview page (app.py's first page) on a store with a run that tested nothing."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.store import Store
from tests.analysis.test_tested_nothing import all_skipped_run
from tests.fixtures.colour_model import factory

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_a_run_that_tested_nothing_is_a_warning_not_a_row_of_dashes(tmp_path, monkeypatch, colour_set):
    store = Store(tmp_path / "o.db")
    tested = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set),
                                     plan="colours3", name="colour run"), model=factory()).execute().run_id
    empty = all_skipped_run(store, colour_set, tmp_path / "noimages")
    n = store.get_run(empty).n_skipped
    store.dispose()
    monkeypatch.setenv("OBJREL_STORE", str(tmp_path / "o.db"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    warned = [w.value.replace("\\", "") for w in at.warning]
    assert any(f"Run {empty} (nested upload) finished but tested nothing: {n} skipped (missing-file" in w
               for w in warned), warned
    headline = at.dataframe[0].value                          # the headline per run comes first
    assert "Accuracy" in headline.columns
    assert list(headline["run"]) == [tested]                 # no row of '-' for the empty run
    runs = next(d.value for d in at.dataframe if "forward passes" in d.value.columns).set_index("run")
    assert runs.loc[empty, "status"] == "finished, tested nothing" and runs.loc[tested, "status"] == "finished"
