"""The stage order: which objrel modules form each stage, and which stages each may import.

Imports run only downward: a stage may import its own modules and the stages it names, every one of which
stands before it in ``STAGES``.  ``tests/test_stage_order.py`` parses every module under ``objrel/`` (imports at
module level and inside functions) and fails, naming file and line, on any import this table does not allow.
The table matches shared/ARCHITECTURE.md's "Stage order" and the README's architecture section.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    """``name``; ``modules``: dotted names of the modules and packages in it (a package takes its submodules);
    ``may_import``: the names of the lower stages it may import."""

    name: str
    modules: tuple[str, ...]
    may_import: tuple[str, ...]


ROOT = "objrel"
BOTTOM = "bottom"
DATA = "data"
MUTATIONS = "mutations"
MODELS = "models"
RELATIONS = "relations"
STORE = "store"
PROGRESS = "progress"
CONFIG = "config"
ENGINE = "engine"
REVIEW = "review"
ANALYSIS = "analysis"
STUDIES = "studies"
TOP = "top"

STAGES = (
    # errors, named constants, interval arithmetic, CSV-cell safety, the roles and action table with the one gate
    # (``access``), the caps on costly work (``work_queue``), which extra installs which package (``extras``), and
    # this table: the standard library only, so every stage can use them.
    Stage(BOTTOM, (ROOT, "objrel.errors", "objrel.constants", "objrel.intervals", "objrel.csvsafe",
                   "objrel.access", "objrel.work_queue", "objrel.extras", "objrel.stages"), ()),
    # samples, boxes, masks, detections as pure types; dataset loaders; uploads
    Stage(DATA, ("objrel.data",), (BOTTOM,)),
    # pure operators, plans, recipes
    Stage(MUTATIONS, ("objrel.mutations",), (BOTTOM, DATA)),
    # adapters, runtimes, the zoo (torch, onnxruntime, openvino, imported lazily where a listing needs none)
    Stage(MODELS, ("objrel.models",), (BOTTOM, DATA)),
    # relation checks, association, votes and scores over a plan's mutations
    Stage(RELATIONS, ("objrel.relations",), (BOTTOM, DATA, MUTATIONS)),
    # the only code that speaks SQL; never models, never torch
    Stage(STORE, ("objrel.store",), (BOTTOM, DATA, RELATIONS)),
    # rate and time left of a run from its stored record (one reader opens a job's store)
    Stage(PROGRESS, ("objrel.progress",), (BOTTOM, STORE)),
    # a run's settings, and loading the classifier a stored run names (models imported lazily)
    Stage(CONFIG, ("objrel.config",), (BOTTOM, DATA, MUTATIONS, MODELS, RELATIONS)),
    # runs, sweeps, re-tests, background jobs, Ray: everything below
    Stage(ENGINE, ("objrel.engine",), (BOTTOM, DATA, MUTATIONS, MODELS, RELATIONS, STORE, PROGRESS, CONFIG)),
    # accounts, judgments, samples, agreement, rebuilt mutants and their LIME explanations; never engine
    Stage(REVIEW, ("objrel.review", "objrel.explain"),
          (BOTTOM, DATA, MUTATIONS, RELATIONS, STORE, PROGRESS, CONFIG)),
    # summaries, studies, exports, reports over the store and the review; never engine
    Stage(ANALYSIS, ("objrel.analysis",), (BOTTOM, DATA, MUTATIONS, RELATIONS, STORE, PROGRESS, CONFIG, REVIEW)),
    # DeepInspect and the planted-shortcut benchmark: they run engines and analyse what they stored
    Stage(STUDIES, ("objrel.studies",),
          (BOTTOM, DATA, MUTATIONS, MODELS, RELATIONS, STORE, PROGRESS, CONFIG, ENGINE, REVIEW, ANALYSIS)),
    # the command line, the Streamlit helpers, the web gate around the app and the demo build: anything above
    Stage(TOP, ("objrel.cli", "objrel.app", "objrel.web", "objrel.demo", "objrel.__main__"),
          (BOTTOM, DATA, MUTATIONS, MODELS, RELATIONS, STORE, PROGRESS, CONFIG, ENGINE, REVIEW, ANALYSIS, STUDIES)),
)

BY_NAME = {s.name: s for s in STAGES}


def _check_table() -> None:
    """Every stage names only stages before it (so the order has no loop) and no module twice."""
    seen: set[str] = set()
    owners: dict[str, str] = {}
    for s in STAGES:
        later = [n for n in s.may_import if n not in seen]
        if later:
            raise RuntimeError(f"stage {s.name!r} may import only stages before it; it names {later}")
        for m in s.modules:
            if m in owners:
                raise RuntimeError(f"module {m!r} is in stages {owners[m]!r} and {s.name!r}")
            owners[m] = s.name
        seen.add(s.name)


_check_table()


def stage_of(module: str) -> Stage | None:
    """The stage of the dotted objrel module ``module``: the stage holding its longest listed prefix (None
    for a module no stage holds; the root package ``objrel`` holds only itself)."""
    best, length = None, -1
    for s in STAGES:
        for m in s.modules:
            if (module == m or (m != ROOT and module.startswith(m + "."))) and len(m) > length:
                best, length = s, len(m)
    return best


def allowed(importer: str, imported: str) -> bool:
    """Whether module ``importer`` may import module ``imported`` (both dotted objrel names)."""
    a, b = stage_of(importer), stage_of(imported)
    return a is not None and b is not None and (a is b or b.name in a.may_import)
