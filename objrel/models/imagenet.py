"""ImageNet-1k class names (index order) and name lookup."""

from __future__ import annotations

from functools import lru_cache
from types import MappingProxyType
from typing import Mapping


@lru_cache(maxsize=1)
def imagenet_classes() -> tuple[str, ...]:
    """The 1,000 ImageNet class names, in class-index order (torchvision's list)."""
    from torchvision.models._meta import _IMAGENET_CATEGORIES

    return tuple(_IMAGENET_CATEGORIES)


def class_lookup(class_names) -> Mapping[str, int]:
    """Case-insensitive ``{name: index}`` (read-only); a name like ``"tabby, tabby cat"`` answers to each part
    too.  Built once per list of names: the engine asks for it on every sample."""
    return _lookup(tuple(class_names))


@lru_cache(maxsize=16)
def _lookup(class_names: tuple[str, ...]) -> Mapping[str, int]:
    table: dict[str, int] = {}
    for i, name in enumerate(class_names):
        table.setdefault(name.strip().lower(), i)
        for part in name.split(","):
            table.setdefault(part.strip().lower(), i)
    return MappingProxyType(table)
