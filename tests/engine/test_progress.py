"""Live progress: forward passes written to the store while a run works, and the rate / ETA arithmetic."""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from types import SimpleNamespace

import pytest

from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.engine import loop
from objrel.progress import (Estimate, PassEstimate, estimate_text, expected_passes, format_duration, fraction_eta,
                             lime_eta_text, rate_and_eta, run_estimate, share, steady_expected)
from objrel.store import Store
from tests.fixtures.colour_model import CLASSES, dominant_colour_probs
from objrel.models import CallableClassifier

T0 = dt.datetime(2026, 1, 1, 12, 0, 0, tzinfo=dt.timezone.utc)


def test_expected_passes_uses_the_guess_until_a_sample_finishes_then_the_observed_mean():
    assert expected_passes(0, 0, 9, 19) == 171                 # 9 samples x (source + 18 mutations)
    assert expected_passes(50, 0, 9, 19) == 171                # passes so far belong to the 9 left
    assert expected_passes(200, 0, 9, 19) == 200               # never below what is done
    assert expected_passes(30, 3, 6, 19) == 90                 # 10 per finished sample: 30 + 6 x 10
    assert expected_passes(30, 3, 0, 19) == 30
    # 4 samples finished after 28 passes (7 each, lazy votes); 12 passes since belong to samples in flight
    assert expected_passes(40, 4, 6, 19, passes_finished=28) == 70    # 28 + 6 x 7
    assert expected_passes(40, 4, 6, 19) == 100                       # without it: 40 + 6 x 10, an overshoot


def test_steady_expected_never_lets_the_share_fall_or_pass_one():
    assert steady_expected(64, 80, 60, 70) == 74       # 80 would show 64/80 = 0.80 after 60/70 = 0.857: 64 x 70 // 60
    assert steady_expected(64, 70, 60, 70) == 70       # no fall: kept
    assert steady_expected(64, 50, 60, 70) == 64       # never below the passes done
    assert steady_expected(64, 80, 0, None) == 80      # nothing written yet


def test_pass_estimate_with_lazy_votes_by_hand():
    # 10 samples, 18 mutations: the guess is 19 passes a sample; lazy votes need 7 to 10.
    est = PassEstimate(todo=10, passes_per_sample_guess=19)
    assert est.expected(0) == 190                       # 10 x 19 before any sample finishes
    assert est.expected(20) == 190                      # the first chunk (4 samples) in flight
    est.finished(4, 28)                                 # 7 passes each
    assert est.expected(28) == 70                       # 28 + 6 x 7: 0.4, as 4 of 10 samples
    assert est.expected(40) == 70                       # 12 passes of the next chunk in flight: 40/70
    assert est.expected(60) == 70                       # 60/70 = 0.857
    est.finished(8, 64)                                 # that chunk took 9 a sample: 8 a sample on average
    assert est.expected(64) == 74                       # 64 + 2 x 8 = 80 would fall to 0.80; held at 64 x 70 // 60
    assert est.expected(70) == 80                       # 80 again: 70/80 = 0.875 > 64/74
    assert est.expected(82) == 83                       # the last chunk is heavier: never 100 % before it ends
    est.finished(10, 84)
    assert est.expected(84) == 84                       # done: 100 %


def test_pass_estimate_share_never_falls_nor_passes_one():
    import random

    rng = random.Random(3)
    for _ in range(200):
        todo, chunk = rng.randint(1, 40), rng.randint(1, 8)
        est = PassEstimate(todo, 19)
        done = passes = 0
        last = 0.0
        while done < todo:
            n = min(chunk, todo - done)
            for _ in range(n * rng.randint(1, 19)):   # the chunk's passes, ticked one by one
                passes += 1
                share_now = passes / est.expected(passes)
                assert last - 1e-12 <= share_now < 1.0
                last = share_now
            done += n
            est.finished(done, passes)
            after = passes / est.expected(passes)
            assert last - 1e-12 <= after and (after < 1.0 or done == todo)
            last = after
        assert est.expected(passes) == passes


def test_rate_and_eta_by_hand():
    assert rate_and_eta(0, 100, 10.0) == (None, None)
    assert rate_and_eta(5, 100, 0.5) == (None, None)           # shorter than MIN_RATE_WINDOW_S
    assert rate_and_eta(40, 100, 20.0) == (2.0, 30.0)          # 60 left at 2/s
    assert rate_and_eta(40, 100, 20.0, since_update_s=10.0) == (2.0, 20.0)
    assert rate_and_eta(40, None, 20.0) == (2.0, None)
    assert rate_and_eta(120, 100, 20.0) == (6.0, 0.0)


def _run(**kw):
    base = dict(status="running", n_done=2, n_total=9, started_at=T0, passes_done=50, passes_expected=150,
                progress_at=T0 + dt.timedelta(seconds=25))
    return SimpleNamespace(**(base | kw))


def test_run_estimate_from_a_record():
    e = run_estimate(_run(), now=T0 + dt.timedelta(seconds=30))
    assert e == Estimate(2, 9, 50, 150, 2.0, 45.0)             # 100 left at 2/s, minus 5 s since the write
    assert estimate_text(e) == "2/9 samples, 50/150 forward passes, 2.0 images/s, ETA 45 s"
    assert share(e) == pytest.approx(1 / 3)
    old = run_estimate(_run(passes_done=None, passes_expected=None, progress_at=None), now=T0)
    assert (old.images_per_s, old.eta_s, old.passes_done) == (None, None, 0)
    assert share(old) == pytest.approx(2 / 9)                  # by samples without a pass estimate
    assert "rate unknown" in estimate_text(old) and "ETA unknown" in estimate_text(old)
    assert run_estimate(_run(status="finished")).eta_s == 0.0


def test_format_duration_and_lime_eta():
    assert [format_duration(s) for s in (None, 0, 44.6, 185, 7620)] == ["unknown", "0 s", "45 s", "3 min 05 s",
                                                                        "2 h 07 min"]
    assert fraction_eta(0.0, 10) is None and fraction_eta(0.5, 0.2) is None
    assert fraction_eta(0.25, 10.0) == 30.0 and fraction_eta(1.0, 10.0) == 0.0
    assert lime_eta_text(0.4, 40.0) == "40% of the pair, 1 min 00 s left"


def _slow(images):
    time.sleep(0.15)
    return dominant_colour_probs(images)


def test_run_writes_forward_passes_while_a_chunk_works(colour_set, store, monkeypatch):
    """One chunk of all the samples: the samples count sits at 0 until it ends, the passes move."""
    monkeypatch.setattr(loop, "PROGRESS_INTERVAL_S", 0.05)
    monkeypatch.setattr(loop, "PROGRESS_COMMITS", 1)     # one commit: the run's samples in a single chunk
    model = CallableClassifier(_slow, CLASSES, name="slow-colour")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3",
                    batch_size=1, lazy=False)
    engine = Engine(store, cfg, model=model)
    engine.config = engine.config.replace(batch_size=len(engine.samples))
    seen = []
    engine.pass_progress = lambda *a: seen.append(a)
    report = engine.execute()
    mid = [a for a in seen if a[0] == 0 and a[2] > 0]
    assert mid, f"expected progress with passes > 0 before the first sample finished; got {seen}"
    assert all(a[1] == len(engine.samples) for a in seen)
    run = store.get_run(report.run_id)
    assert run.passes_done == report.forward_passes > 0
    assert run.passes_expected == report.forward_passes       # all samples done: the estimate is exact
    assert run.progress_at is not None


def test_old_store_gets_the_progress_columns(tmp_path):
    path = tmp_path / "old.db"
    Store(path).dispose()
    con = sqlite3.connect(path)
    for col in ("passes_done", "passes_expected", "progress_at", "lease_token", "lease_host"):
        con.execute(f"ALTER TABLE runs DROP COLUMN {col}")
    con.execute("DROP TABLE alembic_version")          # a schema-3 store from before Alembic
    con.execute("UPDATE objrel_meta SET value = '3' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    s = Store(path)
    try:
        cols = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(runs)")}
        assert {"passes_done", "passes_expected", "progress_at"} <= cols
    finally:
        s.dispose()


def test_demo_printer_prints_a_line_at_most_every_interval():
    import io

    from objrel.demo import ProgressPrinter

    out = io.StringIO()
    p = ProgressPrinter("m", out, every=5.0)
    p(0, 9, 0, 171, 0.0)
    p(0, 9, 40, 171, 2.0)          # within 5 s of the last line: silent
    p(1, 9, 60, 171, 6.0)
    lines = out.getvalue().splitlines()
    assert lines == ["  m: 0/9 samples, 0/171 forward passes, rate unknown, ETA unknown",
                     "  m: 1/9 samples, 60/171 forward passes, 10.0 images/s, ETA 11 s"]


def test_a_job_without_progress_of_its_own_shows_time_log_line_and_its_current_run(tmp_path):
    from objrel.progress import JobProgress, job_progress, job_progress_text, job_run_text, last_log_line

    log = tmp_path / "quick.log"
    assert last_log_line(log) is None                               # not written yet
    log.write_text("seed 0 biased: accuracy 0.950\n\nrepair: share 0.10 (+12): val acc 0.900\n  \n")
    assert last_log_line(log) == "repair: share 0.10 (+12): val acc 0.900"
    start = T0.timestamp()
    p = job_progress(start, log, tmp_path / "shortcut.db", now_ts=start + 65)   # no store yet: never created
    assert p == JobProgress(65.0, "repair: share 0.10 (+12): val acc 0.900")
    assert not (tmp_path / "shortcut.db").exists()
    assert job_progress_text(p) == "Running for 1 min 05 s; last log line: repair: share 0.10 (+12): val acc 0.900"
    assert job_run_text(p) is None
    # the job's store holds a run in progress: 2 of its 9 samples, 50 of 150 passes written 25 s after its start
    store = Store(tmp_path / "shortcut.db")
    rid = store.create_run(name="biased seed 0 test", model="m", model_config={}, task="single", class_names=["a"],
                           dataset="d", dataset_config={}, plan={}, config={}, seed=0, n_total=9)
    store.update_run(rid, status="running", started_at=T0, n_done=2)
    store.update_run(rid, passes_done=50, passes_expected=150, progress_at=T0 + dt.timedelta(seconds=25))
    store.dispose()
    p = job_progress(start, log, tmp_path / "shortcut.db", now_ts=start + 30)
    assert p.run_label == f"#{rid} biased seed 0 test"
    # 2 passes/s; 100 passes left = 50 s, minus the 5 s since the write
    assert job_run_text(p) == \
        f"run #{rid} biased seed 0 test: 2/9 samples, 50/150 forward passes, 2.0 images/s, ETA 45 s"
    assert share(p.estimate) == pytest.approx(1 / 3)
    assert job_progress_text(JobProgress(3.0, None)) == "Running for 3 s"


def test_engine_guesses_passes_per_sample_from_its_plan_and_lazy_votes(colour_set, colour_model, store):
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3")
    # colours3: 6 mutations in two 2-of-3 groups; the first lazy wave is 2 per group = 4
    assert Engine(store, cfg.replace(lazy=False), model=colour_model).passes_per_sample_guess == 1 + 6
    assert Engine(store, cfg, model=colour_model).passes_per_sample_guess == 1 + (4 + 6) / 2


def test_a_run_reports_and_stores_its_time_by_step(tmp_path):
    """The run loop times each step on its own thread; the steps fit in the run's seconds, the store keeps
    them with the run, and the CLI's report line shows their shares."""
    import io

    from objrel.cli.common import CLASSIFIER_WORDS, print_run_report
    from tests.conftest import write_flagged_set

    def slow_colour_model(images):
        time.sleep(0.02)  # a forward pass that takes measurable time
        return dominant_colour_probs(images)

    data = write_flagged_set(tmp_path / "data", n_flagged=3, n_clean=2)
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(data), plan="colours3",
                    batch_size=4, lazy=False)
    store = Store(tmp_path / "s.db")
    report = Engine(store, cfg, model=CallableClassifier(slow_colour_model, CLASSES)).execute()
    steps = report.steps
    assert {"decode", "mutants", "prepare", "forward", "check", "commit"} <= set(steps)
    # at least 2 source batches (5 samples, chunks of 4) and the mutants in batches of at most 4
    forward_calls = 2 + -(-(report.forward_passes - 5) // 4)
    assert steps["forward"] >= 0.02 * forward_calls
    assert sum(steps.values()) <= report.seconds
    shares = report.step_shares()
    assert shares[0][0] == "forward" and abs(sum(s for _, _, s in shares) - 1.0) < 1e-9
    stored = store.get_run(report.run_id).timings["steps"]
    assert stored == {k: round(v, 3) for k, v in steps.items()}
    out = io.StringIO()
    print_run_report(report, CLASSIFIER_WORDS, out)
    assert "time by step: forward" in out.getvalue()


def test_a_small_run_shows_its_samples_count_moving_and_ends_at_n_of_n_without_an_eta(colour_set, store,
                                                                                      monkeypatch):
    """A run of fewer samples than a batch: the Runs page's line counts samples done (tested and skipped) while
    it works, not 0/N until the end; once finished it reads N/N with every forward pass and no ETA."""
    from objrel.engine import jobs

    monkeypatch.setattr(loop, "PROGRESS_INTERVAL_S", 0.02)
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3",
                    lazy=False)
    engine = Engine(store, cfg, model=CallableClassifier(_slow, CLASSES, name="slow-colour"))
    total = len(engine.samples)
    assert total < engine.config.batch_size                  # one chunk before: the count sat at 0 until the end
    rid = engine.create_run()
    lines = []
    engine.pass_progress = lambda *a: lines.append(jobs.progress_text(store.get_run(rid)))
    report = engine.execute(run_id=rid)
    counts = sorted({int(t.split("/")[0]) for t in lines if t.endswith("s") or "ETA" in t})
    assert any(0 < c < total for c in counts), lines          # the count moved while the run worked
    assert all("ETA" in t for t in lines if not t.startswith("finished"))
    run = store.get_run(rid)
    assert (run.status, run.n_done, run.n_total) == ("finished", total, total) and report.skipped
    assert run.passes_done == run.passes_expected == report.forward_passes
    final = jobs.progress_text(run)
    assert final.startswith(f"finished: {total}/{total} samples, {report.forward_passes} forward passes in ")
    assert "ETA" not in final and jobs.progress_share(run) == 1.0 and jobs.just_finished(run)


def test_a_run_that_fits_in_one_batch_is_cut_into_progress_commits_chunks():
    todo = [SimpleNamespace(sample_id=str(i)) for i in range(100)]
    sizes = lambda n, b: [len(c) for c, _ in loop._chunks(todo[:n], {}, b)]   # noqa: E731
    assert sizes(10, 16) == [4, 4, 2]              # 10 samples, a batch of 16: three commits, not one
    assert sizes(16, 16) == [6, 6, 4]
    assert sizes(10, 4) == [4, 4, 2] and sizes(8, 4) == [4, 4]   # larger runs keep batch_size chunks
    assert sizes(20, 16) == [16, 4]
    assert sizes(2, 16) == [1, 1] and sizes(1, 16) == [1]
    assert sizes(100, 16) == [16] * 6 + [4]
