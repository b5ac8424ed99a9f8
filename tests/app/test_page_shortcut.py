"""AppTest of pages/shortcut.py on the results of a real quick benchmark (shared with test_shortcut.py)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel.engine.jobs import pid_alive

from tests.studies.test_shortcut import ensure_quick

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "shortcut.py")


@pytest.fixture(autouse=True)
def app_store(monkeypatch, tmp_path):
    """The store the page's sidebar signs in against: a temporary one, never ./objrel.db."""
    monkeypatch.setenv("OBJREL_STORE", str(tmp_path / "app.db"))


def frame(at, *columns):
    """The first table on the page that has all ``columns``."""
    return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))


@pytest.fixture(scope="module")
def results_file(tmp_path_factory) -> Path:
    out, _, rc = ensure_quick(tmp_path_factory.getbasetemp())
    assert rc == 0
    return out / "results.json"


def test_missing_results_say_how_to_make_them(tmp_path):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["shortcut_results_path"] = str(tmp_path / "none" / "results.json")
    at.run()
    assert not at.exception
    assert any("No benchmark results" in i.value and "objrel bench shortcut" in i.value for i in at.info)
    assert not at.dataframe


def test_page_draws_every_section_from_the_results(results_file):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["shortcut_results_path"] = str(results_file)
    at.run()
    assert not at.exception
    headers = [h.value for h in at.header]
    assert headers == ["Biased vs unbiased: how often objrel flags them",
                       "Precision and recall against the ground truth",
                       "Repair by retraining on violating mutants", "Transplanting attack: relevancy-guided vs random"]
    ratios = frame(at, "model", "MR-2 ratio", "reliant (truth)")
    assert list(ratios["model"]) == ["biased", "unbiased"]
    scores = frame(at, "detector", "TP")
    assert "MR-2 3 colours" in set(scores["detector"]) and {"precision_lo", "recall_hi"} <= set(scores.columns)
    both_tp = int(scores.loc[scores["detector"] == "MR-2 3 colours", "TP"].iloc[0])
    at.radio(key="shortcut_score_model").set_value("biased").run()
    biased = frame(at, "detector", "TP")
    at.radio(key="shortcut_score_model").set_value("unbiased").run()
    unbiased = frame(at, "detector", "TP")
    tp = lambda df: int(df.loc[df["detector"] == "MR-2 3 colours", "TP"].iloc[0])  # noqa: E731
    assert tp(biased) + tp(unbiased) == both_tp                      # pooled = sum of the two models
    at.radio(key="shortcut_score_truth").set_value("matched").run()
    assert not at.exception
    repair = frame(at, "when", "swapped accuracy")
    assert list(repair["when"]) == ["before", "control", "after"]
    attack = frame(at, "strategy", "successes")
    assert set(attack["strategy"]) == {"guided", "random"} and len(attack) == 8
    assert len(at.get("plotly_chart")) == 5


def test_a_file_that_is_not_results_shows_an_error(tmp_path):
    bad = tmp_path / "results.json"
    bad.write_text('{"seeds": [{"seed": 0}]}')
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["shortcut_results_path"] = str(bad)
    at.run()
    assert any("not a shortcut-benchmark results file" in e.value for e in at.error)


def test_quick_button_starts_a_separate_process(tmp_path):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["shortcut_results_path"] = str(tmp_path / "results.json")
    at.run()
    at.button(key="shortcut_run_quick").click().run()
    job = at.session_state["shortcut_job"]
    try:
        assert job["out"] == str(tmp_path / "quick") and pid_alive(job["pid"])
        assert any("Quick benchmark running" in i.value for i in at.info)
        # it writes no count of its own: the time so far (and its log's last line once it has one)
        assert any(c.value.startswith("Running for ") for c in at.caption)
    finally:
        os.kill(job["pid"], signal.SIGTERM)       # our own child: stop it rather than wait ~20 s
    deadline = time.time() + 20
    while pid_alive(job["pid"]) and time.time() < deadline:
        time.sleep(0.1)
    at.run()
    assert any("stopped without results" in e.value for e in at.error)


def test_score_tables_and_quick_states(results_file, tmp_path):
    from objrel.studies.shortcut import bench as B
    from objrel.studies.shortcut.browse import FAILED, FINISHED, QuickState, quick_dir, quick_state, score_table_for

    results = B.load_results(results_file)
    tables = B.tables(results)
    assert score_table_for(results, "both", "reliant").equals(tables["scores_both"])
    assert score_table_for(results, "both", "matched").equals(tables["scores_matched_both"])
    both, biased, unbiased = (score_table_for(results, m, "reliant").set_index("detector")["TP"]
                              for m in ("both", "biased", "unbiased"))
    assert (biased + unbiased).equals(both)
    with pytest.raises(ValueError, match="expected a model"):
        score_table_for(results, "all", "reliant")
    assert quick_dir(str(tmp_path / "x" / "results.json")) == str(tmp_path / "x" / "quick")
    gone = 2**22 + 12345     # no such process
    assert quick_state(gone, str(tmp_path)).state == FAILED
    (tmp_path / B.RESULTS_FILE).write_text("{}")
    assert quick_state(gone, str(tmp_path)) == QuickState(FINISHED, str(tmp_path / B.RESULTS_FILE))


def test_a_quick_benchmark_writes_where_the_page_reads(tmp_path, monkeypatch):
    """start_quick's --out is the folder quick_state reads, from any working directory, and the child finds the
    objrel package on its PYTHONPATH."""
    import subprocess

    from objrel.studies.shortcut import bench as B
    from objrel.studies.shortcut.browse import quick_dir, quick_state

    started = {}

    class FakeProcess:
        pid = 4242

    def fake_popen(cmd, env, **kw):
        started.update(cmd=cmd, env=env)
        return FakeProcess()

    monkeypatch.setattr(subprocess, "Popen", fake_popen)
    monkeypatch.chdir(tmp_path)
    out = quick_dir("var/shortcut/results.json")                # relative, as the page's default is
    assert out == str(tmp_path / "var" / "shortcut" / "quick")
    B.start_quick(out)
    written = started["cmd"][started["cmd"].index("--out") + 1]
    monkeypatch.chdir("/")                                       # the page may read from elsewhere
    assert str(B.Path(written) / B.RESULTS_FILE) == quick_state(4242, out).results_file
    root = started["env"]["PYTHONPATH"].split(":")[0]
    assert (B.Path(root) / "objrel" / "studies" / "shortcut" / "bench.py").is_file()
    # the quick results, once shown, keep the next quick run in the same folder (no quick/quick)
    assert quick_dir(str(B.Path(out) / B.RESULTS_FILE)) == out
