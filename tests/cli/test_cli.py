"""The `objrel` command, run as a user would (subprocess, real files)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def objrel(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "objrel", *map(str, args)], cwd=ROOT, env=ENV,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.subprocess
def test_run_summary_export_on_colour_set(tmp_path, colour_set):
    db = tmp_path / "cli.db"
    res = objrel("run", "--model", "py:tests.fixtures.colour_model:factory", "--dataset", colour_set,
                 "--plan", "colours3", "--store", db, "--quiet")
    assert res.returncode == 0, res.stderr
    # the run ends by saying how many were skipped and why
    assert "4 skipped" in res.stdout
    for code in ("corrupt-image", "missing-file", "unknown-label", "box-outside-image"):
        assert f"skipped 1 x {code}" in res.stdout
    runs = objrel("runs", "--store", db)
    assert "finished" in runs.stdout and "dominant-colour" in runs.stdout
    summary = json.loads(objrel("summary", "1", "--json", "--store", db).stdout)
    assert (summary["samples"], summary["skipped"], summary["evaluated"], summary["correct"]) == (10, 4, 6, 5)
    assert summary["accuracy"] == pytest.approx(5 / 6)
    out = objrel("export", "1", "--format", "csv", "--store", db).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 5 and {r["sample_id"] for r in rows} == {"1", "2", "3", "5", "6"}
    assert "verdict[fill_object(colour=black)]" in rows[0]
    data = json.loads(objrel("export", "1", "--format", "json", "--store", db).stdout)
    assert len(data["inferences"]) == 5 and data["run"]["status"] == "finished"


@pytest.mark.subprocess
def test_toml_config_and_env_store(tmp_path, colour_set):
    cfg = tmp_path / "run.toml"
    cfg.write_text(f'[run]\nmodel = "py:tests.fixtures.colour_model:factory"\ndataset = "{colour_set}"\n'
                   'plan = "colours3"\nseed = 5\nbatch_size = 3\n')
    env_db = tmp_path / "env.db"
    res = subprocess.run([sys.executable, "-m", "objrel", "run", "--config", str(cfg), "--quiet"], cwd=ROOT,
                         env={**ENV, "OBJREL_STORE": str(env_db)}, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    run = json.loads(objrel("runs", "--json", "--store", env_db).stdout)[0]
    assert run["seed"] == 5 and run["config"]["batch_size"] == 3


@pytest.mark.subprocess
def test_errors_are_one_clear_line(tmp_path, colour_set):
    res = objrel("summary", "7", "--store", tmp_path / "e.db")
    assert res.returncode == 2 and "no run 7" in res.stderr
    res = objrel("run", "--model", "py:tests.fixtures.colour_model:factory", "--dataset", tmp_path / "none.json",
                 "--store", tmp_path / "e.db")
    assert res.returncode == 2 and "does not exist" in res.stderr


@pytest.mark.subprocess
def test_weights_file_that_needs_unpickling_is_refused(tmp_path, colour_set):
    path = tmp_path / "whole_model.pt"
    torch.save(torch.nn.Sequential(torch.nn.Linear(2, 2)), path)
    res = objrel("run", "--model", "torchvision:resnet18", "--weights", path, "--dataset", colour_set,
                 "--store", tmp_path / "u.db")
    assert res.returncode == 2
    assert "refusing to load" in res.stderr and "full unpickling" in res.stderr


@pytest.mark.subprocess
@pytest.mark.slow
def test_real_model_on_demo_with_limit(tmp_path):
    db = tmp_path / "demo.db"
    res = objrel("run", "--dataset", "demo", "--limit", "3", "--store", db, "--quiet")
    assert res.returncode == 0, res.stderr
    assert "run 1: finished" in res.stdout
    s = json.loads(objrel("summary", "1", "--json", "--store", db).stdout)
    assert s["samples"] == 3 and s["model"] == "efficientnet-lite0"


@pytest.mark.subprocess
def test_report_writes_one_self_contained_html(tmp_path, flagged_store):
    store, run_id = flagged_store
    out = tmp_path / "r.html"
    res = objrel("report", run_id, "-o", out, "--store", store.url)
    assert res.returncode == 0, res.stderr
    html = out.read_text()
    assert "objrel report: run" in html and "Flagged by MR-2" in html
    assert html.count("data:image/jpeg;base64,") >= 4 and "<script src=" not in html
