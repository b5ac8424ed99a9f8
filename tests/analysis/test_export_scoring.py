"""The JSON export says how its relevancy scores were computed (ORMR s V-A or objrel's variant)."""

from __future__ import annotations

import json

from objrel.analysis.export import export_run
from objrel.relations.votes import scoring_basis
from objrel.mutations import preset
from objrel.relations import common as C


def test_a_colour_plan_is_scored_with_the_applicable_variant(flagged_store):
    store, run_id = flagged_store
    header = json.loads(export_run(store, run_id, "json"))["run"]
    # colours3 has none of ORMR's six functions: S cannot be the paper's definition
    assert header["scoring"].startswith("S by objrel's 'applicable' weights")


def test_the_all_plan_holds_every_seed002_function():
    text = scoring_basis(preset("all")).describe()
    assert text.startswith("S as ORMR s V-A")
    for name in ("MvObjToImg", "BldObjToImg", "PsvObj", "RmvObjByRGB", "RmvObjByTool", "RmvObjByMM"):
        assert name in text


def test_s_on_box_only_data_carries_the_flag_and_the_caveat_and_a_masked_sample_none(tmp_path, colour_model,
                                                                                   store):
    """ORMR's own weights (a plan with one or more operations of each of its six functions): RmvObjByMM needs
    a mask, so on box-only img1 it adds 0 and S_r is at most 2/3; the export says so beside S and in the 0.5
    reading.  img5 has a polygon mask: no flag, no caveat."""
    from objrel.analysis.export import flat_rows, records
    from objrel.engine.classify import Engine
    from objrel.config import RunConfig
    from tests.conftest import write_colour_set

    ann = write_colour_set(tmp_path / "data", bad=False)
    coco = json.loads(ann.read_text())
    coco["images"] = [im for im in coco["images"] if im["id"] in (1, 5)]
    coco["annotations"] = [a for a in coco["annotations"] if a["image_id"] in (1, 5)]
    ann.write_text(json.dumps(coco))
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), batch_size=4, lazy=False,
                    operators=C.SEED002_PRESERVING + C.SEED002_REMOVING)
    run_id = Engine(store, cfg, model=colour_model).execute().run_id
    doc = json.loads(export_run(store, run_id, "json"))
    by_id = {r["sample_id"]: r for r in doc["inferences"]}
    assert doc["run"]["scoring"].startswith("S as ORMR s V-A")
    masked = by_id.pop("5")
    assert masked["box_only"] is False and masked["s"] is not None
    assert masked["s_reading"] in ("at most 0.5", "above 0.5")
    assert list(by_id) == ["1"] and by_id["1"]["box_only"] is True
    for r in by_id.values():
        assert r["s_r"] <= 2 / 3 + 1e-12
        side = "at most" if r["s"] <= 0.5 else "above"
        assert r["s_reading"] == f"{side} 0.5 (box-only: S_r capped at 2/3)"
    flat = {r["sample_id"]: r for r in flat_rows(records(store, run_id))}
    assert flat["5"]["box_only"] is False and "box-only" not in flat["5"]["s_reading"]
    assert all(flat[sid]["box_only"] is True and "capped at 2/3" in flat[sid]["s_reading"] for sid in by_id)
    # the review item shows the flag beside S_p / S_r and S's reading with the caveat; the masked one neither
    from objrel.app import captions
    from objrel.review.items import review_item

    boxed, masked_item = review_item(store, run_id, "1", "MR-1"), review_item(store, run_id, "5", "MR-1")
    assert boxed.box_only and not masked_item.box_only
    assert captions.score_flag(boxed.s_r, boxed.box_only) == "box-only"
    note = captions.relevancy_note(boxed)
    assert "0.5 (box-only: S_r capped at 2/3)" in note and "RmvObjByMM needs a mask" in note
    plain_note = captions.relevancy_note(masked_item)
    assert "box-only" not in plain_note and "0.5" in plain_note
    assert captions.score_flag(masked_item.s_r, masked_item.box_only) is None
