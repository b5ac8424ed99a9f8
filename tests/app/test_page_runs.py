"""AppTest of the Runs page: history, starting a background run from the form, resume list."""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from objrel.store import Store

from tests.engine.test_jobs_retest import wait_for

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "runs.py")


def open_page(monkeypatch, tmp_path, store: Store) -> AppTest:
    """The page on ``store``, its background runs logging under tmp_path."""
    monkeypatch.setenv("OBJREL_STORE", store.url)
    monkeypatch.setenv("OBJREL_LOG_DIR", str(tmp_path / "logs"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    return at


def test_start_a_run_from_the_form_and_see_it_finish(tmp_path, monkeypatch, colour_set):
    store = Store(tmp_path / "runs.db")
    at = open_page(monkeypatch, tmp_path, store)
    assert any("No runs yet" in i.value for i in at.info)
    at.text_input(key="runs_model").set_value("py:tests.fixtures.colour_model:factory")
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
    at = open_page(monkeypatch, tmp_path, Store(db))
    at.text_input(key="runs_dataset").set_value(str(tmp_path / "nothing.json"))
    at.button[0].click()
    at.run()
    assert any("Could not start the run" in e.value and "does not exist" in e.value for e in at.error)
    assert Store(db).list_runs() == []


def test_start_a_detection_run_from_the_form(tmp_path, monkeypatch):
    store = Store(tmp_path / "det.db")
    at = open_page(monkeypatch, tmp_path, store)
    at.radio(key="runs_task").set_value("detector").run()
    assert not at.exception
    # the detector's defaults fill the form: the detector field replaces the model field
    assert at.text_input(key="runs_detector").value == "haar:frontalface_default"
    assert at.text_input(key="runs_dataset").value == "demo-faces"
    assert at.selectbox(key="runs_plan").value == "erase_noise"
    assert not [t for t in at.text_input if t.key == "runs_model"]
    at.number_input(key="runs_limit").set_value(1)
    at.text_input(key="runs_name").set_value("faces from the page")
    at.button[0].click().run()  # the form's submit button
    assert not at.exception
    assert any("started" in s.value for s in at.success), [e.value for e in at.error]
    [run] = store.list_runs()
    assert (run.name, run.task, run.model, run.n_total) == ("faces from the page", "detection",
                                                            "haar:frontalface_default", 1)
    assert wait_for(lambda: store.get_run(run.id).status == "finished")
    at.run()
    table = at.dataframe[0].value
    assert list(table["task"]) == ["detection"] and list(table["samples"]) == ["1/1"]


def test_settings_of_a_detection_run_fill_the_form(tmp_path, monkeypatch):
    from objrel.config import DetectionConfig
    from objrel.engine.detect import DetectionEngine

    store = Store(tmp_path / "base.db")
    rid = DetectionEngine(store, DetectionConfig(detector="haar:frontalface_default", dataset="demo-faces", limit=1,
                                                 seed=7, dilate=3)).execute().run_id
    at = open_page(monkeypatch, tmp_path, store)
    assert at.radio(key="runs_task").value == "classifier"
    at.selectbox(key="runs_base").set_value(rid).run()
    assert not at.exception
    assert at.radio(key="runs_task").value == "detector"
    assert at.text_input(key="runs_detector").value == "haar:frontalface_default"
    assert (at.number_input(key="runs_seed").value, at.number_input(key="runs_dilate").value,
            at.number_input(key="runs_limit").value) == (7, 3, 1)


def test_resume_a_stopped_detection_run_from_the_page(tmp_path, monkeypatch):
    from objrel.config import DetectionConfig
    from objrel.engine.detect import DetectionEngine

    store = Store(tmp_path / "resume.db")
    report = DetectionEngine(store, DetectionConfig(detector="haar:frontalface_default", dataset="demo-faces",
                                                    limit=2)).execute(stop_after=1)
    assert report.status == "pending" and store.get_run(report.run_id).n_done == 1
    at = open_page(monkeypatch, tmp_path, store)
    assert at.selectbox(key="runs_resume_pick").value == report.run_id
    at.button(key="runs_resume_btn").click().run()
    assert not at.exception
    assert any("resumed" in s.value for s in at.success), [e.value for e in at.error]
    assert wait_for(lambda: store.get_run(report.run_id).status == "finished")
    run = store.get_run(report.run_id)
    assert (run.n_done, run.n_total) == (2, 2)
    assert sorted(s["sample_id"] for s in store.samples(report.run_id)) == ["1", "2"]
    at.run()
    assert not [s for s in at.selectbox if s.key == "runs_resume_pick"]   # nothing left to resume
