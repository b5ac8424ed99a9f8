"""AppTest of the Streamlit app on a temporary store."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.store import Store

from tests.fixtures.colour_model import factory

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def test_overview_lists_runs_and_headline(tmp_path, monkeypatch, colour_set):
    db = tmp_path / "app.db"
    Engine(Store(db), RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set),
                                plan="colours3", name="colour run"), model=factory()).execute()
    monkeypatch.setenv("OBJREL_STORE", str(db))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    runs = at.dataframe[1].value
    assert list(runs["name"]) == ["colour run"] and list(runs["status"]) == ["finished"]
    headline = at.dataframe[0].value
    assert headline.iloc[0]["Accuracy"] == "83.33%"  # 5 of 6 evaluated samples correct
    assert headline.iloc[0]["correct"] == 5


def test_overview_on_empty_store_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("OBJREL_STORE", str(tmp_path / "empty.db"))
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("No runs" in i.value for i in at.info)


def test_overview_builds_the_stakeholder_report(tmp_path, monkeypatch, flagged_store):
    store, run_id = flagged_store
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    # striking examples: the flagged images, each with a link into Review
    assert any("MR-1&2" in m.value for m in at.markdown)
    at.button(key="overview_report_btn").click().run()
    assert not at.exception
    from objrel.analysis.shared_report import ready_report

    html = ready_report(store, run_id)      # the report every session now shares, offered for download
    assert html is not None and at.get("download_button")
    assert html.startswith("<!doctype html>") and "objrel report: run" in html
    assert html.count("data:image/jpeg;base64,") >= 4 and "Violating MR-2" in html
    assert "<script src=" not in html  # self-contained: plotly.js is inlined, nothing fetched


def test_striking_examples_open_under_the_relation_that_flags_them(flagged_store):
    from objrel.analysis.overview import striking_examples, tested_runs
    from objrel.review.items import review_item

    store, run_id = flagged_store
    assert [r.id for r in tested_runs(store)] == [run_id]
    examples = striking_examples(store, limit=3)
    assert len(examples) == 3
    assert all(e["relation"] == "MR-1&2" and e["both"] and e["review_relation"] == "MR-2" for e in examples)
    item = review_item(store, run_id, examples[0]["sample_id"], "MR-2")
    shown = item.violating_mutant("MR-2")
    assert shown.relation == "MR-2" and shown.verdict == "violated"
    assert item.target_box() == (12, 10, 32, 30)      # the annotated box of the flagged images, xyxy


def test_overview_hides_incorrect_inferences_until_asked(tmp_path, monkeypatch):
    import json

    from tests.conftest import write_flagged_set

    ann = write_flagged_set(tmp_path / "all", n_flagged=1, n_clean=1)
    coco = json.loads(ann.read_text())
    coco["annotations"][0]["category_id"] = 2      # the one flagged image is now "green": the model's "red" is wrong
    ann.write_text(json.dumps(coco))
    store = Store(tmp_path / "all.db")
    Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3",
                            name="all", test_all=True), model=factory()).execute()
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("among the correct ones" in i.value for i in at.info)
    assert not any("incorrect inference" in m.value for m in at.markdown)
    at.toggle(key="overview_show_incorrect").set_value(True).run()
    assert not at.exception
    assert any("incorrect inference" in m.value for m in at.markdown)
    assert any("MR-1&2" in m.value for m in at.markdown)
    store.dispose()


PAGES = ("overview", "explore", "review", "agreement", "runs", "inspect", "shortcut", "users")


def test_every_page_has_the_same_sidebar(tmp_path, monkeypatch):
    """Sign-in (or who is signed in), then the store the app reads: on every page, even one that says there is
    nothing to show yet."""
    monkeypatch.setenv("OBJREL_STORE", str(tmp_path / "empty.db"))
    monkeypatch.chdir(tmp_path)             # no results of Inspect and Shortcut under the working directory
    for name in PAGES:
        # Overview is app.py's default page (its page links need app.py's navigation)
        path = APP if name == "overview" else str(Path(APP).parent / "pages" / f"{name}.py")
        at = AppTest.from_file(path, default_timeout=60).run()
        assert not at.exception, (name, at.exception)
        assert [b.label for b in at.sidebar.button] == ["Sign in"], name
        assert [c.value for c in at.sidebar.caption][-1] == r"Results from empty\.db (sqlite)", name
        shown = " ".join(str(e.value) for kind in (at.sidebar.caption, at.info, at.caption, at.markdown, at.error)
                         for e in kind)
        assert str(tmp_path) not in shown, name      # no server path anywhere a visitor looks
