"""What the Review page shows for one flagged inference, assembled from the store.

Pure functions (no Streamlit): the page calls ``review_item`` and draws it.  Images
are rebuilt from their recipes and leave as thumbnails (longer side THUMB_SIDE px),
so a review session's memory does not grow with the photos' resolution.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from objrel.mutations.rebuild import source_of
from objrel.mutations import Mutation, NotApplicable, Plan, derive_seed, make_mutant
from objrel.relations.classify import Prediction
from objrel.store import Store

THUMB_SIDE = 320            # longer side of every image sent to the browser, in pixels
OUTLINE_RGB = (255, 215, 0)  # colour of the target-region outline on the source
OUTLINE_PX = 2
# Detection runs: the associated ground-truth object's box (gold, OUTLINE_RGB), every detection record
# (blue) and the record compared by the relation, rcd on the source and rcd' on a mutant (magenta).
DETECTION_RGB = (0, 150, 255)
MATCHED_RGB = (255, 0, 200)
DETECTION_TASK = "detection"


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


def thumbnail(image: np.ndarray, side: int = THUMB_SIDE) -> np.ndarray:
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
    out = np.ascontiguousarray(image.copy())
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    cv2.rectangle(out, (x1, y1), (max(x1, x2 - 1), max(y1, y2 - 1)), colour, width)
    return out


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


def review_item(store: Store, run_id: int, sample_id: str, relation: str, side: int = THUMB_SIDE) -> ReviewItem:
    """Rebuild the source and its primary mutants and pair them with the stored predictions and verdicts."""
    run = store.get_run(run_id)
    if run.task == DETECTION_TASK:
        return detection_review_item(store, run_id, sample_id, relation, side)
    names = run_class_names(store, run_id)
    row = store.sample(run_id, sample_id)
    preds = store.predictions(run_id, sample_id)
    verdicts = {v["mutation_key"]: v for v in store.verdicts(run_id, sample_id)}
    votes = {v["group_name"]: v for v in store.votes(run_id, sample_id)}
    plan = Plan.from_dict(run.plan)
    image, target = source_of(store, run_id, sample_id)
    src = Panel("source", "source", thumbnail(outline(image, target.region), side),
                _top(preds.get("source", {}).get("prediction"), names))
    panels = []
    shown = primary_mutations(plan, relation)
    for m in shown:
        v = verdicts.get(m.key, {})
        try:
            mutant = make_mutant(image, target, m, derive_seed(run.seed, sample_id, m.key))
            thumb = thumbnail(mutant, side)
        except NotApplicable as exc:
            thumb, v = thumbnail(image, side) * 0 + 255, {**v, "note": str(exc)}
        panels.append(Panel(m.key, m.key, thumb, _top(preds.get(m.key, {}).get("prediction"), names),
                            m.relation, v.get("verdict"), v.get("source_certainty"), v.get("mutant_certainty"),
                            v.get("note")))
    shown_keys = {m.key for m in shown}
    others = []
    for key, v in verdicts.items():
        if key in shown_keys:
            continue
        top = _top(preds.get(key, {}).get("prediction"), names)
        others.append({"mutation": key, "relation": v["relation"], "verdict": v["verdict"],
                       "top-1": top[0][0] if top else None, "p": round(top[0][1], 4) if top else None})
    return ReviewItem(
        run_id=run_id, sample_id=str(sample_id), relation=relation, rel_path=row["rel_path"],
        ground_truth=[names[i] for i in (row["gt_labels"] or []) if 0 <= i < len(names)],
        area_ratio=float(row["area_ratio"] or 0.0), s_p=row["s_p"], s_r=row["s_r"], s=row["s"], votes=votes,
        source=src, mutants=panels, others=others, boxes=[list(b) for b in target.boxes],
        size=(int(row["width"]), int(row["height"])),
    )


# ---------------------------------------------------------------- detection runs


def _line_width(image: np.ndarray, side: int) -> int:
    """Box line width in full-size pixels that stays about 2 px wide on a ``side``-px thumbnail."""
    return max(OUTLINE_PX, round(OUTLINE_PX * max(image.shape[:2]) / side))


def draw_detections(image: np.ndarray, gt_box, prediction: dict | None, side: int = THUMB_SIDE) -> np.ndarray:
    """A copy of ``image`` with the ground-truth box (gold), every stored record (blue) and the compared
    record (magenta) drawn; boxes are xyxy full-size pixels from the stored detection prediction."""
    width = _line_width(image, side)
    out = image
    if prediction:
        det = prediction.get("detections") or {}
        matched = (prediction.get("record") or {}).get("index")
        for j, box in enumerate(det.get("boxes", [])):
            if j != matched:
                out = draw_box(out, box, DETECTION_RGB, max(1, width // 2))
    if gt_box is not None:
        out = draw_box(out, gt_box, OUTLINE_RGB, width)
    if prediction and (prediction.get("record") or {}).get("box") is not None:
        out = draw_box(out, prediction["record"]["box"], MATCHED_RGB, width)
    return out


def _detection_top(pred: dict | None) -> list:
    rec = (pred or {}).get("record") or {}
    return [(rec["label"], float(rec["score"]))] if rec.get("index") is not None else []


def detection_rows(pred: dict | None, gt_box) -> tuple:
    """One dict per stored record: label, score, box (rounded xyxy pixels), IoU with the ground-truth box and
    whether it is the record the relation compares."""
    from objrel.relations.associate import iou

    if not pred:
        return ()
    det = pred.get("detections") or {}
    matched = (pred.get("record") or {}).get("index")
    return tuple({"label": lab, "score": round(float(sc), 4), "box": [round(float(v), 1) for v in box],
                  "IoU with object": round(iou(box, gt_box), 3) if gt_box is not None else None,
                  "compared": j == matched}
                 for j, (box, lab, sc) in enumerate(zip(det.get("boxes", []), det.get("labels", []),
                                                        det.get("scores", []))))


def detection_review_item(store: Store, run_id: int, sample_id: str, relation: str,
                          side: int = THUMB_SIDE) -> ReviewItem:
    """A detection unit: the source and the primary mutants with the associated object's box and the
    detections drawn before and after mutation; IoUs with the object in the certainty fields, the outcome
    (missing / incorrect detection, removed, ...) in the note."""
    run = store.get_run(run_id)
    names = run_class_names(store, run_id)
    row = store.sample(run_id, sample_id)
    preds = store.predictions(run_id, sample_id)
    verdicts = {v["mutation_key"]: v for v in store.verdicts(run_id, sample_id)}
    votes = {v["group_name"]: v for v in store.votes(run_id, sample_id)}
    plan = Plan.from_dict(run.plan)
    image, target = source_of(store, run_id, sample_id)
    gt_box = (row["objects"] or [{}])[0].get("box")
    src_pred = preds.get("source", {}).get("prediction")
    src_rec = (src_pred or {}).get("record") or {}
    src = Panel("source", "source", thumbnail(draw_detections(image, gt_box, src_pred, side), side),
                _detection_top(src_pred), source_certainty=src_rec.get("iou"),
                note="detected (T = 1)" if (src_pred or {}).get("t") else "not detected (T = 0)",
                detections=detection_rows(src_pred, gt_box))
    panels = []
    shown = primary_mutations(plan, relation)
    for m in shown:
        v = verdicts.get(m.key, {})
        stored = preds.get(m.key, {})
        pred = stored.get("prediction")
        seed = int(stored["seed"]) if stored.get("seed") else derive_seed(run.seed, sample_id, m.key)
        try:
            mutant = make_mutant(image, target, m, seed)
            thumb = thumbnail(draw_detections(mutant, gt_box, pred, side), side)
        except NotApplicable as exc:
            thumb, v = thumbnail(image, side) * 0 + 255, {**v, "note": str(exc)}
        panels.append(Panel(m.key, m.key, thumb, _detection_top(pred), m.relation, v.get("verdict"),
                            v.get("source_certainty"), v.get("mutant_certainty"), v.get("note"),
                            detection_rows(pred, gt_box)))
    shown_keys = {m.key for m in shown}
    others = []
    for key, v in verdicts.items():
        if key in shown_keys:
            continue
        top = _detection_top(preds.get(key, {}).get("prediction"))
        others.append({"mutation": key, "relation": v["relation"], "verdict": v["verdict"], "outcome": v["note"],
                       "IoU": None if v["mutant_certainty"] is None else round(v["mutant_certainty"], 3),
                       "record": top[0][0] if top else None, "score": round(top[0][1], 4) if top else None})
    return ReviewItem(
        run_id=run_id, sample_id=str(sample_id), relation=relation, rel_path=row["rel_path"],
        ground_truth=[names[i] for i in (row["gt_labels"] or []) if 0 <= i < len(names)],
        area_ratio=float(row["area_ratio"] or 0.0), s_p=row["s_p"], s_r=row["s_r"], s=row["s"], votes=votes,
        source=src, mutants=panels, others=others, boxes=[list(b) for b in target.boxes],
        size=(int(row["width"]), int(row["height"])), task=DETECTION_TASK,
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
