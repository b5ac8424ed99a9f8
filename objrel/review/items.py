"""What the Review page shows for one flagged inference, assembled from the store.

Pure functions (no Streamlit): the page calls ``review_item`` and draws it.  Images
are rebuilt from their recipes and leave as thumbnails (longer side THUMB_SIDE px),
so a review session's memory does not grow with the photos' resolution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from objrel.constants import DETECTION_TASK
from objrel.review.rebuild import source_of
from objrel.mutations import Mutation, NotApplicable, Plan, Target, derive_seed, make_mutant
from objrel.relations.classify import Prediction
from objrel.store import RunRecord, Store
from objrel.relations import common as C
from objrel.relations.votes import scoring_basis

THUMB_SIDE = 320            # longer side of every image sent to the browser, in pixels
OUTLINE_RGB = (255, 215, 0)  # colour of the target-region outline on the source
OUTLINE_PX = 2
# Detection runs: the associated ground-truth object's box (gold, OUTLINE_RGB), every detection record
# (blue) and the record compared by the relation, rcd on the source and rcd' on a mutant (magenta).
DETECTION_RGB = (0, 150, 255)
MATCHED_RGB = (255, 0, 200)


@dataclass(frozen=True)
class Panel:
    """One image on the page: the source or a mutant, with what the model said about it."""

    key: str                   # "source" or the mutation key
    title: str
    image: np.ndarray          # thumbnail, (h, w, 3) uint8
    top: list                  # [(label name, probability), ...] top-5
    relation: str | None = None
    verdict: str | None = None
    source_certainty: float | None = None
    mutant_certainty: float | None = None
    note: str | None = None
    detections: tuple = ()     # detection runs: one dict per record (label, score, box, IoU with the object)


@dataclass(frozen=True)
class ReviewItem:
    run_id: int
    sample_id: str
    relation: str
    rel_path: str
    ground_truth: list
    area_ratio: float
    s_p: float | None
    s_r: float | None
    s: float | None
    votes: dict                 # group name -> vote row
    source: Panel
    mutants: list               # primary-vote panels, the relation under review first
    others: list = field(default_factory=list)  # every other mutation: (key, relation, verdict, top1, p)
    boxes: list = field(default_factory=list)   # target boxes (xyxy, full-size pixels)
    size: tuple = (0, 0)                        # full-size (width, height)
    task: str = "single"                        # the run's task: single | multi | detection
    correct: bool | None = None                 # False: an incorrect inference (tested because the run tested all);
                                                # detection units: detected on the source (T = 1)
    scoring: str = ""                           # how S_p / S_r / S were computed, over which operations
    scoring_name: str = C.SCORING_APPLICABLE    # which definition: seed002 or applicable (objrel.relations.common)
    box_only: bool = False                      # the target region has no mask: S carries the box-only flag

    @property
    def is_incorrect(self) -> bool:
        """True when the model got the source wrong (False, not unknown)."""
        return self.correct is False

    @property
    def is_detection(self) -> bool:
        """True for an item of a detection run."""
        return self.task == DETECTION_TASK

    def target_box(self) -> tuple:
        """The first target box (xyxy, full-size pixels), or the whole image when the target has none."""
        return tuple(self.boxes[0]) if self.boxes else (0, 0, *self.size)

    def violating_mutant(self, relation: str) -> Panel:
        """The first mutant of ``relation`` whose check is violated (the first mutant when none is)."""
        return next((p for p in self.mutants if p.relation == relation and p.verdict == "violated"), self.mutants[0])


def thumbnail(image: np.ndarray, side: int = THUMB_SIDE) -> np.ndarray:
    """``image`` scaled down so its longer side is ``side`` pixels (unchanged when it is already smaller)."""
    h, w = image.shape[:2]
    scale = side / max(h, w)
    if scale >= 1.0:
        return image
    return cv2.resize(image, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)


def outline(image: np.ndarray, region: np.ndarray, colour=OUTLINE_RGB, width: int = OUTLINE_PX) -> np.ndarray:
    """A copy of ``image`` with the region's contour drawn on it."""
    out = np.ascontiguousarray(image.copy())
    contours, _ = cv2.findContours(region.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    cv2.drawContours(out, contours, -1, colour, width, lineType=cv2.LINE_AA)
    return out


def draw_box(image: np.ndarray, box, colour=(0, 200, 255), width: int = 2) -> np.ndarray:
    """A copy of ``image`` with ``box`` outlined in ``colour``."""
    out = np.ascontiguousarray(image.copy())
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    cv2.rectangle(out, (x1, y1), (max(x1, x2 - 1), max(y1, y2 - 1)), colour, width)
    return out


def selection_box(selection, size) -> tuple[int, int, int, int] | None:
    """The xyxy box (integer full-size pixels) a box selection drew on the source, or None.

    ``selection``: Streamlit's plotly selection state (``event.selection``: a mapping with ``box``, a list of
    ``{"x": [x0, x1], "y": [y0, y1], ...}`` in the figure's axis units, which ``charts.box_select_figure``
    makes full-size pixels); the last box counts.  The box is widened to whole pixels (floor, ceil),
    clamped to the image (``size`` = (width, height)) and None when nothing of it is left inside.
    """
    import math

    boxes = (selection or {}).get("box") or []
    if not boxes:
        return None
    last = boxes[-1]
    xs, ys = last.get("x") or [], last.get("y") or []
    if len(xs) < 2 or len(ys) < 2:
        return None
    w, h = int(size[0]), int(size[1])
    x1, x2 = max(0, math.floor(min(xs))), min(w, math.ceil(max(xs)))
    y1, y2 = max(0, math.floor(min(ys))), min(h, math.ceil(max(ys)))
    if x2 <= x1 or y2 <= y1:
        return None
    return int(x1), int(y1), int(x2), int(y2)


def _top(pred: dict | None, names: list[str]) -> list:
    if not pred:
        return []
    p = Prediction.from_dict(pred)
    return [(names[i] if 0 <= i < len(names) else str(i), float(q)) for i, q in zip(p.top_labels, p.top_probs)]


def primary_mutations(plan: Plan, relation: str) -> list[Mutation]:
    """The primary vote's mutations, the relation under review first (3 + 3 for the colour plan)."""
    other = "MR-2" if relation == "MR-1" else "MR-1"
    out = []
    for rel in (relation, other):
        g = plan.primary(rel)
        if g is not None:
            out += list(g.mutations)
    return out


@dataclass(frozen=True)
class StoredSample:
    """What the store holds about one tested sample of a run, with its source image decoded."""

    run: RunRecord
    sample_id: str
    names: list                 # the run's class names
    row: dict                   # the samples row
    predictions: dict           # mutation key ("source" too) -> predictions row
    verdicts: dict              # mutation key -> verdict row
    votes: dict                 # group name -> vote row
    plan: Plan
    image: np.ndarray           # the full-size source, (h, w, 3) uint8
    target: Target

    def prediction(self, key: str) -> dict | None:
        """The stored prediction of mutation ``key`` (the source under its own key), or None."""
        return self.predictions.get(key, {}).get("prediction")

    def seed(self, key: str) -> int:
        """The mutation's stored seed, or the one derived from (run seed, sample id, mutation)."""
        stored = self.predictions.get(key, {}).get("seed")
        return int(stored) if stored else derive_seed(self.run.seed, self.sample_id, key)


def stored_sample(store: Store, run_id: int, sample_id: str) -> StoredSample:
    """Everything the store holds on one sample of a run: rows, predictions, verdicts, votes, image and target."""
    run = store.get_run(run_id)
    image, target = source_of(store, run_id, sample_id)
    return StoredSample(
        run=run, sample_id=str(sample_id), names=run_class_names(store, run_id), row=store.sample(run_id, sample_id),
        predictions=store.predictions(run_id, sample_id),
        verdicts={v["mutation_key"]: v for v in store.verdicts(run_id, sample_id)},
        votes={v["group_name"]: v for v in store.votes(run_id, sample_id)},
        plan=Plan.from_dict(run.plan), image=image, target=target)


def _blank(image: np.ndarray, side: int) -> np.ndarray:
    """A white thumbnail the size of ``image``'s: the panel of a mutation that was not applicable."""
    return np.full_like(thumbnail(image, side), 255)


def _mutant_panels(s: StoredSample, shown: list[Mutation], side: int, top, decorate=None, rows=None) -> list[Panel]:
    """One panel per shown mutation: the mutant rebuilt from its recipe, ``decorate(mutant, prediction)``
    drawn on it, ``top(prediction)`` and ``rows(prediction)`` (the detections table) beside it."""
    panels = []
    for m in shown:
        v = s.verdicts.get(m.key, {})
        pred = s.prediction(m.key)
        try:
            mutant = make_mutant(s.image, s.target, m, s.seed(m.key))
            thumb = thumbnail(decorate(mutant, pred) if decorate else mutant, side)
        except NotApplicable as exc:
            thumb, v = _blank(s.image, side), {**v, "note": str(exc)}
        panels.append(Panel(m.key, m.key, thumb, top(pred), m.relation, v.get("verdict"), v.get("source_certainty"),
                            v.get("mutant_certainty"), v.get("note"), rows(pred) if rows else ()))
    return panels


def _other_mutations(s: StoredSample, shown: list[Mutation], describe) -> list[dict]:
    """One row per verdict of a mutation not shown as a panel: ``describe(key, verdict row, prediction)``."""
    shown_keys = {m.key for m in shown}
    return [describe(key, v, s.prediction(key)) for key, v in s.verdicts.items() if key not in shown_keys]


def _assemble(s: StoredSample, relation: str, source: Panel, panels: list, others: list, task: str) -> ReviewItem:
    row, names = s.row, s.names
    return ReviewItem(
        run_id=s.run.id, sample_id=s.sample_id, relation=relation, rel_path=row["rel_path"],
        ground_truth=[names[i] for i in (row["gt_labels"] or []) if 0 <= i < len(names)],
        area_ratio=float(row["area_ratio"] or 0.0), s_p=row["s_p"], s_r=row["s_r"], s=row["s"], votes=s.votes,
        source=source, mutants=panels, others=others, boxes=[list(b) for b in s.target.boxes],
        size=(int(row["width"]), int(row["height"])), task=task,
        correct=None if row.get("correct") is None else bool(row["correct"]),
        scoring=scoring_basis(s.plan).describe(), scoring_name=scoring_basis(s.plan).name,
        box_only=C.box_only(row.get("objects") or ()),
    )


def review_item(store: Store, run_id: int, sample_id: str, relation: str, side: int = THUMB_SIDE) -> ReviewItem:
    """Rebuild the source and its primary mutants and pair them with the stored predictions and verdicts."""
    if store.get_run(run_id).task == DETECTION_TASK:
        return detection_review_item(store, run_id, sample_id, relation, side)
    s = stored_sample(store, run_id, sample_id)

    def top(pred):
        return _top(pred, s.names)

    def describe(key, v, pred):
        best = top(pred)
        return {"mutation": key, "relation": v["relation"], "verdict": v["verdict"],
                "top-1": best[0][0] if best else None, "p": round(best[0][1], 4) if best else None}

    source = Panel("source", "source", thumbnail(outline(s.image, s.target.region), side), top(s.prediction("source")))
    shown = primary_mutations(s.plan, relation)
    return _assemble(s, relation, source, _mutant_panels(s, shown, side, top), _other_mutations(s, shown, describe),
                     task=s.run.task)


# ---------------------------------------------------------------- detection runs


def _line_width(image: np.ndarray, side: int) -> int:
    """Box line width in full-size pixels that stays about 2 px wide on a ``side``-px thumbnail."""
    return max(OUTLINE_PX, round(OUTLINE_PX * max(image.shape[:2]) / side))


def draw_detections(image: np.ndarray, gt_box, detections: dict | None, compared: int | None,
                    side: int = THUMB_SIDE) -> np.ndarray:
    """A copy of ``image`` with the ground-truth box (gold), every record (blue) and the compared record
    (magenta) drawn.  ``detections``: the image's records (``Detections.to_dict``, boxes xyxy full-size
    pixels), None when there are none; ``compared``: the index of the record the relation compares, or None."""
    width = _line_width(image, side)
    boxes = (detections or {}).get("boxes", [])
    out = image
    for j, box in enumerate(boxes):
        if j != compared:
            out = draw_box(out, box, DETECTION_RGB, max(1, width // 2))
    if gt_box is not None:
        out = draw_box(out, gt_box, OUTLINE_RGB, width)
    if compared is not None and 0 <= compared < len(boxes):
        out = draw_box(out, boxes[compared], MATCHED_RGB, width)
    return out


def _detection_top(index: int | None, label: str | None, score: float | None) -> list:
    """The compared record as the panel's one "top" entry: ``[(label, score)]``, or ``[]`` when there is none."""
    return [(label, float(score))] if index is not None else []


def detection_rows(detections: dict | None, compared: int | None, gt_box) -> tuple:
    """One dict per record: label, score, box (rounded xyxy pixels), IoU with the ground-truth box and
    whether it is the record the relation compares."""
    from objrel.relations.associate import iou

    det = detections or {}
    return tuple({"label": lab, "score": round(float(sc), 4), "box": [round(float(v), 1) for v in box],
                  "IoU with object": round(iou(box, gt_box), 3) if gt_box is not None else None,
                  "compared": j == compared}
                 for j, (box, lab, sc) in enumerate(zip(det.get("boxes", []), det.get("labels", []),
                                                        det.get("scores", []))))


def detection_review_item(store: Store, run_id: int, unit_id: str, relation: str,
                          side: int = THUMB_SIDE) -> ReviewItem:
    """A detection unit (``unit_id``, as the votes and the review queue name it): the source and the primary
    mutants with the associated object's box and the records drawn before and after mutation; the IoUs of
    rcd and rcd' with the object in the panels' certainty fields, the outcome (missing / incorrect
    detection, removed, ...) in their notes."""
    from objrel.review.rebuild import unit_source_of
    from objrel.store import detections as D

    run = store.get_run(run_id)
    unit = D.unit(store, run_id, unit_id)
    row = store.sample(run_id, unit.image_id)
    checks = {v.mutation_key: v for v in D.unit_verdicts(store, run_id, unit)}
    image, target = unit_source_of(store, run_id, unit_id)
    gt_box = unit.object_box
    found = D.source_detections(store, run_id, unit.image_id)
    src = Panel("source", "source", thumbnail(draw_detections(image, gt_box, found, unit.record_index, side), side),
                _detection_top(unit.record_index, unit.record_label, unit.record_score),
                source_certainty=unit.iou_source,
                note="detected (T = 1)" if unit.detected else "not detected (T = 0)",
                detections=detection_rows(found, unit.record_index, gt_box))
    shown = primary_mutations(Plan.from_dict(run.plan), relation)
    panels = []
    for m in shown:
        v = checks.get(m.key)
        seed = v.seed if v is not None and v.seed is not None else derive_seed(run.seed, unit_id, m.key)
        dets, idx = (v.detections, v.record_index) if v is not None else (None, None)
        note = (v.outcome or v.note) if v is not None else None
        try:
            thumb = thumbnail(draw_detections(make_mutant(image, target, m, seed), gt_box, dets, idx, side), side)
        except NotApplicable as exc:
            thumb, note = np.full_like(thumbnail(image, side), 255), str(exc)
        panels.append(Panel(m.key, m.key, thumb,
                            _detection_top(idx, v.record_label, v.record_score) if v is not None else [],
                            m.relation, v.verdict if v is not None else None,
                            v.iou_source if v is not None else None, v.iou_mutant if v is not None else None,
                            note, detection_rows(dets, idx, gt_box)))
    shown_keys = {m.key for m in shown}
    others = [{"mutation": v.mutation_key, "relation": v.relation, "verdict": v.verdict,
               "outcome": v.outcome or v.note, "IoU": None if v.iou_mutant is None else round(v.iou_mutant, 3),
               "record": v.record_label, "score": None if v.record_score is None else round(v.record_score, 4)}
              for v in checks.values() if v.mutation_key not in shown_keys]
    return ReviewItem(
        run_id=run_id, sample_id=unit.unit_id, relation=relation, rel_path=row["rel_path"],
        ground_truth=[unit.label], area_ratio=float(unit.area_ratio or 0.0), s_p=unit.s_p, s_r=unit.s_r, s=unit.s,
        votes={v["group_name"]: v for v in store.votes(run_id, unit.unit_id)}, source=src, mutants=panels,
        others=others, boxes=[list(b) for b in target.boxes], size=(int(row["width"]), int(row["height"])),
        task=DETECTION_TASK, correct=bool(unit.detected), box_only=C.box_only([unit.object]),
    )


_NAMES_CACHE: dict = {}


def run_class_names(store: Store, run_id: int) -> list[str]:
    """Class names of a run (cached per store URL and run: they never change)."""
    key = (store.url, int(run_id))
    if key not in _NAMES_CACHE:
        _NAMES_CACHE[key] = store.class_names(run_id)
    return _NAMES_CACHE[key]


def flagged_queue(store: Store, run_id: int, relation: str) -> list[str]:
    """Every flagged sample of a run and relation (primary vote), sorted by id."""
    return store.flagged_sample_ids(run_id, relation)


# ---------------------------------------------------------------- adjudication cards

CARD_SIDE = 160             # longer side of an adjudication card's thumbnails, in pixels


@dataclass(frozen=True)
class ItemCard:
    """A flagged item at a glance (the Agreement page's adjudication cards): its file, the source with its
    target outlined and the relation's primary mutants; ``problem`` says why no image could be rebuilt."""

    run_id: int
    sample_id: str
    relation: str
    rel_path: str
    source: Panel | None = None
    mutants: tuple = ()
    correct: bool | None = None
    problem: str | None = None


def item_card(store: Store, run_id: int, sample_id: str, relation: str, side: int = CARD_SIDE) -> ItemCard:
    """The card of one item: its thumbnails when its source can be read, else its file name and the reason."""
    from objrel.errors import ObjrelError

    try:
        item = review_item(store, run_id, sample_id, relation, side=side)
    except (ObjrelError, OSError, ValueError, KeyError) as exc:
        row = _card_row(store, run_id, sample_id)
        return ItemCard(run_id, str(sample_id), relation, row.get("rel_path") or str(sample_id),
                        correct=None if row.get("correct") is None else bool(row["correct"]), problem=str(exc))
    return ItemCard(run_id, item.sample_id, relation, item.rel_path, item.source,
                    tuple(p for p in item.mutants if p.relation == relation), item.correct)


def _card_row(store: Store, run_id: int, sample_id: str) -> dict:
    """The samples row of an item (a detection unit's image row); empty when there is none."""
    from objrel.store import detections as D

    try:
        if store.get_run(run_id).task == DETECTION_TASK:
            return store.sample(run_id, D.unit(store, run_id, sample_id).image_id) or {}
        return store.sample(run_id, sample_id) or {}
    except (KeyError, ValueError, LookupError):
        return {}
