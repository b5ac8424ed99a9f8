"""The ``seed002`` plan: ORMR s V-A's six mutation functions with the paper's 38 operations (Table I), and S
computed and printed over that set, named."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from objrel.cli.main import main
from objrel.config import RunConfig
from objrel.data.bundled import BACKGROUNDS_DIR
from objrel.mutations import Target, get_operator, preset
from objrel.mutations import seed002 as S2
from objrel.relations.votes import scoring_basis

# ORMR Table I: operations per function, 25 object-preserving and 13 object-removing.
PAPER_H = {"MvObjToImg": 12, "BldObjToImg": 12, "PsvObj": 1, "RmvObjByRGB": 9, "RmvObjByTool": 2, "RmvObjByMM": 2}


def test_the_plan_holds_the_papers_38_operations_one_vote_group_per_function():
    plan = preset("seed002")
    assert {g.name: len(g.mutations) for g in plan.groups} == PAPER_H
    assert len(plan.mutations) == 38 == S2.PAPER_OPERATIONS
    assert sum(m.relation == "MR-2" for m in plan.mutations) == 25
    assert sum(m.relation == "MR-1" for m in plan.mutations) == 13
    # the first group of each relation is its primary vote; each function votes by majority
    assert [plan.primary(r).name for r in ("MR-1", "MR-2")] == ["RmvObjByRGB", "MvObjToImg"]
    assert {g.name: g.k for g in plan.groups} == {"MvObjToImg": 7, "BldObjToImg": 7, "PsvObj": 1, "RmvObjByRGB": 5,
                                                  "RmvObjByTool": 2, "RmvObjByMM": 2}
    backgrounds = [m.kwargs["background"] for m in plan.mutations if m.operator == "move_to_background"]
    assert backgrounds == ["brick.jpg", "grass.jpg", "gravel.jpg", "hubble_deep_field.jpg"] + [
        f"seed002/{n}" for n in S2.PAINTED_NAMES]


def test_s_over_the_plan_is_seed_002s_definition_with_the_papers_counts():
    basis = scoring_basis(preset("seed002"))
    assert basis.paper_counts and len(basis.operations) == 38
    assert "over 38 operations" in basis.describe() and "as in the paper" in basis.describe()
    # the 'all' plan holds the six functions with objrel's own grids: 22 operations, not the paper's counts
    every = scoring_basis(preset("all"))
    assert len(every.operations) == 22 and not every.paper_counts


def test_the_painted_backgrounds_are_the_painters_output():
    for name in S2.PAINTED_NAMES:
        stored = np.asarray(Image.open(BACKGROUNDS_DIR / S2.PAINTED_DIR / name).convert("RGB"))
        assert stored.shape == (S2.PAINTED_SIZE[1], S2.PAINTED_SIZE[0], 3)
        assert np.array_equal(stored, S2.painted_background(name)), name
        assert stored.std() > 5, f"{name} is nearly flat"


def test_every_operation_of_the_plan_makes_a_mutant_of_a_masked_object():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
    region = np.zeros((48, 64), bool)
    region[12:36, 16:44] = True
    region[12:16, 16:20] = False                       # a mask smaller than its box: RmvObjByMM has a margin
    target = Target(region, ((16, 12, 44, 36),), masked=True)
    for m in preset("seed002").mutations:
        out = get_operator(m.operator)(image, target, np.random.default_rng(1), **m.kwargs)
        assert out.shape == image.shape and out.dtype == np.uint8, m.key
        assert not np.array_equal(out, image), m.key


def test_the_plan_runs_every_mutation_because_s_needs_them():
    assert RunConfig(plan="seed002").lazy is False
    assert RunConfig(plan="colours3").lazy is True


@pytest.mark.slow
def test_objrel_run_with_the_plan_prints_s_and_the_set_it_was_computed_over(tmp_path, capsys):
    assert main(["run", "--model", "efficientnet-lite0", "--dataset", "demo", "--plan", "seed002",
                 "--store", str(tmp_path / "s.db"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert ("over 38 operations: H_n = MvObjToImg 12, BldObjToImg 12, PsvObj 1, RmvObjByRGB 9, RmvObjByTool 2, "
            "RmvObjByMM 2 (as in the paper)") in out
    line = next(x for x in out.splitlines() if x.startswith("S over "))
    assert line.startswith("S over 7 of 7 tested inferences: mean 0.")
    assert "MvObjToImg: the paper's 12 backgrounds are unlisted web-search results" in out
