"""The one sample type every loader yields.

Boxes are ``(x1, y1, x2, y2)`` in pixels of the decoded, upright image (xyxy,
x to the right, y down, x2/y2 exclusive).  Masks are computed lazily from the
annotation (COCO polygon list or RLE dict) so a 50,000-image dataset costs no
pixel memory until a sample is tested.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any

Box = tuple[float, float, float, float]

# Longest sample id the store's id columns hold (String(300)); a longer id is stored shortened + hashed.
MAX_SAMPLE_ID_CHARS = 300
# Characters of a shortened id kept before its hash; the hash keeps shortened ids distinct.
SHORT_ID_PREFIX_CHARS = 200
# Hex digits of the SHA-256 of the full id appended to a shortened or escaped id.
ID_HASH_HEX = 16
# What a NUL byte becomes in stored text: PostgreSQL text cannot hold NUL.
NUL_ESCAPE = "\\x00"


@dataclass(frozen=True)
class TargetObject:
    """One annotated object.

    category:     the dataset's name for it (``"Egyptian cat"``).
    class_index:  index into the model's outputs, or ``None`` when the loader could
                  not resolve it; the engine then looks ``category`` up in the
                  model's class names and skips the sample if that fails.
    box:          xyxy in pixels.
    segmentation: COCO polygon list ``[[x, y, x, y, ...], ...]``, COCO RLE dict, or
                  ``None`` (the box is then the object's region).
    iscrowd:      COCO crowd flag; crowd regions count as target pixels.
    """

    category: str
    class_index: int | None
    box: Box
    segmentation: Any = None
    iscrowd: bool = False

    def to_dict(self) -> dict:
        """The object as a JSON-ready dict."""
        return {
            "category": self.category,
            "class_index": self.class_index,
            "box": list(self.box),
            "segmentation": self.segmentation,
            "iscrowd": self.iscrowd,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "TargetObject":
        """An object from a ``to_dict`` dict."""
        return cls(
            category=d["category"],
            class_index=d.get("class_index"),
            box=tuple(float(v) for v in d["box"]),  # type: ignore[arg-type]
            segmentation=d.get("segmentation"),
            iscrowd=bool(d.get("iscrowd", False)),
        )


@dataclass(frozen=True)
class Sample:
    """One source image and its target objects.

    sample_id:  stable id within the dataset (COCO image id, file stem, ...).
    image_path: absolute path, already checked to lie inside the dataset root
                (empty when the path could not be resolved inside it; see ``problem``).
    rel_path:   path relative to the dataset root, as stored in runs.
    width, height: size the annotation declares, or ``None`` when it declares none.
    objects:    the target objects; their union is the target region.
    problem:    ``(code, reason)`` when the annotation itself is unusable; the
                engine records the sample as skipped with that reason.
    region_source: ``"annotation"`` or ``"detector"`` (regions proposed by a model).
    notes:      what ``storable_samples`` changed to store the sample (a long id, NUL bytes escaped).
    dropped:    annotations the loader could not turn into objects (unknown category id, a bbox that is
                not four numbers), as ``{"annotation", "category", "code", "reason"}`` dicts; the engine
                drops them with a warning, or skips the sample when one is of the tested class.
    """

    sample_id: str
    image_path: str
    rel_path: str
    width: int | None
    height: int | None
    objects: tuple[TargetObject, ...] = ()
    problem: tuple[str, str] | None = None
    region_source: str = "annotation"
    dropped: tuple = ()
    notes: tuple = ()
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def categories(self) -> tuple[str, ...]:
        """Sorted unique category names of the target objects (the multi-label truth)."""
        return tuple(sorted({o.category for o in self.objects}))


def _escape_nul(text: str) -> str:
    return text.replace("\x00", NUL_ESCAPE)


def storable_id(raw: str) -> str:
    """``raw`` when the store can hold it as is; else its NUL-escaped start plus ``#`` and a hash of the
    full id, at most ``MAX_SAMPLE_ID_CHARS`` long.  The same ``raw`` always gives the same id (resume)."""
    if len(raw) <= MAX_SAMPLE_ID_CHARS and "\x00" not in raw:
        return raw
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:ID_HASH_HEX]
    return f"{_escape_nul(raw)[:SHORT_ID_PREFIX_CHARS]}#{digest}"


def storable_samples(samples) -> tuple:
    """The samples with ids and paths the store can keep, and duplicate ids turned into skipped samples.

    A sample id longer than ``MAX_SAMPLE_ID_CHARS`` or holding a NUL byte becomes ``storable_id(id)``; a
    relative path holding NUL has it escaped as ``NUL_ESCAPE``; each change is noted in ``Sample.notes``
    (the full id included, escaped).  The second and later samples with an id already seen keep a
    distinct id ``<id>#dup<n>`` and the problem ``duplicate-id`` naming the first occurrence, so they are
    stored as skipped rows instead of vanishing.  Objects that are not ``Sample`` pass unchanged.
    """
    out = []
    first: dict[str, Sample] = {}
    repeats: dict[str, int] = {}
    for s in samples:
        if not isinstance(s, Sample):
            out.append(s)
            continue
        notes = list(s.notes)
        sid, rel = str(s.sample_id), s.rel_path
        safe = storable_id(sid)
        if safe != sid:
            notes.append(f"sample id stored as {safe!r}; the full id ({len(sid)} characters) is "
                         f"{_escape_nul(sid)!r}")
        if "\x00" in rel:
            rel = _escape_nul(rel)
            notes.append(f"NUL bytes in the file name escaped as {NUL_ESCAPE!r}")
        if safe in first:
            repeats[safe] = repeats.get(safe, 1) + 1
            orig = first[safe]
            problem = ("duplicate-id", f"sample id {safe!r} appears again (occurrence {repeats[safe]}, file "
                                       f"{rel!r}); the first occurrence (file {orig.rel_path!r}) is the one tested")
            safe = storable_id(f"{safe}#dup{repeats[safe]}")
            s = replace(s, problem=problem, objects=())
        if (safe, rel, tuple(notes)) != (s.sample_id, s.rel_path, s.notes):
            s = replace(s, sample_id=safe, rel_path=rel, notes=tuple(notes))
        if s.problem is None or s.problem[0] != "duplicate-id":
            first[safe] = s
        out.append(s)
    return tuple(out)
