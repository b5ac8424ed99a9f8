"""Finding and browsing inspection results: the results folder, the upload limit, the ranked pairs offered
for example images, and how the planted pairs ranked (no Streamlit: the Inspect page draws these).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from objrel.studies.deepinspect.planted import format_planted_ranks, planted_ranks
from objrel.studies.deepinspect.result import InspectResult

RESULTS_DIR_ENV = "OBJREL_INSPECT_DIR"
DEFAULT_RESULTS_DIR = "var/inspect"
RESULTS_GLOB = "*.json"
# Largest upload accepted (ARCHITECTURE.md decision 9); a 1000-class result is about 40 MB.
MAX_UPLOAD_MB = 200
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
