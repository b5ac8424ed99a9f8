"""AppTest of pages/explore.py on a store with four colour-model runs.

The data: the conftest colour set (no bad files) plus ``bg.png``, a greenish object
(100, 150, 100) annotated "red" on a saturated red background (250, 0, 0) covering a quarter of
the 64x48 image: the dominant-colour model answers "red" only because of the background, so the
3-colour votes flag it for MR-1 and MR-2 (the argument of tests/engine/test_engine.py, same colours
and the same 1/4 area).  img4 (a small blue object on red) is answered "red": incorrect.

Runs: 1 dominant-colour colours3, 2 dominant-colour palette15, 3 centre-colour colours3 (it looks
at the central half of the image only: img4 and bg.png are wrong), 4 dominant-colour colours3 with
--all.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from streamlit.testing.v1 import AppTest

from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.models import CallableClassifier
from objrel.store import Store

from tests.fixtures.colour_model import CLASSES, dominant_colour_probs, factory
from tests.conftest import write_colour_set

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "explore.py")


def centre_colour_probs(images):
    return dominant_colour_probs([im[im.shape[0] // 4: 3 * im.shape[0] // 4, im.shape[1] // 4: 3 * im.shape[1] // 4]
                                  for im in images])


@pytest.fixture(scope="module")
def explore_db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("explore")
    ann = write_colour_set(root / "data", bad=False)
    img = np.zeros((48, 64, 3), np.uint8)
    img[:] = (250, 0, 0)
    img[12:36, 16:48] = (100, 150, 100)
    Image.fromarray(img).save(root / "data" / "bg.png")
    coco = json.loads(ann.read_text())
    coco["images"].append({"id": 7, "file_name": "bg.png", "width": 64, "height": 48})
    coco["annotations"].append({"id": 7, "image_id": 7, "category_id": 1, "bbox": [16, 12, 32, 24], "iscrowd": 0})
    ann.write_text(json.dumps(coco))
    db = root / "explore.db"
    store = Store(db)
    base = dict(model="py:tests.fixtures.colour_model:factory", dataset=str(ann))
    Engine(store, RunConfig(**base, plan="colours3", name="dominant 3"), model=factory()).execute()
    Engine(store, RunConfig(**base, plan="palette15", name="dominant 15"), model=factory()).execute()
    Engine(store, RunConfig(**base, plan="colours3", name="centre"),
           model=CallableClassifier(centre_colour_probs, CLASSES, name="centre-colour")).execute()
    Engine(store, RunConfig(**base, plan="colours3", test_all=True, name="dominant all"), model=factory()).execute()
    store.dispose()
    return db


def frame(at: AppTest, *columns: str):
    """The one table on the page that has all these columns."""
    hits = [d.value for d in at.dataframe if set(columns) <= set(d.value.columns)]
    assert len(hits) == 1, f"expected one table with columns {columns}, found {len(hits)}"
    return hits[0]


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def open_page(monkeypatch, db) -> AppTest:
    monkeypatch.setenv("OBJREL_STORE", str(db))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def test_default_view_shows_every_section(monkeypatch, explore_db):
    at = open_page(monkeypatch, explore_db)
    assert at.selectbox(key="explore_relation").value == "MR-2"
    assert at.multiselect(key="explore_runs").value == [1, 2, 3, 4]

    # per label, run 1, sorted by share flagged: red has img1, img2, img5, bg correct, bg flagged
    labels = frame(at, "class_name")
    assert labels["class_name"].tolist() == ["red", "green"]
    assert labels.iloc[0][["correct", "mr2"]].tolist() == [4, 1]
    assert labels.iloc[0]["mr2_ratio"] == pytest.approx(1 / 4)
    assert labels.iloc[1][["correct", "mr2"]].tolist() == [2, 0]

    # object size, pooled: bin [0.25, 0.30) holds img1 (0.25), img5 (900/3072) and bg (0.25) of the three
    # dominant-colour runs and img1, img5 of the centre run; bg is flagged in the three dominant runs
    # the table lists only the bins with answers (index = the bin's position among the 20)
    bins = frame(at, "interval")
    assert (bins["tested"] > 0).all() and {5, 12} <= set(bins.index) and len(bins) < 20
    assert bins.loc[5, ["tested", "flagged"]].tolist() == [11, 3]
    assert bins.loc[12, ["tested", "flagged"]].tolist() == [4, 0]          # img2: 1920/3072 = 0.625

    # models: 7 evaluated; dominant colour misses img4, centre colour misses img4 and bg
    models = frame(at, "evaluated", "mr2_ratio").set_index("run")
    assert models["correct"].tolist() == [6, 6, 5, 6]
    assert models.loc[1, "accuracy"] == pytest.approx(6 / 7) and models.loc[3, "accuracy"] == pytest.approx(5 / 7)
    # the page shows the shares (the counts are the chart's bar labels and in the CSV)
    assert models["mr2_ratio"].tolist() == pytest.approx([1 / 6, 1 / 6, 0, 1 / 6])
    assert "mr2" not in models.columns and "dataset" not in models.columns

    # overlap: only bg is flagged, by the three dominant-colour runs
    overlap = frame(at, "n_models", "inputs")
    assert overlap["inputs"].tolist() == [0, 0, 1, 0]
    assert frame(at, "sample_id", "runs")["runs"].tolist() == ["1,2,4"]

    # runs 1-3 did not test incorrect inferences: Tables 7/8 are not available, the page says how to get them
    assert any("--all" in i.value.replace("\\", "") for i in at.info)
    # run 1 has no 15-colour votes: the page says how to get them
    assert any("objrel run --plan palette15" in i.value for i in at.info)

    # accuracies (6/7, 6/7, 5/7, 6/7) and MR-2 ratios (1/6, 1/6, 0, 1/6) lie on one line: r = 1
    assert metric(at, "Pearson r") == "1.000"
    corr = frame(at, "accuracy", "ratio")
    assert corr["ratio"].tolist() == pytest.approx([1 / 6, 1 / 6, 0, 1 / 6])

    # McNemar, runs 1 and 2 (both dominant colour): the same 6 correct answers, bg flagged by both, nothing
    # discordant: b = c = 0, exact p = 1
    assert at.selectbox(key="explore_mcnemar_a").value == 1 and at.selectbox(key="explore_mcnemar_b").value == 2
    assert metric(at, "Shared") == "6" and metric(at, "p-value") == "1.000"
    mc = frame(at, "run 2 flags", "run 2 does not")          # rows: run 1 flags / does not
    assert mc[["run 2 flags", "run 2 does not"]].values.tolist() == [[1, 0], [0, 5]]
    assert any("exact binomial test (b + c = 0 < 25)" in c.value for c in at.caption)

    # every table has its CSV button; per-label, size, models, McNemar, overlap and correlation are charts
    assert len(at.get("download_button")) == len(at.dataframe) == 7
    assert len(at.get("plotly_chart")) == 6


def test_colour_contingency_for_a_palette_run(monkeypatch, explore_db):
    at = open_page(monkeypatch, explore_db)
    at.selectbox(key="explore_focus_run").set_value(2)
    at.selectbox(key="explore_relation").set_value("MR-1")
    at.run()
    assert not at.exception
    # an independent count from the raw vote rows of run 2
    store = Store(explore_db)
    votes = store.votes(2)
    store.dispose()
    v3 = {v["sample_id"]: v["flagged"] for v in votes if v["group_name"] == "MR-1 3 colours"}
    v15 = {v["sample_id"]: v["flagged"] for v in votes if v["group_name"] == "MR-1 15 colours"}
    assert set(v3) == set(v15) == {"1", "2", "3", "5", "6", "7"}    # the tested (correct) inferences
    expected = [[sum(v15[s] and v3[s] for s in v3), sum(v15[s] and not v3[s] for s in v3)],
                [sum(not v15[s] and v3[s] for s in v3), sum(not v15[s] and not v3[s] for s in v3)]]
    assert expected[0][0] >= 1                                     # bg is flagged by both
    table = frame(at, "vote")
    assert table["vote"].tolist() == ["V15: violate", "V15: not violate"]
    assert table[["V3: violate", "V3: not violate"]].values.tolist() == expected
    (a, b), (c, d) = expected
    n = a + b + c + d
    chi2 = n * (a * d - b * c) ** 2 / ((a + b) * (c + d) * (a + c) * (b + d))   # Pearson: the standard V
    assert metric(at, "Cramér's V") == f"{math.sqrt(chi2 / n):.3f}"


def test_reliable_accuracy_for_a_run_that_tested_everything(monkeypatch, explore_db):
    at = open_page(monkeypatch, explore_db)
    at.multiselect(key="explore_runs").set_value([4])
    at.run()
    assert not at.exception
    # run 4 tests img4 too: a small blue object on red, answered red.  Filling the background gray leaves
    # the blue object dominant (label changes: MR-2 violated), so img4 and bg are the unreliable answers
    row = frame(at, "reliable_accuracy").iloc[0]
    assert (row["evaluated"], row["unreliable"], row["reliable"]) == (7, 2, 5)
    assert row["original"] == pytest.approx(6 / 7)
    assert row["unreliable_accuracy"] == pytest.approx(1 / 2)
    assert row["reliable_accuracy"] == pytest.approx(1.0)
    # one run: no Wilcoxon test, and the overlap and correlation ask for more runs
    assert any("Wilcoxon test not computed" in i.value for i in at.info)
    assert any("at least 2 runs" in i.value for i in at.info)
    assert any("at least 3 runs" in i.value for i in at.info)


def test_empty_store_says_what_to_do(tmp_path, monkeypatch):
    at = open_page(monkeypatch, tmp_path / "empty.db")
    assert any("No runs" in i.value for i in at.info)
    assert not at.dataframe


def test_mcnemar_runs_never_coincide(monkeypatch, explore_db):
    at = open_page(monkeypatch, explore_db)
    at.selectbox(key="explore_mcnemar_a").set_value(2).run()
    assert not at.exception
    assert at.selectbox(key="explore_mcnemar_b").value == 1 and 2 not in at.selectbox(key="explore_mcnemar_b").options


def test_overlap_images_show_file_names_and_thumbnails(monkeypatch, explore_db):
    import base64
    import io

    at = open_page(monkeypatch, explore_db)
    images = frame(at, "sample_id", "runs")
    # bg.png is the one image the three dominant-colour runs flag: named, with a small JPEG beside it
    assert images["file"].tolist() == ["bg.png"]
    uri = images["image"].iloc[0]
    assert uri.startswith("data:image/jpeg;base64,")
    thumb = Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1])))
    assert 0 < max(thumb.size) <= 64, thumb.size
    # the table shows the thumbnail as an image column
    shown = next(d for d in at.dataframe if "runs" in d.value.columns)
    assert json.loads(shown.proto.columns)["image"]["type_config"] == {"type": "image"}


def test_tables_show_one_missing_mark_and_cap_long_text():
    import pandas as pd

    from objrel.app.formats import MISSING
    from objrel.app.tables import TEXT_COLUMN_MAX_PX, fitted_columns, shown_missing

    df = pd.DataFrame({"name": ["a very long run name " * 4, None], "note": [float("nan"), "ok"],
                       "n": [1.0, float("nan")], "tag": pd.array(["x", pd.NA], dtype="string")})
    shown = shown_missing(df)
    # None, NaN and pd.NA in text columns all read as the one mark; the number column keeps its type
    assert shown["name"].tolist()[1] == MISSING and shown["note"].tolist()[0] == MISSING
    assert shown["tag"].tolist()[1] == MISSING
    assert shown["n"].dtype == float and "None" not in shown.astype(str).to_numpy().ravel().tolist()
    config = fitted_columns(df)
    assert config["name"]["width"] == TEXT_COLUMN_MAX_PX       # the long text column is capped
    assert "note" not in config and "tag" not in config         # short ones keep their natural width
