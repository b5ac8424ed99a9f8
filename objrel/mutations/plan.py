"""Test plans: which mutations a run makes, and how their verdicts are voted.

A ``Mutation`` is an operator plus its parameters; its ``key`` names it in the
store (``fill_object(colour=black)``).  A ``VoteGroup`` is a set of mutations of
one relation with its threshold ``k``: the inference is flagged for that group
when at least ``k`` of its applicable mutations are violated.  The first group of
each relation in a plan is that relation's *primary* vote (the Table 5/6 figures).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cached_property

from objrel.constants import PALETTE_VOTE_K, THREE_COLOUR_VOTE_K
from objrel.mutations.colours import PALETTE_15, THREE_COLOURS
from objrel.mutations.registry import RELATION_OF_KIND, get_operator, operators


@dataclass(frozen=True)
class Mutation:
    operator: str
    params: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, operator: str, **params) -> "Mutation":
        """A mutation of ``operator`` with ``params``; KeyError for an unknown operator."""
        get_operator(operator)  # fail early on unknown names
        return cls(operator, tuple(sorted((k, _freeze(v)) for k, v in params.items())))

    @property
    def kwargs(self) -> dict:
        """The parameters as keyword arguments (tuples back to lists)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.params}

    @cached_property
    def key(self) -> str:
        """The mutation's stable name: ``operator(name=value,...)`` with the parameters sorted (made once: a
        run reads it some 60 times per sample)."""
        inner = ",".join(f"{k}={_fmt(v)}" for k, v in self.params)
        return f"{self.operator}({inner})"

    @cached_property
    def relation(self) -> str:
        """The relation the operator's kind tests ("MR-1" or "MR-2")."""
        return RELATION_OF_KIND[get_operator(self.operator).kind]

    def to_dict(self) -> dict:
        """The mutation as a JSON-ready dict."""
        return {"operator": self.operator, "params": self.kwargs}

    @classmethod
    def from_dict(cls, d: dict) -> "Mutation":
        """A mutation from a ``to_dict`` dict."""
        return cls.of(d["operator"], **(d.get("params") or {}))


def _freeze(v):
    return tuple(v) if isinstance(v, list) else v


def _fmt(v) -> str:
    return "[" + ",".join(str(x) for x in v) + "]" if isinstance(v, tuple) else str(v)


@dataclass(frozen=True)
class VoteGroup:
    name: str
    relation: str
    mutations: tuple[Mutation, ...]
    k: int

    def __post_init__(self):
        if not self.mutations:
            raise ValueError(f"vote group {self.name!r} has no mutation")
        rels = {m.relation for m in self.mutations}
        if rels != {self.relation}:
            raise ValueError(f"vote group {self.name!r} is for {self.relation} but mixes operators of {sorted(rels)}")
        if not 1 <= self.k <= len(self.mutations):
            raise ValueError(f"vote group {self.name!r}: k must be in 1..{len(self.mutations)}, got {self.k}")

    def to_dict(self) -> dict:
        """The group as a JSON-ready dict."""
        return {"name": self.name, "relation": self.relation, "k": self.k,
                "mutations": [m.to_dict() for m in self.mutations]}

    @classmethod
    def from_dict(cls, d: dict) -> "VoteGroup":
        """A vote group from a ``to_dict`` dict."""
        return cls(d["name"], d["relation"], tuple(Mutation.from_dict(m) for m in d["mutations"]), int(d["k"]))


@dataclass(frozen=True)
class Plan:
    """Vote groups plus the region dilation (pixels) applied before every operator."""

    groups: tuple[VoteGroup, ...]
    dilate: int = 0

    def __post_init__(self):
        names = [g.name for g in self.groups]
        if len(set(names)) != len(names):
            raise ValueError(f"vote group names must be unique, got {names}")
        if self.dilate < 0:
            raise ValueError(f"dilate must be >= 0 pixels, got {self.dilate}")

    @property
    def mutations(self) -> tuple[Mutation, ...]:
        """Every distinct mutation, in plan order (a mutation shared by groups runs once)."""
        seen: dict[str, Mutation] = {}
        for g in self.groups:
            for m in g.mutations:
                seen.setdefault(m.key, m)
        return tuple(seen.values())

    def primary(self, relation: str) -> VoteGroup | None:
        """The plan's first vote group of ``relation`` (its primary vote), or None."""
        return next((g for g in self.groups if g.relation == relation), None)

    def to_dict(self) -> dict:
        """The plan as a JSON-ready dict."""
        return {"dilate": self.dilate, "groups": [g.to_dict() for g in self.groups]}

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        """A plan from a ``to_dict`` dict."""
        return cls(tuple(VoteGroup.from_dict(g) for g in d["groups"]), int(d.get("dilate", 0)))


def colour_groups(colours: dict, k: int, suffix: str) -> tuple[VoteGroup, VoteGroup]:
    """The MR-1 object fills and MR-2 background fills of ``colours``, voting with ``k``."""
    mr1 = VoteGroup(f"MR-1 {suffix}", "MR-1", tuple(Mutation.of("fill_object", colour=c) for c in colours), k)
    mr2 = VoteGroup(f"MR-2 {suffix}", "MR-2", tuple(Mutation.of("fill_background", colour=c) for c in colours), k)
    return mr1, mr2


def operator_group(name: str, k: int | None = None) -> VoteGroup:
    """A group with every mutation of the operator's grid, majority vote by default."""
    op = get_operator(name)
    muts = tuple(Mutation.of(name, **g) for g in op.grid)
    if not muts:
        raise ValueError(f"operator {name!r} has an empty parameter grid (no background pictures installed?)")
    return VoteGroup(name, op.relation, muts, k if k is not None else len(muts) // 2 + 1)


ERASE_NOISE = "erase_noise"
SEED002_PLAN = "seed002"      # ORMR s V-A's six functions with its 38 operations (objrel.mutations.seed002)
PRESETS = ("colours3", "palette15", "all", ERASE_NOISE, SEED002_PLAN)
# Plan names of older stores, read back under their current name.
LEGACY_PRESET_NAMES = {"seed001": ERASE_NOISE}

# Centre-out erase ratios of erase_noise's MR-1 vote: large enough that a detector looking at the object
# loses it (DetReport s4.4).
ERASE_RATIOS = (0.5, 0.7, 0.9)
# Background noise variances (0-255 pixel units squared; std 20, 40, 50) of erase_noise's primary MR-2 vote.
BACKGROUND_VARIANCES = (400.0, 1600.0, 2500.0)
# Object noise variances (std 4, 8, 12.6) over the whole object: low enough to keep its features (s2.3).
OBJECT_VARIANCES = (16.0, 64.0, 160.0)
# erase_noise votes: flagged when at least this many of the three mutations are violated (DetReport s4.4).
ERASE_NOISE_VOTE_K = 2


def canonical_preset(name: str) -> str:
    """The current name of a plan preset (older stores say ``seed001`` for ``erase_noise``)."""
    return LEGACY_PRESET_NAMES.get(name, name)


def erase_noise_groups(k: int | None = None) -> list[VoteGroup]:
    """DetReport's detection plan: random erase (MR-1), background noise and object noise (MR-2), 2 of 3."""
    kk = k or ERASE_NOISE_VOTE_K
    return [
        VoteGroup("MR-1 random erase", "MR-1",
                  tuple(Mutation.of("random_erase", ratio=r) for r in ERASE_RATIOS), kk),
        VoteGroup("MR-2 background noise", "MR-2",
                  tuple(Mutation.of("background_noise", variance=v) for v in BACKGROUND_VARIANCES), kk),
        VoteGroup("MR-2 object noise", "MR-2",
                  tuple(Mutation.of("object_noise", ratio=1.0, variance=v) for v in OBJECT_VARIANCES),
                  ERASE_NOISE_VOTE_K),
    ]


def preset(name: str = "colours3", k: int | None = None, dilate: int = 0) -> Plan:
    """Named plans.

    colours3:  black, gray, white fills; 2 of 3 (EMSE21 s4.3-4.4).
    palette15: the 15-colour palette; 8 of 15 (EMSE21 s5.2), plus colours3 as primary.
    all:       colours3 first (primary), then the palette and one group per other operator.
    erase_noise: random erase at 50/70/90% (MR-1), background noise at variance 400/1600/2500 and
               object noise at 16/64/160 (MR-2), each 2 of 3: DetReport's plan, the detectors' default.
    seed002:   ORMR s V-A's 38 operations, one majority vote per function (``objrel.mutations.seed002``):
               the plan S is computed over as the paper defines it.
    """
    name = canonical_preset(name)
    if name not in PRESETS:
        raise ValueError(f"unknown plan preset {name!r}; expected one of {PRESETS}")
    if name == ERASE_NOISE:
        return Plan(tuple(erase_noise_groups(k)), dilate)
    if name == SEED002_PLAN:
        from objrel.mutations.seed002 import seed002_specs

        groups = []
        for group_name, ops, kk in seed002_specs(k):
            muts = tuple(Mutation.of(operator, **params) for operator, params in ops)
            groups.append(VoteGroup(group_name, muts[0].relation, muts, kk))
        return Plan(tuple(groups), dilate)
    groups = list(colour_groups(THREE_COLOURS, k or THREE_COLOUR_VOTE_K, "3 colours"))
    if name in ("palette15", "all"):
        groups += colour_groups(PALETTE_15, PALETTE_VOTE_K, "15 colours")
    if name == "all":
        for op in operators():
            if op.name in ("fill_object", "fill_background") or not op.grid:
                continue
            groups.append(operator_group(op.name))
    return Plan(tuple(groups), dilate)


def preset_with_operators(name: str, operators=(), k: int | None = None, dilate: int = 0) -> Plan:
    """A preset plus one majority-vote group per extra operator that the preset lacks."""
    groups = list(preset(name, k=k, dilate=dilate).groups)
    have = {m.operator for g in groups for m in g.mutations}
    for op in operators:
        if op not in have:
            groups.append(operator_group(op))
            have.add(op)
    return Plan(tuple(groups), dilate)


def plan_from_operators(names: list[str], k: int | None = None, dilate: int = 0) -> Plan:
    """colours3 as the primary vote plus one group per named operator."""
    groups = list(colour_groups(THREE_COLOURS, k or THREE_COLOUR_VOTE_K, "3 colours"))
    for n in names:
        if n in ("fill_object", "fill_background"):
            continue
        groups.append(operator_group(n))
    return Plan(tuple(groups), dilate)


def derive_seed(run_seed: int, sample_id: str, mutation_key: str) -> int:
    """A 63-bit seed from (run seed, sample id, mutation) — stable across processes and platforms."""
    blob = json.dumps([int(run_seed), str(sample_id), mutation_key]).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") >> 1
