"""AppTest of the Runs page: history, starting a background run from the form, resume list."""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from objrel.store import Store

PAGE = str(Path(__file__).resolve().parents[1] / "pages" / "runs.py")


def test_start_a_run_from_the_form_and_see_it_finish(tmp_path, monkeypatch, colour_set):
    db = tmp_path / "runs.db"
    store = Store(db)
    monkeypatch.setenv("OBJREL_STORE", str(db))
    monkeypatch.setenv("OBJREL_LOG_DIR", str(tmp_path / "logs"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any("No runs yet" in i.value for i in at.info)
    at.text_input(key="runs_model").set_value("py:tests.colour_model:factory")
    at.text_input(key="runs_dataset").set_value(str(colour_set))
    at.selectbox(key="runs_plan").set_value("colours3")
    at.text_input(key="runs_name").set_value("from the page")
    at.button[0].click()  # the form's submit button
    at.run()
    assert not at.exception
    assert any("started" in s.value for s in at.success)
    runs = store.list_runs()
    assert [r.name for r in runs] == ["from the page"]
    deadline = time.time() + 90
    while time.time() < deadline and store.get_run(runs[0].id).status != "finished":
        time.sleep(0.2)
    assert store.get_run(runs[0].id).status == "finished"
    at.run()
    table = at.dataframe[0].value
    assert list(table["status"]) == ["finished"] and list(table["samples"]) == ["10/10"]


def test_unstartable_run_shows_an_error(tmp_path, monkeypatch):
    db = tmp_path / "bad.db"
    monkeypatch.setenv("OBJREL_STORE", str(db))
    monkeypatch.setenv("OBJREL_LOG_DIR", str(tmp_path / "logs"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.text_input(key="runs_dataset").set_value(str(tmp_path / "nothing.json"))
    at.button[0].click()
    at.run()
    assert any("Could not start the run" in e.value and "does not exist" in e.value for e in at.error)
    assert Store(db).list_runs() == []
