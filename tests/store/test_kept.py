"""objrel.store.kept: results computed once per state of their runs, kept in the store, encoded as JSON."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from objrel.analysis import flag_tables as A
from objrel.store import kept as K
from objrel.analysis.flag_tables import NotAvailable, RunFigures
from objrel.store import Store
from objrel.store import summaries


def _store(tmp_path) -> tuple[Store, int]:
    store = Store(tmp_path / "kept.db")
    rid = store.create_run(name="r", model="m", model_config={}, task="single", class_names=["a", "b"],
                           dataset="d", dataset_config={}, plan={"groups": []}, config={}, seed=0, n_total=2)
    return store, rid


def _add_sample(store: Store, rid: int, sid: str, correct: bool, mr2: bool) -> None:
    row = {"sample_id": sid, "rel_path": f"{sid}.jpg", "status": "tested" if correct else "untested",
           "width": 10, "height": 10, "gt_labels": [0], "gt_categories": ["a"], "predicted": [0 if correct else 1],
           "correct": correct, "objects": [], "region_source": "annotation", "area_ratio": 0.3, "s_p": 0.5,
           "s_r": 0.5, "s": 0.5, "elapsed_ms": 1.0}
    votes = [{"sample_id": sid, "group_name": "MR-2 3 colours", "relation": "MR-2", "is_primary": True, "k": 2,
              "n": 3, "applicable": 3, "violations": 3 if mr2 else 0, "flagged": mr2}] if correct else []
    assert store.write_sample(rid, row, [], [], votes)


# ---------------------------------------------------------------- the codec


def test_frames_series_and_containers_survive_the_json_round_trip():
    frame = pd.DataFrame({"label": [3, 1], "name": ["cat", None], "share": [0.25, float("nan")],
                          "flag": [True, False], "ids": [[1, 2], []]}, index=pd.Index([7, 9], name="row"))
    value = {"frame": frame, "series": pd.Series([1.5, 2.5], index=["x", "y"], name="s"),
             "tuple": (1, "a"), "set": {"p", "q"}, 3: "an int key", "inf": float("-inf"), "np": np.int64(4),
             "array": np.array([1.0, 2.0])}
    back = K.decode(K.encode(value))
    pd.testing.assert_frame_equal(back["frame"], frame)
    pd.testing.assert_series_equal(back["series"], value["series"])
    assert back["tuple"] == (1, "a") and back["set"] == {"p", "q"} and back[3] == "an int key"
    assert back["inf"] == -math.inf and back["np"] == 4 and isinstance(back["np"], int)
    np.testing.assert_array_equal(back["array"], value["array"])


def test_an_objrel_dataclass_comes_back_as_itself_with_nan_fields():
    fig = RunFigures(1, "n", "m", "d", 4, 0, 0.0, 0, float("nan"), 0, float("nan"), 0, float("nan"))
    back = K.decode(K.encode(fig))
    assert isinstance(back, RunFigures) and back.run == 1 and math.isnan(back.mr1_ratio)


@dataclass(frozen=True)
class _Outside:
    x: int


def test_a_stored_class_outside_objrels_analysis_and_review_is_refused():
    text = K.encode(_Outside(1))       # this test module is not one objrel decodes classes from
    with pytest.raises(ValueError, match="only objrel's analysis and review dataclasses"):
        K.decode(text)
    with pytest.raises(ValueError, match="not a dataclass"):
        K.decode('{"~dc": "objrel.analysis.flag_tables:inferences", "f": {}}')
    with pytest.raises(ValueError, match="not a dataclass of that module"):   # a class imported there
        K.decode('{"~dc": "objrel.analysis.summary:D.OutcomeCount", "f": {"outcome": "x", "n": 1}}')


# ---------------------------------------------------------------- computed once per state


def test_a_result_is_computed_once_per_state_of_its_run_and_again_when_the_run_grows(tmp_path, monkeypatch):
    monkeypatch.setattr(K, "LIVE_FRESH_S", 0.0)      # the run is pending: its cheap results follow every sample
    store, rid = _store(tmp_path)
    _add_sample(store, rid, "s1", True, True)
    calls = []

    @K.kept
    def count_flagged(store, run_id):
        calls.append(run_id)
        return int(A.inferences(store, run_id, labels=False)["mr2"].sum())

    assert count_flagged(store, rid) == 1 and count_flagged(store, rid) == 1
    assert len(calls) == 1
    K.forget_process_copies()                     # another process: reads the store's row, computes nothing
    other = Store(store.url)
    assert count_flagged(other, rid) == 1 and len(calls) == 1
    _add_sample(store, rid, "s2", True, True)     # the run moved on: a new stamp
    assert count_flagged(store, rid) == 2 and len(calls) == 2
    row = summaries.read(store, rid, next(n for n in _names(store, rid) if n.startswith("test_kept.count_flagged")))
    assert row.stamp == K.run_stamp(store, rid)[0]


def _names(store, rid):
    from sqlalchemy import select

    from objrel.store import schema as S

    with store.engine.connect() as c:
        return list(c.execute(select(S.run_summaries.c.name).where(S.run_summaries.c.run_id == rid)).scalars())


def test_a_refusal_is_kept_and_raised_again_with_its_message(tmp_path):
    store, rid = _store(tmp_path)
    _add_sample(store, rid, "s1", True, False)
    calls = []

    @K.kept(refusals=(NotAvailable,))
    def needs_more(store, run_id):
        calls.append(1)
        raise NotAvailable("needs at least 3 runs")

    for _ in range(2):
        with pytest.raises(NotAvailable, match="needs at least 3 runs"):
            needs_more(store, rid)
    assert len(calls) == 1


def test_a_renamed_run_shows_its_new_name_in_the_kept_model_comparison(tmp_path):
    store, rid = _store(tmp_path)
    _add_sample(store, rid, "s1", True, True)
    _add_sample(store, rid, "s2", False, False)
    first = A.model_comparison(store, [rid])
    assert first.loc[0, "name"] == "r" and first.loc[0, "correct"] == 1 and first.loc[0, "evaluated"] == 2
    store.rename_run(rid, "renamed")
    assert A.model_comparison(store, [rid]).loc[0, "name"] == "renamed"


def test_kept_tables_equal_the_computation_they_stand_for(tmp_path):
    store, rid = _store(tmp_path)
    for i, (correct, mr2) in enumerate([(True, True), (True, False), (False, False), (True, True)]):
        _add_sample(store, rid, f"s{i}", correct, mr2)
    for fn, args in ((A.per_label, (rid,)), (A.size_counts, (rid, "MR-2")), (A._run_figures, (rid,))):
        direct = fn.uncached(store, *args)
        for _ in range(2):                           # computed, then read back
            got = fn(store, *args)
            if isinstance(direct, pd.DataFrame):
                pd.testing.assert_frame_equal(got, direct)
            else:
                assert got == direct
    # hand count: 3 correct, 2 of them flagged by MR-2, all with area ratio 0.3 (bin 6)
    tested, flagged = A.size_counts(store, rid, "MR-2")
    assert tested[6] == 3 and flagged[6] == 2 and sum(tested) == 3


def test_a_long_running_runs_result_is_reused_for_a_while_and_a_cheap_one_is_not(tmp_path):
    store, rid = _store(tmp_path)
    store.update_run(rid, status="running")
    _add_sample(store, rid, "s1", True, True)
    stamp, live = K.run_stamp(store, rid)
    assert live
    import datetime as dt

    just_now = dt.datetime.now(dt.timezone.utc)
    slow = summaries.KeptRow("running:1:1", "1", K.LIVE_CHEAP_S * 4, just_now)
    cheap = summaries.KeptRow("running:1:1", "1", K.LIVE_CHEAP_S / 10, just_now)
    old = summaries.KeptRow("running:1:1", "1", K.LIVE_CHEAP_S * 4,
                            just_now - dt.timedelta(seconds=K.LIVE_REUSE_FACTOR * K.LIVE_CHEAP_S * 4 + K.LIVE_REUSE_S))
    moved_on = "running:2:2"
    a_while_ago = just_now - dt.timedelta(seconds=K.LIVE_FRESH_S + 1)
    cheap_before = summaries.KeptRow("running:1:1", "1", K.LIVE_CHEAP_S / 10, a_while_ago)
    assert K._reusable(slow, moved_on, True)
    assert K._reusable(cheap, moved_on, True)          # a few new samples merged a moment ago: still fresh
    assert not K._reusable(cheap_before, moved_on, True)
    assert not K._reusable(old, moved_on, True)
    assert not K._reusable(slow, "finished:2:2", False)     # a finished run reads only its own state


def test_a_deleted_run_is_answered_by_its_function_and_nothing_is_kept(tmp_path):
    store, rid = _store(tmp_path)
    _add_sample(store, rid, "s1", True, True)
    store.delete_run(rid)
    assert K.run_stamp(store, rid) == (f"{K.GONE}:0:0:0", False)

    @K.kept
    def tested(store, run_id):
        return len(store.sample_states(run_id))

    assert tested(store, rid) == 0
    assert _names(store, rid) == []


def test_a_kept_row_this_code_cannot_read_is_computed_again(tmp_path):
    store, rid = _store(tmp_path)
    _add_sample(store, rid, "s1", True, True)
    calls = []

    @K.kept
    def flags(store, run_id):
        calls.append(1)
        return int(A.inferences(store, run_id, labels=False)["mr2"].sum())

    assert flags(store, rid) == 1
    name = next(n for n in _names(store, rid) if n.startswith("test_kept.flags"))
    summaries.keep(store, rid, name, K.run_stamp(store, rid)[0], '{"~dc": "objrel.analysis.summary:Summary", '
                   '"f": {"run_id": 1}}', 0.1)     # a result of an older Summary with fewer fields
    K.forget_process_copies()
    assert flags(store, rid) == 1 and len(calls) == 2


def test_run_ids_may_come_as_any_iterable(tmp_path):
    store, rid = _store(tmp_path)
    _add_sample(store, rid, "s1", True, True)
    listed = A.model_comparison(store, [rid])
    for given in (range(rid, rid + 1), np.array([rid]), (r for r in [rid])):
        pd.testing.assert_frame_equal(A.model_comparison(store, given), listed)
    assert A.cross_model_overlap.__wrapped__ is not None


def test_a_store_that_cannot_keep_still_answers(tmp_path, monkeypatch):
    store, rid = _store(tmp_path)
    _add_sample(store, rid, "s1", True, True)
    from objrel.errors import StoreBusy

    def busy(*args, **kwargs):
        raise StoreBusy("the store is busy")

    monkeypatch.setattr(summaries, "keep", busy)
    assert A.per_label(store, rid).loc[0, "mr2"] == 1
