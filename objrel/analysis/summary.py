"""Run-level figures: the per-model row of EMSE21 Tables 5 and 6."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from objrel.store.kept import NoDelta, kept
from objrel.relations.detect import INCORRECT_DETECTION, MISSING_DETECTION
from objrel.store import Store
from objrel.store import detections as D


@dataclass(frozen=True)
class Summary:
    """EMSE21 Table 5/6 row for one run.

    evaluated: samples the model classified (not skipped);  correct: correct inferences.
    accuracy:  correct / evaluated.
    mr1, mr2, both: correct inferences flagged by the primary MR-1 vote, the primary
               MR-2 vote, and both; the ratios divide by ``correct`` (as the paper does).
    flagged_all_*: the same counts over every tested inference (differs only with test_all).

    Detection runs count images and units: ``samples`` and ``skipped`` are images, ``evaluated`` the units
    of the images not skipped, ``correct`` the units detected on the source (T = 1), ``tested`` the tested
    units, ``accuracy`` the share of units detected; ``missing_detections`` / ``incorrect_detections`` are
    the MR-2 verdicts (unit x mutation) with that outcome, the two columns of DetReport Tables 3-4 (None for
    classifier runs).
    """

    run_id: int
    model: str
    dataset: str
    samples: int
    skipped: int
    evaluated: int
    correct: int
    tested: int
    accuracy: float | None
    mr1: int
    mr2: int
    both: int
    mr1_ratio: float | None
    mr2_ratio: float | None
    both_ratio: float | None
    flagged_all_mr1: int
    flagged_all_mr2: int
    missing_detections: int | None = None
    incorrect_detections: int | None = None

    def to_dict(self) -> dict:
        """The summary's fields as a dict."""
        return asdict(self)

    def table_row(self) -> dict:
        """The summary as one row of EMSE21's Table 1 (accuracy and violation counts with ratios), as text."""
        pct = lambda r: "-" if r is None else f"{100 * r:.2f}%"  # noqa: E731
        row = {
            "Model": self.model,
            "Accuracy": pct(self.accuracy),
            "Violating MR-1": f"{self.mr1} ({pct(self.mr1_ratio)})",
            "Violating MR-2": f"{self.mr2} ({pct(self.mr2_ratio)})",
            "Violating MR-1&2": f"{self.both} ({pct(self.both_ratio)})",
        }
        if self.missing_detections is not None:
            row["Missing detections"] = str(self.missing_detections)
            row["Incorrect detections"] = str(self.incorrect_detections)
        return row

    @property
    def is_detection(self) -> bool:
        """True for a detection run (its summary counts missing and incorrect detections)."""
        return self.missing_detections is not None

    def detection_row(self) -> dict:
        """A detection run's headline (DetReport Tables 3-4): images, units, the share detected on the source,
        the flagged detected units and the MR-2 verdicts with a missing or an incorrect detection."""
        pct = lambda r: "-" if r is None else f"{100 * r:.1f}%"  # noqa: E731
        return {
            "Model": self.model,
            "Dataset": self.dataset,
            "Images": self.samples - self.skipped,
            "Units": self.evaluated,
            "Detected": f"{self.correct} ({pct(self.accuracy)})",
            "Violating MR-1": f"{self.mr1} ({pct(self.mr1_ratio)})",
            "Violating MR-2": f"{self.mr2} ({pct(self.mr2_ratio)})",
            "Missing detections": self.missing_detections,
            "Incorrect detections": self.incorrect_detections,
        }


def flagged_sets(store: Store, run_id: int) -> tuple[set[str], set[str]]:
    """The ids of the samples flagged by MR-1 and by MR-2 in run ``run_id``."""
    return (set(store.flagged_sample_ids(run_id, "MR-1")), set(store.flagged_sample_ids(run_id, "MR-2")))


def _summary(run_id: int, model: str, dataset: str, samples: int, skipped: int, evaluated: int, correct: int,
             tested: int, mr1: int, mr2: int, both: int, flagged_all_mr1: int, flagged_all_mr2: int,
             detection: dict) -> Summary:
    ratio = lambda k: k / correct if correct else None  # noqa: E731
    return Summary(
        run_id=run_id, model=model, dataset=dataset, samples=samples, skipped=skipped, evaluated=evaluated,
        correct=correct, tested=tested, accuracy=correct / evaluated if evaluated else None,
        mr1=mr1, mr2=mr2, both=both, mr1_ratio=ratio(mr1), mr2_ratio=ratio(mr2), both_ratio=ratio(both),
        flagged_all_mr1=flagged_all_mr1, flagged_all_mr2=flagged_all_mr2, **detection)


# Summary fields that add up over disjoint samples of one classifier run.
ADDITIVE = ("samples", "skipped", "evaluated", "correct", "tested", "mr1", "mr2", "both", "flagged_all_mr1",
            "flagged_all_mr2")


def _merge(a: Summary, b: Summary, arguments: dict) -> Summary:
    """Two classifier-run summaries over disjoint samples as one."""
    return _summary(a.run_id, a.model, a.dataset, **{k: getattr(a, k) + getattr(b, k) for k in ADDITIVE},
                    detection={})


@kept(merge=_merge)
def summarize(store: Store, run_id: int, rows: tuple[int, int] | None = None) -> Summary:
    """Counts and violation ratios of one stored run (samples, units for a detection run); kept per state of the
    run (``objrel.store.kept``), a running classifier run's brought up to date with the samples it added."""
    from objrel.analysis.flag_tables import inferences

    rec = store.get_run(run_id)
    if not D.is_detection_run(rec):
        df = inferences(store, run_id, labels=False, rows=rows)
        cor = df[df["correct"]]
        return _summary(run_id, rec.model, rec.dataset, samples=len(df), skipped=int((~df["evaluated"]).sum()),
                        evaluated=int(df["evaluated"].sum()), correct=len(cor), tested=int(df["tested"].sum()),
                        mr1=int(cor["mr1"].sum()), mr2=int(cor["mr2"].sum()), both=int(cor["both"].sum()),
                        flagged_all_mr1=int(df["mr1"].sum()), flagged_all_mr2=int(df["mr2"].sum()), detection={})
    if rows is not None:
        raise NoDelta(f"run {run_id} is a detection run: its units are counted over the whole run")
    images = store.sample_states(run_id)
    units = D.units(store, run_id)
    correct_ids = {u.unit_id for u in units if u.detected}
    outcomes = D.outcome_counts(store, run_id)
    f1, f2 = flagged_sets(store, run_id)
    c1, c2 = f1 & correct_ids, f2 & correct_ids
    return _summary(run_id, rec.model, rec.dataset, samples=len(images),
                    skipped=sum(r["status"] == "skipped" for r in images), evaluated=len(units),
                    correct=len(correct_ids), tested=sum(u.tested for u in units), mr1=len(c1), mr2=len(c2),
                    both=len(c1 & c2), flagged_all_mr1=len(f1), flagged_all_mr2=len(f2),
                    detection={"missing_detections": sum(c.n for c in outcomes if c.outcome == MISSING_DETECTION),
                               "incorrect_detections": sum(c.n for c in outcomes
                                                           if c.outcome == INCORRECT_DETECTION)})
