"""What the pages print, built by objrel.app.formats, objrel.app.captions and objrel.app.charts (no Streamlit)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from objrel.app import captions, charts
from objrel.app.formats import decimals, percent, pvalue
from objrel.review.agreement import Disagreement
from objrel.review.items import Panel, ReviewItem

IMG = np.zeros((2, 2, 3), np.uint8)


def test_number_formats():
    assert percent(0.1234) == "12.3%" and percent(0.95, 0) == "95%"
    assert percent(None) == percent(math.nan) == decimals(None) == pvalue(math.nan) == "-"
    assert decimals(0.58333) == "0.583" and decimals(2.0, 1) == "2.0"
    assert (pvalue(0), pvalue(0.0000231), pvalue(0.0123)) == ("0", "2.31e-05", "0.012")


def test_a_classifier_panel_caption():
    panel = Panel("fill_object(colour=gray)", "", IMG, [("red", 0.91), ("green", 0.05)], "MR-1", "violated", 0.9,
                  0.85, None)
    assert captions.panel_caption(panel, detection=False) == \
        "**red** 0.910 - MR-1 :red[violated]  \ncertainty 0.900 -> 0.850"
    assert captions.panel_caption(Panel("source", "source", IMG, []), detection=False) == "**\\-** 0.000"


def test_a_detection_panel_caption():
    source = Panel("source", "source", IMG, [("face", 0.4)], source_certainty=1.0, note="detected (T = 1)")
    assert captions.panel_caption(source, detection=True) == \
        "**face** 0.400  \nIoU with the object 1.000  \ndetected \\(T \\= 1\\)"
    missed = Panel("fill_background(colour=black)", "", IMG, [], "MR-2", "violated", 1.0, 0.0, "missing detection")
    assert captions.panel_caption(missed, detection=True) == ("**no record** - MR-2 :red[violated]  \n"
                                                              "IoU with the object 1.000 -> 0.000  \nmissing detection")
    assert captions.detection_thumb_caption(missed) == "fill_background(colour=black): missing detection (IoU 0.00)"


def test_review_item_texts():
    source = Panel("source", "source", IMG, [("red", 0.9)])
    mutant = Panel("fill_background(colour=gray)", "", IMG, [("green", 0.6)], "MR-2", "violated")
    votes = {"MR-2 3 colours": {"relation": "MR-2", "is_primary": True, "violations": 2, "n": 3},
             "MR-2 15 colours": {"relation": "MR-2", "is_primary": False, "violations": 9, "n": 15}}
    item = ReviewItem(1, "s1", "MR-2", "a.png", ["red"], 0.2, None, None, None, votes, source, [mutant],
                      size=(40, 30))
    assert captions.vote_text(item, "MR-2") == "2/3 violated" and captions.vote_text(item, "MR-1") == "-"
    assert captions.vote_count(item, "MR-2") == "2/3" and captions.vote_count(item, "MR-1") == "-"
    assert captions.example_caption({"relation": "MR-1&2"}, item, item.violating_mutant("MR-2")) == \
        "**MR-1&2**: red -> green"
    assert item.target_box() == (0, 0, 40, 30) and not item.is_detection
    assert captions.my_call("fp") == "Your call: **False positive**" and captions.my_call(None) == \
        "Your call: **not yet**"
    result = SimpleNamespace(votes={"MR-2": {"violations": 0, "n": 3, "flagged": False}})
    assert captions.retest_lines(result) == ["MR-2: 0 of 3 violated -> not flagged"]


def test_calls_in_words():
    d = Disagreement("s5", 2, "verdict", "tp", (), None, "fp", ("other",), "a second cat", "fp",
                     ("multiple-objects",), None, "carol", validity_b="invalid")
    assert captions.disagreement_heading(d) == "**s5** (#3 of the review sample; they differ in the verdict)"
    # the adjudicator sees each reviewer's answer on the mutant beside the call
    assert captions.disagreement_calls(d, "alice", "bob") == \
        ("- alice: true positive; mutant: not answered\n"
         "- bob: false positive (other): \u201ca second cat\u201d; mutant: invalid mutant")
    assert captions.decision_text(d) == "Decided by carol: false positive (multiple target objects)"


def test_size_histogram_marks_the_item():
    bins = pd.DataFrame({"lower": [0.0, 0.05], "share": [0.5, float("nan")], "tested": [2, 0], "flagged": [1, 0]})
    fig = charts.size_histogram(bins, 0.03, "MR-2")
    assert list(fig.data[0].x) == pytest.approx([0.025, 0.075]) and list(fig.data[0].y) == [0.5, 0.0]
    assert fig.layout.shapes[0].x0 == 0.03 and fig.layout.yaxis.title.text == "share flagged by MR-2"


def test_bar_labels_count_flagged_of_total():
    bins = pd.DataFrame({"interval": ["[0, .05)", "[.05, .1)"], "share": [0.5, 0.0], "flagged": [1, 0],
                         "tested": [2, 0]})
    assert list(charts.size_bars(bins, "MR-1").data[0].text) == ["1/2", ""]


def test_plain_shows_user_text_as_typed():
    from objrel.app.captions import plain

    typed = "**bold** _it_ `code` [link](http://evil.example) <b>x</b> # h | t ~s~ $x$ &amp; :red[c] www.x.io"
    escaped = plain(typed)
    for markup in ("**", "[link]", "<b>", "$x$", " &amp;", ":red[", "http://", "www.x"):
        assert markup not in escaped, markup   # each markup character now has a backslash before it
    # every escape is a backslash before the original character (and an invisible word joiner before ":" and
    # "www."'s dot, which breaks autolinks): removing them gives the text back
    assert escaped.replace("\\", "").replace("\u2060", "") == typed
    assert plain("two\nlines\t here") == "two lines here"


def test_incorrect_badge_and_queue_end_texts():
    from objrel.review.queue import Queue

    assert captions.incorrect_badge(True) is None and captions.incorrect_badge(None) is None
    assert "incorrect inference" in captions.incorrect_badge(False)
    assert "not detected" in captions.incorrect_badge(False, detection=True)
    q = Queue(("a", "b", "c"), {"a": "tp"})
    assert captions.queue_end(q, 0) is None
    assert captions.queue_end(q, 2) == "Last item of the queue: 2 of 3 items still wait for your call."
    full = Queue(("a", "b", "c"), dict.fromkeys("abc", "tp"))
    assert "judged every item of this queue (3)" in captions.queue_end(full, 1)
    assert captions.agreement_link().endswith("[Agreement page](agreement)")


def test_card_texts_escape_user_text():
    from objrel.review.items import ItemCard

    card = ItemCard(2, "*x*", "MR-1", "[a](http://b).png", problem="image file /a_b.png does not exist")
    assert captions.card_title(card) == "\\[a\\]\\(http\u2060\\:\\/\\/b\\)\\.png (item \\*x\\*, run 2)"
    assert captions.card_problem(card).startswith("No image: image file \\/a\\_b\\.png")
    mutant = Panel("fill_object(colour=red)", "", IMG, [("cat", 0.5)], "MR-1", "violated")
    assert captions.card_mutant_caption(mutant) == "fill_object(colour=red): cat (violated)"


def test_lazy_runs_explain_why_the_scores_are_missing():
    source = Panel("source", "source", IMG, [("red", 0.9)])
    missing = ReviewItem(1, "s1", "MR-2", "a.png", ["red"], 0.2, None, None, None, {}, source, [])
    scored = ReviewItem(1, "s1", "MR-2", "a.png", ["red"], 0.2, 0.4, 0.1, 0.25, {}, source, [])
    lazy, full = SimpleNamespace(config={"lazy": True}), SimpleNamespace(config={"lazy": False})
    note = captions.lazy_scores_note(missing, lazy)
    assert "every mutation" in note and "--no-lazy" in note
    assert captions.lazy_scores_note(scored, lazy) is None          # the scores are there
    assert captions.lazy_scores_note(missing, full) is None         # missing for another reason
    assert captions.lazy_scores_note(missing, SimpleNamespace(config={})) is None   # stored before lazy votes


def test_store_caption_names_the_store_as_plain_text(tmp_path):
    from objrel.store import Store

    store = Store(tmp_path / "my_store.db")
    try:
        text = captions.store_caption(store)
    finally:
        store.dispose()
    # the file's name and kind only: a visitor learns no server path from the sidebar
    assert text == r"Results from my\_store\.db (sqlite)"
    assert str(tmp_path) not in text and "pytest" not in text


def test_readable_column_names_in_tables_and_legends():
    from objrel.app.formats import readable
    from objrel.app.tables import readable_columns

    assert readable("mr1_ratio") == "MR-1 share" and readable("unknown column") == "unknown column"
    df = pd.DataFrame({"mr2": [1], "mr2_ratio": [0.5], "correct": [2]})
    cfg = readable_columns(df, {"mr2_ratio": {"label": None, "type_config": {"format": "percent"}}})
    assert cfg["mr2"]["label"] == "MR-2 flags" and cfg["mr2_ratio"]["label"] == "MR-2 share"
    assert cfg["mr2_ratio"]["type_config"] == {"format": "percent"} and "correct" not in cfg
    table = pd.DataFrame({"run": [1], "model": ["m"], "original": [0.8], "unreliable_accuracy": [0.5],
                          "reliable_accuracy": [0.9]})
    fig = charts.reliable_accuracy_bars(table, {1: "#1 run"})
    assert [t.name for t in fig.data] == ["all answers", "unreliable answers", "reliable answers"]
    attack = pd.DataFrame({"scenario": [1, 2], "successes": [3, 1], "strategy": ["guided", "random"],
                           "model": ["biased", "biased"]})
    assert [a.text for a in charts.attack_bars(attack).layout.annotations] == ["biased"]


def test_calibration_lines_name_both_calls_and_the_adjudication_with_its_note():
    from types import SimpleNamespace

    from objrel.app.captions import calibration_lines
    from objrel.review.agreement import Disagreement

    decided = Disagreement(sample_id="s1", position=0, kind="verdict", verdict_a="tp", reasons_a=(), note_a=None,
                           verdict_b="fp", reasons_b=("incomplete-removal",), note_b=None, resolved_verdict="fp",
                           resolved_reasons=("incomplete-removal",), resolved_note="half the cat is left",
                           resolved_by="carol")
    open_one = Disagreement(sample_id="s2", position=1, kind="verdict", verdict_a="tp", reasons_a=(), note_a=None,
                            verdict_b="uncertain", reasons_b=(), note_b=None, resolved_verdict=None,
                            resolved_reasons=(), resolved_note=None, resolved_by=None)
    kappa = SimpleNamespace(name="Cohen's kappa", value=0.5)
    cal = SimpleNamespace(reviewer_a="alice", reviewer_b="bob", disagreements=(decided, open_one),
                          verdicts=SimpleNamespace(n=10, coefficients=(kappa,), kappa_band="moderate"))
    lines = calibration_lines(cal, {"s1": "cat.jpg"})
    assert "Cohen's kappa **0.500**" in lines[0] and "moderate" in lines[0]
    assert lines[1] == "Disagreements: 2"
    assert "incomplete removal" in lines[2] and "half the cat is left" in lines[2] and "carol" in lines[2]
    # the item is named by its file (markdown-escaped), not by a bare id
    assert lines[2].startswith("- **cat\\.jpg (sample s1)**")
    assert lines[3].endswith("Not adjudicated yet.")
