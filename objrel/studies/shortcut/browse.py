"""Browsing the planted-shortcut benchmark's results: where they are, the score table for a choice of
models and ground truth, and the state of a quick benchmark started in the background (no Streamlit:
the Shortcut page draws these).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from objrel.engine.jobs import pid_alive
from objrel.studies.shortcut import bench as B

QUICK_DIR = "quick"   # a quick benchmark writes beside the results file shown, in this folder
BOTH_MODELS = "both"
MODEL_CHOICES = (BOTH_MODELS, *B.MODELS)
MODEL_LABELS = {BOTH_MODELS: "both models pooled", "biased": "biased model", "unbiased": "unbiased model"}
TRUTH_CHOICES = ("reliant", "matched")
TRUTH_LABELS = {"reliant": "background-reliant (every detector)",
                "matched": "matched facet (MR-2: swap-dependent; MR-1: background-sufficient)"}
RUNNING, FINISHED, FAILED = "running", "finished", "failed"


def default_results_path() -> str:
    return str(Path(B.DEFAULT_OUT) / B.RESULTS_FILE)


def quick_dir(results_path: str) -> str:
    """Where a quick benchmark started from the page writes (an absolute path, the one ``bench.start_quick``
    writes to and ``quick_state`` reads from): QUICK_DIR beside ``results_path``, or the folder of
    ``results_path`` itself when that is already a quick benchmark's folder (no quick/quick/...)."""
    parent = Path(results_path).expanduser().resolve().parent
    return str(parent if parent.name == QUICK_DIR else parent / QUICK_DIR)


def score_table_for(results: dict, model: str, truth: str) -> pd.DataFrame:
    """Detector scores summed over seeds for ``model`` (one of MODEL_CHOICES) against ``truth``."""
    if model not in MODEL_CHOICES or truth not in TRUTH_CHOICES:
        raise ValueError(f"expected a model of {MODEL_CHOICES} and a truth of {TRUTH_CHOICES}, got {model!r}, "
                         f"{truth!r}")
    return B.score_table(B.pooled_scores(results, None if model == BOTH_MODELS else model, truth))


@dataclass(frozen=True)
class QuickState:
    state: str             # RUNNING, FINISHED or FAILED
    results_file: str      # where its results are (once FINISHED)


def quick_state(pid: int, out: str) -> QuickState:
    """A quick benchmark's state: running while its process lives, then finished if it wrote its results."""
    results_file = str(Path(out).resolve() / B.RESULTS_FILE)
    if pid_alive(pid):
        return QuickState(RUNNING, results_file)
    return QuickState(FINISHED if Path(results_file).is_file() else FAILED, results_file)
