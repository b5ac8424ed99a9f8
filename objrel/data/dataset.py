"""A loaded dataset: an ordered list of samples plus where they came from."""

from __future__ import annotations

from dataclasses import dataclass

from objrel.data.sample import storable_samples


@dataclass(frozen=True)
class Dataset:
    """What every loader returns.

    name:       short display name (annotation file stem by default).
    format:     ``coco``, ``voc``, ``manifest`` or ``bundled``.
    root:       absolute dataset root; every image path lies inside it.
    annotation: absolute path of the annotation file or folder.
    samples:    samples in a stable order (sorted by id), the engine's work list; made storable on
                construction (``storable_samples``: long or NUL ids hashed, duplicate ids skipped).
    categories: every category name the annotation declares.
    """

    name: str
    format: str
    root: str
    annotation: str
    samples: tuple
    categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # ids and paths the store can hold; duplicate ids become skipped samples (objrel.data.sample)
        object.__setattr__(self, "samples", storable_samples(self.samples))

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self):
        return iter(self.samples)

    def describe(self) -> dict:
        """The dataset's name, format, root, annotation and sample count, as a dict."""
        return {"name": self.name, "format": self.format, "root": self.root, "annotation": self.annotation,
                "n_samples": len(self.samples)}
