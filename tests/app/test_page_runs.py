"""AppTest of the Runs page: history, starting a background run from the form, resume list."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.review.roles import actor_of
from objrel.store import Store

from tests.engine.test_jobs_retest import wait_for

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "runs.py")


OPERATOR = "olga"


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


def open_page(monkeypatch, tmp_path, store: Store, who: str | None = OPERATOR,
              roles=(R.RUN_OPERATOR,)) -> AppTest:
    """The page on ``store`` signed in as ``who`` (made with ``roles`` when new), its background runs
    logging under tmp_path."""
    monkeypatch.setenv("OBJREL_STORE", store.url)
    monkeypatch.setenv("OBJREL_LOG_DIR", str(tmp_path / "logs"))
    at = AppTest.from_file(PAGE, default_timeout=120)
    if who is not None:
        if who not in R.reviewer_names(store):
            R.create_reviewer(store, who, f"{who}-passphrase", roles=roles)
        at.session_state["reviewer"] = who
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_web_never_runs_code_or_reads_outside_the_allowed_roots(tmp_path, monkeypatch, colour_set):
    store = Store(tmp_path / "runs.db")
    at = open_page(monkeypatch, tmp_path, store)
    assert any("No runs yet" in i.value for i in at.info)
    # the model comes from a list: no py: spec to pick
    options = at.selectbox(key="runs_model").options
    assert "efficientnet-lite0" in options and not any(o.startswith("py:") for o in options)
    # no box takes a typed path: dataset, images and weights are chosen from what the allowed roots hold
    assert not [t for t in at.text_input if t.key in ("runs_dataset", "runs_images", "runs_weights")]
    offered = at.selectbox(key="runs_dataset").options
    assert offered[0] == "demo" and not any(str(colour_set) in o for o in offered)
    # a dataset outside the allowed roots (from a client that sent one anyway) is refused before any process starts
    from objrel.config import RunConfig
    from objrel.engine.run_form import check_web_config
    from objrel.errors import ConfigError
    with pytest.raises(ConfigError, match="allowed folder"):
        check_web_config(store, RunConfig(dataset=str(colour_set)))
    assert store.list_runs() == []


def test_a_reviewer_sees_the_history_but_no_form_cancel_or_resume(tmp_path, monkeypatch):
    from objrel.config import DetectionConfig
    from objrel.engine.detect import DetectionEngine

    store = Store(tmp_path / "ro.db")
    DetectionEngine(store, DetectionConfig(detector="haar:frontalface_default", dataset="demo-faces",
                                           limit=2)).execute(stop_after=1)
    at = open_page(monkeypatch, tmp_path, store, who="rita", roles=(R.REVIEWER,))
    assert any("for run operators and admins" in i.value for i in at.info)
    assert not [b for b in at.button if b.key in ("runs_start", "runs_resume_btn")]
    assert not [s for s in at.selectbox if s.key == "runs_resume_pick"]
    assert len(at.dataframe[0].value) == 1   # the history is for everyone
    signed_out = open_page(monkeypatch, tmp_path, store, who=None)
    assert not [b for b in signed_out.button if b.key in ("runs_start", "runs_resume_btn")]


@pytest.mark.subprocess
def test_unstartable_run_shows_an_error(tmp_path, monkeypatch):
    db = tmp_path / "bad.db"
    monkeypatch.setenv("OBJREL_DATA_ROOTS", str(tmp_path))
    at = open_page(monkeypatch, tmp_path, Store(db))
    (tmp_path / "broken.json").write_text("{not json")
    at.run()
    at.selectbox(key="runs_dataset").set_value(str(tmp_path / "broken.json"))
    at.button[0].click()
    at.run()
    assert any("Could not start the run" in e.value for e in at.error), [e.value for e in at.error]
    assert [r.name for r in Store(db).list_runs()] == []


def test_start_a_detection_run_from_the_form(tmp_path, monkeypatch):
    store = Store(tmp_path / "det.db")
    at = open_page(monkeypatch, tmp_path, store)
    at.radio(key="runs_task").set_value("detector").run()
    assert not at.exception
    # the detector's defaults fill the form: the detector field replaces the model field
    assert at.selectbox(key="runs_detector").value == "haar:frontalface_default"
    assert at.selectbox(key="runs_dataset").value == "demo-faces"
    assert at.selectbox(key="runs_plan").value == "erase_noise"
    assert not [t for t in at.selectbox if t.key == "runs_model"]
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
    assert at.selectbox(key="runs_detector").value == "haar:frontalface_default"
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


# ---------------------------------------------------------------- progress, uploads, rename / delete, issues


def _colour_run(store: Store, colour_set, name="colour run") -> int:
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    from tests.fixtures.colour_model import factory

    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3",
                    name=name)
    return Engine(store, cfg, model=factory()).execute().run_id


def test_a_running_run_shows_samples_passes_rate_and_eta(tmp_path, monkeypatch, colour_set):
    import datetime as dt
    import os

    store = Store(tmp_path / "live.db")
    rid = _colour_run(store, colour_set)
    t0 = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=10)
    store.update_run(rid, status="running", pid=os.getpid(), started_at=t0, heartbeat_at=t0, n_done=2)
    store.set_progress(rid, 50, 150)
    at = open_page(monkeypatch, tmp_path, store, who="rita", roles=(R.REVIEWER,))
    bars = at.get("progress")
    assert len(bars) == 1
    text = bars[0].proto.text
    assert f"2/{store.get_run(rid).n_total} samples, 50/150 forward passes" in text, text
    assert "images/s" in text and "ETA" in text and "ETA unknown" not in text, text
    assert bars[0].proto.value == 33  # 50 of 150 passes


def test_operator_renames_and_deletes_a_run_after_confirming(tmp_path, monkeypatch, colour_set):
    store = Store(tmp_path / "manage.db")
    keep, rid = _colour_run(store, colour_set, "keep"), _colour_run(store, colour_set, "old name")
    at = open_page(monkeypatch, tmp_path, store)
    at.selectbox(key="runs_manage_pick").set_value(rid)
    at.text_input(key="runs_rename_name").set_value("new name")
    at.button(key="runs_rename_btn").click()
    at.run()
    assert store.get_run(rid).name == "new name"
    at.text_input(key="runs_delete_confirm").set_value("nope")
    at.button(key="runs_delete_btn").click()
    at.run()
    assert any("Could not delete" in e.value and f"type its id {rid}" in e.value for e in at.error)
    assert [r.id for r in store.list_runs()] == [keep, rid]
    at.text_input(key="runs_delete_confirm").set_value(str(rid))
    at.button(key="runs_delete_btn").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [r.id for r in store.list_runs()] == [keep]
    assert store.samples(rid) == []


def test_reviewers_see_skipped_and_untested_samples_but_cannot_manage_or_upload(tmp_path, monkeypatch, colour_set):
    store = Store(tmp_path / "issues.db")
    rid = _colour_run(store, colour_set)
    at = open_page(monkeypatch, tmp_path, store, who="rita", roles=(R.REVIEWER,))
    keys = {b.key for b in at.button}
    assert not keys & {"runs_rename_btn", "runs_delete_btn", "runs_up_dataset_btn", "runs_up_weights_btn"}
    assert len(at.dataframe) == 2  # the history, then the issues of the newest run
    table = at.dataframe[1].value
    rows = {r["sample_id"]: r for r in store.samples(rid)}
    expected = {s for s, r in rows.items() if r["status"] != "tested" or r["dropped"]}
    assert set(table["sample_id"]) == expected and len(expected) >= 2
    skipped = table[table["status"] == "skipped"]
    assert list(skipped["reason"]) == [rows[s]["skip_reason"] for s in skipped["sample_id"]]


def test_an_upload_fills_the_start_form(tmp_path, monkeypatch):
    from objrel.engine import manage

    from tests.data.test_uploads import make_zip, manifest, png_bytes

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OBJREL_DATA_ROOTS", str(tmp_path / "var" / "uploads"))
    store = Store(tmp_path / "up.db")
    R.create_reviewer(store, OPERATOR, f"{OPERATOR}-passphrase", roles=(R.RUN_OPERATOR,))
    up = manage.upload_dataset(actor_of(store, OPERATOR), store, "mine", manifest("a.png"),
                               make_zip({"a.png": png_bytes()}))
    at = open_page(monkeypatch, tmp_path, store)
    assert at.button(key="runs_up_dataset_btn") is not None
    at.button(key="runs_up_use").click()
    at.run()
    assert at.selectbox(key="runs_dataset").value == str(up.annotation)
    assert at.selectbox(key="runs_images").value == str(up.images)


def test_a_finished_run_that_tested_nothing_is_a_warning_with_its_reasons(tmp_path, monkeypatch, colour_set):
    from tests.analysis.test_tested_nothing import all_skipped_run

    store = Store(tmp_path / "empty.db")
    rid = all_skipped_run(store, colour_set, tmp_path / "noimages")
    at = open_page(monkeypatch, tmp_path, store, who="rita", roles=(R.REVIEWER,))
    warned = [w.value.replace("\\", "") for w in at.warning]
    n = store.get_run(rid).n_skipped
    assert any(f"Run {rid} (nested upload) finished but tested nothing: {n} skipped (missing-file" in w
               for w in warned), warned
    table = next(d.value for d in at.dataframe if "forward passes" in d.value.columns)   # the history
    assert table.set_index("run").loc[rid, "status"] == "finished, tested nothing"
