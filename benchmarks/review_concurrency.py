"""Review writes under load: 20 reviewer processes judging and re-judging at once, with an adjudicator.

For each store size and back end (SQLite, PostgreSQL) it builds a store whose finished 3-colour run has N
tested samples, every one flagged by MR-2 (rows bulk-inserted in the engine's shape: a sample, 7 predictions,
6 verdicts and 2 votes each), creates ``REVIEWERS`` reviewer accounts and one adjudicator, draws the MR-2
review sample with objrel's own ``draw_review_sample``, then starts the reviewers and the adjudicator as
separate processes (spawned) and releases them together once all have opened the store:

* a reviewer makes ``--calls`` calls through ``objrel.review.queue.record_call`` (what the Review page's
  ``judge`` calls), each on a random item of the first ``HOT_ITEMS`` drawn ones with a random verdict,
  reasons, validity and note, so reviewers overlap, disagree and re-judge their own calls;
* the adjudicator looks for items two reviewers called differently and decides one through
  ``objrel.review.adjudicate``, over and over, until the reviewers are done.

Each process pauses ``--think-s`` on average between its calls (a person's quickest pace; the first call
comes within that time of the release); ``--think-s 0`` makes every process call as fast as the store answers
(a stress test: on a 2-core machine 21 processes then queue for the CPU as much as for the store).

Afterwards every process's last call per item is compared with the ``judgments`` table (and with the
``consensus`` table for the adjudicator), and the number of versions each reviewer's calls should have made
(a call equal to the current one makes none) with ``judgment_versions``: *lost* counts calls stored
differently or not at all, *extra* rows nobody expects.  Errors are any exception other than an expected
refusal (an adjudication of an item whose reviewers meanwhile agreed); ``StoreBusy`` counts as an error.
Latency is the wall time of one public call: p50, p99 and max over the reviewers' calls after each process's
first, and apart the first calls (each process compiles its statements then: what a server process pays once).
Writes/s are the reviewers' saved calls per second of the phase.  The processes wait for one another before
they exit, so no call is timed beside another process's exit.

PostgreSQL is the tests' throwaway server (``tests/fixtures/pg_server.py``: loopback, fsync off), whose
autovacuum looks at the tables every ``AUTOVACUUM_NAPTIME_S`` seconds, so its statistics follow the judgments
written during a phase as a long-lived server's follow its tables' growth.

Targets at 1,000,000 samples: p99 <= 200 ms on PostgreSQL, <= 1 s on SQLite; 0 lost, 0 errors.

``--before REF`` first runs the same benchmark on a git worktree of ``REF`` (its own objrel, same script and
settings, one after the other) and prints the two side by side.  Results go to
``benchmarks/results/review_concurrency.json``.

    python benchmarks/review_concurrency.py [--sizes 10000,1000000] [--backends sqlite,postgresql]
                                             [--calls 60] [--think-s 1.0] [--before REF]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The objrel tree the benchmark imports (the worktree of ``--before``; this checkout otherwise).  Spawned
# processes inherit the environment, so they import the same tree.
TREE_ENV = "OBJREL_BENCH_TREE"
TREE = Path(os.environ.get(TREE_ENV, ROOT))
sys.path.insert(0, str(TREE))

RESULTS = ROOT / "benchmarks" / "results" / "review_concurrency.json"
REVIEWERS = 20
ADJUDICATOR = "adjudicator"
PASSPHRASE = "benchmark-passphrase"
RELATION = "MR-2"
# Calls land on the first this-many drawn items: few enough that reviewers overlap and change their calls.
HOT_ITEMS = 60
# Seconds a reviewer (and the adjudicator) pauses between calls on average (uniform from half to 1.5 times it):
# the quickest pace a person keeps, a glance at the item (review_loop's LOOK_S) and the page drawing the next.
# ``--think-s 0`` makes every process call as fast as the store answers.
THINK_S = 1.0
# Rows of each table inserted per executemany.
CHUNK = 20_000
# Seconds the processes get to start (imports, store open) before the phase begins without the late ones.
START_TIMEOUT_S = 300
NOTES = (None, "object still visible", "background artefact", "hard to say")
SIZES = "10000,1000000"
BACKENDS = "sqlite,postgresql"


# ---------------------------------------------------------------- the store


def _rows(run_id: int, start: int, stop: int, plan, photos, sizes) -> dict[str, list[dict]]:
    """The rows of samples ``start`` .. ``stop - 1``: what the engine writes for a tested sample of the
    3-colour plan whose MR-2 vote is violated (MR-1 holds); JSON columns as text."""
    from objrel.mutations import derive_seed
    from objrel.relations.classify import Prediction

    out: dict[str, list[dict]] = {"samples": [], "predictions": [], "verdicts": [], "votes": []}
    for i in range(start, stop):
        src = photos[i % len(photos)]
        sid = f"{i:07d}"
        label = src.objects[0].class_index
        w, h = sizes[src.sample_id]
        out["samples"].append({
            "run_id": run_id, "sample_id": sid, "rel_path": src.rel_path, "status": "tested", "width": w,
            "height": h, "gt_labels": json.dumps([label]), "gt_categories": json.dumps([src.objects[0].category]),
            "predicted": json.dumps([label]), "correct": True,
            "objects": json.dumps([o.to_dict() for o in src.objects]), "region_source": "annotation",
            "area_ratio": 0.2 + 0.6 * (i % 97) / 97, "s_p": 0.5, "s_r": 0.3, "s": 0.4, "elapsed_ms": 1.0})
        probs = [0.0] * 1000
        probs[label], probs[(label + 1) % 1000] = 0.7, 0.2
        p = json.dumps(Prediction.from_probs(probs, interest=[label]).to_dict())
        out["predictions"].append({"run_id": run_id, "sample_id": sid, "mutation_key": "source", "seed": None,
                                   "prediction": p})
        for m in plan.mutations:
            out["predictions"].append({"run_id": run_id, "sample_id": sid, "mutation_key": m.key,
                                       "seed": str(derive_seed(0, sid, m.key)), "prediction": p})
            violated = m.relation == RELATION
            out["verdicts"].append({"run_id": run_id, "sample_id": sid, "mutation_key": m.key,
                                    "operator": m.operator, "relation": m.relation,
                                    "verdict": "violated" if violated else "holds", "source_certainty": 0.5,
                                    "mutant_certainty": 0.5, "label_changed": violated, "distance": 0.5,
                                    "note": None})
        for g in plan.groups:
            flagged = g.relation == RELATION
            out["votes"].append({"run_id": run_id, "sample_id": sid, "group_name": g.name, "relation": g.relation,
                                 "is_primary": True, "k": g.k, "n": 3, "applicable": 3,
                                 "violations": 3 if flagged else 0, "flagged": flagged})
    return out


def build_store(url: str, n: int) -> int:
    """A finished 3-colour run of ``n`` tested samples, each flagged by MR-2, in the (new) store at ``url``;
    returns the run id.  Rows go in with the driver's own executemany (one transaction per chunk)."""
    from PIL import Image

    from objrel.data import load_demo
    from objrel.models import imagenet_classes
    from objrel.mutations import preset
    from objrel.store import Store

    demo = load_demo()
    plan = preset("colours3")
    store = Store(url)
    run_id = store.create_run(
        name=f"synthetic {n} flagged", model="efficientnet-lite0", model_config={}, task="single",
        class_names=list(imagenet_classes()), dataset="demo", dataset_config={**demo.describe(), "padding": 0},
        plan=plan.to_dict(), config={"model": "efficientnet-lite0", "dataset": "demo", "plan": "colours3"}, seed=0,
        n_total=n)
    photos = list(demo.samples)
    sizes = {}
    for s in photos:
        with Image.open(s.image_path) as im:
            sizes[s.sample_id] = im.size
    mark = "?" if store.is_sqlite else "%s"
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        t = time.perf_counter()
        for start in range(0, n, CHUNK):
            for table, rows in _rows(run_id, start, min(n, start + CHUNK), plan, photos, sizes).items():
                cols = list(rows[0])
                cur.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join([mark] * len(cols))})",
                                [tuple(r[c] for c in cols) for r in rows])
            raw.commit()
        cur.close()
    finally:
        raw.close()
    store.update_run(run_id, status="finished", n_done=n, n_tested=n)
    if not store.is_sqlite:    # what autovacuum does on a live server soon after a bulk load
        with store.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            c.exec_driver_sql("VACUUM ANALYZE")
    print(f"  built {n:,} samples ({7 * n:,} predictions, {6 * n:,} verdicts, {2 * n:,} votes) "
          f"in {time.perf_counter() - t:.0f} s", flush=True)
    store.dispose()
    return run_id


def prepare(url: str, n: int) -> dict:
    """Build the store, create the accounts, draw the review sample; returns what the processes need."""
    from objrel import review
    from objrel.review.roles import actor_of, grant_as_operator
    from objrel.store import Store

    run_id = build_store(url, n)
    store = Store(url)
    names = [f"reviewer{i:02d}" for i in range(REVIEWERS)]
    for name in names:
        review.create_reviewer(store, name, PASSPHRASE)
    review.create_reviewer(store, ADJUDICATOR, PASSPHRASE)
    grant_as_operator(store, ADJUDICATOR, [review.ADJUDICATOR])
    drawn = review.draw_review_sample(actor_of(store, names[0]), store, run_id, RELATION)
    store.dispose()
    return {"url": url, "run_id": run_id, "reviewers": names, "items": drawn[:HOT_ITEMS], "drawn": len(drawn)}


# ---------------------------------------------------------------- the processes


def _think(rng: random.Random, think_s: float, spread: tuple[float, float] = (0.5, 1.5)) -> None:
    if think_s > 0:
        time.sleep(rng.uniform(*spread) * think_s)


def _random_call(rng: random.Random, review) -> tuple:
    verdict = rng.choice(review.VERDICTS)
    reasons: tuple = ()
    note = rng.choice(NOTES)
    if verdict == "fp":
        reasons = tuple(r for r in review.FP_REASONS if rng.random() < 0.4) or (review.FP_REASONS[0],)
        if "other" in reasons and note is None:
            note = NOTES[1]
    validity = rng.choice((None, *review.VALIDITY))
    return verdict, reasons, note, validity


# ``gate``: what the processes of a phase share: (processes ready, start, reviewers done, finish).


def _ready(gate) -> None:
    """Count this process ready (its modules imported, its store open), then wait for the phase to start."""
    ready, start, _, _ = gate
    with ready.get_lock():
        ready.value += 1
    start.wait(START_TIMEOUT_S)


def _finished(gate, reviewer: bool) -> None:
    """Count a reviewer done, then wait for the phase to end before exiting: a process's exit takes CPU that
    the others' last calls would otherwise be measured with."""
    _, _, done, finish = gate
    if reviewer:
        with done.get_lock():
            done.value += 1
    finish.wait(START_TIMEOUT_S)


def reviewer_process(setup: dict, name: str, seed: int, calls: int, deadline_s: float, gate, out: str) -> None:
    """Judge random hot items ``calls`` times (or until ``deadline_s`` after the start) through ``record_call``;
    write the latencies, errors, last call per item and expected versions per item to ``out`` (JSON)."""
    from objrel import review
    from objrel.review.queue import record_call
    from objrel.review.roles import actor_of
    from objrel.store import Store

    store = Store(setup["url"])
    actor = actor_of(store, name)
    rng = random.Random(seed)
    last: dict[str, tuple] = {}
    versions: dict[str, int] = {}
    lat, errors = [], []
    _ready(gate)
    stop = time.monotonic() + deadline_s
    _think(rng, setup["think_s"], spread=(0.0, 1.0))      # people do not all start at the same instant
    for _ in range(calls):
        if time.monotonic() > stop:
            break
        sid = rng.choice(setup["items"])
        verdict, reasons, note, validity = _random_call(rng, review)
        t = time.perf_counter()
        try:
            record_call(actor, store, setup["run_id"], sid, RELATION, verdict, reasons, note, validity=validity)
        except Exception as exc:  # noqa: BLE001 - every failure is counted, by kind
            lat.append(time.perf_counter() - t)
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        lat.append(time.perf_counter() - t)
        stored = (verdict, list(reasons) if verdict == "fp" else [], (note or "").strip() or None, validity)
        if last.get(sid) != stored:
            versions[sid] = versions.get(sid, 0) + 1
        last[sid] = stored
        _think(rng, setup["think_s"])
    Path(out).write_text(json.dumps({"name": name, "latency_s": lat, "errors": errors, "last": last,
                                     "versions": versions}))
    _finished(gate, reviewer=True)
    store.dispose()


def adjudicator_process(setup: dict, seed: int, calls: int, deadline_s: float, gate, out: str) -> None:
    """Decide items two reviewers called differently through ``review.adjudicate`` until the reviewers are done
    (``deadline_s`` at most); write latencies, refusals, errors and the last decision per item to ``out``."""
    from objrel import review
    from objrel.review.roles import actor_of
    from objrel.store import Store

    store = Store(setup["url"])
    actor = actor_of(store, ADJUDICATOR)
    rng = random.Random(seed)
    last: dict[str, tuple] = {}
    lat, errors, refused = [], [], 0
    _ready(gate)
    stop = time.monotonic() + deadline_s
    made = 0
    while made < calls and time.monotonic() < stop and gate[2].value < len(setup["reviewers"]):
        by_item: dict[str, set] = {}
        for j in review.judgments(store, setup["run_id"], RELATION):
            by_item.setdefault(j.sample_id, set()).add((j.verdict, j.reasons))
        disputed = sorted(sid for sid, cs in by_item.items() if len(cs) > 1)
        if not disputed:
            time.sleep(0.05)
            continue
        sid = rng.choice(disputed)
        verdict, reasons, note, validity = _random_call(rng, review)
        made += 1
        t = time.perf_counter()
        try:
            review.adjudicate(actor, store, setup["run_id"], sid, RELATION, verdict, reasons, note, validity)
        except ValueError as exc:
            lat.append(time.perf_counter() - t)
            if "not a disagreement" in str(exc):    # the reviewers agreed meanwhile: a refusal, not a failure
                refused += 1
            else:
                errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        except Exception as exc:  # noqa: BLE001 - every failure is counted, by kind
            lat.append(time.perf_counter() - t)
            errors.append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        lat.append(time.perf_counter() - t)
        last[sid] = (verdict, list(reasons), (note or "").strip() or None, validity)
        _think(rng, setup["think_s"])
    Path(out).write_text(json.dumps({"name": ADJUDICATOR, "latency_s": lat, "errors": errors, "last": last,
                                     "refused": refused}))
    _finished(gate, reviewer=False)
    store.dispose()


# ---------------------------------------------------------------- one phase


def _pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def check(setup: dict, results: list[dict]) -> dict:
    """Compare what the processes saved with the store: lost and extra judgments, versions, decisions."""
    from sqlalchemy import func, select

    from objrel.store import Store
    from objrel.store import schema as S

    store = Store(setup["url"])
    rid = setup["run_id"]
    j, v, cs = S.judgments, S.judgment_versions, S.consensus
    with store.engine.connect() as c:
        stored = {(r.reviewer, r.sample_id): (r.verdict, list(r.reasons or []), r.note, r.validity)
                  for r in c.execute(select(j).where(j.c.run_id == rid, j.c.relation == RELATION))}
        vers = {(who, sid): (int(n), int(top)) for who, sid, n, top in c.execute(
            select(v.c.reviewer, v.c.sample_id, func.count(), func.max(v.c.version))
            .where(v.c.run_id == rid, v.c.relation == RELATION).group_by(v.c.reviewer, v.c.sample_id))}
        decided = {r.sample_id: (r.verdict, list(r.reasons or []), r.note, r.validity, r.adjudicator)
                   for r in c.execute(select(cs).where(cs.c.run_id == rid, cs.c.relation == RELATION))}
    store.dispose()
    expected, expected_versions, lost, lost_versions = {}, {}, 0, 0
    decisions, lost_decisions = {}, 0
    for r in results:
        if r["name"] == ADJUDICATOR:
            decisions = {sid: tuple(call) for sid, call in r["last"].items()}
            continue
        for sid, call in r["last"].items():
            expected[(r["name"], sid)] = tuple(call)
        for sid, k in r["versions"].items():
            expected_versions[(r["name"], sid)] = k
    for key, call in expected.items():
        got = stored.get(key)
        lost += got is None or (got[0], got[1], got[2], got[3]) != (call[0], list(call[1]), call[2], call[3])
    for key, k in expected_versions.items():
        n, top = vers.get(key, (0, 0))
        lost_versions += n != k or top != k       # k versions, numbered 1 .. k
    for sid, call in decisions.items():
        got = decided.get(sid)
        lost_decisions += got is None or got[:4] != (call[0], list(call[1]), call[2], call[3]) \
            or got[4] != ADJUDICATOR
    return {"judgments_expected": len(expected), "judgments_stored": len(stored), "judgments_lost": lost,
            "judgments_extra": len(set(stored) - set(expected)),
            "versions_expected": sum(expected_versions.values()), "versions_stored": sum(n for n, _ in vers.values()),
            "versions_wrong": lost_versions + len(set(vers) - set(expected_versions)),
            "decisions_expected": len(decisions), "decisions_stored": len(decided), "decisions_lost": lost_decisions}


def phase(setup: dict, calls: int, duration_s: float, seed: int, workdir: Path) -> dict:
    """Run the reviewers and the adjudicator at once on a prepared store; return the measures."""
    ctx = mp.get_context("spawn")
    gate = (ctx.Value("i", 0), ctx.Event(), ctx.Value("i", 0), ctx.Event())
    outs = [workdir / f"{name}.json" for name in setup["reviewers"]] + [workdir / f"{ADJUDICATOR}.json"]
    procs = [ctx.Process(target=reviewer_process, args=(setup, name, seed * 1000 + i, calls, duration_s, gate,
                                                        str(out)))
             for i, (name, out) in enumerate(zip(setup["reviewers"], outs))]
    procs.append(ctx.Process(target=adjudicator_process, args=(setup, seed * 1000 + 999, calls, duration_s, gate,
                                                               str(outs[-1]))))
    for p in procs:
        p.start()
    wait_until = time.monotonic() + START_TIMEOUT_S
    while gate[0].value < len(procs) and time.monotonic() < wait_until and all(p.is_alive() for p in procs):
        time.sleep(0.1)
    t0 = time.monotonic()
    gate[1].set()
    while gate[2].value < len(setup["reviewers"]) and any(p.is_alive() for p in procs[:-1]):
        time.sleep(0.05)
    wall = time.monotonic() - t0
    gate[3].set()
    for p in procs:
        p.join()
    results = [json.loads(o.read_text()) for o in outs if o.exists()]
    crashed = [p.exitcode for p in procs if p.exitcode != 0]
    rev = [r for r in results if r["name"] != ADJUDICATOR]
    adj = next((r for r in results if r["name"] == ADJUDICATOR), None)
    lat = [x for r in rev for x in r["latency_s"]]
    warm = [x for r in rev for x in r["latency_s"][1:]]
    first = [r["latency_s"][0] for r in rev if r["latency_s"]]
    errors = [e for r in results for e in r["errors"]]
    saved = sum(len(r["latency_s"]) - len(r["errors"]) for r in rev)
    kinds: dict[str, int] = {}
    for e in errors:
        k = e.split(":")[0]
        kinds[k] = kinds.get(k, 0) + 1
    out = {"reviewer_calls": len(lat), "saved_calls": saved, "errors": len(errors), "error_kinds": kinds,
           "error_examples": errors[:3], "crashed_processes": len(crashed), "wall_s": round(wall, 1),
           "p50_ms": _ms(_pct(warm, 0.50)), "p99_ms": _ms(_pct(warm, 0.99)), "max_ms": _ms(max(warm, default=None)),
           "p99_all_calls_ms": _ms(_pct(lat, 0.99)), "first_call_median_ms": _ms(_pct(first, 0.50)),
           "first_call_max_ms": _ms(max(first, default=None)),
           "writes_per_s": round(saved / wall, 1) if wall else None}
    if adj is not None:
        out.update({"adjudications": len(adj["latency_s"]) - len(adj["errors"]) - adj["refused"],
                    "adjudications_refused": adj["refused"],
                    "adjudication_p50_ms": _ms(_pct(adj["latency_s"], 0.50)),
                    "adjudication_p99_ms": _ms(_pct(adj["latency_s"], 0.99))})
    out.update(check(setup, results))
    return out


def _ms(s: float | None) -> float | None:
    return None if s is None else round(1000 * s, 1)


# ---------------------------------------------------------------- driver


# Seconds between the throwaway server's autovacuum rounds (its default is 60): a phase lasts about a minute, and
# a long-lived server's statistics follow its tables' growth (a table is analysed again after 10 % new rows).
AUTOVACUUM_NAPTIME_S = 5


def _live_statistics(server_url: str) -> None:
    """Let the server's autovacuum analyse the judgments written during a phase, as on a server in use."""
    from sqlalchemy import create_engine

    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.exec_driver_sql(f"ALTER SYSTEM SET autovacuum_naptime = '{AUTOVACUUM_NAPTIME_S}s'")
        c.exec_driver_sql("SELECT pg_reload_conf()")
    admin.dispose()


def _new_pg_database(server_url: str, name: str) -> str:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {name}"))
        c.execute(text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def _drop_pg_database(server_url: str, name: str) -> None:
    from sqlalchemy import create_engine, text

    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
    admin.dispose()


def measure(sizes: list[int], backends: list[str], calls: int, duration_s: float, seed: int,
            think_s: float) -> list[dict]:
    """Every (back end, size) of this tree, one after the other; one dict per phase."""
    rows = []
    with ExitStack() as stack:
        pg = None
        if "postgresql" in backends:
            sys.path.insert(1, str(ROOT))   # the test fixture's throwaway server
            from tests.fixtures.pg_server import postgres_server

            pg = stack.enter_context(postgres_server())
            _live_statistics(pg)
        for backend in backends:
            for n in sizes:
                work = Path(tempfile.mkdtemp(prefix="objrel-review-bench-"))
                try:
                    print(f"{backend}, {n:,} samples:", flush=True)
                    if backend == "sqlite":
                        url = f"sqlite:///{work / 'store.db'}"
                    else:
                        url = _new_pg_database(pg, f"bench_{n}")
                    setup = {**prepare(url, n), "think_s": think_s}
                    res = phase(setup, calls, duration_s, seed, work)
                    res.update({"backend": backend, "samples": n, "reviewers": REVIEWERS, "drawn": setup["drawn"],
                                "hot_items": len(setup["items"]), "calls_per_reviewer": calls, "think_s": think_s})
                    print("  " + json.dumps(res), flush=True)
                    rows.append(res)
                finally:
                    if backend != "sqlite":
                        _drop_pg_database(pg, f"bench_{n}")
                    shutil.rmtree(work, ignore_errors=True)
    return rows


def worktree(ref: str, where: Path) -> Path:
    """A detached git worktree of ``ref`` in ``where`` (removed with ``drop_worktree``)."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), ref], check=True,
                   capture_output=True)
    return where


def drop_worktree(where: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)], capture_output=True)


TARGET_P99_MS = {"postgresql": 200.0, "sqlite": 1000.0}


def table(labelled: list[tuple[str, list[dict]]]) -> str:
    """The phases as a text table, one line each, labelled by tree."""
    lines = [f"{'tree':<7} {'back end':<10} {'samples':>9} {'calls':>6} {'saved':>6} {'errors':>6} {'lost':>4} "
             f"{'extra':>5} {'versions exp/stored':>19} {'adjud.':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
             f"{'1st max':>8} {'writes/s':>8}"]
    for label, rows in labelled:
        for r in rows:
            lines.append(
                f"{label:<7} {r['backend']:<10} {r['samples']:>9,} {r['reviewer_calls']:>6} {r['saved_calls']:>6} "
                f"{r['errors']:>6} {r['judgments_lost']:>4} {r['judgments_extra']:>5} "
                f"{str(r['versions_expected']) + ' / ' + str(r['versions_stored']):>19} "
                f"{r.get('adjudications', 0):>6} {_num(r['p50_ms']):>8} {_num(r['p99_ms']):>8} "
                f"{_num(r['max_ms']):>8} {_num(r.get('first_call_max_ms')):>8} {_num(r['writes_per_s']):>8}")
    return "\n".join(lines)


def _num(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default=SIZES, help="tested samples per store, comma-separated")
    ap.add_argument("--backends", default=BACKENDS, help="sqlite, postgresql or both, comma-separated")
    ap.add_argument("--calls", type=int, default=60, help="calls per reviewer (the adjudicator makes as many)")
    ap.add_argument("--think-s", type=float, default=THINK_S, help="mean pause between one process's calls (s)")
    ap.add_argument("--duration", type=float, default=180.0, help="seconds a phase may run at most")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--before", metavar="REF", help="first run the same benchmark on a worktree of git REF")
    ap.add_argument("--out", type=Path, default=RESULTS, help="the JSON results file")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if any(b not in TARGET_P99_MS for b in backends):
        ap.error(f"--backends takes sqlite and postgresql; got {args.backends!r}")
    report = {"settings": {"sizes": sizes, "backends": backends, "reviewers": REVIEWERS, "hot_items": HOT_ITEMS,
                           "calls_per_reviewer": args.calls, "think_s": args.think_s, "duration_s": args.duration,
                           "seed": args.seed,
                           "cores": os.cpu_count(), "targets_p99_ms": TARGET_P99_MS},
              "this_tree": {"commit": _commit(TREE)}}
    before_rows = None
    if args.before:
        with tempfile.TemporaryDirectory(prefix="objrel-before-") as tmp:
            tree = worktree(args.before, Path(tmp) / "tree")
            try:
                out = Path(tmp) / "before.json"
                cmd = [sys.executable, str(Path(__file__).resolve()), "--sizes", args.sizes, "--backends",
                       args.backends, "--calls", str(args.calls),
                       "--think-s", str(args.think_s), "--duration", str(args.duration), "--seed",
                       str(args.seed), "--out", str(out)]
                print(f"== before: {args.before} ==", flush=True)
                subprocess.run(cmd, env={**os.environ, TREE_ENV: str(tree)})     # fails when it loses calls
                before = json.loads(out.read_text())
                before_rows = before["rows"]
                report["before"] = {"ref": args.before, "commit": before["this_tree"]["commit"], "rows": before_rows}
            finally:
                drop_worktree(tree)
        print("== this tree ==", flush=True)
    rows = measure(sizes, backends, args.calls, args.duration, args.seed, args.think_s)
    report["rows"] = rows
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print()
    print(table(([("before", before_rows)] if before_rows is not None else []) + [("after", rows)]))
    ok = all(r["errors"] == 0 and r["judgments_lost"] == 0 and r["judgments_extra"] == 0 and r["versions_wrong"] == 0
             and r["decisions_lost"] == 0 and r["crashed_processes"] == 0 for r in rows)
    print("\n0 lost, 0 errors: " + ("yes" if ok else "NO"))
    for r in rows:
        print(f"p99 {r['backend']} at {r['samples']:,}: {_num(r['p99_ms'])} ms "
              f"(target <= {TARGET_P99_MS[r['backend']]:,.0f} ms)")
    return 0 if ok else 1


def _commit(tree: Path) -> str | None:
    """The tree's commit, with ``+changes`` when its tracked files differ from it."""
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return (head.stdout.strip() + ("+changes" if dirty else "")) or None


if __name__ == "__main__":
    sys.exit(main())
