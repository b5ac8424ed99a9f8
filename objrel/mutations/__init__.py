"""Mutation operators, their registry and test plans.

Importing this package registers every built-in operator.
"""

from . import corrupt, preserve  # noqa: F401  (registration side effect)
from .colours import NINE_COLOURS, PALETTE_15, THREE_COLOURS, parse_colour
from .plan import PRESETS, Mutation, Plan, VoteGroup, derive_seed, operator_group, plan_from_operators, preset
from .pixels import dilate_region
from .recipe import build_target, make_mutant
from .registry import NotApplicable, Operator, Target, get_operator, operators, register

__all__ = [
    "Operator", "Target", "NotApplicable", "register", "get_operator", "operators",
    "Mutation", "VoteGroup", "Plan", "preset", "plan_from_operators", "operator_group", "PRESETS", "derive_seed",
    "THREE_COLOURS", "PALETTE_15", "NINE_COLOURS", "parse_colour", "dilate_region", "build_target", "make_mutant",
]
