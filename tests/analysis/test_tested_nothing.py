"""A finished run that tested nothing says so, with its skip reasons counted by code (Runs and Overview)."""

from __future__ import annotations

import json
from pathlib import Path

from objrel.analysis.overview import TESTED_NOTHING, run_history, runs_that_tested_nothing
from objrel.app.run_captions import nothing_tested_text
from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.store import Store
from tests.fixtures.colour_model import factory


def all_skipped_run(store: Store, colour_set: Path, folder: Path, name: str = "nested upload") -> int:
    """A real run on the colour set's annotation read from a folder without its images (as an upload whose
    zip nested them used to be): every sample is skipped as a missing file."""
    folder.mkdir(parents=True, exist_ok=True)
    ann = folder / "ann.json"
    ann.write_text(Path(colour_set).read_text())
    report = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann),
                                     plan="colours3", name=name), model=factory()).execute()
    return report.run_id


def test_a_run_whose_samples_are_all_skipped_is_reported_with_its_reasons(tmp_path, colour_set, store):
    tested = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set),
                                     plan="colours3"), model=factory()).execute().run_id
    rid = all_skipped_run(store, colour_set, tmp_path / "empty")
    run = store.get_run(rid)
    n_files = len(json.loads(Path(colour_set).read_text())["images"])
    assert (run.status, run.n_done, run.n_tested) == ("finished", n_files, 0)
    found = runs_that_tested_nothing(store)
    assert [t.run_id for t in found] == [rid]           # the run that tested samples is not listed
    t = found[0]
    codes = dict(t.skipped)
    # every sample named a file the folder lacks; the bad-annotation rows of the colour set keep their own codes
    assert codes["missing-file"] >= 6 and t.n_skipped == run.n_skipped == sum(codes.values())
    assert t.skipped[0] == ("missing-file", codes["missing-file"])
    text = nothing_tested_text(t).replace("\\", "")        # markdown escapes taken out
    assert f"tested nothing: {t.n_skipped} skipped (missing-file {codes['missing-file']}" in text
    assert "image names match no file" in text
    history = run_history(store.list_runs()).set_index("run")
    assert history.loc[rid, "status"] == TESTED_NOTHING and history.loc[tested, "status"] == "finished"


def test_unfinished_runs_and_runs_without_samples_are_not_listed(tmp_path, store):
    rid = store.create_run(name="x", model="m", model_config={}, task="single", class_names=["a"], dataset="d",
                           dataset_config={}, plan={"groups": []}, config={}, seed=0, n_total=3)
    store.update_run(rid, status="running", n_done=2)
    assert runs_that_tested_nothing(store) == []
    store.update_run(rid, status="finished", n_done=0)
    assert runs_that_tested_nothing(store) == []
