"""The JSON export says how its relevancy scores were computed (seed 002 s V-A or objrel's variant)."""

from __future__ import annotations

import json

from objrel.analysis.export import export_run
from objrel.relations.votes import scoring_basis
from objrel.mutations import preset


def test_a_colour_plan_is_scored_with_the_applicable_variant(flagged_store):
    store, run_id = flagged_store
    header = json.loads(export_run(store, run_id, "json"))["run"]
    # colours3 has none of seed 002's six functions: S cannot be the paper's definition
    assert header["scoring"].startswith("S by objrel's 'applicable' weights")


def test_the_all_plan_holds_every_seed002_function():
    text = scoring_basis(preset("all")).describe()
    assert text.startswith("S as seed 002 s V-A")
    for name in ("MvObjToImg", "BldObjToImg", "PsvObj", "RmvObjByRGB", "RmvObjByTool", "RmvObjByMM"):
        assert name in text
