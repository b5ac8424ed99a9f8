"""The operator registry: name -> Operator.

An operator is a pure function ``apply(image, target, rng, **params) -> mutant``:

* ``image``  ``(H, W, 3)`` uint8 RGB, never modified in place;
* ``target`` a ``Target`` (bool region mask ``(H, W)`` and the objects' xyxy boxes);
* ``rng``    a ``numpy.random.Generator``; operators never touch the global RNG;
* ``params`` JSON-serialisable keyword arguments (colours as ``[r, g, b]`` lists).

Each operator declares its ``kind``: ``corrupt`` (corrupts the object; checked by
MR-1) or ``preserve`` (keeps the object, corrupts the background; MR-2), and a
parameter ``grid``: the mutations a default plan makes from it.  ``keeps_outside``
/ ``keeps_inside`` are promises the contract test checks: a corrupting operator
with ``keeps_outside`` leaves every background pixel as it was, a preserving one
with ``keeps_inside`` every object pixel.  ``fills`` (``"inside"`` or ``"outside"``) promises more: the
mutant is the image with the region (or everything but it) set to the colour of the ``colour`` parameter,
nothing else; the contract test checks it byte for byte, and a model whose preprocessing is linear then
needs no mutant at all (``objrel.mutations.fills``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

KINDS = ("corrupt", "preserve")
RELATION_OF_KIND = {"corrupt": "MR-1", "preserve": "MR-2"}
# What an operator that only paints one colour paints: the target region, everything else, or (None) it
# is not such an operator.
FILL_SIDES = (None, "inside", "outside")


class NotApplicable(Exception):
    """The operator cannot mutate this sample (e.g. RmvObjByMM on a box-only object).

    The relation check records verdict ``n/a`` for the mutation; the vote ignores it.
    """


@dataclass(frozen=True)
class Target:
    """What an operator may use besides the pixels.

    region: ``(H, W)`` bool, True on target-object pixels.
    boxes:  the target objects' boxes, integer xyxy pixels inside the image.
    masked: True when the region comes from masks (polygons/RLE), False from boxes.
    """

    region: np.ndarray
    boxes: tuple[tuple[int, int, int, int], ...]
    masked: bool = False


@dataclass(frozen=True)
class Operator:
    name: str
    kind: str
    apply: Callable[..., np.ndarray]
    grid: tuple[dict, ...]
    description: str
    source: str
    keeps_outside: bool = False
    keeps_inside: bool = False
    needs_backgrounds: bool = False
    fills: str | None = None
    tags: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self):
        if self.fills not in FILL_SIDES:
            raise ValueError(f"operator {self.name!r}: fills must be one of {FILL_SIDES}, got {self.fills!r}")

    @property
    def relation(self) -> str:
        """The relation the operator's kind tests ("MR-1" or "MR-2")."""
        return RELATION_OF_KIND[self.kind]

    def __call__(self, image: np.ndarray, target: Target, rng: np.random.Generator, **params) -> np.ndarray:
        """Apply the operator to ``image``; checks the inputs and that the mutant keeps the image's shape and dtype."""
        check_inputs(image, target.region)
        out = self.apply(image, target, rng, **params)
        if out.shape != image.shape or out.dtype != np.uint8:
            raise RuntimeError(
                f"operator {self.name} returned {out.shape} {out.dtype}, expected {image.shape} uint8"
            )
        return out


_REGISTRY: dict[str, Operator] = {}


def register(name: str, kind: str, grid, description: str, source: str, **flags):
    """Decorator: add ``fn`` to the registry under ``name``; duplicate names are refused."""
    if kind not in KINDS:
        raise ValueError(f"operator kind must be one of {KINDS}, got {kind!r}")

    def wrap(fn):
        if name in _REGISTRY:
            raise ValueError(f"operator {name!r} is already registered ({_REGISTRY[name].apply.__module__})")
        _REGISTRY[name] = Operator(name, kind, fn, tuple(dict(g) for g in grid), description, source, **flags)
        return fn

    return wrap


def get_operator(name: str) -> Operator:
    """The registered operator ``name``; KeyError naming the registered ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown operator {name!r}; registered operators: {sorted(_REGISTRY)}") from None


def operators(kind: str | None = None) -> list[Operator]:
    """The registered operators, by name, of ``kind`` (all when None)."""
    return [op for n, op in sorted(_REGISTRY.items()) if kind is None or op.kind == kind]


def check_inputs(image: np.ndarray, region: np.ndarray) -> None:
    """ValueError unless ``image`` is an (H, W, 3) uint8 array and ``region`` a bool mask of its size."""
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        got = f"{image.shape} {image.dtype}" if isinstance(image, np.ndarray) else type(image).__name__
        raise ValueError(f"image must be an (H, W, 3) uint8 RGB array, got {got}")
    if region.shape != image.shape[:2] or region.dtype != bool:
        raise ValueError(f"region must be an (H, W) bool mask matching the image {image.shape[:2]}, "
                         f"got {region.shape} {region.dtype}")
