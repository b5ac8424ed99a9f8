"""A real-model sanity row: objrel's MR-2 rate beside the accuracy lost when the background is swapped.

Two independent measures of how much a classifier leans on the background, taken on the same real images:

* **objrel**: a real ``Engine`` run (plan ``colours3`` by default) and its store's summary: the share of
  correct inferences flagged by MR-1 and by MR-2 (``objrel.analysis.summary``);
* **the background swap** of Xiao et al. 2020 ("Noise or Signal: The Role of Image Backgrounds in Object
  Recognition"): each image's objects (their exact masks) pasted onto the background of another image, as
  their Mixed-Rand set does.  A donor photo has its own objects removed first (the region grown by
  ``CLEAR_MARGIN`` pixels and filled from its surroundings by the ``inpaint`` operator), and the bundled
  background pictures (``assets/backgrounds``) join the pool.  A donor is eligible when it shows none of the
  image's classes; each image gets ``swaps`` donors drawn without replacement by a generator seeded from
  (seed, sample id), so the same seed gives the same composites.  A donor of another size is resized to the
  image's (its aspect ratio is not kept).

The gap reported is accuracy on the originals minus accuracy on the composites (every composite of every
evaluated image counts once).  The paper's own "BG-Gap" subtracts Mixed-Rand from *Mixed-Same* (the object on
a background of its own class), which cancels the cost of compositing itself; a handful of photos has no
same-class backgrounds, so this gap also counts that cost.  It is the same for every model compared here.

With three models the rank correlation of the two measures can only be one of a few values: the row says
whether the two methods order the models alike, nothing about significance.

    objrel bench bggap [--dataset ANN.json --images DIR] [--models a,b,c] [--swaps K] [--out DIR]
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from objrel.data.bundled import background_paths
from objrel.data.region import target_region
from objrel.errors import BadSampleError
from objrel.mutations import Mutation, Target, derive_seed, dilate_region, make_mutant
from objrel.mutations.pixels import copy_where

DEFAULT_MODELS = ("efficientnet-lite0", "efficientnet-lite1", "efficientnet-lite2")
# Composites per image (fewer when fewer donors are eligible).
DEFAULT_SWAPS = 6
DEFAULT_SEED = 0
DEFAULT_PLAN = "colours3"
DEFAULT_OUT = "var/bggap"
STORE_FILE = "bggap.db"
RESULTS_FILE = "results.json"
# Pixels a donor photo's object region is grown by before it is inpainted away, so no outline survives.
CLEAR_MARGIN = 4
# Donor backgrounds (objects removed) kept in memory at once.
DONOR_CACHE = 32
# The ``derive_seed`` key of an image's donor draw.
DRAW_KEY = "bggap-donors"
# The relation names in the store.
MR1, MR2 = "MR-1", "MR-2"

_REMOVE = Mutation.of("inpaint", method="telea")


# ---------------------------------------------------------------- compositing


def fit_to(background: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``background`` resized to ``shape[:2]`` (area interpolation; the same array when it already fits)."""
    import cv2

    h, w = shape[:2]
    if background.shape[:2] == (h, w):
        return background
    return cv2.resize(background, (w, h), interpolation=cv2.INTER_AREA)


def remove_objects(image: np.ndarray, region: np.ndarray, margin: int = CLEAR_MARGIN) -> np.ndarray:
    """``image`` with ``region`` (grown by ``margin`` pixels) filled from its surroundings (the ``inpaint``
    operator, Telea); pixels outside the grown region are unchanged."""
    if region.shape != image.shape[:2]:
        raise ValueError(f"remove_objects needs an (H, W) region of the image's size: image {image.shape}, "
                         f"region {region.shape}")
    grown = dilate_region(region.astype(bool), margin)
    if not grown.any():
        return image.copy()
    return make_mutant(image, Target(grown, ((0, 0, image.shape[1], image.shape[0]),), True), _REMOVE, 0)


def mixed_rand(image: np.ndarray, mask: np.ndarray, background: np.ndarray) -> np.ndarray:
    """``image``'s pixels where ``mask``, the background (resized to the image) everywhere else: a new array."""
    if mask.shape != image.shape[:2]:
        raise ValueError(f"mixed_rand needs an (H, W) mask of the image's size: image {image.shape}, "
                         f"mask {mask.shape}")
    out = np.array(fit_to(background, image.shape), dtype=np.uint8, copy=True, order="C")
    return copy_where(out, np.ascontiguousarray(image, dtype=np.uint8), mask.astype(bool))


def draw_donors(seed: int, sample_id: str, eligible: int, swaps: int) -> list[int]:
    """Positions (sorted) of ``min(swaps, eligible)`` donors out of ``eligible``, drawn without replacement by
    a generator seeded from (``seed``, ``sample_id``)."""
    if swaps < 1:
        raise ValueError(f"swaps must be >= 1 background per image, got {swaps}")
    k = min(swaps, eligible)
    rng = np.random.default_rng(derive_seed(seed, sample_id, DRAW_KEY))
    return sorted(int(i) for i in rng.choice(eligible, size=k, replace=False)) if k else []


def accuracy_gap(correct: int, images: int, swaps_correct: int, swaps: int) -> tuple[float | None, float | None,
                                                                                       float | None]:
    """``(accuracy, swapped accuracy, gap)``: correct / images, swaps_correct / swaps and their difference
    (None where a count is 0)."""
    acc = correct / images if images else None
    mixed = swaps_correct / swaps if swaps else None
    return acc, mixed, (acc - mixed if acc is not None and mixed is not None else None)


# ---------------------------------------------------------------- the donor pool


@dataclass(frozen=True)
class Donor:
    """A background a composite can take: ``name`` (``photo:<path in the dataset>`` or ``bundled:<file>``), the class
    indices its objects show (``labels``; none for a bundled picture), and where its pixels come from."""

    name: str
    labels: frozenset[int]
    path: str
    sample_id: str | None = None


@dataclass(frozen=True)
class Item:
    """An image the model is scored on: its sample id, file, class indices and the source of its mask."""

    sample_id: str
    path: str
    labels: frozenset[int]
    objects: tuple


def _valid_objects(sample, class_names, width: int, height: int):
    from objrel.engine.classify import split_objects

    valid, _ = split_objects(sample, class_names, width, height)
    return valid


def collect(dataset, class_names) -> tuple[list[Item], list[Donor]]:
    """The images that decode with a valid annotated object, and the donor pool: those images, then the
    bundled background pictures (sorted by name)."""
    from objrel.data import load_rgb

    items, donors = [], []
    for s in dataset.samples:
        if s.problem:
            continue
        try:
            img = load_rgb(s.image_path)
        except BadSampleError:
            continue
        objects = _valid_objects(s, class_names, img.shape[1], img.shape[0])
        if not objects:
            continue
        labels = frozenset(o.class_index for o in objects)
        items.append(Item(s.sample_id, str(s.image_path), labels, objects))
        donors.append(Donor(f"photo:{s.rel_path}", labels, str(s.image_path), s.sample_id))
    donors += [Donor(f"bundled:{p.name}", frozenset(), str(p)) for p in background_paths()]
    return items, donors


class DonorBackgrounds:
    """Each donor's background, objects removed, made once and kept for the last ``DONOR_CACHE`` donors."""

    def __init__(self, items: list[Item]):
        self._objects = {it.sample_id: it.objects for it in items}
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def __call__(self, donor: Donor) -> np.ndarray:
        """``donor``'s picture, its objects (a dataset photo's) removed by ``remove_objects``."""
        from objrel.data import load_rgb

        got = self._cache.get(donor.name)
        if got is None:
            img = load_rgb(donor.path)
            if donor.sample_id is not None:
                region = target_region(self._objects[donor.sample_id], img.shape[1], img.shape[0])
                img = remove_objects(img, region)
            got = img
            self._cache[donor.name] = got
            if len(self._cache) > DONOR_CACHE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(donor.name)
        return got


def eligible_donors(item: Item, donors: list[Donor]) -> list[Donor]:
    """The donors that are not ``item``'s own image and show none of its classes."""
    return [d for d in donors if d.sample_id != item.sample_id and not (d.labels & item.labels)]


# ---------------------------------------------------------------- results


@dataclass(frozen=True)
class ModelRow:
    """One model's row.  ``images``: the images the run evaluated; ``correct`` / ``accuracy`` on them (the
    store's summary); ``swaps`` composites made of them and ``swaps_correct`` classified right;
    ``mixed_accuracy`` and ``bg_gap`` (accuracy - mixed accuracy); ``mr1`` / ``mr2`` correct inferences
    flagged and their rates over ``correct`` (the store's summary); ``bg_rank`` / ``mr2_rank``: 1 for the
    largest gap and the largest MR-2 rate (ties share the mean rank; None when undefined)."""

    model: str
    run_id: int
    images: int
    correct: int
    accuracy: float | None
    swaps: int
    swaps_correct: int
    mixed_accuracy: float | None
    bg_gap: float | None
    mr1: int
    mr2: int
    mr1_rate: float | None
    mr2_rate: float | None
    bg_rank: float | None = None
    mr2_rank: float | None = None

    def to_dict(self) -> dict:
        """The row as a JSON-ready dict."""
        return asdict(self)


@dataclass(frozen=True)
class BgGapResult:
    """Every model's row, how the composites were made and whether the two rankings agree.

    ``swaps_per_image``: the most composites asked per image; ``swaps_min`` / ``swaps_max``: how many each
    image got; ``donors``: the pool's names; ``spearman`` / ``kendall``: scipy's rank correlations of the gap
    and the MR-2 rate over the models (None when undefined: fewer than two models, or a constant column)."""

    dataset: str
    plan: str
    seed: int
    swaps_per_image: int
    swaps_min: int
    swaps_max: int
    donors: tuple[str, ...]
    rows: tuple[ModelRow, ...]
    spearman: float | None
    kendall: float | None
    store: str
    seconds: float

    def to_dict(self) -> dict:
        """The result as a JSON-ready dict."""
        d = asdict(self)
        d["donors"], d["rows"] = list(self.donors), [r.to_dict() for r in self.rows]
        d["agreement"] = self.agreement()
        return d

    def agreement(self) -> str:
        """One line: whether the gap and the MR-2 rate order the models alike."""
        n = len(self.rows)
        if self.kendall is None:
            verdict = "undefined (a column is constant or missing)"
        elif self.kendall == 1.0:
            verdict = "the two methods rank the models the same"
        elif self.kendall == -1.0:
            verdict = "the two methods rank the models in opposite orders"
        else:
            verdict = "the two methods rank the models differently"
        rho = "-" if self.spearman is None else f"{self.spearman:+.2f}"
        tau = "-" if self.kendall is None else f"{self.kendall:+.2f}"
        return (f"ranking by background-swap gap vs by MR-2 rate: {verdict} (Spearman rho {rho}, Kendall tau {tau}, "
                f"n = {n} models: a sanity check of the order, not a significance test)")

    def table(self) -> str:
        """The printed table: one row per model, then how the composites were made and the agreement line."""
        pct = lambda v: "-" if v is None else f"{100 * v:.1f}%"  # noqa: E731
        pts = lambda v: "-" if v is None else f"{100 * v:+.1f} pts"  # noqa: E731
        rank = lambda v: "-" if v is None else (f"{v:g}")  # noqa: E731
        head = ("model", "images", "accuracy", "mixed-rand acc.", "BG-gap", "MR-1 rate", "MR-2 rate",
                "rank BG-gap", "rank MR-2")
        body = [(r.model, str(r.images), pct(r.accuracy), f"{pct(r.mixed_accuracy)} of {r.swaps}", pts(r.bg_gap),
                 f"{pct(r.mr1_rate)} ({r.mr1}/{r.correct})", f"{pct(r.mr2_rate)} ({r.mr2}/{r.correct})",
                 rank(r.bg_rank), rank(r.mr2_rank)) for r in self.rows]
        widths = [max(len(c) for c in col) for col in zip(head, *body)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        swaps = (f"{self.swaps_min}" if self.swaps_min == self.swaps_max else f"{self.swaps_min}-{self.swaps_max}")
        lines = [line(head), line(tuple("-" * w for w in widths)), *(line(b) for b in body), "",
                 f"dataset {self.dataset}, plan {self.plan}, seed {self.seed}: {swaps} background swaps per image "
                 f"(asked {self.swaps_per_image}), donors drawn from a pool of {len(self.donors)} backgrounds",
                 "BG-gap = accuracy on the originals - accuracy on the swaps; MR rates over correct inferences; "
                 "rank 1 = largest",
                 self.agreement()]
        return "\n".join(lines)


def rank_desc(values: list[float | None]) -> list[float | None]:
    """Rank 1 for the largest value, ties sharing the mean rank; every rank None when a value is missing."""
    from scipy.stats import rankdata

    if any(v is None for v in values):
        return [None] * len(values)
    return [float(r) for r in rankdata([-v for v in values], method="average")]


def rank_correlations(x: list[float | None], y: list[float | None]) -> tuple[float | None, float | None]:
    """scipy's Spearman rho and Kendall tau of ``x`` and ``y``; None where undefined."""
    import warnings

    from scipy.stats import kendalltau, spearmanr

    if len(x) < 2 or any(v is None for v in (*x, *y)) or len(set(x)) < 2 or len(set(y)) < 2:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho, tau = spearmanr(x, y)[0], kendalltau(x, y)[0]
    clean = lambda v: None if v is None or not np.isfinite(v) else float(v)  # noqa: E731
    return clean(rho), clean(tau)


def with_ranks(rows: list[ModelRow]) -> list[ModelRow]:
    """``rows`` with ``bg_rank`` and ``mr2_rank`` filled in."""
    from dataclasses import replace

    bg, mr2 = rank_desc([r.bg_gap for r in rows]), rank_desc([r.mr2_rate for r in rows])
    return [replace(r, bg_rank=b, mr2_rank=m) for r, b, m in zip(rows, bg, mr2)]


# ---------------------------------------------------------------- the study


def _swap_counts(engine, run_id: int, items: list[Item], donors: list[Donor], backgrounds: DonorBackgrounds,
                 swaps: int, seed: int) -> tuple[int, int, list[int]]:
    """(composites, composites classified right, composites per image) over the images the run evaluated."""
    evaluated = {r["sample_id"] for r in engine.store.samples(run_id) if r["status"] != "skipped"}
    made = right = 0
    per_image = []
    for item in items:
        if item.sample_id not in evaluated:
            continue
        pool = eligible_donors(item, donors)
        chosen = [pool[i] for i in draw_donors(seed, item.sample_id, len(pool), swaps)]
        per_image.append(len(chosen))
        if not chosen:
            continue
        from objrel.data import load_rgb

        img = load_rgb(item.path)
        mask = target_region(item.objects, img.shape[1], img.shape[0])
        batch = [mixed_rand(img, mask, backgrounds(d)) for d in chosen]
        top1 = np.argmax(engine.model.predict(batch), axis=1)
        made += len(batch)
        right += sum(int(t) in item.labels for t in top1)
    return made, right, per_image


def run_bggap(models=DEFAULT_MODELS, dataset: str = "demo", images: str | None = None, out=DEFAULT_OUT,
              swaps: int = DEFAULT_SWAPS, seed: int = DEFAULT_SEED, plan: str = DEFAULT_PLAN,
              log: Callable[[str], None] = lambda m: None) -> BgGapResult:
    """Run each model through objrel (one stored run each, in ``out/bggap.db``) and through the background
    swaps on the same images; write ``out/results.json`` and return the result."""
    from objrel.analysis.summary import summarize
    from objrel.config import RunConfig
    from objrel.data import load_dataset
    from objrel.engine.classify import Engine
    from objrel.store import Store

    if swaps < 1:
        raise ValueError(f"--swaps must be >= 1 background per image, got {swaps}")
    if not models:
        raise ValueError("expected at least one model name, got none")
    t0 = time.perf_counter()
    ds = load_dataset(dataset, images)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store_path = out / STORE_FILE
    store = Store(str(store_path), make_parents=True)
    rows, counts, donor_names = [], [], ()
    pools: dict[tuple[str, ...], tuple] = {}   # by the model's class names: images, donors, their backgrounds
    for name in models:
        cfg = RunConfig(model=name, dataset=dataset, images=images, plan=plan, seed=seed,
                        name=f"bggap: {name} on {ds.name} ({plan})")
        log(f"{name}: objrel run ({plan}) ...")
        engine = Engine(store, cfg, dataset=ds)
        if engine.model.task != "single":
            raise ValueError(f"bench bggap scores single-label classifiers (top-1 among the image's classes); "
                             f"{name} is {engine.model.task}-label")
        report = engine.execute()
        summary = summarize(store, report.run_id)
        key = tuple(engine.model.class_names)
        if key not in pools:
            items, donors = collect(ds, key)
            pools[key] = (items, donors, DonorBackgrounds(items))
        items, donors, backgrounds = pools[key]
        donor_names = tuple(d.name for d in donors)
        log(f"{name}: run {report.run_id} done; background swaps on {summary.evaluated} images ...")
        made, right, per_image = _swap_counts(engine, report.run_id, items, donors, backgrounds, swaps, seed)
        counts += per_image
        acc, mixed, gap = accuracy_gap(summary.correct, summary.evaluated, right, made)
        rows.append(ModelRow(model=name, run_id=report.run_id, images=summary.evaluated, correct=summary.correct,
                             accuracy=acc, swaps=made, swaps_correct=right, mixed_accuracy=mixed, bg_gap=gap,
                             mr1=summary.mr1, mr2=summary.mr2, mr1_rate=summary.mr1_ratio,
                             mr2_rate=summary.mr2_ratio))
    rows = with_ranks(rows)
    rho, tau = rank_correlations([r.bg_gap for r in rows], [r.mr2_rate for r in rows])
    result = BgGapResult(dataset=ds.name, plan=plan, seed=seed, swaps_per_image=swaps,
                         swaps_min=min(counts, default=0), swaps_max=max(counts, default=0), donors=donor_names,
                         rows=tuple(rows), spearman=rho, kendall=tau, store=str(store_path),
                         seconds=round(time.perf_counter() - t0, 1))
    (out / RESULTS_FILE).write_text(json.dumps(result.to_dict(), indent=2), encoding="utf-8")
    store.dispose()
    return result
