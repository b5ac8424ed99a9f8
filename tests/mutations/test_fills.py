"""One-colour fills: the operators that promise to paint only one colour keep that promise byte for byte
(the engine then mixes their model input instead of painting them), and ``constant_fill`` reads the
fill a mutation makes."""

from __future__ import annotations

import numpy as np
import pytest

from objrel.mutations import Mutation, make_mutant, operators
from objrel.mutations.colours import PALETTE_15
from objrel.mutations.fills import ConstantFill, constant_fill
from objrel.mutations.registry import Operator, Target


def _scene(seed: int = 0):
    rng = np.random.default_rng(seed)
    image = rng.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    region = np.zeros((37, 53), bool)
    region[5:20, 9:30] = True
    region[22, 40] = True          # a lone pixel and a ragged edge
    region[19, 30:35] = True
    return image, Target(region=region, boxes=((9, 5, 35, 23),), masked=True)


def test_fill_operators_are_the_two_colour_fills():
    assert {op.name: op.fills for op in operators() if op.fills} == {"fill_object": "inside",
                                                                     "fill_background": "outside"}


@pytest.mark.parametrize("op", [op for op in operators() if op.fills], ids=lambda op: op.name)
def test_a_fill_operator_paints_one_colour_on_its_side_and_nothing_else(op):
    image, target = _scene()
    side = target.region if op.fills == "inside" else ~target.region
    for params in op.grid:
        mutation = Mutation.of(op.name, **params)
        mutant = make_mutant(image, target, mutation, seed=1)
        fill = constant_fill(mutation)
        assert fill == ConstantFill(op.fills, PALETTE_15[params["colour"]])
        assert (mutant[side] == np.asarray(fill.colour, np.uint8)).all()
        assert np.array_equal(mutant[~side], image[~side])


def test_constant_fill_reads_names_rgb_lists_and_the_operator_default():
    assert constant_fill(Mutation.of("fill_object", colour="gray")) == ConstantFill("inside", (127, 127, 127))
    assert constant_fill(Mutation.of("fill_background", colour=[12, 34, 56])) == ConstantFill("outside", (12, 34, 56))
    assert constant_fill(Mutation.of("fill_background")) == ConstantFill("outside", (0, 0, 0))   # default black
    # painting, then blurring the boundary is not a one-colour fill; nor is noise
    assert constant_fill(Mutation.of("fill_object_blur", colour="gray")) is None
    assert constant_fill(Mutation.of("background_noise", variance=100.0)) is None


def test_an_operator_cannot_promise_an_unknown_fill_side():
    with pytest.raises(ValueError, match="fills must be one of"):
        Operator("x", "corrupt", lambda image, target, rng: image, (), "", "", fills="border")
