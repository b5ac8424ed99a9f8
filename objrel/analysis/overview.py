"""The store at a glance: each run's headline row and the striking examples that make the point.

Plain functions over the store (no Streamlit); the Overview page draws what they return.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd

from objrel.constants import TORCH_RUNTIME
from objrel.store.kept import NoDelta, add_counts, kept
from objrel.analysis.summary import summarize
from objrel.progress import run_estimate
from objrel.store import RunRecord, Store
from objrel.store import detections as D

MR1, MR2, BOTH = "MR-1", "MR-2", "MR-1&2"
# Striking examples shown by default.
STRIKING_EXAMPLES = 4
# The run history's columns (Overview and Runs pages).
HISTORY_COLUMNS = ("run", "name", "task", "model", "runtime", "dataset", "status", "samples", "tested",
                   "forward passes", "passes/s", "skipped", "created")
# The history's status of a finished run with samples done and none tested.
TESTED_NOTHING = "finished, tested nothing"


def passes_per_second(r: RunRecord) -> str:
    """Forward passes per second of the run's last start (its stored timings), or '' before it ends."""
    t = r.timings or {}
    seconds, passes = t.get("seconds"), t.get("forward_passes")
    return f"{passes / seconds:.1f}" if seconds and passes else ""


def tested_runs(store: Store) -> list[RunRecord]:
    """Runs with at least one tested inference: the ones that can be reviewed or reported on."""
    return [r for r in store.list_runs() if r.n_tested > 0]


def run_history(runs: list[RunRecord]) -> pd.DataFrame:
    """One row per run of ``runs`` (records read once, so a page's progress lines and this table show the same
    numbers) with its live status (``objrel.store.leases.display_status``), samples done / total and forward
    passes as the progress line counts them (``objrel.progress.run_estimate``: done / expected while running).
    A finished run that tested no sample says so in its status (``TESTED_NOTHING``)."""
    from objrel.store.leases import display_status

    rows = []
    for r in runs:
        e, status = run_estimate(r), display_status(r)
        if status == "finished" and r.n_done > 0 and r.n_tested == 0:
            status = TESTED_NOTHING
        passes = (f"{e.passes_done}/{e.passes_expected}" if status == "running" and e.passes_expected is not None
                  else str(e.passes_done))
        runtime = (r.model_config or {}).get("runtime", TORCH_RUNTIME)  # runs stored before it was recorded: torch
        rows.append({"run": r.id, "name": r.name, "task": r.task, "model": r.model, "runtime": runtime,
                     "dataset": r.dataset,
                     "status": status, "samples": f"{e.samples_done}/{e.samples_total}", "tested": r.n_tested,
                     "forward passes": passes, "passes/s": passes_per_second(r), "skipped": r.n_skipped,
                     "created": r.created_at.strftime("%Y-%m-%d %H:%M")})
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


@dataclass(frozen=True)
class NothingTested:
    """A finished run that tested no sample: how many it skipped and left untested, each by its code
    (``samples.skip_code``; an untested sample without one is ``incorrect`` or ``not-tested``), most first."""

    run_id: int
    name: str
    samples: int
    skipped: tuple[tuple[str, int], ...]
    untested: tuple[tuple[str, int], ...]

    @property
    def n_skipped(self) -> int:
        """Skipped samples over all the run's skip reasons."""
        return sum(n for _, n in self.skipped)

    @property
    def n_untested(self) -> int:
        """Untested samples over all the run's reasons."""
        return sum(n for _, n in self.untested)


def runs_that_tested_nothing(store: Store, runs: list[RunRecord] | None = None) -> list[NothingTested]:
    """The finished runs of ``runs`` (default: the store's) with samples done and none tested, with their skip
    and untested reasons counted by code: a run that says "finished" must not hide that it tested nothing."""
    out = []
    for r in store.list_runs() if runs is None else runs:
        if r.status != "finished" or r.n_tested > 0 or r.n_done <= 0:
            continue
        skipped, untested = Counter(), Counter()
        for status, code, correct, n in store.issue_counts(r.id):
            if status == "skipped":
                skipped[code or "unknown"] += n
            elif status == "untested":
                untested[code or ("incorrect" if correct is False else "not-tested")] += n
        out.append(NothingTested(r.id, r.name, r.n_done, tuple(skipped.most_common()),
                                 tuple(untested.most_common())))
    return out


@kept(merge=add_counts)
def sample_issue_total(store: Store, run_id: int, rows: tuple[int, int] | None = None) -> int:
    """How many samples ``objrel.engine.manage.sample_issues`` lists for ``run_id`` (kept per state of the run)."""
    return store.issue_total(run_id, rows)


def _summaries(store: Store):
    for r in store.list_runs():
        if r.n_done:
            yield summarize(store, r.id)


def summary_table(store: Store) -> list[dict]:
    """One headline row per classifier run with results (EMSE21 Tables 5/6), with its correct and
    evaluated counts.  Detection runs have their own table: ``detection_summary_table``."""
    return [{"run": s.run_id, **s.table_row(), "correct": s.correct, "evaluated": s.evaluated}
            for s in _summaries(store) if not s.is_detection]


def detection_summary_table(store: Store) -> list[dict]:
    """One headline row per detection run with results (DetReport Tables 3-4): images, units, units detected,
    flagged units, and the MR-2 verdicts with a missing or an incorrect detection."""
    return [{"run": s.run_id, **s.detection_row()} for s in _summaries(store) if s.is_detection]


def striking_examples(store: Store, limit: int = STRIKING_EXAMPLES, include_incorrect: bool = False) -> list[dict]:
    """Flagged inferences, those flagged by both relations first, then by the lowest object-relevancy
    score S: the examples that make the point to a stakeholder.

    Each: ``run_id``, ``sample_id``, ``relation`` (MR-1, MR-2 or MR-1&2), ``review_relation`` (the one
    relation to open it under: MR-2 when MR-2 flags it), ``image`` (its path in the dataset), ``s``, ``both``,
    ``correct`` (False for an incorrect inference, tested because the run tested all).  Incorrect
    inferences are left out unless ``include_incorrect``: a flag on a wrong answer makes no point about
    the reasons of a right one.  Each run's own best ``limit`` are kept per state of the run
    (``run_striking_examples``), so this reads one row per run.
    """
    out = [ex for r in store.list_runs() if r.n_done
           for ex in run_striking_examples(store, r.id, limit, include_incorrect)]
    out.sort(key=_striking_order)
    return out[:limit]


def _striking_order(d: dict) -> tuple:
    return (not d["correct"], not d["both"], d["s"] if d["s"] is not None else 1.0)


def _best(a: list[dict], b: list[dict], arguments: dict) -> list[dict]:
    """The best ``limit`` of two lists of striking examples over disjoint samples."""
    return sorted(a + b, key=_striking_order)[:arguments["limit"]]


@kept(merge=_best)
def run_striking_examples(store: Store, run_id: int, limit: int = STRIKING_EXAMPLES,
                          include_incorrect: bool = False, rows: tuple[int, int] | None = None) -> list[dict]:
    """``striking_examples`` of one run (of its sample rows in ``rows`` = (after, upto] when given)."""
    run = store.get_run(run_id)
    if D.is_detection_run(run):
        if rows is not None:
            raise NoDelta(f"run {run_id} is a detection run: its units are ranked over the whole run")
        f1, f2 = set(store.flagged_sample_ids(run.id, MR1)), set(store.flagged_sample_ids(run.id, MR2))
    else:
        from objrel.analysis.flag_tables import inferences

        df = inferences(store, run.id, labels=False, rows=rows)
        f1, f2 = set(df.loc[df["mr1"], "sample_id"]), set(df.loc[df["mr2"], "sample_id"])
    if not (f1 | f2):
        return []
    out = []
    for sid, image, score, correct in _tested_inferences(store, run, rows):
        if sid not in f1 and sid not in f2:
            continue
        if not correct and not include_incorrect:
            continue
        both = sid in f1 and sid in f2
        relation = BOTH if both else (MR1 if sid in f1 else MR2)
        out.append({"run_id": run.id, "sample_id": sid, "relation": relation,
                    "review_relation": MR2 if sid in f2 else MR1, "image": image, "s": score, "both": both,
                    "correct": correct})
    out.sort(key=_striking_order)
    return out[:limit]


def _tested_inferences(store: Store, run: RunRecord,
                       rows: tuple[int, int] | None = None) -> list[tuple[str, str, float | None, bool]]:
    """(inference id, image path, S, correct) of every tested inference: a classifier run's samples, a
    detection run's units (named by unit id, as their votes are; correct = detected on the source)."""
    if D.is_detection_run(run):
        images = {s["sample_id"]: s["rel_path"] for s in store.sample_states(run.id)}
        return [(u.unit_id, images[u.image_id], u.s, bool(u.detected)) for u in D.units(store, run.id, tested=True)]
    return [(s["sample_id"], s["rel_path"], s["s"], bool(s["correct"]))
            for s in store.sample_states(run.id, status="tested", rows=rows)]
