"""Sweeps (seed 001 Tables 3-4) and the ``objrel detect`` / ``sweep`` / ``detectors`` commands."""

from __future__ import annotations

import json
import re

import pytest

from objrel.config import DetectionConfig
from objrel.engine.sweep import plot_sweep, run_sweep, sweep_plan, sweep_table
from objrel.cli.main import main

from tests.fixtures.detection_support import ColourDetector, quiet_context_detector, write_scenes

# Two 16x16 red squares, two objects of one label.
SQUARES = {"name": "sq.png", "objects": [("red", (4, 4, 20, 20)), ("red", (30, 4, 46, 20))]}
ONE_SQUARE = {"name": "one.png", "objects": [("red", (4, 4, 20, 20))]}


def test_random_erase_sweep_counts_still_detected_per_ratio(tmp_path, store):
    """The colour detector keeps a component filling at least half its box.  Random erase of ratio r replaces
    the centre square of side round(16 sqrt r) of a 16x16 square: 5, 9, 11, 13, 15 px for r = 0.1 ... 0.9,
    leaving 231, 175, 135, 87, 31 of 256 pixels around it with the same bounding box: density 0.90, 0.68,
    0.53 (still detected at IoU 1: MR-1 violated), 0.34, 0.12 (gone: MR-1 holds).  Both squares alike."""
    ann = write_scenes(tmp_path / "s", [SQUARES])
    res = run_sweep(store, DetectionConfig(detector="colour", dataset=str(ann)), "random_erase",
                    values=[0.1, 0.3, 0.5, 0.7, 0.9], detector=ColourDetector())
    assert (res.operator, res.param, res.relation) == ("random_erase", "ratio", "MR-1")
    assert [(r.value, r.units, r.still_detected, r.not_violating) for r in res.rows] == [
        (0.1, 2, 2, 0), (0.3, 2, 2, 0), (0.5, 2, 2, 0), (0.7, 2, 0, 2), (0.9, 2, 0, 2)]
    assert sweep_table(store, res.run_id) == res
    text = res.table()
    assert "violating: still detected" in text
    assert [c.strip() for c in text.splitlines()[3].split("|")] == ["0.1", "2", "2", "0", "0"]


def test_background_noise_sweep_gives_missing_detections_per_variance(tmp_path, store):
    """Detector that needs a quiet background (channel std < 30).  Noise of variance v on the background has
    std sqrt(v): 10 and 20 keep the square (not violating), 40 and 50 hide it (MR-2 missing detection)."""
    ann = write_scenes(tmp_path / "s", [ONE_SQUARE])
    res = run_sweep(store, DetectionConfig(detector="quiet", dataset=str(ann)), "background_noise",
                    values=[100, 400, 1600, 2500], detector=quiet_context_detector())
    assert res.relation == "MR-2"
    assert [(r.value, r.missing, r.incorrect, r.not_violating) for r in res.rows] == [
        (100.0, 0, 0, 1), (400.0, 0, 0, 1), (1600.0, 1, 0, 0), (2500.0, 1, 0, 0)]
    md = res.markdown()
    assert md.splitlines()[0] == "| variance | units | violating: missing | violating: incorrect | not violating |"
    png = plot_sweep(res, tmp_path / "sweep.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_sweep_plan_defaults_and_errors():
    plan = sweep_plan("object_noise", "ratio", [0.1, 0.5], {"variance": 160.0})
    assert [g.name for g in plan.groups] == ["object_noise ratio=0.1", "object_noise ratio=0.5"]
    assert plan.groups[0].mutations[0].key == "object_noise(ratio=0.1,variance=160.0)"
    assert all(g.k == 1 and g.relation == "MR-2" for g in plan.groups)
    with pytest.raises(ValueError, match="cannot also be fixed"):
        sweep_plan("object_noise", "ratio", [0.1], {"ratio": 1.0})
    with pytest.raises(ValueError, match="no default sweep"):
        run_sweep(None, DetectionConfig(), "inpaint")


def test_sweep_table_refuses_runs_that_are_not_sweeps(tmp_path, store):
    from objrel.engine.detect import DetectionEngine

    ann = write_scenes(tmp_path / "s", [ONE_SQUARE])
    rep = DetectionEngine(store, DetectionConfig(detector="c", dataset=str(ann), plan="colours3"),
                          detector=ColourDetector()).execute()
    with pytest.raises(ValueError, match="not a sweep"):
        sweep_table(store, rep.run_id)


def test_cli_detect_sweep_and_detectors(tmp_path, capsys):
    ann = write_scenes(tmp_path / "s", [SQUARES])
    db = str(tmp_path / "cli.db")
    det = "py:tests.fixtures.detection_support:ColourDetector"
    assert main(["detect", "--detector", det, "--dataset", str(ann), "--store", db, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "run 1: finished; 1 images processed this time, 2 units tested" in out
    assert "detected on the source (T=1) 2" in out
    assert re.search(r"MR-2 violations: \d+ missing, \d+ incorrect detections", out)
    assert main(["detect", "--resume", "1", "--store", db, "--quiet"]) == 0
    assert "0 images processed this time" in capsys.readouterr().out

    png = tmp_path / "s.png"
    assert main(["sweep", "--detector", det, "--dataset", str(ann), "--operator", "random_erase",
                 "--values", "0.1,0.9", "--store", db, "--quiet", "--plot", str(png)]) == 0
    table = capsys.readouterr().out
    assert "sweep of random_erase(ratio) [MR-1]" in table and png.is_file()
    assert main(["sweep", "--run", "2", "--json", "--store", db]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["value"], r["still_detected"], r["not_violating"]) for r in rows] == [(0.1, 2, 0), (0.9, 0, 2)]

    assert main(["detectors"]) == 0
    listed = capsys.readouterr().out
    assert "frontalcatface" in listed and "fullbody" in listed and "mtcnn" in listed and "hog:people" in listed
    assert main(["detect", "--detector", "nope", "--dataset", str(ann), "--store", db]) == 2
    assert "unknown detector 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["detect", "--help"])
    helptext = capsys.readouterr().out
    assert "haar:<cascade>" in helptext and "torchvision:<arch>" in helptext
