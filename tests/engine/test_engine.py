"""Engine: batching, correctness filter, skipped samples, determinism and resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.store import Store

from tests.conftest import write_background_driven_scene
from tests.fixtures.colour_model import factory

ROOT = Path(__file__).resolve().parents[2]

# Columns that legitimately differ between two runs of the same plan.
VOLATILE = {"id", "run_id", "elapsed_ms"}


def rows(store: Store, run_id: int) -> dict:
    strip = lambda rs: sorted(({k: v for k, v in r.items() if k not in VOLATILE} for r in rs), key=repr)  # noqa: E731
    out = {"samples": strip(store.samples(run_id)), "verdicts": strip(store.verdicts(run_id)),
           "votes": strip(store.votes(run_id))}
    out["predictions"] = sorted(
        (sid, k, repr(v["prediction"]), v["seed"])
        for sid in [s["sample_id"] for s in store.samples(run_id)]
        for k, v in store.predictions(run_id, sid).items()
    )
    return out


def config(path, **kw) -> RunConfig:
    # lazy=False: these tests check every mutation's verdict and the continuous scores (tests/engine/test_lazy_votes.py
    # checks that lazy votes give the same flags)
    base = dict(model="py:tests.fixtures.colour_model:factory", dataset=str(path), plan="all", batch_size=4,
                lazy=False)
    base.update(kw)
    return RunConfig(**base)


def test_run_records_every_sample_with_status_and_reason(colour_set, colour_model, store):
    report = Engine(store, config(colour_set), model=colour_model).execute()
    by_id = {s["sample_id"]: s for s in store.samples(report.run_id)}
    assert len(by_id) == 10
    assert report.status == "finished"
    # the bad samples are skipped with their reason, the run went on
    assert by_id["7"]["skip_code"] == "corrupt-image" and "corrupt.png" in by_id["7"]["skip_reason"]
    assert by_id["8"]["skip_code"] == "missing-file" and "missing.png" in by_id["8"]["skip_reason"]
    assert by_id["9"]["skip_code"] == "unknown-label" and "99" in by_id["9"]["skip_reason"]
    assert by_id["10"]["skip_code"] == "box-outside-image"
    assert dict(report.skipped) == {"corrupt-image": 1, "missing-file": 1, "unknown-label": 1,
                                    "box-outside-image": 1}
    # img4: small blue object on a red background -> predicted red, wrong -> not tested by default
    assert by_id["4"]["status"] == "untested" and by_id["4"]["correct"] is False
    tested = {sid for sid, s in by_id.items() if s["status"] == "tested"}
    assert tested == {"1", "2", "3", "5", "6"}
    run = store.get_run(report.run_id)
    assert (run.n_done, run.n_skipped, run.n_tested) == (10, 4, 5)


def test_area_ratio_is_region_share(colour_set, colour_model, store):
    report = Engine(store, config(colour_set, plan="colours3"), model=colour_model).execute()
    s6 = store.sample(report.run_id, "6")
    assert s6["area_ratio"] == pytest.approx(32 * 48 / (64 * 48))  # box 0..32 x 0..48 of a 64x48 image
    s1 = store.sample(report.run_id, "1")
    assert s1["area_ratio"] == pytest.approx(32 * 24 / (64 * 48))


def test_background_driven_inference_is_flagged_by_both_relations(tmp_path, colour_model, store):
    """A greenish object (100,150,100) annotated "red" on a saturated red background (250,0,0), covering
    a = 1/4 of the image.  The colour model answers "red" only because of the background.

    Source: mean R - G = 3/4*250 + 1/4*(100-150) = 175 (red, correct by the annotation).
    MR-1, object filled gray/black/white: R - G = 3/4*250 + 0 = 187.5 > 175, the label stays red and the
    certainty *rises*: violated 3 of 3 -> flagged.
    MR-2, background filled with a gray level: only the greenish object keeps colour, G > R -> green:
    the label changes, violated 3 of 3 -> flagged."""
    root = write_background_driven_scene(tmp_path / "bg").parent
    report = Engine(store, config(root / "ann.json", plan="colours3"), model=colour_model).execute()
    votes = {v["relation"]: v for v in store.votes(report.run_id) if v["is_primary"]}
    assert (votes["MR-1"]["violations"], votes["MR-1"]["flagged"]) == (3, True)
    assert (votes["MR-2"]["violations"], votes["MR-2"]["flagged"]) == (3, True)
    src_cert = {v["mutation_key"]: v for v in store.verdicts(report.run_id)}["fill_object(colour=gray)"]
    assert src_cert["mutant_certainty"] > src_cert["source_certainty"]


def test_object_driven_inference_holds_both_relations(colour_set, colour_model, store):
    """img2: a large red object (48x40 of 64x48) on a dark blue background.  Painting the object black,
    gray or white removes the red: the label changes (MR-1 holds).  Painting the background a gray level
    leaves the red object dominant: label stays (MR-2 holds)."""
    report = Engine(store, config(colour_set, plan="colours3"), model=colour_model).execute()
    votes = {(v["sample_id"], v["relation"]): v for v in store.votes(report.run_id) if v["is_primary"]}
    assert votes[("2", "MR-2")]["violations"] == 0 and not votes[("2", "MR-2")]["flagged"]
    mr1 = {v["mutation_key"]: v for v in store.verdicts(report.run_id, "2") if v["relation"] == "MR-1"}
    assert mr1["fill_object(colour=black)"]["verdict"] == "holds"
    assert mr1["fill_object(colour=black)"]["label_changed"] is True
    assert votes[("2", "MR-1")]["violations"] == 0


def test_same_seed_gives_same_rows(tmp_path, colour_set, colour_model):
    a, b = Store(tmp_path / "a.db"), Store(tmp_path / "b.db")
    ra = Engine(a, config(colour_set, seed=7), model=colour_model).execute()
    rb = Engine(b, config(colour_set, seed=7), model=colour_model).execute()
    assert rows(a, ra.run_id) == rows(b, rb.run_id)
    c = Store(tmp_path / "c.db")
    rc = Engine(c, config(colour_set, seed=8), model=colour_model).execute()
    # random operators (random_erase, noise) draw other pixels with another seed
    seeds_a = {p[3] for p in rows(a, ra.run_id)["predictions"]}
    seeds_c = {p[3] for p in rows(c, rc.run_id)["predictions"]}
    assert seeds_a != seeds_c


def test_resume_after_stop_matches_uninterrupted_run(tmp_path, colour_set, colour_model):
    full = Store(tmp_path / "full.db")
    rf = Engine(full, config(colour_set), model=colour_model).execute()

    part = Store(tmp_path / "part.db")
    eng = Engine(part, config(colour_set, batch_size=2), model=colour_model)
    first = eng.execute(stop_after=3)
    assert first.status == "pending" and len(part.samples(first.run_id)) == 3
    # resume twice: the second resume has nothing left to do and writes nothing
    second = Engine(part, config(colour_set, batch_size=2), model=colour_model).execute(run_id=first.run_id)
    third = Engine(part, config(colour_set, batch_size=2), model=colour_model).execute(run_id=first.run_id)
    assert (second.status, second.processed, third.processed) == ("finished", 7, 0)
    assert rows(part, first.run_id) == rows(full, rf.run_id)


def test_write_sample_is_idempotent(store, colour_set, colour_model):
    report = Engine(store, config(colour_set, plan="colours3"), model=colour_model).execute()
    assert store.write_sample(report.run_id, {"sample_id": "1", "rel_path": "img1.png", "status": "tested"},
                              [], [], []) is False
    assert len(store.samples(report.run_id)) == 10


@pytest.mark.subprocess
def test_killed_process_resumes_without_duplicates(tmp_path, colour_set):
    """SIGKILL a real `objrel run` between samples, then `objrel run --resume`."""
    db = tmp_path / "killed.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "objrel", "run", "--model", "py:tests.fixtures.colour_model:slow_factory",
           "--dataset", str(colour_set), "--plan", "colours3", "--batch-size", "1", "--store", str(db), "--quiet",
           "--no-lazy"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    store = Store(db)
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            runs = store.list_runs()
            if runs and 2 <= runs[0].n_done < runs[0].n_total:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run never reached its second sample")
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
    run = store.list_runs()[0]
    assert run.status == "running" and run.n_done < run.n_total  # killed: nobody marked it finished
    done_before = run.n_done
    res = subprocess.run([sys.executable, "-m", "objrel", "run", "--resume", str(run.id), "--store", str(db),
                          "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert f"{10 - done_before} samples processed this time" in res.stdout
    ids = [s["sample_id"] for s in store.samples(run.id)]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 10
    assert store.get_run(run.id).status == "finished"
    # and the rows equal those of an uninterrupted run of the same plan
    clean = Store(tmp_path / "clean.db")
    rc = Engine(clean, config(colour_set, plan="colours3", batch_size=1), model=factory()).execute()
    assert rows(store, run.id) == rows(clean, rc.run_id)


def test_test_all_tests_incorrect_inferences_with_every_object(colour_set, colour_model, store):
    report = Engine(store, config(colour_set, plan="colours3", test_all=True), model=colour_model).execute()
    s4 = store.sample(report.run_id, "4")
    assert s4["status"] == "tested" and s4["correct"] is False
    assert [o["category"] for o in s4["objects"]] == ["blue"]


def test_cancel_request_stops_between_chunks(colour_set, colour_model, store):
    eng = Engine(store, config(colour_set, plan="colours3", batch_size=2), model=colour_model)
    run_id = eng.create_run()

    def cancel_after_first(done, total):
        if done >= 2:
            store.request_cancel(run_id)

    report = eng.execute(run_id=run_id, progress=cancel_after_first)
    assert report.status == "cancelled"
    assert store.get_run(run_id).status == "cancelled"
    assert 2 <= len(store.samples(run_id)) < 10


def _coco(root, image, objects, cats=("red", "green", "blue")):
    import json

    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(root / "m.png")
    h, w = image.shape[:2]
    anns = [{"id": i + 1, "image_id": 1, "category_id": cats.index(c) + 1, "bbox": [x1, y1, x2 - x1, y2 - y1]}
            for i, (c, (x1, y1, x2, y2)) in enumerate(objects)]
    coco = {"images": [{"id": 1, "file_name": "m.png", "width": w, "height": h}], "annotations": anns,
            "categories": [{"id": i + 1, "name": c} for i, c in enumerate(cats)]}
    (root / "ann.json").write_text(json.dumps(coco))
    return root / "ann.json"


def test_multi_label_object_driven_inference_holds(tmp_path, store):
    """Red and green squares (each 1/4 of a gray image): the colour-presence model predicts {red, green},
    the ground truth.  Blacking out both objects leaves no dominant colour: the set changes (MR-1 holds).
    A gray, black or white background leaves both squares: the set stays (MR-2 holds)."""
    import numpy as np

    from tests.fixtures.colour_model import presence_factory

    img = np.full((40, 40, 3), 128, np.uint8)
    img[0:20, 0:20] = (230, 20, 20)
    img[20:40, 20:40] = (20, 230, 20)
    ann = _coco(tmp_path / "ml", img, [("red", (0, 0, 20, 20)), ("green", (20, 20, 40, 40))])
    cfg = RunConfig(model="py:tests.fixtures.colour_model:presence_factory", task="multi", dataset=str(ann),
                    plan="colours3")
    report = Engine(store, cfg, model=presence_factory()).execute()
    s = store.sample(report.run_id, "1")
    assert s["status"] == "tested" and s["correct"] is True and s["predicted"] == [0, 1]
    votes = {v["relation"]: v for v in store.votes(report.run_id) if v["is_primary"]}
    assert votes["MR-1"]["violations"] == 0 and votes["MR-2"]["violations"] == 0
    assert s["area_ratio"] == pytest.approx(0.5)


def test_multi_label_background_driven_inference_is_flagged(tmp_path, store):
    """A gray patch annotated "red" in a red field (red dominates 3/4 of the image): the model says {red}
    because of the field.  Painting the patch any colour leaves red's share at 3/4: its |2p-1| does not
    drop (MR-1 violated 3 of 3).  Painting the field gray/black/white removes every dominant colour: the
    set becomes {} (MR-2 violated 3 of 3)."""
    import numpy as np

    from tests.fixtures.colour_model import presence_factory

    img = np.zeros((40, 40, 3), np.uint8)
    img[:] = (230, 20, 20)
    img[10:30, 10:30] = (128, 128, 128)
    ann = _coco(tmp_path / "mb", img, [("red", (10, 10, 30, 30))])
    cfg = RunConfig(model="py:tests.fixtures.colour_model:presence_factory", task="multi", dataset=str(ann),
                    plan="colours3", lazy=False)  # every mutation evaluated: the docstring counts 3 of 3
    report = Engine(store, cfg, model=presence_factory()).execute()
    votes = {v["relation"]: v for v in store.votes(report.run_id) if v["is_primary"]}
    assert (votes["MR-1"]["violations"], votes["MR-1"]["flagged"]) == (3, True)
    assert (votes["MR-2"]["violations"], votes["MR-2"]["flagged"]) == (3, True)


def test_a_run_commits_each_chunk_in_one_transaction(colour_set, colour_model, store):
    """Each committed transaction that inserts samples holds one whole chunk of batch_size samples."""
    from sqlalchemy import event

    committed: list[list[str]] = []

    def on_execute(conn, cursor, statement, params, context, executemany):
        if statement.lstrip().upper().startswith("INSERT INTO SAMPLES"):
            rows = params if executemany else [params]
            conn.info.setdefault("samples", []).extend(r[1] for r in rows)    # (run_id, sample_id, ...)

    def on_commit(conn):
        if conn.info.get("samples"):
            committed.append(conn.info.pop("samples"))

    event.listen(store.engine, "before_cursor_execute", on_execute)
    event.listen(store.engine, "commit", on_commit)
    report = Engine(store, config(colour_set, batch_size=4), model=colour_model).execute()
    assert [len(c) for c in committed] == [4, 4, 2] and report.processed == 10
    assert sorted(sum(committed, [])) == sorted(s["sample_id"] for s in store.samples(report.run_id))
    assert store.get_run(report.run_id).n_done == 10


def test_both_engines_are_run_workers_and_the_model_leaves_the_config_as_asked(colour_set, colour_model, store):
    """``execute_run`` drives a declared protocol (``RunWorker``); a model whose own task differs from the one asked
    keeps the run's settings as asked and records its own task beside them."""
    import inspect

    from objrel.config import DetectionConfig
    from objrel.engine.detect import DetectionEngine

    from objrel.engine.loop import RunWorker

    wanted = [n for n in vars(RunWorker) if not n.startswith("_")] + list(RunWorker.__annotations__)
    assert set(wanted) >= {"create_run", "process_chunk", "commit_chunk", "passes_per_sample_guess", "store"}
    for cls in (Engine, DetectionEngine):
        for name in ("create_run", "process_chunk", "commit_chunk", "passes_per_sample_guess"):
            assert callable(getattr(cls, name, None)) or isinstance(inspect.getattr_static(cls, name), property), name
        assert "speculate" in inspect.signature(cls.process_chunk).parameters
        assert cls.pass_progress is None and cls.memory_budget is None
    asked = config(colour_set, task="multi")  # the colour model is single-label
    engine = Engine(store, asked, model=colour_model)
    assert engine.config is asked and engine.config.task == "multi"
    report = engine.execute()
    run = store.get_run(report.run_id)
    assert run.config["task"] == "multi" and run.task == "single"
    assert DetectionEngine(store, DetectionConfig(detector="haar:frontalface_default")).passes_per_sample_guess > 1
