"""CSV written by ``objrel export`` and the app's downloads shows user text as text (F21).

Sample ids and file names that begin like a formula reach the CSV with OWASP's leading single quote; numbers
and text that is just a number arrive unchanged.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from objrel.cli.main import main

W, H = 48, 40
# (COCO image id, file name): each id and name begins with a character a spreadsheet evaluates.
HOSTILE = [("=HYPERLINK(\"http://example.invalid\",\"open\")", "=HYPERLINK(1).png"), ("@SUM(A1:A9)", "@SUM(1).png"),
           ("+cmd|' /C calc'!A0", "+plus.png"), ("-2+3", "-minus.png"), ("\tTAB", "\ttab.png"),
           ("\rCR", "\rcr.png")]
# An id that is only a negative number: no spreadsheet evaluates it, so it stays as it is.
PLAIN = ("-7", "plain.png")


def red(path: Path) -> None:
    img = np.zeros((H, W, 3), np.uint8)
    img[:] = (230, 10, 10)
    Image.fromarray(img).save(path, format="PNG")


def hostile_run(tmp_path: Path, capsys) -> str:
    root = tmp_path / "data"
    root.mkdir()
    images, anns = [], []
    for n, (iid, name) in enumerate(HOSTILE + [PLAIN], start=1):
        red(root / name)
        images.append({"id": iid, "file_name": name, "width": W, "height": H})
        anns.append({"id": n, "image_id": iid, "category_id": 1, "bbox": [5, 5, 20, 20], "iscrowd": 0})
    ann = root / "ann.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "red"}]}))
    db = str(tmp_path / "s.db")
    assert main(["run", "--model", "py:tests.fixtures.colour_model:factory", "--dataset", str(ann), "--store", db,
                 "--quiet", "--no-lazy"]) == 0
    capsys.readouterr()
    assert main(["export", "1", "--store", db, "--format", "csv"]) == 0
    return capsys.readouterr().out


def test_objrel_export_escapes_formula_cells_and_leaves_numbers_alone(tmp_path, capsys):
    rows = list(csv.DictReader(io.StringIO(hostile_run(tmp_path, capsys), newline="")))
    by_id = {r["sample_id"]: r for r in rows}
    assert len(rows) == len(HOSTILE) + 1
    for iid, name in HOSTILE:
        assert "'" + iid in by_id, (iid, sorted(by_id))
        assert by_id["'" + iid]["image"] == "'" + name
    assert by_id[PLAIN[0]]["image"] == PLAIN[1]           # '-7' is a number: unchanged
    for r in rows:
        assert not r["sample_id"].startswith(("=", "+", "@", "\t", "\r"))
        assert r["correct"] == "True" and 0 < float(r["area_ratio"]) < 1
        assert r["ground_truth"] == "red"


def test_the_app_tables_csv_download_goes_through_the_same_escaping():
    from objrel.app.tables import frame_csv as app_csv
    from objrel.csvsafe import frame_csv, safe_cell

    df = pd.DataFrame({"label": ["=1+1", "@x", "cat", "-3", "-a", None], "n": [1, -2, 3, 4, 5, 6],
                       "share": [0.5, -0.25, 0.0, 1.0, 0.1, float("nan")]})
    back = pd.read_csv(io.StringIO(app_csv(df)), keep_default_na=False, dtype={"label": str})
    assert back["label"].tolist() == ["'=1+1", "'@x", "cat", "-3", "'-a", ""]
    assert back["n"].tolist() == [1, -2, 3, 4, 5, 6]
    assert [float(v) for v in back["share"][:5]] == [0.5, -0.25, 0.0, 1.0, 0.1]
    assert app_csv is frame_csv                   # one escaping function for the export and the app
    assert [safe_cell(v) for v in ("\tx", "\rx", "+1", "+x", 3, -1.5, True)] == ["'\tx", "'\rx", "+1", "'+x", 3,
                                                                                 -1.5, True]
