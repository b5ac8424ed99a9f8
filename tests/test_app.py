"""AppTest of the Streamlit app on a temporary store."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from objrel.config import RunConfig
from objrel.engine import Engine
from objrel.store import Store

from .colour_model import factory

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_overview_lists_runs_and_headline(tmp_path, monkeypatch, colour_set):
    db = tmp_path / "app.db"
    Engine(Store(db), RunConfig(model="py:tests.colour_model:factory", dataset=str(colour_set), plan="colours3",
                                name="colour run"), model=factory()).execute()
    monkeypatch.setenv("OBJREL_STORE", str(db))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    runs = at.dataframe[0].value
    assert list(runs["name"]) == ["colour run"] and list(runs["status"]) == ["finished"]
    headline = at.dataframe[1].value
    assert headline.iloc[0]["Accuracy"] == "83.33%"  # 5 of 6 evaluated samples correct
    assert headline.iloc[0]["correct"] == 5


def test_overview_on_empty_store_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("OBJREL_STORE", str(tmp_path / "empty.db"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("No runs" in i.value for i in at.info)
