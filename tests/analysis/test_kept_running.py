"""A running run's kept results are brought up to date from the samples it added, never computed from the
start again, and always equal what a full computation says; a finished run's are computed once in full."""

from __future__ import annotations

import pandas as pd
import pytest

from objrel.analysis import flag_tables as A
from objrel.analysis import overview as O
from objrel.analysis.summary import summarize
from objrel.review.agreement import flagged_count
from objrel.store import Store
from objrel.store import inferences as inference_rows
from objrel.store import kept as K


def _sample(store: Store, rid: int, i: int) -> None:
    correct = i % 4 != 3
    mr1, mr2 = correct and i % 3 == 0, correct and i % 2 == 0
    row = {"sample_id": f"s{i:03d}", "rel_path": f"img{i}.jpg", "status": "tested" if correct else "untested",
           "width": 10, "height": 10, "gt_labels": [i % 3], "gt_categories": ["c"], "predicted": [i % 3],
           "correct": correct, "objects": [], "region_source": "annotation", "area_ratio": (i % 10) / 10,
           "s_p": 0.5, "s_r": 0.5, "s": (i % 7) / 7, "elapsed_ms": 1.0}
    votes = [{"sample_id": row["sample_id"], "group_name": f"{rel} 3 colours", "relation": rel, "is_primary": True,
              "k": 2, "n": 3, "applicable": 3, "violations": 3 if hit else 0, "flagged": hit}
             for rel, hit in (("MR-1", mr1), ("MR-2", mr2))] if correct else []
    assert store.write_sample(rid, row, [], [], votes)


def _calls(store, rid):
    return [(A.per_label, (rid,)), (A.size_counts, (rid, "MR-2")), (A._run_figures, (rid,)), (summarize, (rid,)),
            (O.run_striking_examples, (rid, 4, False)), (O.sample_issue_total, (rid,)),
            (flagged_count, (rid, "MR-1"))]


def _same(a, b):
    if isinstance(a, pd.DataFrame):
        pd.testing.assert_frame_equal(a, b)
    else:
        assert a == b


@pytest.fixture
def running(tmp_path, monkeypatch):
    monkeypatch.setattr(K, "LIVE_FRESH_S", 0.0)     # every view brings the run up to date
    store = Store(tmp_path / "live.db")
    rid = store.create_run(name="live", model="m", model_config={}, task="single", class_names=["a", "b", "c"],
                           dataset="d", dataset_config={}, plan={"groups": []}, config={}, seed=0, n_total=40)
    store.update_run(rid, status="running")
    return store, rid


def test_a_running_run_is_brought_up_to_date_from_its_new_samples_only(running, monkeypatch):
    store, rid = running
    for i in range(12):
        _sample(store, rid, i)
    for fn, args in _calls(store, rid):
        _same(fn(store, *args), fn.uncached(store, *args))
    asked = []
    real = inference_rows.flagged_inferences

    def spy(store_, run_id, labels=True, rows=None):
        asked.append(rows)
        return real(store_, run_id, labels, rows)

    monkeypatch.setattr(inference_rows, "flagged_inferences", spy)
    for i in range(12, 30):
        _sample(store, rid, i)
    top = K.run_stamp(store, rid)[0].split(":")[-1]
    for fn, args in _calls(store, rid):
        asked.clear()
        got = fn(store, *args)
        assert all(r is not None for r in asked), f"{fn.__name__} read the whole run again"
        assert all(r[1] == int(top) for r in asked)
        monkeypatch.setattr(inference_rows, "flagged_inferences", real)
        _same(got, fn.uncached(store, *args))
        monkeypatch.setattr(inference_rows, "flagged_inferences", spy)
    # hand count over the 30 samples: correct unless i % 4 == 3 (i = 3, 7, ..., 27: 7 of them, so 23 correct)
    s = summarize(store, rid)
    assert (s.samples, s.correct, s.evaluated) == (30, 23, 30)
    assert s.mr1 == sum(1 for i in range(30) if i % 4 != 3 and i % 3 == 0)
    assert s.both == sum(1 for i in range(30) if i % 4 != 3 and i % 6 == 0)


def test_a_finished_run_is_computed_once_in_full(running, monkeypatch):
    store, rid = running
    for i in range(8):
        _sample(store, rid, i)
    summarize(store, rid)
    store.update_run(rid, status="finished")
    asked = []
    real = inference_rows.flagged_inferences
    monkeypatch.setattr(inference_rows, "flagged_inferences",
                        lambda s, r, labels=True, rows=None: asked.append(rows) or real(s, r, labels, rows))
    summarize(store, rid)
    summarize(store, rid)
    assert len(asked) == 1                       # once, over every sample row of the run
    s = summarize(store, rid)
    assert s.samples == 8 and s == summarize.uncached(store, rid)


def test_a_whole_run_is_computed_in_slices_of_rows_and_merged(running, monkeypatch):
    store, rid = running
    for i in range(23):
        _sample(store, rid, i)
    store.update_run(rid, status="finished")
    monkeypatch.setattr(K, "SLICE_ROWS", 5)
    asked = []
    real = inference_rows.flagged_inferences
    monkeypatch.setattr(inference_rows, "flagged_inferences",
                        lambda s, r, labels=True, rows=None: asked.append(rows) or real(s, r, labels, rows))
    for fn, args in _calls(store, rid):
        asked.clear()
        got = fn(store, *args)
        if fn not in (O.sample_issue_total, flagged_count):
            assert len(asked) == 5 and all(b - a <= 5 for a, b in asked), (fn.__name__, asked)
        monkeypatch.setattr(inference_rows, "flagged_inferences", real)
        _same(got, fn.uncached(store, *args))
        monkeypatch.setattr(inference_rows, "flagged_inferences",
                            lambda s, r, labels=True, rows=None: asked.append(rows) or real(s, r, labels, rows))
