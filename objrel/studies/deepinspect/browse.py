"""Finding and browsing inspection results: the results folder, the upload limit, the ranked pairs offered
for example images, and how the planted pairs ranked (no Streamlit: the Inspect page draws these).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from objrel.access import OPEN_RESULTS, TRAIN_PLANTED, UPLOAD_RESULTS, Actor, authorize
from objrel.studies.deepinspect.planted_ranks import format_planted_ranks, planted_ranks
from objrel.studies.deepinspect.result import InspectResult

RESULTS_DIR_ENV = "OBJREL_INSPECT_DIR"
DEFAULT_RESULTS_DIR = "var/inspect"
RESULTS_GLOB = "*.json"
# Largest upload accepted; a 1000-class result is about 40 MB.
MAX_UPLOAD_MB = 200
# Most classes an uploaded result may have: ranking m classes takes m(m-1)/2 pairs (1,000: about 10 s; the
# server's own results folder has no such limit).
MAX_UPLOAD_CLASSES = 1000
MB = 2**20
# Planted pairs in the order format_planted_ranks writes them, with the score that ranks each.
PLANTED_SCORES = (("confusion", "napvd"), ("bias", "avg_bias"))


def results_dir() -> Path:
    """Where ``objrel inspect --out`` results are looked for: $OBJREL_INSPECT_DIR, else var/inspect."""
    return Path(os.environ.get(RESULTS_DIR_ENV) or DEFAULT_RESULTS_DIR)


def newest_result(directory: Path | None = None) -> str:
    """The most recently written results file in ``directory`` (default ``results_dir()``), or ``""``."""
    d = results_dir() if directory is None else Path(directory)
    files = sorted(d.glob(RESULTS_GLOB), key=lambda p: p.stat().st_mtime, reverse=True) if d.is_dir() else []
    return str(files[0]) if files else ""


def check_upload_size(name: str, size: int, limit_mb: int = MAX_UPLOAD_MB) -> None:
    """Raise ValueError for an upload larger than ``limit_mb`` megabytes."""
    if size > limit_mb * MB:
        raise ValueError(f"{name} is {size / MB:.0f} MB; the limit is {limit_mb} MB. Open it by path instead.")


@dataclass(frozen=True)
class PairChoice:
    """A ranked pair offered for example images: its label, its classes, and a bias pair's third class."""

    label: str
    classes: tuple[str, ...]
    third: str | None = None


def pair_choices(confusion: pd.DataFrame, bias: pd.DataFrame, top: int) -> list[PairChoice]:
    """The first ``top`` confusion pairs, then the first ``top`` bias pairs (with their third class)."""
    out = [PairChoice(f"confusion #{r.rank}: {r.a} / {r.b}", (r.a, r.b)) for r in confusion.head(top).itertuples()]
    for r in bias.head(top).itertuples():
        third = r.third or None
        out.append(PairChoice(f"bias #{r.rank}: {r.a} / {r.b} (third: {r.third})",
                              (r.a, r.b, third) if third else (r.a, r.b), third))
    return out


def planted_lines(result: InspectResult) -> list[tuple[str, bool]]:
    """One line per planted pair with whether DeepInspect ranked it at all (False: a class of the pair was
    never predicted)."""
    ranks = planted_ranks(result)
    return [(line, ranks[kind][score] is not None)
            for (kind, score), line in zip(PLANTED_SCORES, format_planted_ranks(ranks))]


# ---------------------------------------------------------------- what the Inspect page may open and start


def result_files(directory: Path | None = None) -> list[str]:
    """The names of the results files in ``directory`` (default ``results_dir()``), newest first: the only
    files the Inspect page offers (nobody types a server path)."""
    d = results_dir() if directory is None else Path(directory)
    if not d.is_dir():
        return []
    files = sorted((p for p in d.glob(RESULTS_GLOB) if p.is_file() and not p.is_symlink()),
                   key=lambda p: p.stat().st_mtime, reverse=True)
    return [p.name for p in files]


def open_result(actor: Actor, name: str, directory: Path | None = None) -> InspectResult:
    """The results file ``name`` of the results folder, for ``actor`` (anyone may look): a name that is not
    one of ``result_files`` is refused with ValueError, so no other server file is ever opened."""
    authorize(actor, OPEN_RESULTS, repr(name))
    d = results_dir() if directory is None else Path(directory)
    if not isinstance(name, str) or name not in result_files(d):
        raise ValueError(f"{name!r} is not a results file of the results folder; choose one of its "
                         f"{len(result_files(d))} files")
    return InspectResult.load(str(d / name))


def read_upload(actor: Actor, name: str, data: bytes) -> InspectResult:
    """An uploaded results file, for a signed-in ``actor``: size checked before parsing.  An uploaded result
    is shown without example images (``examples_allowed`` is False for it): the paths it names were written
    by whoever made the file, so the server opens none of them."""
    authorize(actor, UPLOAD_RESULTS, repr(name))
    check_upload_size(name, len(data))
    result = InspectResult.load(data)
    if result.n_classes > MAX_UPLOAD_CLASSES:
        raise ValueError(f"{name} analyses {result.n_classes} classes; an upload may have at most "
                         f"{MAX_UPLOAD_CLASSES} (ranking grows with the square of the classes); put larger results "
                         "in the results folder")
    return result


def train_planted(actor: Actor, seed: int) -> InspectResult:
    """Train and inspect the planted benchmark for ``seed`` (a small CNN: a few seconds of CPU), for run
    operators and admins only."""
    from objrel.studies.deepinspect.planted import PlantedSpec, run_planted

    authorize(actor, TRAIN_PLANTED, f"seed {int(seed)}")
    return run_planted(PlantedSpec(seed=int(seed)))


def examples_allowed(result: InspectResult, roots: tuple[Path, ...] | None = None) -> bool:
    """Whether example images of ``result`` may be read from disk: planted results rebuild theirs from a
    recipe; a dataset result only when its dataset root lies inside the app's allowed data roots."""
    kind = result.source.get("kind")
    if kind == "planted":
        return True
    if kind != "dataset" or not result.source.get("root"):
        return False
    if roots is None:
        from objrel.engine.run_form import data_roots

        roots = data_roots()
    root = Path(str(result.source["root"])).expanduser().resolve()
    return any(root == r or r in root.parents for r in roots)
