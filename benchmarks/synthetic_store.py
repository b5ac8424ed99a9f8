"""Synthetic objrel stores at scale: N tested samples with the rows the engine writes, loaded in bulk.

A store built here holds what a team's store holds after a large run and a review day:

* run 1, EfficientNet-Lite0 over N samples with the "colours3" plan (every mutation evaluated, so S_p / S_r / S
  are stored): 0.5 % skipped (missing or undecodable files), 76 % of the rest answered correctly and tested, the
  others untested (incorrect); 1,000 ImageNet labels; MR-1 flagged on 10 % and MR-2 on 20 % of the tested
  samples (independently, so 2 % by both); object area ratios spread over (0, 1); a few samples with a dropped
  annotation;
* run 2, a second model (ResNet-50) over the first 10 % of the same samples, so the model comparisons have two
  runs of one dataset;
* accounts: ``bench`` with every role (the account the page benchmark signs in as), two reviewers and an
  adjudicator; the review samples of run 1 drawn with objrel's own draw (``objrel.review.draw_review_sample``,
  the draw the Review page makes); the MR-2 sample judged completely by both reviewers (so it is closed), with
  some disagreements, a third of them adjudicated and the rest open; the MR-1 sample judged in part; a few
  calls changed once (two versions).

Every sample points at one of the bundled demo photos with its real polygon (relabelled with the sample's
class), so pages that rebuild mutants rebuild real ones.  The sample, prediction, verdict and vote rows are
made here with the engine's shapes (``shape_check`` compares them with a real run's) and loaded with the
database's own bulk path: SQLite's ``executemany`` in one transaction per chunk (``synchronous=OFF`` on the
loading connection only; the file stays in WAL mode as objrel sets it), PostgreSQL's ``COPY``.  The schema
comes from ``objrel.store.Store`` (the Alembic head of the objrel that is imported); accounts, draws,
judgments and adjudications go through ``objrel.review``.  The review rows are written while only the
flagged samples' sample and vote rows are loaded, and the rest is loaded afterwards: a judgment's write on
SQLite costs time in proportion to the run's rows in some objrel versions, and the stored rows are the same
in either order.

    python benchmarks/synthetic_store.py build --url sqlite:////tmp/s.db --n 10000
    python benchmarks/synthetic_store.py shape --url sqlite:////tmp/s.db
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sqlite3
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The objrel this process imports: $OBJREL_BENCH_CODE_ROOT (an older checkout, for side-by-side runs), else
# the checkout this file lives in.
CODE_ROOT = Path(os.environ.get("OBJREL_BENCH_CODE_ROOT") or ROOT).resolve()
if str(CODE_ROOT) not in sys.path:
    sys.path.insert(0, str(CODE_ROOT))

import numpy as np  # noqa: E402

PLAN_NAME = "colours3"
N_LABELS = 1000
SKIPPED_RATE = 0.005
CORRUPT_SHARE = 0.2          # of the skipped samples: undecodable files; the rest are missing files
CORRECT_RATE = 0.76          # of the samples read (EfficientNet-Lite0's ImageNet top-1 is about 75 %)
MR1_RATE = 0.10              # of the tested samples, flagged by the primary MR-1 vote
MR2_RATE = 0.20              # of the tested samples, flagged by the primary MR-2 vote
DROPPED_RATE = 0.002         # tested samples with one annotation left out (an unknown label)
SECOND_RUN_SHARE = 0.10      # run 2 covers this share of run 1's samples
SECOND_RUN_CORRECT_RATE = 0.80
CHUNK = 10_000               # samples per transaction (SQLite) or COPY batch (PostgreSQL)

BENCH_ACCOUNT = "bench"
BENCH_ROLES = ("reviewer", "adjudicator", "run-operator", "admin")
REVIEWER_A, REVIEWER_B, ADJUDICATOR = "rev-a", "rev-b", "adj"
PASSPHRASE = "benchmark-passphrase"
DISAGREE_RATE = 0.12         # items reviewer B calls differently from reviewer A
ADJUDICATED_SHARE = 1 / 3    # of the disagreements: decided by the adjudicator; the rest stay open
MR1_JUDGED_A, MR1_JUDGED_B = 0.6, 0.3   # shares of the MR-1 review sample each reviewer has judged
CHANGED_CALLS = 5            # calls reviewer A makes a second time (a second version)

SAMPLE_COLS = ("run_id", "sample_id", "rel_path", "status", "skip_code", "skip_reason", "width", "height",
               "gt_labels", "gt_categories", "predicted", "correct", "objects", "region_source", "area_ratio",
               "s_p", "s_r", "s", "elapsed_ms", "dropped", "notes")
PREDICTION_COLS = ("run_id", "sample_id", "mutation_key", "seed", "prediction")
VERDICT_COLS = ("run_id", "sample_id", "mutation_key", "operator", "relation", "verdict", "source_certainty",
                "mutant_certainty", "label_changed", "distance", "note")
VOTE_COLS = ("run_id", "sample_id", "group_name", "relation", "is_primary", "k", "n", "applicable", "violations",
             "flagged")
TABLE_COLS = {"samples": SAMPLE_COLS, "predictions": PREDICTION_COLS, "verdicts": VERDICT_COLS, "votes": VOTE_COLS}
# Tables the loader or objrel.review fill; any other table with a run_id column is reported as left empty.
FILLED_TABLES = {"runs", "samples", "predictions", "verdicts", "votes", "reviewers", "account_roles",
                 "review_samples", "judgments", "judgment_versions", "consensus"}
# Tables a store of classifier runs leaves empty (detection runs, LIME, re-tests, the app's own bookkeeping), and
# run_summaries, which pages fill with the results they keep on their first view (objrel.analysis.kept).
EMPTY_BY_DESIGN = {"detection_units", "detection_verdicts", "explanations", "retests", "attempts", "review_jobs",
                   "app_sessions", "sign_in_failures", "allowed_models", "objrel_meta", "run_summaries"}

JSON_NULL = "null"


def log_line(msg: str) -> None:
    print(msg, flush=True)


def sample_id(i: int) -> str:
    """The id of sample ``i`` (0-based): ImageNet validation file numbers, 1-based."""
    return f"ILSVRC2012_val_{i + 1:08d}"


# ---------------------------------------------------------------- what each sample is


@dataclass
class Population:
    """The drawn attributes of one run's samples (arrays of length n)."""

    n: int
    status: np.ndarray          # 0 tested, 1 untested (incorrect), 2 skipped
    label: np.ndarray           # ground-truth class index
    wrong: np.ndarray           # the predicted class of an incorrect answer
    photo: np.ndarray           # index of the demo photo the sample shows
    v1: np.ndarray              # MR-1 violations among the 3 colour mutants
    v2: np.ndarray              # MR-2 violations among the 3 colour mutants
    area: np.ndarray
    p0: np.ndarray              # the source's top-1 probability
    jitter: np.ndarray          # (n, 6) uniform draws that shape each mutant's prediction
    elapsed: np.ndarray
    dropped: np.ndarray
    corrupt: np.ndarray

    def flagged(self, relation: str) -> np.ndarray:
        v = self.v1 if relation == "MR-1" else self.v2
        return (self.status == 0) & (v >= 2)


def draw_population(n: int, seed: int, correct_rate: float = CORRECT_RATE) -> Population:
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    skipped = u < SKIPPED_RATE
    correct = rng.random(n) < correct_rate
    status = np.where(skipped, 2, np.where(correct, 0, 1)).astype(np.int8)
    label = rng.integers(0, N_LABELS, n)
    wrong = (label + rng.integers(1, N_LABELS, n)) % N_LABELS

    def violations(rate):
        flag = rng.random(n) < rate
        hi = rng.integers(2, 4, n)                          # 2 or 3 of 3 when flagged
        lo = (rng.random(n) < 0.3).astype(np.int64)         # 0 or 1 otherwise
        return np.where(flag, hi, lo).astype(np.int8)

    return Population(
        n=n, status=status, label=label, wrong=wrong, photo=rng.integers(0, 9, n),
        v1=violations(MR1_RATE), v2=violations(MR2_RATE),
        area=np.clip(rng.beta(1.3, 2.2, n), 0.004, 0.996), p0=rng.uniform(0.36, 0.99, n),
        jitter=rng.random((n, 6)), elapsed=rng.uniform(60.0, 420.0, n),
        dropped=rng.random(n) < DROPPED_RATE, corrupt=rng.random(n) < CORRUPT_SHARE)


# ---------------------------------------------------------------- rows


def _others(label: int) -> tuple[int, int, int, int]:
    return tuple((label + 1 + 37 * j) % N_LABELS for j in range(4))


def _tail(p0: float) -> tuple[float, float, float, float]:
    rest = 1.0 - p0
    return rest * 0.5, rest * 0.25, rest * 0.1, rest * 0.05


def prediction_json(top: tuple[int, ...], probs: tuple[float, ...], interest: dict[int, tuple[int, float]]) -> str:
    """``Prediction.to_dict()`` as JSON: ``interest`` maps each label of interest to (rank, probability)."""
    p = dict(zip(top, probs))
    for lab, (_, prob) in interest.items():
        p.setdefault(lab, prob)
    probs_txt = ", ".join([f'"{k}": {p[k]!r}' for k in sorted(p)])
    ranks_txt = ", ".join([f'"{lab}": {rank}' for lab, (rank, _) in interest.items()])
    return (f'{{"task": "single", "top_labels": [{", ".join(map(str, top))}], '
            f'"top_probs": [{", ".join(map(repr, probs))}], "predicted": [{top[0]}], '
            f'"probs": {{{probs_txt}}}, "ranks": {{{ranks_txt}}}, "threshold": 0.5}}')


def _distance_preserving(p, rank, p2, rank2):
    return 0.0 if p <= 0 else (1.0 - max(0.0, p - p2) / p) * (1.0 - max(0.0, 1.0 / rank - 1.0 / rank2))


def _distance_removing(p, rank, p2, rank2):
    return 0.0 if p <= 0 else (max(0.0, p - p2) / p) * max(0.0, 1.0 / rank - 1.0 / rank2)


class RowMaker:
    """Rows of one run, in the engine's shapes (``objrel.engine.classify.Engine.result_rows`` and
    ``Store.write_samples``: a JSON column left empty in a chunk is JSON ``null``, a plain column SQL NULL)."""

    def __init__(self, run_id: int, pop: Population, seed: int = 0):
        from objrel.data import load_demo
        from objrel.models.imagenet import imagenet_classes
        from objrel.mutations import derive_seed, preset

        self.run_id, self.pop, self.seed = run_id, pop, seed
        self.derive_seed = derive_seed
        self.names = list(imagenet_classes())
        self.photos = list(load_demo().samples)
        self.plan = preset(PLAN_NAME)
        self.mutations = [(m.key, m.operator, m.relation) for m in self.plan.mutations]
        self.groups = [(g.name, g.relation, g.k, len(g.mutations)) for g in self.plan.groups]
        self._objects: dict[tuple[int, int], str] = {}
        self._cats: dict[int, str] = {}
        # plain lists: indexing them is several times faster than indexing numpy arrays one element at a time
        self.status, self.label, self.wrong = pop.status.tolist(), pop.label.tolist(), pop.wrong.tolist()
        self.photo, self.v1, self.v2 = pop.photo.tolist(), pop.v1.tolist(), pop.v2.tolist()
        self.area, self.p0, self.jitter = pop.area.tolist(), pop.p0.tolist(), pop.jitter.tolist()
        self.elapsed, self.dropped, self.corrupt = pop.elapsed.tolist(), pop.dropped.tolist(), pop.corrupt.tolist()

    def objects_json(self, photo: int, label: int) -> str:
        key = (photo, label)
        if key not in self._objects:
            objs = [{**o.to_dict(), "category": self.names[label], "class_index": int(label)}
                    for o in self.photos[photo].objects]
            self._objects[key] = json.dumps(objs)
        return self._objects[key]

    def categories_json(self, label: int) -> str:
        if label not in self._cats:
            self._cats[label] = json.dumps([self.names[label]])
        return self._cats[label]

    def sample_row(self, i: int) -> tuple:
        rid, sid = self.run_id, sample_id(i)
        photo = self.photos[self.photo[i]]
        label = self.label[i]
        status = self.status[i]
        if status == 2:
            if self.corrupt[i]:
                rel, code = f"val/{sid}.JPEG", "corrupt-image"
                reason = f"{rel}: cannot decode image: UnidentifiedImageError: cannot identify image file"
            else:
                rel, code = f"val/{sid}.JPEG", "missing-file"
                reason = f"{rel}: image file '{sid}.JPEG' does not exist"
            return (rid, sid, rel, "skipped", code, reason, None, None, JSON_NULL, self.categories_json(label),
                    JSON_NULL, None, JSON_NULL, "annotation", None, None, None, None, None, JSON_NULL, JSON_NULL)
        correct = status == 0
        predicted = label if correct else self.wrong[i]
        dropped = JSON_NULL
        if self.dropped[i] and correct:
            dropped = json.dumps([{"object": 1, "category": "tricorder", "class_index": None,
                                   "box": [10.0, 10.0, 60.0, 80.0], "code": "unknown-label",
                                   "reason": f"category 'tricorder' is not a class of the model "
                                             f"({N_LABELS} classes)"}])
        s_p = s_r = s = None
        if correct:
            s_p, s_r = self._scores(i)
            s = (s_p + s_r) / 2.0
        return (rid, sid, photo.rel_path, "tested" if correct else "untested", None, None, photo.width,
                photo.height, f"[{label}]", self.categories_json(label), f"[{predicted}]", correct,
                self.objects_json(self.photo[i], label), "annotation", self.area[i], s_p, s_r, s,
                self.elapsed[i], dropped, JSON_NULL)

    def _source(self, i: int):
        """(top labels, top probs, rank and probability of the true label) of sample i's source."""
        label, p0 = self.label[i], self.p0[i]
        tail = _tail(p0)
        if self.status[i] == 0:
            top = (label, *_others(label))
            return top, (p0, *tail), (1, p0)
        wrong = self.wrong[i]
        if self.jitter[i][0] < 0.6:                     # the true label second
            top = (wrong, label, *_others(wrong)[:3])
            return top, (p0, *tail), (2, tail[0])
        top = (wrong, *_others(wrong))                 # the true label outside the top 5
        return top, (p0, *tail), (8, tail[3] * 0.3)

    def _mutant(self, i: int, j: int, relation: str, violated: bool):
        """(top labels, top probs, {label: (rank, prob)}, source certainty, mutant certainty, label changed,
        distance) of sample i's mutant j (a tested sample: its answer is right)."""
        label, p0 = self.label[i], self.p0[i]
        u = self.jitter[i][j]
        cs = p0 - _tail(p0)[0]
        if relation == "MR-1":
            changed = not violated and u < 0.7
            if violated:
                q0 = min(0.995, p0 + (1 - p0) * (0.2 + 0.6 * u))
            elif not changed:
                q0 = max(0.34, p0 * (0.5 + 0.4 * u))
        else:
            changed = violated
            if not changed:
                q0 = min(0.995, max(0.34, p0 * (0.7 + 0.5 * u)))
        if changed:
            other = (label + 500 + j) % N_LABELS
            q0 = 0.4 + 0.5 * u
            tail = _tail(q0)
            top = (other, *_others(other)[:2], label, _others(other)[2])
            probs = (q0, tail[0], tail[1], tail[2] * 0.9, tail[3])
            rank, q = 4, probs[3]
            mc = None
        else:
            tail = _tail(q0)
            top = (label, *_others(label))
            probs = (q0, *tail)
            rank, q = 1, q0
            mc = q0 - tail[0]
        dist = (_distance_removing(p0, 1, q, rank) if relation == "MR-1"
                else _distance_preserving(p0, 1, q, rank))
        return top, probs, {label: (rank, q)}, cs, mc, changed, dist

    def _scores(self, i: int) -> tuple[float, float]:
        d_r, d_p = [], []
        viol = self._violations(i)
        for j, (_, _, relation) in enumerate(self.mutations):
            *_, dist = self._mutant(i, j, relation, viol[j])
            (d_r if relation == "MR-1" else d_p).append(dist)
        return sum(d_p) / len(d_p), sum(d_r) / len(d_r)

    def _violations(self, i: int) -> list[bool]:
        v1, v2 = self.v1[i], self.v2[i]
        out, seen = [], {"MR-1": 0, "MR-2": 0}
        for _, _, relation in self.mutations:
            seen[relation] += 1
            out.append(seen[relation] <= (v1 if relation == "MR-1" else v2))
        return out

    def detail_rows(self, i: int) -> tuple[list[tuple], list[tuple]]:
        """Sample i's prediction and verdict rows."""
        rid, sid = self.run_id, sample_id(i)
        status = self.status[i]
        if status == 2:
            return [], []
        top, probs, (rank, p) = self._source(i)
        preds = [(rid, sid, "source", None, prediction_json(top, probs, {self.label[i]: (rank, p)}))]
        verdicts = []
        if status != 0:
            return preds, verdicts
        viol = self._violations(i)
        for j, (key, operator, relation) in enumerate(self.mutations):
            top, probs, interest, cs, mc, changed, dist = self._mutant(i, j, relation, viol[j])
            preds.append((rid, sid, key, str(self.derive_seed(self.seed, sid, key)),
                          prediction_json(top, probs, interest)))
            verdicts.append((rid, sid, key, operator, relation, "violated" if viol[j] else "holds", cs, mc, changed,
                             dist, None))
        return preds, verdicts

    def vote_rows(self, i: int) -> list[tuple]:
        if self.status[i] != 0:
            return []
        out = []
        for name, relation, k, n in self.groups:
            v = self.v1[i] if relation == "MR-1" else self.v2[i]
            out.append((self.run_id, sample_id(i), name, relation, True, k, n, n, v, v >= k))
        return out


# ---------------------------------------------------------------- bulk writers


class SqliteLoader:
    """executemany in one transaction per chunk on a plain sqlite3 connection (synchronous=OFF on it only)."""

    def __init__(self, url: str):
        from sqlalchemy.engine import make_url

        self.path = make_url(url).database
        self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=60)
        self.conn.execute("PRAGMA synchronous=OFF")
        self.sql = {t: f"INSERT INTO {t} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
                    for t, cols in TABLE_COLS.items()}

    def write(self, batch: dict[str, list[tuple]]) -> None:
        self.conn.execute("BEGIN")
        for table, rows in batch.items():
            if rows:
                self.conn.executemany(self.sql[table], rows)
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.conn.close()


class PostgresLoader:
    """COPY ... FROM STDIN per table and chunk (psycopg 3)."""

    def __init__(self, url: str):
        import psycopg

        self.conn = psycopg.connect(libpq_url(url))

    def write(self, batch: dict[str, list[tuple]]) -> None:
        with self.conn.transaction(), self.conn.cursor() as cur:
            for table, rows in batch.items():
                if not rows:
                    continue
                with cur.copy(f"COPY {table} ({', '.join(TABLE_COLS[table])}) FROM STDIN") as cp:
                    for row in rows:
                        cp.write_row(row)

    def close(self) -> None:
        self.conn.autocommit = True
        self.conn.execute("VACUUM ANALYZE")       # what autovacuum does to a store written over hours
        self.conn.close()


def libpq_url(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def loader_for(url: str):
    return SqliteLoader(url) if url.startswith("sqlite") else PostgresLoader(url)


def load(loader, maker: RowMaker, indices, parts: tuple[str, ...]) -> int:
    """Load ``parts`` (samples, details = predictions and verdicts, votes) of the samples ``indices``."""
    rows = 0
    idx = list(indices)
    for start in range(0, len(idx), CHUNK):
        batch = {"samples": [], "predictions": [], "verdicts": [], "votes": []}
        for i in idx[start:start + CHUNK]:
            if "samples" in parts:
                batch["samples"].append(maker.sample_row(i))
            if "details" in parts:
                p, v = maker.detail_rows(i)
                batch["predictions"] += p
                batch["verdicts"] += v
            if "votes" in parts:
                batch["votes"] += maker.vote_rows(i)
        loader.write(batch)
        rows += sum(len(r) for r in batch.values())
    return rows


# ---------------------------------------------------------------- the store


def _run_settings(model: str, name: str, n: int) -> dict:
    from objrel.config import RunConfig
    from objrel.data import load_demo
    from objrel.models.imagenet import imagenet_classes
    from objrel.mutations import preset

    demo = load_demo()
    cfg = RunConfig(model=model, dataset="demo", plan=PLAN_NAME, lazy=False, name=name)
    return dict(name=name, model=model,
                model_config={"name": model, "task": "single", "threshold": 0.5, "num_classes": N_LABELS,
                              "weights": None, "family": model.split(":")[-1].split("-")[0],
                              "preprocess": {"size": 224, "resize": "stretch", "crop_fraction": 0.875},
                              "outputs": "logits", "runtime": "torch"},
                task="single", class_names=list(imagenet_classes()), dataset="demo",
                dataset_config={**demo.describe(), "padding": 0, "fmt": "auto", "synset_mapping": None},
                plan=preset(PLAN_NAME).to_dict(), config=cfg.to_dict(), seed=0, n_total=n)


def _finish_run(store, run_id: int, pop: Population, seconds: float) -> None:
    import datetime as dt

    end = dt.datetime.now(dt.timezone.utc)
    start = end - dt.timedelta(seconds=seconds)
    passes = int((pop.status != 2).sum() + 6 * (pop.status == 0).sum())
    store.update_run(run_id, status="finished", started_at=start, finished_at=end, heartbeat_at=end,
                     pid=os.getpid(), lease_host=socket.gethostname(),
                     n_done=pop.n, n_skipped=int((pop.status == 2).sum()), n_tested=int((pop.status == 0).sum()),
                     passes_done=passes, passes_expected=passes, progress_at=end,
                     timings={"seconds": round(seconds, 3), "forward_passes": passes,
                              "steps": {"decode": round(seconds * 0.2, 3), "forward": round(seconds * 0.6, 3),
                                        "check": 0.01 * seconds, "mutants": 0.15 * seconds,
                                        "commit": 0.04 * seconds}})


@dataclass
class BuildInfo:
    url: str
    n: int
    run_ids: list[int]
    rows: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    review: dict[str, int] = field(default_factory=dict)
    bytes: int | None = None
    schema_head: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def build(url: str, n: int, seed: int = 0, log=log_line) -> BuildInfo:
    """Create the store at ``url`` (empty) and fill it with N samples, a second run and a review day."""
    from objrel.store import Store
    from objrel.store.revisions import head

    t_all = time.perf_counter()
    store = Store(url)
    info = BuildInfo(url=url, n=n, run_ids=[], schema_head=head())
    m = max(1, int(round(n * SECOND_RUN_SHARE)))
    pop1 = draw_population(n, seed)
    pop2 = draw_population(m, seed + 1, SECOND_RUN_CORRECT_RATE)
    r1 = store.create_run(**_run_settings("efficientnet-lite0", f"EfficientNet-Lite0 on {n:,} ImageNet-like samples "
                                          "(synthetic)", n))
    r2 = store.create_run(**_run_settings("torchvision:resnet50", f"ResNet-50 on the first {m:,} of them (synthetic)",
                                          m))
    info.run_ids = [r1, r2]
    _finish_run(store, r1, pop1, n * 0.35)
    _finish_run(store, r2, pop2, m * 0.5)
    store.dispose()

    maker1, maker2 = RowMaker(r1, pop1, seed=0), RowMaker(r2, pop2, seed=0)
    flagged = np.flatnonzero(pop1.flagged("MR-1") | pop1.flagged("MR-2"))
    rest = np.setdiff1d(np.arange(n), flagged)
    loader = loader_for(url)
    t = time.perf_counter()
    rows = load(loader, maker1, flagged, ("samples", "votes"))
    info.seconds["load_flagged"] = time.perf_counter() - t

    t = time.perf_counter()
    info.review = review_day(url, r1)
    info.seconds["review"] = time.perf_counter() - t

    t = time.perf_counter()
    rows += load(loader, maker1, flagged, ("details",))
    rows += load(loader, maker1, rest, ("samples", "details", "votes"))
    rows += load(loader, maker2, range(m), ("samples", "details", "votes"))
    info.seconds["load_rest"] = time.perf_counter() - t
    t = time.perf_counter()
    loader.close()
    info.seconds["finish"] = time.perf_counter() - t
    info.seconds["total"] = time.perf_counter() - t_all
    info.rows = table_counts(url)
    info.bytes = store_bytes(url)
    info.warnings = unfilled(url)
    for w in info.warnings:
        log(f"warning: {w}")
    return info


def review_day(url: str, run_id: int) -> dict[str, int]:
    """Accounts, the review samples of ``run_id`` and judgments, through objrel.review's functions."""
    from objrel import review
    from objrel.review.roles import actor_of
    from objrel.store import Store

    store = Store(url)
    try:
        review.create_reviewer(store, BENCH_ACCOUNT, PASSPHRASE, roles=BENCH_ROLES)
        review.create_reviewer(store, REVIEWER_A, PASSPHRASE, roles=("reviewer",))
        review.create_reviewer(store, REVIEWER_B, PASSPHRASE, roles=("reviewer",))
        review.create_reviewer(store, ADJUDICATOR, PASSPHRASE, roles=("adjudicator",))
        a, b, adj = (actor_of(store, who) for who in (REVIEWER_A, REVIEWER_B, ADJUDICATOR))
        rng = np.random.default_rng(7)
        counts = {"judgments": 0, "adjudications": 0, "changed": 0}
        fp_reasons = [r for r in review.FP_REASONS if r != "other"]

        def call(k: int) -> tuple[str, tuple[str, ...], str | None, str | None]:
            verdict = review.VERDICTS[k]
            reasons = (fp_reasons[int(rng.integers(0, len(fp_reasons)))],) if verdict == "fp" else ()
            validity = ("valid", "valid", "valid", "unsure", "invalid", None)[int(rng.integers(0, 6))]
            return verdict, reasons, None, validity

        def pick() -> int:
            return int(rng.choice(3, p=[0.7, 0.2, 0.1]))

        for relation in ("MR-2", "MR-1"):
            ids = review.draw_review_sample(a, store, run_id, relation)
            counts[f"sample_{relation}"] = len(ids)
            n_a = len(ids) if relation == "MR-2" else int(len(ids) * MR1_JUDGED_A)
            n_b = len(ids) if relation == "MR-2" else int(len(ids) * MR1_JUDGED_B)
            first = {}
            for sid in ids[:n_a]:
                k = pick()
                first[sid] = k
                verdict, reasons, note, validity = call(k)
                review.record_judgment(a, store, run_id, sid, relation, verdict, reasons, note, validity=validity)
                counts["judgments"] += 1
            disputes = []
            for sid in ids[:n_b]:
                k = first[sid]
                if rng.random() < DISAGREE_RATE:
                    k = (k + 1 + int(rng.integers(0, 2))) % 3
                    disputes.append(sid)
                verdict, reasons, note, validity = call(k)
                review.record_judgment(b, store, run_id, sid, relation, verdict, reasons, note, validity=validity)
                counts["judgments"] += 1
            for sid in ids[:n_a][-CHANGED_CALLS:]:
                if sid in disputes:
                    continue
                verdict, reasons, note, validity = call(first[sid])
                review.record_judgment(a, store, run_id, sid, relation, verdict, reasons,
                                       "looked again", validity=validity)
                counts["changed"] += 1
            for sid in disputes[:int(len(disputes) * ADJUDICATED_SHARE)]:
                verdict, reasons, note, validity = call(pick())
                review.adjudicate(adj, store, run_id, sid, relation, verdict, reasons, note, validity)
                counts["adjudications"] += 1
            counts[f"disputes_{relation}"] = len(disputes)
        return counts
    finally:
        store.dispose()


def table_counts(url: str) -> dict[str, int]:
    from sqlalchemy import create_engine, func, select

    from objrel.store import schema as S

    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return {t.name: int(c.execute(select(func.count()).select_from(t)).scalar())
                    for t in S.metadata.sorted_tables}
    finally:
        eng.dispose()


def store_bytes(url: str) -> int:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    if url.startswith("sqlite"):
        path = Path(make_url(url).database)
        return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())
    eng = create_engine(url)
    try:
        with eng.connect() as c:
            return int(c.execute(text("select pg_database_size(current_database())")).scalar())
    finally:
        eng.dispose()


def unfilled(url: str) -> list[str]:
    """Tables and columns of this objrel's schema that the loader does not fill: a table with a run_id column
    left empty, or a column of a loaded table the loader leaves out (a summary an engine keeps as it commits
    would be one; pages reading it would read an incomplete store)."""
    from objrel.store import schema as S

    counts = table_counts(url)
    out = []
    for t in S.metadata.sorted_tables:
        if t.name in TABLE_COLS:
            extra = [c.name for c in t.columns if c.name != "id" and c.name not in TABLE_COLS[t.name]]
            if extra:
                out.append(f"table {t.name} has columns this loader leaves empty: {', '.join(extra)}")
        elif t.name not in FILLED_TABLES | EMPTY_BY_DESIGN and counts.get(t.name, 0) == 0:
            out.append(f"table {t.name} (not known to this loader) is empty after the load: fine for results the "
                       "app keeps when a page first needs them, not for rows the engine writes as it commits")
    return out


# ---------------------------------------------------------------- the shape check


def engine_run(workdir: Path) -> str:
    """A real run of the engine (EfficientNet-Lite0, colours3, every mutation, the region dilated 3 px as in the
    demo, which makes MR-1 violations on these photos) over the demo photos plus a missing file and an
    annotation of an unknown class, into a SQLite store under ``workdir``; its URL."""
    import copy

    from objrel.config import RunConfig
    from objrel.engine.classify import Engine
    from objrel.store import Store

    ann = json.loads((CODE_ROOT / "assets" / "demo" / "annotations.json").read_text())
    ann = copy.deepcopy(ann)
    img = dict(ann["images"][0], id=10_001, file_name="missing.jpg")
    ann["images"].append(img)
    ann["annotations"].append(dict(ann["annotations"][0], id=10_001, image_id=10_001))
    ann["categories"].append({"id": 10_001, "name": "tricorder", "supercategory": "none"})
    ann["annotations"].append({"id": 10_002, "image_id": ann["images"][0]["id"], "category_id": 10_001,
                               "bbox": [10.0, 10.0, 50.0, 70.0], "area": 3500.0, "iscrowd": 0,
                               "segmentation": [[10.0, 10.0, 60.0, 10.0, 60.0, 80.0, 10.0, 80.0]]})
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "annotations.json"
    path.write_text(json.dumps(ann))
    url = f"sqlite:///{workdir / 'engine-run.db'}"
    store = Store(url)
    cfg = RunConfig(model="efficientnet-lite0", dataset=str(path), images=str(CODE_ROOT / "assets" / "demo" / "images"),
                    plan=PLAN_NAME, lazy=False, runtime="torch", dilate=3, name="shape check")
    Engine(store, cfg).execute()
    store.dispose()
    return url


def _kind(table: str, row: dict) -> str:
    if table == "samples":
        return row["status"]
    if table == "predictions":
        return "source" if row["mutation_key"] == "source" else "mutant"
    if table == "verdicts":
        return f"{row['relation']} {row['verdict']}"
    if table == "votes":
        return row["relation"]
    return table


def _json_shape(text: str | None) -> set[str]:
    if text is None:
        return set()
    v = json.loads(text)
    if v is None:
        return {"null"}
    if isinstance(v, dict):
        return {"dict"} | {f".{k}" for k in v}
    if isinstance(v, list):
        shape = {"list"}
        for e in v:
            shape |= {"[dict]"} | {f"[].{k}" for k in e} if isinstance(e, dict) else {f"[{type(e).__name__}]"}
        return shape
    return {type(v).__name__}


def _kind_filters(name: str, t) -> list:
    """One WHERE clause per kind of row (so a rare kind is read however the rows are ordered)."""
    from sqlalchemy import Text, and_, cast, true

    if name == "samples":
        return [t.c.status == st for st in ("tested", "untested", "skipped")] + [cast(t.c.dropped, Text) != "null"]
    if name == "predictions":
        return [t.c.mutation_key == "source", t.c.mutation_key != "source"]
    if name == "verdicts":
        return [and_(t.c.relation == r, t.c.verdict == v) for r in ("MR-1", "MR-2")
                for v in ("holds", "violated", "n/a", "not evaluated")]
    if name == "votes":
        return [t.c.relation == r for r in ("MR-1", "MR-2")]
    return [true()]


def shapes(url: str, run_ids: list[int] | None = None, limit: int = 5_000) -> dict:
    """Per table and row kind: the columns ever non-NULL, their Python types, and the JSON shapes (from up to
    ``limit`` rows of each kind)."""
    from sqlalchemy import JSON, Text, cast, create_engine, select

    from objrel.store import schema as S

    eng = create_engine(url)
    out: dict = {}
    try:
        with eng.connect() as c:
            for name in ("runs", "samples", "predictions", "verdicts", "votes"):
                t = S.metadata.tables[name]
                cols = [cast(col, Text).label(col.name) if isinstance(col.type, JSON) else col for col in t.columns]
                json_cols = {col.name for col in t.columns if isinstance(col.type, JSON)}
                for where in _kind_filters(name, t):
                    q = select(*cols).where(where)
                    if run_ids is not None:
                        q = q.where((t.c.id if name == "runs" else t.c.run_id).in_(run_ids))
                    for r in c.execute(q.limit(limit)):
                        row = dict(r._mapping)
                        k = out.setdefault(name, {}).setdefault(_kind(name, row), {})
                        for col, v in row.items():
                            if v is None or col == "id":
                                continue
                            e = k.setdefault(col, set())
                            e |= {f"json:{s}" for s in _json_shape(v)} if col in json_cols else {type(v).__name__}
    finally:
        eng.dispose()
    return out


def shape_check(url: str, workdir: Path, run_ids: list[int] | None = None, log=log_line) -> dict:
    """Compare the synthetic rows at ``url`` with a real engine run's: per table and kind of row, the columns
    that hold a value, their types and the keys of their JSON.  Returns {"ok", "differences", "unchecked"}."""
    real_url = engine_run(workdir)
    real, synth = shapes(real_url), shapes(url, run_ids)
    diffs, unchecked = [], []
    for table in sorted(set(real) | set(synth)):
        for kind in sorted(set(real.get(table, {})) | set(synth.get(table, {}))):
            a, b = real.get(table, {}).get(kind), synth.get(table, {}).get(kind)
            if a is None:
                unchecked.append(f"{table} [{kind}]: not in the engine's run")
                continue
            if b is None:
                unchecked.append(f"{table} [{kind}]: not in the synthetic store")
                continue
            for col in sorted(set(a) | set(b)):
                if col not in b:
                    diffs.append(f"{table} [{kind}].{col}: the engine writes {sorted(a[col])}, the store has NULL")
                elif col not in a:
                    diffs.append(f"{table} [{kind}].{col}: the engine writes NULL, the store has {sorted(b[col])}")
                elif a[col] != b[col]:
                    # a column whose JSON varies row to row (probs keys are labels) is compared by kind of value
                    sa = {s for s in a[col] if not s.startswith("json:.") or table != "predictions"}
                    sb = {s for s in b[col] if not s.startswith("json:.") or table != "predictions"}
                    keys_a = {s for s in a[col] if s.startswith("json:.")}
                    keys_b = {s for s in b[col] if s.startswith("json:.")}
                    if sa != sb or (table == "predictions" and keys_a != keys_b):
                        diffs.append(f"{table} [{kind}].{col}: engine {sorted(a[col])} vs store {sorted(b[col])}")
    return {"ok": not diffs, "differences": diffs, "unchecked": unchecked}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build a store (the URL's database must be empty or new)")
    b.add_argument("--url", required=True)
    b.add_argument("--n", type=int, required=True)
    b.add_argument("--json", action="store_true", help="print the build's figures as one JSON line at the end")
    s = sub.add_parser("shape", help="compare a store's rows with a real engine run's")
    s.add_argument("--url", required=True)
    s.add_argument("--workdir", default=None)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        info = build(args.url, args.n)
        if args.json:
            print("@@BUILD " + json.dumps(info.to_dict()), flush=True)
        else:
            print(json.dumps(info.to_dict(), indent=1))
        return 0
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        res = shape_check(args.url, Path(tmp))
    print("shape check: ok" if res["ok"] else "shape check: differences\n  " + "\n  ".join(res["differences"]))
    for u in res["unchecked"]:
        print(f"  (unchecked) {u}")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
