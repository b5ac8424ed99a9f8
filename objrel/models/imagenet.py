"""ImageNet-1k class names (index order) and name lookup."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def imagenet_classes() -> tuple[str, ...]:
    from torchvision.models._meta import _IMAGENET_CATEGORIES

    return tuple(_IMAGENET_CATEGORIES)


def class_lookup(class_names) -> dict[str, int]:
    """Case-insensitive ``{name: index}``; a name like ``"tabby, tabby cat"`` answers to each part too."""
    table: dict[str, int] = {}
    for i, name in enumerate(class_names):
        table.setdefault(name.strip().lower(), i)
        for part in name.split(","):
            table.setdefault(part.strip().lower(), i)
    return table
