"""Re-test one stored inference with a target box the reviewer redrew.

Imperfect annotations cause most false positives (EMSE21 s5.1.3).  A reviewer
who sees that the box missed part of the object, or covered a second one, redraws
it and re-tests that one sample at once with the run's model and primary votes;
the result is kept in the ``retests`` table beside the original verdicts
(``objrel.store.reviews.retests`` reads them back).
"""

from __future__ import annotations

from dataclasses import dataclass

from objrel.config import RunConfig, run_model
from objrel.data.dataset import Dataset
from objrel.data.images import resolve_inside
from objrel.data.region import check_box
from objrel.data.sample import Sample, TargetObject
from objrel.engine.classify import Engine
from objrel.models import Classifier
from objrel.mutations import Plan
from objrel import access as A
from objrel import work_queue
from objrel.access import Actor
from objrel.store import Store
from objrel.store import reviews as review_rows


@dataclass(frozen=True)
class Retest:
    box: tuple[int, int, int, int]
    votes: dict            # relation -> {"violations", "n", "k", "flagged"}
    verdicts: dict         # mutation key -> verdict
    predicted: list        # the source's predicted labels
    area_ratio: float

    def to_dict(self) -> dict:
        """The re-test's box, votes, verdicts, prediction and area ratio as a JSON-ready dict."""
        return {"box": list(self.box), "votes": self.votes, "verdicts": self.verdicts, "predicted": self.predicted,
                "area_ratio": self.area_ratio}


def primary_plan(run_plan: dict) -> Plan:
    """The run's plan reduced to its primary vote of each relation (the 2-of-3 colours by default)."""
    plan = Plan.from_dict(run_plan)
    groups = tuple(g for g in (plan.primary("MR-1"), plan.primary("MR-2")) if g is not None)
    return Plan(groups, plan.dilate)


def retest_with_box(actor: Actor, store: Store, run_id: int, sample_id: str, box,
                    model: Classifier | None = None, full_plan: bool = False) -> Retest:
    """Test ``sample_id`` again with ``box`` (xyxy pixels) as its only target region.

    The object keeps the class of the stored target; the run's seed, dilation and
    (primary, unless ``full_plan``) vote groups are reused.  Raises NotAllowed unless
    ``actor`` holds the reviewer, adjudicator or admin role (a re-test writes the store and
    costs model time), ValueError for a box outside the image (with the image size in the message).
    """
    A.authorize(actor, A.RETEST, f"{sample_id!r} of run {int(run_id)}")
    run = store.get_run(run_id)
    row = store.sample(run_id, sample_id)
    if row["status"] == "skipped":
        raise ValueError(f"sample {sample_id!r} was skipped ({row['skip_reason']}); it cannot be re-tested")
    w, h = row["width"], row["height"]
    try:
        ibox = check_box(tuple(float(v) for v in box), w, h)
    except Exception as exc:  # BadSampleError carries the reason
        raise ValueError(str(exc)) from exc
    first = TargetObject.from_dict(row["objects"][0])
    obj = TargetObject(first.category, first.class_index, tuple(float(v) for v in ibox))
    root = run.dataset_config["root"]
    sample = Sample(sample_id, str(resolve_inside(root, row["rel_path"])), row["rel_path"], w, h, (obj,))
    config = RunConfig.from_dict(run.config).replace(test_all=True)
    dataset = Dataset(run.dataset, "retest", root, run.dataset_config.get("annotation", ""), (sample,))
    plan = Plan.from_dict(run.plan) if full_plan else primary_plan(run.plan)
    with work_queue.admit(actor, work_queue.RETEST, f"a re-test of {sample_id!r}"):   # a model in memory
        engine = Engine(store, config, model=model or run_model(store, run_id), dataset=dataset, plan=plan)
        srow, _preds, verdicts, votes = engine.test_samples([sample])[0]
    if srow["status"] == "skipped":
        raise ValueError(f"re-test failed: {srow['skip_reason']}")
    result = Retest(
        box=ibox,
        votes={v["relation"]: {k: v[k] for k in ("violations", "n", "k", "flagged")} for v in votes if v["is_primary"]},
        verdicts={v["mutation_key"]: v["verdict"] for v in verdicts},
        predicted=list(srow["predicted"]),
        area_ratio=float(srow["area_ratio"]),
    )
    review_rows.add_retest(store, run_id, sample_id, actor.name, ibox, result.to_dict())
    return result
