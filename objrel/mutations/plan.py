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

from ..constants import PALETTE_VOTE_K, THREE_COLOUR_VOTE_K
from .colours import PALETTE_15, THREE_COLOURS
from .registry import RELATION_OF_KIND, get_operator, operators


@dataclass(frozen=True)
class Mutation:
    operator: str
    params: tuple[tuple[str, object], ...] = ()

    @classmethod
    def of(cls, operator: str, **params) -> "Mutation":
        get_operator(operator)  # fail early on unknown names
        return cls(operator, tuple(sorted((k, _freeze(v)) for k, v in params.items())))

    @property
    def kwargs(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.params}

    @property
    def key(self) -> str:
        inner = ",".join(f"{k}={_fmt(v)}" for k, v in self.params)
        return f"{self.operator}({inner})"

    @property
    def relation(self) -> str:
        return RELATION_OF_KIND[get_operator(self.operator).kind]

    def to_dict(self) -> dict:
        return {"operator": self.operator, "params": self.kwargs}

    @classmethod
    def from_dict(cls, d: dict) -> "Mutation":
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
        return {"name": self.name, "relation": self.relation, "k": self.k,
                "mutations": [m.to_dict() for m in self.mutations]}

    @classmethod
    def from_dict(cls, d: dict) -> "VoteGroup":
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
        return next((g for g in self.groups if g.relation == relation), None)

    def to_dict(self) -> dict:
        return {"dilate": self.dilate, "groups": [g.to_dict() for g in self.groups]}

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        return cls(tuple(VoteGroup.from_dict(g) for g in d["groups"]), int(d.get("dilate", 0)))


def colour_groups(colours: dict, k: int, suffix: str) -> tuple[VoteGroup, VoteGroup]:
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


PRESETS = ("colours3", "palette15", "all")


def preset(name: str = "colours3", k: int | None = None, dilate: int = 0) -> Plan:
    """Named plans.

    colours3:  black, gray, white fills; 2 of 3 (seed 000 s4.3-4.4).
    palette15: the 15-colour palette; 8 of 15 (seed 000 s5.2), plus colours3 as primary.
    all:       colours3 first (primary), then the palette and one group per other operator.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown plan preset {name!r}; expected one of {PRESETS}")
    groups = list(colour_groups(THREE_COLOURS, k or THREE_COLOUR_VOTE_K, "3 colours"))
    if name in ("palette15", "all"):
        groups += colour_groups(PALETTE_15, PALETTE_VOTE_K, "15 colours")
    if name == "all":
        for op in operators():
            if op.name in ("fill_object", "fill_background") or not op.grid:
                continue
            groups.append(operator_group(op.name))
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
