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
    """The store the page's sidebar signs in against: a temporary one, never ./objrel.db; the results folder a
    temporary one too (tests that read results point it elsewhere)."""
    monkeypatch.setenv("OBJREL_STORE", str(tmp_path / "app.db"))
    monkeypatch.setenv("OBJREL_SHORTCUT_DIR", str(tmp_path / "shortcut"))


def signed_in(at: AppTest, tmp_path, name: str, roles) -> AppTest:
    """Sign ``at`` in as ``name`` with ``roles`` (the account is made in the page's store first)."""
    from objrel import review as R
    from objrel.store import Store

    store = Store(tmp_path / "app.db")
    try:
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    finally:
        store.dispose()
    at.session_state["reviewer"] = name
    return at


def frame(at, *columns):
    """The first table on the page that has all ``columns``."""
    return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))


def last_frame(at, *columns):
    """The last table on the page that has all ``columns``."""
    return [d.value for d in at.dataframe if set(columns) <= set(d.value.columns)][-1]


@pytest.fixture(scope="module")
def results_file(tmp_path_factory) -> Path:
    out, _, rc = ensure_quick(tmp_path_factory.getbasetemp())
    assert rc == 0
    return out / "results.json"


def test_missing_results_say_how_to_make_them(tmp_path):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    assert any("No benchmark results" in i.value and "objrel bench shortcut" in i.value for i in at.info)
    assert not at.dataframe


@pytest.mark.slow
def test_page_draws_every_section_from_the_results(results_file, monkeypatch):
    monkeypatch.setenv("OBJREL_SHORTCUT_DIR", str(results_file.parent))
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    headers = [h.value for h in at.header]
    assert headers == ["Biased vs unbiased: how often objrel flags them",
                       "Precision and recall against the ground truth", "Multi-label and detection arms",
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
    # the truth at another draw count and threshold: the base rate and the table follow the choice
    assert at.radio(key="shortcut_score_draws").options == ["1", "3", "8"]
    at.radio(key="shortcut_score_draws").set_value(1).run()
    at.radio(key="shortcut_score_threshold").set_value("majority").run()
    assert not at.exception
    assert any("at 1 draw per type and threshold majority (rate >= 0.5)" in c.value for c in at.caption)
    auc = frame(at, "AUC S", "AUC S_p")
    assert set(auc["draws"]) == {1} and set(auc["threshold"]) == {"majority"} and len(auc) == 3
    at.radio(key="shortcut_arm").set_value("detection").run()
    assert any("construction demo" in w.value for w in at.warning)
    det = last_frame(at, "detector", "note")
    assert (det.loc[det["detector"] == "MR-1 3 colours", "note"].str.contains("flags every unit")).all()
    at.radio(key="shortcut_arm").set_value("multi").run()
    multi = last_frame(at, "detector", "note")
    assert (multi["FP"] + multi["TN"] > 0).all()
    at.radio(key="shortcut_score_truth").set_value("matched").run()
    assert not at.exception
    repair = frame(at, "when", "swapped accuracy")
    assert list(repair["when"]) == ["before", "control", "after"]
    attack = frame(at, "strategy", "successes")
    assert set(attack["strategy"]) == {"guided", "random"} and len(attack) == 8
    assert len(at.get("plotly_chart")) == 5


def test_a_file_that_is_not_results_shows_an_error(tmp_path):
    bad = tmp_path / "shortcut" / "results.json"
    bad.parent.mkdir()
    bad.write_text('{"seeds": [{"seed": 0}]}')
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert any("These results cannot be shown" in e.value for e in at.error)
    assert not any(str(tmp_path) in e.value for e in at.error)           # no server path shown


def test_the_page_offers_no_path_box_and_no_button_to_visitors(tmp_path):
    """F1: a visitor cannot name a server folder nor start a benchmark: the page has no text box, and the
    button is only there for run operators and admins."""
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert [t.key for t in at.text_input if not t.key.startswith("signin_")] == []
    assert "shortcut_run_quick" not in [b.key for b in at.button]
    for name, roles in (("rita", ["reviewer"]), ("carl", ["adjudicator"])):
        at = signed_in(AppTest.from_file(PAGE, default_timeout=60), tmp_path, name, roles).run()
        assert "shortcut_run_quick" not in [b.key for b in at.button], name
    assert not (tmp_path / "shortcut").exists()                         # nothing was created


def test_starting_a_quick_benchmark_needs_the_role_and_one_at_a_time(tmp_path):
    """F1 in the library: the gate refuses visitors and reviewers before any folder or process exists; a second
    start while one runs is refused; the child is reaped when it ends (no zombie)."""
    import json

    from objrel.access import ANONYMOUS
    from objrel.errors import NotAllowed
    from objrel.studies.shortcut.browse import RUNNING, quick_job, start_quick_benchmark

    from tests.stored_actors import stored_actor

    root, accounts = tmp_path / "elsewhere", tmp_path / "accounts.db"
    for who in (ANONYMOUS, stored_actor(accounts, "rita", "reviewer"), stored_actor(accounts, "adam", "adjudicator")):
        with pytest.raises(NotAllowed, match="may not start a benchmark"):
            start_quick_benchmark(who, root)
    assert not root.exists()
    job = start_quick_benchmark(stored_actor(accounts, "olga", "run-operator"), root)
    pid = json.loads((root / "quick" / "quick.lock").read_text())["pid"]
    try:
        assert job.state == RUNNING and job.started_by == "olga"
        with pytest.raises(ValueError, match=r"already running \(started by olga"):
            start_quick_benchmark(stored_actor(accounts, "root", "admin"), root)
    finally:
        os.kill(pid, signal.SIGTERM)
    deadline = time.time() + 20
    while pid_alive(pid) and time.time() < deadline:     # pid_alive says False for a zombie too
        time.sleep(0.1)
    time.sleep(0.5)                                      # the reaper thread has waited for it by now
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)                      # already reaped: no zombie left under this process
    assert quick_job(ANONYMOUS, root).state != RUNNING


def test_results_are_opened_only_from_the_results_folder(tmp_path):
    """F1/F13 in the library: only the folder's own results files open, by their names; any other path is
    refused before it is read."""
    from objrel.access import ANONYMOUS
    from objrel.studies.shortcut.browse import open_results, results_files

    root = tmp_path / "shortcut"
    root.mkdir()
    (tmp_path / "results.json").write_text("{}")
    assert results_files(root) == []
    for name in ("/etc/passwd", "../results.json", "results.json", "quick/../../x.json",
                 str(tmp_path / "results.json")):
        with pytest.raises(ValueError, match="is not one of the benchmark's results files"):
            open_results(ANONYMOUS, name, root)


@pytest.mark.subprocess
def test_quick_button_starts_a_separate_process(tmp_path):
    import json

    at = signed_in(AppTest.from_file(PAGE, default_timeout=60), tmp_path, "olga", ["run-operator"]).run()
    at.button(key="shortcut_run_quick").click().run()
    assert not at.exception
    job = {"pid": json.loads((tmp_path / "shortcut" / "quick" / "quick.lock").read_text())["pid"]}
    try:
        assert pid_alive(job["pid"])
        assert any("Quick benchmark running, started by olga" in i.value for i in at.info)
        assert not any(str(job["pid"]) in i.value or str(tmp_path) in i.value for i in at.info)
        # it writes no count of its own: the time so far (and its log's last line once it has one)
        assert any(c.value.startswith("Running for ") for c in at.caption)
        # and a bar from the start: its time so far against the time it is expected to take
        bars = at.get("progress")
        assert bars and bars[0].proto.text.endswith(" so far") and 0 <= bars[0].proto.value < 100
        assert any("it takes 50 s to 1 min 20 s on two cores" in i.value for i in at.info)
    finally:
        os.kill(job["pid"], signal.SIGTERM)       # our own child: stop it rather than wait ~20 s
    deadline = time.time() + 20
    while pid_alive(job["pid"]) and time.time() < deadline:
        time.sleep(0.1)
    at.run()
    assert any("stopped without results" in e.value for e in at.error)


@pytest.mark.slow
def test_score_tables_and_quick_states(results_file, tmp_path):
    from objrel.studies.shortcut import results as B
    from objrel.studies.shortcut.tables import tables as bench_tables
    from objrel.studies.shortcut.browse import FAILED, FINISHED, QuickState, quick_state, score_table_for

    results = B.load_results(results_file)
    tables = bench_tables(results)
    assert score_table_for(results, "both", "reliant").equals(tables["scores_both"])
    assert score_table_for(results, "both", "matched").equals(tables["scores_matched_both"])
    both, biased, unbiased = (score_table_for(results, m, "reliant").set_index("detector")["TP"]
                              for m in ("both", "biased", "unbiased"))
    assert (biased + unbiased).equals(both)
    with pytest.raises(ValueError, match="expected a model"):
        score_table_for(results, "all", "reliant")
    gone = 2**22 + 12345     # no such process
    assert quick_state(gone, str(tmp_path)).state == FAILED
    (tmp_path / B.RESULTS_FILE).write_text("{}")
    assert quick_state(gone, str(tmp_path)) == QuickState(FINISHED, str(tmp_path / B.RESULTS_FILE))


def test_the_quick_button_states_the_measured_time_then_the_last_one_here(tmp_path):
    """The button's promise comes from the measured constants (50 s lightly loaded, 80 s busy on 2 cores), then from the
    time the last quick benchmark took on this server, not from a fixed "30 s"."""
    import json

    from objrel.access import ANONYMOUS
    from objrel.studies.shortcut import browse

    at = signed_in(AppTest.from_file(PAGE, default_timeout=60), tmp_path, "olga", ["run-operator"]).run()
    assert not at.exception
    help_text = at.button(key="shortcut_run_quick").help
    assert f"{browse.QUICK_IDLE_S} s to 1 min 20 s on two cores" in help_text and "progress shows here" in help_text
    # a quick benchmark finished here: started at t, its results written 75 s later (its process is gone)
    quick = tmp_path / "shortcut" / "quick"
    quick.mkdir(parents=True)
    t = time.time() - 600
    (quick / "quick.lock").write_text(json.dumps({"pid": 2**22 + 12345, "by": "olga", "at": t}))
    (quick / "results.json").write_text("{}")
    os.utime(quick / "results.json", (t + 75, t + 75))
    job = browse.quick_job(ANONYMOUS, tmp_path / "shortcut")
    assert (job.state, job.seconds) == (browse.FINISHED, 75.0)
    assert browse.quick_expected_s(ANONYMOUS, tmp_path / "shortcut") == (75.0, 75.0, True)
    at.run()
    assert "about 1 min 15 s (the last one here took that)" in at.button(key="shortcut_run_quick").help
    running = browse.QuickJob("olga", 1000.0, browse.RUNNING)
    assert browse.quick_time_share(running, (30.0, 60.0, False), now_ts=1030.0) == 0.5
    assert browse.quick_time_share(running, (30.0, 60.0, False), now_ts=1300.0) == browse.QUICK_BAR_MAX
    assert browse.quick_time_share(job, (75.0, 75.0, True)) == 1.0
