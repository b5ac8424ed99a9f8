"""Which mutations only paint one colour, so that a model with linear preprocessing needs no mutant.

An operator registered with ``fills="inside"`` (``fill_object``) or ``fills="outside"``
(``fill_background``) promises that its mutant is the source with the target region, or everything but
it, set to one colour (EMSE21 s4.3, s5.2); the contract test checks that promise byte for byte.  For
such a mutation the engine hands the model a ``PaintedInput`` (``objrel.models.preprocess``): the
model's resize of the painted image mixed from three resizes of the source, shared by every colour.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache

from objrel.mutations.colours import parse_colour
from objrel.mutations.plan import Mutation
from objrel.mutations.registry import get_operator


@dataclass(frozen=True)
class ConstantFill:
    """``side``: ``inside`` (the region is painted) or ``outside`` (everything but the region);
    ``colour``: RGB 0-255."""

    side: str
    colour: tuple[int, int, int]


@lru_cache(maxsize=None)
def _default_colour(operator: str):
    return inspect.signature(get_operator(operator).apply).parameters["colour"].default


def constant_fill(mutation: Mutation) -> ConstantFill | None:
    """The fill ``mutation`` makes, or None when its operator does more than paint one colour."""
    op = get_operator(mutation.operator)
    if op.fills is None:
        return None
    colour = mutation.kwargs.get("colour", _default_colour(mutation.operator))
    return ConstantFill(op.fills, parse_colour(colour))
