"""Find an annotation's image inside the dataset root whatever folder it sits in.

Annotation files name images in many ways: ``x.jpg`` while the image lies in ``images/x.jpg`` (a zip made
with ``zip -r x.zip images``), ``images/x.jpg`` while it lies at the root, ``train/2017/x.jpg`` while the
folder was renamed.  ``ImageFinder.locate`` takes the name as given when a file is there; otherwise it looks
the name up among the files under the root by its trailing path components: the file sharing the most
trailing components with the name wins, and a tie (two ``x.jpg`` in different folders, the name saying
nothing to tell them apart) is ``BadSampleError('ambiguous-file')`` naming the candidates.  A name that
leaves the root is refused as before (``resolve_inside``) and never looked up.

The walk of the root happens once, on the first name not found as given, and stops after
``MAX_INDEXED_FILES`` files: past that nothing is looked up (a partial index could call a name unique that
is not), and the name stays as given (a run skips it as ``missing-file``).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from objrel.data.images import resolve_inside
from objrel.errors import BadSampleError

# Files a root may hold for names to be looked up in it; a larger tree is not walked past this.
MAX_INDEXED_FILES = 500_000
# Candidates an ambiguity message names.
SHOWN_CANDIDATES = 3


def name_parts(name: str) -> tuple[str, ...]:
    """The path components of an annotation's image name (``\\`` read as ``/``; ``.`` and empty parts dropped)."""
    return tuple(p for p in PurePosixPath(str(name).replace("\\", "/")).parts if p not in (".", "/", ""))


class ImageFinder:
    """Looks image names up under ``root`` (see the module's docstring)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).resolve()
        self._by_name: dict[str, list[tuple[str, ...]]] | None = None
        self.complete = True   # False when the walk stopped at MAX_INDEXED_FILES

    def _index(self) -> dict[str, list[tuple[str, ...]]]:
        if self._by_name is None:
            by_name: dict[str, list[tuple[str, ...]]] = {}
            count = 0
            for folder, dirs, files in os.walk(self.root):   # symlinked folders are not followed
                dirs.sort()
                rel = Path(folder).relative_to(self.root).parts
                for f in sorted(files):
                    count += 1
                    if count > MAX_INDEXED_FILES:
                        self.complete = False
                        self._by_name = {}
                        return self._by_name
                    by_name.setdefault(f, []).append((*rel, f))
            self._by_name = by_name
        return self._by_name

    def match(self, name: str) -> str | None:
        """The relative path (``/``-separated) of the one file under the root that ``name`` names by its
        trailing components, None when no file has its base name; ``BadSampleError('ambiguous-file')`` when
        several share the most trailing components with it."""
        parts = name_parts(name)
        if not parts:
            return None
        candidates = self._index().get(parts[-1], [])
        if not candidates:
            return None

        def shared(c: tuple[str, ...]) -> int:
            n = 0
            while n < min(len(c), len(parts)) and c[-1 - n] == parts[-1 - n]:
                n += 1
            return n

        best = max(shared(c) for c in candidates)
        winners = ["/".join(c) for c in candidates if shared(c) == best]
        if len(winners) > 1:
            shown = ", ".join(winners[:SHOWN_CANDIDATES]) + (" ..." if len(winners) > SHOWN_CANDIDATES else "")
            raise BadSampleError("ambiguous-file", f"image name {name!r} matches {len(winners)} files ({shown}); "
                                                   "expected a name that picks one", path=name)
        return winners[0]

    def locate(self, name: str) -> tuple[str, Path]:
        """``(relative path, absolute path)`` of the image ``name``: the name itself when a file is there or
        when nothing else matches (a run then skips it as missing), else the one file ``match`` finds.
        ``BadSampleError`` for a name that leaves the root (``resolve_inside``) or is ambiguous."""
        path = resolve_inside(self.root, name)
        if path.is_file():
            return name, path
        found = self.match(name)
        if found is None:
            return name, path
        return found, resolve_inside(self.root, found)
