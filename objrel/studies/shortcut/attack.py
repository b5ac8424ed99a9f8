"""Relevancy-guided transplanting attack vs random selection (ORMR s VIII).

Two scenarios for a pair of labels ``l_a != l_b``, each synthesising an image by
*transplanting*: the object of one image replaces the object of another (the host's
object is removed by inpainting, the guest's object is scaled to fit the host's box,
keeping its aspect, centred, and pasted through its mask):

1. guest ``i_a`` (label ``l_a``) into host ``i_b`` (label ``l_b``); success when the
   top-1 prediction is **not** ``l_a`` (the object is there but not recognised);
2. guest ``i_b`` into host ``i_a``; success when the top-1 prediction **is** ``l_a``
   (no object of ``l_a``, still called ``l_a``).

Selection: *guided* walks the candidates in ascending relevancy order (scenario 1:
``i_a`` by preserving score S_p, ``i_b`` by removing score S_r; scenario 2: ``i_a``
by S_r, ``i_b`` by S_p), attempt ``j`` pairing the ``j``-th of each list; *random*
draws both uniformly with replacement from an explicit Generator.  Candidates are
the tested (correctly classified) inferences of a run, whose S_p / S_r the store
holds; both strategies draw from the same candidates.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from itertools import permutations

import cv2
import numpy as np

from objrel.data import load_rgb, resolve_inside
from objrel.data.region import check_box, target_region
from objrel.data.sample import TargetObject
from objrel.models import Classifier
from objrel.mutations import Mutation, Target, make_mutant
from objrel.store import Store

# Attempts (synthesised images) per label pair and strategy; ORMR used 100.
DEFAULT_ATTEMPTS = 20
# The host's object is inpainted over a region grown by this many pixels, so no outline survives.
HOST_DILATE_PX = 1
STRATEGIES = ("guided", "random")


@dataclass(frozen=True)
class Candidate:
    """A tested inference usable in an attack: label, relevancy scores and its image and target."""

    sample_id: str
    label: int
    s_p: float | None
    s_r: float | None
    image: np.ndarray = field(repr=False)
    region: np.ndarray = field(repr=False)
    box: tuple[int, int, int, int] = (0, 0, 0, 0)


def candidates(store: Store, run_id: int) -> dict[int, list[Candidate]]:
    """Tested, correct inferences of a run by label, with their S_p and S_r (single-label runs)."""
    run = store.get_run(run_id)
    root = run.dataset_config["root"]
    out: dict[int, list[Candidate]] = {}
    for r in store.samples(run_id, status="tested"):
        if not r["correct"]:
            continue
        objects = tuple(TargetObject.from_dict(o) for o in r["objects"])
        w, h = r["width"], r["height"]
        image = load_rgb(resolve_inside(root, r["rel_path"]), (w, h))
        region = target_region(objects, w, h)
        boxes = [check_box(o.box, w, h) for o in objects]
        box = (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))
        label = int(r["predicted"][0])
        out.setdefault(label, []).append(Candidate(r["sample_id"], label, r["s_p"], r["s_r"], image, region, box))
    return out


def transplant(guest: Candidate, host: Candidate) -> np.ndarray:
    """``host``'s image with its object inpainted away and ``guest``'s object scaled into its box."""
    h, w = host.region.shape
    grown = cv2.dilate(host.region.astype(np.uint8), np.ones((2 * HOST_DILATE_PX + 1,) * 2, np.uint8)).astype(bool)
    clean = make_mutant(host.image, Target(grown, (host.box,), True), Mutation.of("inpaint", method="telea"), 0)
    gx1, gy1, gx2, gy2 = guest.box
    hx1, hy1, hx2, hy2 = host.box
    crop = guest.image[gy1:gy2, gx1:gx2]
    cmask = guest.region[gy1:gy2, gx1:gx2].astype(np.uint8)
    scale = min((hx2 - hx1) / (gx2 - gx1), (hy2 - hy1) / (gy2 - gy1))
    nw, nh = max(1, int(round((gx2 - gx1) * scale))), max(1, int(round((gy2 - gy1) * scale)))
    crop = cv2.resize(crop, (nw, nh), interpolation=cv2.INTER_LINEAR)
    cmask = cv2.resize(cmask, (nw, nh), interpolation=cv2.INTER_NEAREST).astype(bool)
    x0 = min(max(0, hx1 + ((hx2 - hx1) - nw) // 2), w - nw)
    y0 = min(max(0, hy1 + ((hy2 - hy1) - nh) // 2), h - nh)
    out = clean.copy()
    window = out[y0 : y0 + nh, x0 : x0 + nw]
    window[cmask] = crop[cmask]
    return out


def _order(cands: list[Candidate], score: str) -> list[Candidate]:
    """Ascending by the score (missing scores last), sample id to break ties."""
    return sorted(cands, key=lambda c: (getattr(c, score) is None, getattr(c, score) or 0.0, c.sample_id))


@dataclass(frozen=True)
class PairResult:
    scenario: int
    strategy: str
    label_a: int
    label_b: int
    attempts: int
    successes: int
    first_success: int | None

    def to_dict(self) -> dict:
        """The pair's attack result as a dict."""
        return asdict(self)


def attack_pair(clf: Classifier, by_label: dict[int, list[Candidate]], la: int, lb: int, scenario: int,
                strategy: str, attempts: int, rng: np.random.Generator) -> PairResult:
    """``attempts`` transplants for one ordered label pair; counts successes (see module docstring)."""
    if scenario not in (1, 2) or strategy not in STRATEGIES:
        raise ValueError(f"scenario must be 1 or 2 and strategy one of {STRATEGIES}, got {scenario}, {strategy!r}")
    a_list, b_list = by_label.get(la, []), by_label.get(lb, [])
    if not a_list or not b_list:
        return PairResult(scenario, strategy, la, lb, 0, 0, None)
    a_score, b_score = ("s_p", "s_r") if scenario == 1 else ("s_r", "s_p")
    if strategy == "guided":
        a_seq, b_seq = _order(a_list, a_score), _order(b_list, b_score)
        pairs = [(a_seq[j % len(a_seq)], b_seq[j % len(b_seq)]) for j in range(attempts)]
    else:
        pairs = [(a_list[int(rng.integers(len(a_list)))], b_list[int(rng.integers(len(b_list)))])
                 for _ in range(attempts)]
    images = [transplant(a, b) if scenario == 1 else transplant(b, a) for a, b in pairs]
    top1 = clf.predict(images).argmax(1)
    hits = (top1 != la) if scenario == 1 else (top1 == la)
    first = int(np.argmax(hits)) + 1 if hits.any() else None
    return PairResult(scenario, strategy, la, lb, len(images), int(hits.sum()), first)


def run_attack(clf: Classifier, store: Store, run_id: int, attempts: int = DEFAULT_ATTEMPTS,
               n_pairs: int | None = None, seed: int = 0) -> list[PairResult]:
    """Both scenarios, both strategies, over ``n_pairs`` ordered label pairs (all pairs when None,
    else a random sample drawn with ``seed``)."""
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    by_label = candidates(store, run_id)
    scored = [c for cs in by_label.values() for c in cs if c.s_p is not None and c.s_r is not None]
    if by_label and not scored:
        raise ValueError(f"run {run_id} stored no relevancy scores S_p / S_r (its lazy votes skipped mutations): "
                         f"the guided attack orders candidates by them; run it with lazy=False (--no-lazy)")
    pairs = list(permutations(range(clf.num_classes), 2))
    rng = np.random.default_rng(seed)
    if n_pairs is not None and n_pairs < len(pairs):
        pairs = [pairs[i] for i in sorted(rng.choice(len(pairs), n_pairs, replace=False))]
    out = []
    for la, lb in pairs:
        for scenario in (1, 2):
            for strategy in STRATEGIES:
                sub = np.random.default_rng([seed, la, lb, scenario])
                out.append(attack_pair(clf, by_label, la, lb, scenario, strategy, attempts, sub))
    return out


def totals(results: list[PairResult]) -> list[dict]:
    """Per scenario and strategy: attempts, successes, success rate, and pairs where guided beat random."""
    out = []
    for scenario in (1, 2):
        by = {s: [r for r in results if r.scenario == scenario and r.strategy == s] for s in STRATEGIES}
        g = {(r.label_a, r.label_b): r.successes for r in by["guided"]}
        rd = {(r.label_a, r.label_b): r.successes for r in by["random"]}
        wins = sum(g[p] > rd.get(p, 0) for p in g)
        ties = sum(g[p] == rd.get(p, 0) for p in g)
        for s in STRATEGIES:
            n = sum(r.attempts for r in by[s])
            k = sum(r.successes for r in by[s])
            out.append({"scenario": scenario, "strategy": s, "pairs": len(by[s]), "attempts": n, "successes": k,
                        "rate": k / n if n else None, "guided_wins": wins, "ties": ties})
    return out
