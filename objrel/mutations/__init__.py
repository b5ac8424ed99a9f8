"""Mutation operators, their registry and test plans.

Importing this package registers every built-in operator.
"""

from objrel.mutations import corrupt, preserve  # noqa: F401  (registration side effect)
from objrel.mutations.colours import NINE_COLOURS, PALETTE_15, THREE_COLOURS, parse_colour
from objrel.mutations.plan import (ERASE_NOISE, PRESETS, SEED002_PLAN, Mutation, Plan, VoteGroup, canonical_preset,
                                   derive_seed, operator_group, plan_from_operators, preset, preset_with_operators)
from objrel.mutations.pixels import dilate_region
from objrel.mutations.recipe import build_target, make_mutant
from objrel.mutations.registry import NotApplicable, Operator, Target, get_operator, operators, register

__all__ = [
    "Operator", "Target", "NotApplicable", "register", "get_operator", "operators",
    "Mutation", "VoteGroup", "Plan", "preset", "preset_with_operators", "canonical_preset", "ERASE_NOISE",
    "SEED002_PLAN",
    "plan_from_operators", "operator_group", "PRESETS", "derive_seed",
    "THREE_COLOURS", "PALETTE_15", "NINE_COLOURS", "parse_colour", "dilate_region", "build_target", "make_mutant",
]
