"""AppTest of the Review page on a temporary store with flagged inferences."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from objrel import review
from objrel.access import SERVER
from objrel.review.roles import actor_of

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "review.py")


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    # scrypt at full cost takes ~0.5 s per sign-in; the cost parameter is not what these tests check
    if hasattr(review.accounts, "SCRYPT_N"):
        monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)

def page(monkeypatch, store, reviewer=None):
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(PAGE, default_timeout=60)
    if reviewer:
        at.session_state["reviewer"] = reviewer
    return at


def item_button(at, name: str):
    """The button ``name`` (judge_tp, review_next, ...) of the item the page shows: its key carries the item."""
    found = [b for b in at.button if b.key and b.key.startswith(f"{name}_")]
    assert len(found) == 1, [b.key for b in at.button]
    return found[0]


def texts(at) -> str:
    return " ".join(m.value for m in at.markdown) + " ".join(s.value for s in at.subheader)


def test_asks_to_sign_in_first(monkeypatch, flagged_store):
    store, _ = flagged_store
    at = page(monkeypatch, store).run()
    assert not at.exception
    assert any("Sign in" in i.value for i in at.info)


def test_shows_source_and_six_mutants_and_records_a_judgment(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice").run()
    assert not at.exception, at.exception
    # the first screen: the source and the MR-2 mutants that violated (2 or 3 of the primary vote's 3); under it
    # the evidence panel the reviewer opens by default: the source again and all 3 MR-2 and 3 MR-1 mutants
    from objrel.review.items import review_item

    shown = review_item(store, run_id, at.query_params["item"], "MR-2")
    violated = sum(p.relation == "MR-2" and p.verdict == "violated" for p in shown.mutants)
    assert 2 <= violated <= 3
    assert len(at.get("image")) == 1 + violated + 7
    # both primary votes are violated: at least 2 of 3 mutants each (a decided vote may skip its third mutant)
    assert sum("violated" in m.value for m in at.markdown) >= 4
    # the six mutants of the evidence panel, and the violated ones again on the first screen
    assert sum("violated" in m.value or "not evaluated" in m.value for m in at.markdown) == 6 + violated
    # the run used lazy votes (the default): S_p and S_r show "-", and a caption says why
    assert {m.label: m.value for m in at.metric}["S_p"] == "-"
    assert any("every mutation" in c.value and "--no-lazy" in c.value for c in at.caption)
    first = at.query_params["item"]
    assert at.query_params["relation"] == "MR-2" and at.query_params["run"] == str(run_id)
    item_button(at, "judge_tp").click().run()
    assert not at.exception
    js = review.judgments(store, run_id, "MR-2", reviewer="alice")
    assert [(j.sample_id, j.verdict) for j in js] == [(first, "tp")]
    assert at.query_params["item"] != first  # moved on to the next item


def walk(node):
    """``node`` and everything drawn inside it, in the order the page draws them."""
    yield node
    children = getattr(node, "children", {})
    for key in sorted(children):
        yield from walk(children[key])


def drawn_in_order(at) -> list[tuple[str, object]]:
    """``(type, label or value)`` of everything the page drew, in the order it drew them."""
    return [(n.type, getattr(n, "label", None) or getattr(n, "value", None)) for n in walk(at.main)]


def alice_on_the_first_item(monkeypatch, store, run_id):
    """alice signed in on the review page at its first item: ``(app test, item id, position key, position)``."""
    from objrel.review.queue import REVIEW_SAMPLE

    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice").run()
    pos_key = f"review_pos_{run_id}_MR-2_{REVIEW_SAMPLE}"
    return at, at.query_params["item"], pos_key, at.session_state[pos_key]


def test_a_click_on_an_item_the_page_has_left_saves_nothing_and_skips_nothing(monkeypatch, flagged_store):
    """The buttons of the item just judged stay on screen until the next item's are drawn; a click on them then
    (or a shortcut pressed twice) reaches the page with the item they were drawn for.  It must not change that
    item's call, nor move past the item now shown."""
    store, run_id = flagged_store
    at, first, pos_key, start = alice_on_the_first_item(monkeypatch, store, run_id)
    at.session_state[pos_key] = start + 1   # the page has moved on; the buttons drawn for `first` are clicked
    item_button(at, "judge_fp").click().run()
    assert not at.exception, at.exception
    assert review.judgments(store, run_id, "MR-2", reviewer="alice") == []
    assert at.session_state[pos_key] == start + 1
    second = at.query_params["item"]
    assert second != first
    errors = [e.value for e in at.error]
    assert any(e.startswith("Not saved: the false positive click was on") for e in errors), errors
    # the line stands just above the call buttons, where the reviewer looks after the click (under them it
    # fell below the fold at 900 px)
    drawn = drawn_in_order(at)
    refused = next(i for i, (t, v) in enumerate(drawn) if t == "error" and str(v).startswith("Not saved"))
    buttons = [i for i, (t, v) in enumerate(drawn) if t == "button" and v == "True positive"]
    assert buttons and refused < buttons[0] and not any(t in ("button", "multiselect", "text_input", "radio")
                                                        for t, _ in drawn[refused + 1 : buttons[0]]), drawn
    # a click on the item shown is saved on it
    item_button(at, "judge_tp").click().run()
    js = review.judgments(store, run_id, "MR-2", reviewer="alice")
    assert [(j.sample_id, j.verdict) for j in js] == [(second, "tp")]
    assert not any(e.value.startswith("Not saved") for e in at.error)


def test_a_double_press_keeps_the_first_press_saved_line_and_says_the_second_was_not_saved_at_the_top(
        monkeypatch, flagged_store):
    """The first press saves and moves on; the second press reaches the page with the form of the item just
    saved.  Both lines then stand above the item, before its call buttons:
    what the first press saved, and that the second saved nothing (found in chromium: the second press's
    rerun dropped the "Saved" line, and the refusal stood far down the page, out of view)."""
    store, run_id = flagged_store
    at, first, pos_key, start = alice_on_the_first_item(monkeypatch, store, run_id)
    item_button(at, "judge_tp").click().run()            # the first press: saved, on to the next item
    assert [e.value for e in at.success] and at.session_state[pos_key] == start + 1
    at.session_state[pos_key] = start                    # the first item's buttons drawn again ...
    at.run()
    at.session_state[pos_key] = start + 1                # ... while the page has moved on: the second press
    item_button(at, "judge_tp").click().run()
    assert not at.exception, at.exception
    assert [(j.sample_id, j.verdict) for j in review.judgments(store, run_id, "MR-2", reviewer="alice")] == \
        [(first, "tp")]
    drawn = drawn_in_order(at)
    saved = [i for i, (t, v) in enumerate(drawn) if t == "success" and str(v).startswith("Saved: ")]
    refused = [i for i, (t, v) in enumerate(drawn) if t == "error" and str(v).startswith("Not saved")]
    call_button = next(i for i, (t, v) in enumerate(drawn) if t == "button" and v == "True positive")
    assert len(saved) == 1 and len(refused) == 1 and saved[0] < refused[0] < call_button, drawn
    # moving on clears the refusal: it was about the item left
    item_button(at, "review_next").click().run()
    assert not any(e.value.startswith("Not saved") for e in at.error)


def test_a_second_press_carrying_the_url_of_the_item_left_does_not_go_back_to_it(monkeypatch, flagged_store):
    """A press sends the query string the browser shows.  A second press sent before the first press's rerun
    reached the browser carries ``?item=`` of the item the first press saved and left, while the page has
    already written the next item's.  That query string is the reviewer's own press, not a link: the page stays
    on the next item (found in chromium: after a refused double press the page jumped back to the item just
    saved).  A link that is not an echo of the page's own widgets is still followed."""
    from objrel.review.queue import REVIEW_SAMPLE

    store, run_id = flagged_store
    at, first, pos_key, start = alice_on_the_first_item(monkeypatch, store, run_id)
    item_button(at, "judge_tp").click().run()            # the first press: saved, on to the next item
    second = at.query_params["item"]
    written_for_second = dict(at.session_state["review_link_written"])
    assert second != first and written_for_second["item"] == second
    at.session_state[pos_key] = start                    # the first item's buttons drawn again ...
    at.run()
    assert at.query_params["item"] == first
    # ... while the page has moved on and written the next item's URL; the browser still shows the first's
    at.session_state[pos_key] = start + 1
    at.session_state["review_link_written"] = written_for_second
    item_button(at, "judge_tp").click().run()            # the second press, with ?item=<first>
    assert not at.exception, at.exception
    assert at.session_state[pos_key] == start + 1
    assert at.query_params["item"] == second, "the page went back to the item the first press saved"
    assert any(e.value.startswith("Not saved") for e in at.error)
    assert [(j.sample_id, j.verdict) for j in review.judgments(store, run_id, "MR-2", reviewer="alice")] == \
        [(first, "tp")]
    # a link to the first item that no widget of the page sent (another page's button, st.switch_page) opens it
    at.query_params["item"] = first
    at.query_params["queue"] = REVIEW_SAMPLE
    at.run()
    assert at.query_params["item"] == first and at.session_state[pos_key] == start


def test_the_buttons_that_act_on_an_item_carry_it_in_their_keys(monkeypatch, flagged_store):
    """A click reaches the page with the button it was made on.  The last item's buttons stay on screen while
    the next item draws; were they the same buttons as the next item's, a second quick click (or a shortcut
    pressed twice) would run as a call on an item the reviewer never saw (seen in a real browser: 7 of 13
    double presses).  AppTest cannot click a button of an earlier script run, so this checks the keys."""
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice").run()
    names = ("judge_tp_", "judge_fp_", "judge_uncertain_", "review_prev_", "review_next_", "review_skip_",
             "review_undo_")

    def acting() -> set[str]:
        return {b.key for b in at.button if b.key and b.key.startswith(names)}

    first, first_keys = at.query_params["item"], acting()
    item_button(at, "judge_tp").click().run()
    second, second_keys = at.query_params["item"], acting()
    assert second != first
    assert len(first_keys) == len(second_keys) == len(names)
    from objrel.app.review_keys import item_suffix

    assert all(k.endswith(f"_{item_suffix(run_id, 'MR-2', first)}") for k in first_keys)
    assert not first_keys & second_keys


def test_next_clicked_while_the_next_item_draws_counts_from_the_item_seen(monkeypatch, flagged_store):
    store, run_id = flagged_store
    at, _, pos_key, start = alice_on_the_first_item(monkeypatch, store, run_id)
    at.session_state[pos_key] = start + 1    # the page has moved on; Next drawn with the item seen is clicked
    item_button(at, "review_next").click().run()
    assert not at.exception, at.exception
    assert at.session_state[pos_key] == start + 1   # one on from the item seen, not two


def test_blind_review_never_shows_the_other_call(monkeypatch, flagged_store):
    store, run_id = flagged_store
    for name in ("alice", "bob"):
        review.create_reviewer(store, name, f"{name}-passphrase")
    sid = review.draw_review_sample(SERVER, store, run_id, "MR-2")[0]
    review.record_judgment(actor_of(store, "alice"), store, run_id, sid, "MR-2", "fp", reasons=["incomplete-removal"])
    at = page(monkeypatch, store, "bob").run()
    assert at.query_params["item"] == sid
    shown = texts(at)
    assert "False positive" not in shown and "incomplete-removal" not in shown.replace("False-positive reasons", "")
    assert "Your call: **not yet**" in shown


def test_deep_link_opens_the_linked_item(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "carol", "carol-passphrase")
    ids = review.draw_review_sample(SERVER, store, run_id, "MR-1")
    at = page(monkeypatch, store, "carol")
    at.query_params["run"] = str(run_id)
    at.query_params["relation"] = "MR-1"
    at.query_params["item"] = ids[-1]
    at.run()
    assert not at.exception
    assert at.query_params["item"] == ids[-1]
    assert any(f"(sample {ids[-1]})" in s.value for s in at.subheader)


def test_empty_store_says_what_to_do(monkeypatch, tmp_path):
    from objrel.store import Store

    at = page(monkeypatch, Store(tmp_path / "empty.db")).run()
    assert any("No run with tested inferences" in i.value for i in at.info)


def test_opens_on_a_run_with_flags_not_on_the_newest_run(monkeypatch, flagged_store, tmp_path):
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    from tests.conftest import write_flagged_set
    from tests.fixtures.colour_model import factory

    store, run_id = flagged_store
    quiet = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", plan="colours3", name="quiet",
                                    dataset=str(write_flagged_set(tmp_path / "quiet", n_flagged=0, n_clean=2))),
                   model=factory()).execute().run_id
    assert quiet > run_id and not store.flagged_sample_ids(quiet, "MR-2")
    review.create_reviewer(store, "dora", "dora-passphrase")
    at = page(monkeypatch, store, "dora").run()
    assert not at.exception
    assert at.session_state["review_run"] == run_id and at.query_params["run"] == str(run_id)
    assert not any("is flagged by" in i.value for i in at.info)


def test_the_end_of_the_queue_says_so_and_links_to_agreement(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "eve", "eve-passphrase")
    ids = review.draw_review_sample(SERVER, store, run_id, "MR-2")
    for sid in ids[:-1]:
        review.record_judgment(actor_of(store, "eve"), store, run_id, sid, "MR-2", "tp")
    at = page(monkeypatch, store, "eve").run()
    assert at.query_params["item"] == ids[-1]
    assert any("Last item of the queue: 1 of" in i.value for i in at.info)
    item_button(at, "judge_tp").click().run()
    assert not at.exception
    assert any(f"judged every item of this queue ({len(ids)})" in s.value for s in at.success)
    assert any("[Agreement page](agreement)" in m.value for m in at.markdown)


def test_an_incorrect_inference_carries_a_badge(monkeypatch, tmp_path):
    import json

    from objrel.config import RunConfig
    from objrel.engine.classify import Engine
    from objrel.store import Store

    from tests.conftest import write_flagged_set
    from tests.fixtures.colour_model import factory

    ann = write_flagged_set(tmp_path / "all")
    coco = json.loads(ann.read_text())
    coco["annotations"][0]["category_id"] = 2      # f1.png is now "green": the model's "red" is wrong
    ann.write_text(json.dumps(coco))
    store = Store(tmp_path / "all.db")
    rid = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann), plan="colours3",
                                  name="all", test_all=True), model=factory()).execute().run_id
    review.create_reviewer(store, "fay", "fay-passphrase")
    at = page(monkeypatch, store, "fay")
    at.query_params.update({"run": str(rid), "relation": "MR-2", "queue": "all", "item": "1"})
    at.run()
    assert not at.exception and at.query_params["item"] == "1"
    assert any("incorrect inference" in m.value for m in at.markdown)
    item_button(at, "review_next").click().run()
    assert at.query_params["item"] == "2" and not any("incorrect inference" in m.value for m in at.markdown)
    store.dispose()


@pytest.mark.parametrize("selection, box", [
    ({"box": [{"x": [12.4, 31.6], "y": [9.8, 30.2]}]}, (12, 9, 32, 31)),           # widened to whole pixels
    ({"box": [{"x": [40.0, -5.0], "y": [50.0, 30.0]}]}, (0, 30, 40, 40)),          # reversed corners, clamped
    ({"box": [{"x": [1, 2], "y": [1, 2]}, {"x": [3.0, 9.0], "y": [4.0, 8.0]}]}, (3, 4, 9, 8)),   # the last box
    ({"box": [{"x": [50.0, 60.0], "y": [0.0, 10.0]}]}, None),                      # wholly outside the image
    ({"box": []}, None), ({"points": []}, None), (None, None), ({"box": [{"x": [3.0]}]}, None),
])
def test_a_drawn_selection_becomes_a_clamped_pixel_box(selection, box):
    from objrel.review.items import selection_box

    assert selection_box(selection, (48, 40)) == box


def test_the_box_figure_spans_the_full_size_image():
    import numpy as np

    from objrel.app.charts import box_select_figure

    fig = box_select_figure(np.zeros((20, 24, 3), np.uint8), (48, 40), (12, 10, 32, 30))
    img = fig.data[0]
    assert (img.x0 - img.dx / 2, img.x0 + 23.5 * img.dx) == (0, 48)      # 24 thumbnail columns cover 0..48
    assert (img.y0 - img.dy / 2, img.y0 + 19.5 * img.dy) == (0, 40)
    assert fig.layout.dragmode == "select" and list(fig.layout.yaxis.range) == [40, 0]
    assert (fig.layout.shapes[0].x0, fig.layout.shapes[0].y1) == (12, 30)


def test_drawing_a_box_fills_the_corner_inputs(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "gus", "gus-passphrase")
    at = page(monkeypatch, store, "gus")
    at.session_state["review_evidence"] = "box"           # the box editor's panel
    at.run()
    sid = at.query_params["item"]
    suffix = f"{run_id}_{sid}"
    assert at.number_input(key=f"rb_x1_{suffix}").value == 12          # the annotated box to start with
    at.session_state[f"rb_draw_{suffix}"] = {"selection": {"points": [], "point_indices": [],
                                                            "box": [{"xref": "x", "yref": "y", "x": [2.2, 20.9],
                                                                     "y": [3.0, 15.5]}], "lasso": []}}
    at.run()
    assert not at.exception
    corners = [at.number_input(key=f"rb_{c}_{suffix}").value for c in ("x1", "y1", "x2", "y2")]
    assert corners == [2, 3, 21, 16]
    at.number_input(key=f"rb_x2_{suffix}").set_value(30).run()          # typing still wins over the drawing
    assert at.number_input(key=f"rb_x2_{suffix}").value == 30


def test_the_box_figure_has_points_to_select_over_the_whole_image():
    import numpy as np

    from objrel.app.charts import BOX_GRID, box_select_figure

    grid = box_select_figure(np.zeros((20, 24, 3), np.uint8), (48, 40)).data[1]
    assert len(grid.x) == BOX_GRID ** 2 and grid.marker.opacity == 0
    assert 0 < min(grid.x) < 2 and 46 < max(grid.x) < 48 and 0 < min(grid.y) < 1 and 39 < max(grid.y) < 40


def test_a_role_revoked_while_the_page_is_open_no_longer_counts(monkeypatch, flagged_store):
    """The judge buttons' callback asks the store for the account's roles when it runs: a call made after an
    admin revoked the reviewer role is refused, though the page was drawn while alice was a reviewer."""
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice").run()
    assert not at.exception and not item_button(at, "judge_fp").disabled
    from objrel.review.roles import revoke_as_operator

    revoke_as_operator(store, "alice", "reviewer")
    item_button(at, "judge_fp").click().run()
    assert not at.exception
    assert any("may not judge" in e.value for e in at.error)
    assert review.judgments(store, run_id, "MR-2", reviewer="alice") == []


# ---------------------------------------------------------------- the selection lives in the URL (issue 21)

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def two_flagged_runs(flagged_store, tmp_path):
    """flagged_store's run and a newer run with flags of its own: the newest run is not the one reviewed."""
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    from tests.conftest import write_flagged_set
    from tests.fixtures.colour_model import factory

    store, old = flagged_store
    new = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", plan="colours3", name="newer",
                                  dataset=str(write_flagged_set(tmp_path / "newer", n_flagged=3, n_clean=1))),
                 model=factory()).execute().run_id
    assert new > old and store.flagged_sample_ids(new, "MR-2")
    return store, old, new


def switch(at: AppTest, page_file: str) -> AppTest:
    """A top-bar page switch as the browser makes it: Streamlit drops the query string on the way."""
    for key in list(at.query_params):
        del at.query_params[key]
    return at.switch_page(page_file).run()


def test_review_keeps_its_run_across_a_switch_to_agreement_and_back(monkeypatch, two_flagged_runs):
    """Found: Review -> Agreement -> Review through the top bar reset Review to the newest run with flags, and
    the next click was stored on that run."""
    store, old, new = two_flagged_runs
    review.create_reviewer(store, "alice", "alice-passphrase")
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer"] = "alice"
    at.run()
    at.query_params.update({"run": str(old), "relation": "MR-1", "queue": "all", "item": "3"})
    at.switch_page("pages/review.py").run()
    assert not at.exception, at.exception
    assert at.query_params["run"] == str(old) and at.query_params["item"] == "3"
    switch(at, "pages/agreement.py")
    assert not at.exception, at.exception
    switch(at, "pages/review.py")
    assert not at.exception, at.exception
    assert (at.query_params["run"], at.query_params["relation"], at.query_params["queue"],
            at.query_params["item"]) == (str(old), "MR-1", "all", "3")
    item_button(at, "judge_tp").click().run()
    assert [(j.sample_id, j.verdict) for j in review.judgments(store, old, "MR-1", reviewer="alice")] == [("3", "tp")]
    assert review.judgments(store, new, reviewer="alice") == []


def test_agreement_shows_the_run_review_showed_in_its_url(monkeypatch, two_flagged_runs):
    store, old, new = two_flagged_runs
    review.create_reviewer(store, "alice", "alice-passphrase")
    review.record_judgment(actor_of(store, "alice"), store, old, "3", "MR-1", "tp")
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["reviewer"] = "alice"
    at.query_params.update({"run": str(old), "relation": "MR-1", "queue": "all", "item": "3"})
    at.run()
    at.switch_page("pages/review.py").run()
    switch(at, "pages/agreement.py")
    assert not at.exception, at.exception
    assert at.query_params["run"] == str(old) and at.query_params["relation"] == "MR-1"


def test_a_link_to_a_run_that_is_gone_is_said_and_nothing_else_opens(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    review.draw_review_sample(SERVER, store, run_id, "MR-2")
    at = page(monkeypatch, store, "alice")
    at.query_params.update({"run": "999", "relation": "MR-2", "item": "1"})
    at.run()
    assert not at.exception
    assert any("names run 999" in w.value for w in at.warning)
    assert at.query_params["run"] == "999"                          # not replaced by another run
    assert not any(b.key and b.key.startswith("judge_") for b in at.button)
    # the choices offered: alice's open queue, one click away
    choice = next(b for b in at.button if b.key == "review_choice_0")
    assert f"Run {run_id} MR-2" in choice.label
    choice.click().run()
    assert not at.exception and at.query_params["run"] == str(run_id)
    assert item_button(at, "judge_tp")


def test_review_opens_on_my_open_queue_not_on_the_newest_run(monkeypatch, two_flagged_runs):
    """Found: Review opened on the newest run with flags, where the signed-in reviewer had nothing to do."""
    store, old, new = two_flagged_runs
    review.create_reviewer(store, "alice", "alice-passphrase")
    ids = review.draw_review_sample(SERVER, store, old, "MR-1")
    review.record_judgment(actor_of(store, "alice"), store, old, ids[0], "MR-1", "tp")
    at = page(monkeypatch, store, "alice").run()
    assert not at.exception
    assert (at.query_params["run"], at.query_params["relation"], at.query_params["queue"],
            at.query_params["item"]) == (str(old), "MR-1", "sample", ids[1])


def unescaped(values) -> list[str]:
    return [str(v).replace("\\", "") for v in values]


def test_the_saved_line_names_run_relation_and_file(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice")
    at.query_params.update({"run": str(run_id), "relation": "MR-2", "queue": "all", "item": "2"})
    at.run()
    item_button(at, "judge_tp").click().run()
    assert not at.exception
    assert f"Saved: run {run_id}, MR-2, f2.png: true positive" in unescaped(s.value for s in at.success)


def test_a_revisited_item_shows_its_reasons_note_and_versions(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    alice = actor_of(store, "alice")
    review.record_judgment(alice, store, run_id, "2", "MR-2", "tp")
    review.record_judgment(alice, store, run_id, "2", "MR-2", "fp", reasons=["incomplete-removal"], note="half left",
                           validity="invalid")
    at = page(monkeypatch, store, "alice")
    at.query_params.update({"run": str(run_id), "relation": "MR-2", "queue": "all", "item": "2"})
    at.run()
    assert not at.exception
    from objrel.app.review_keys import item_suffix

    suffix = item_suffix(run_id, "MR-2", "2")
    reasons = [at.checkbox(key=f"review_reason_{i}_{suffix}") for i in range(len(review.FP_REASONS))]
    assert [r.value for r in reasons] == [r == "incomplete-removal" for r in review.FP_REASONS]
    assert reasons[1].label == "2 incomplete removal"          # the reason in words, with its number key
    assert at.text_input(key=f"review_note_{suffix}").value == "half left"
    assert at.radio(key=f"review_validity_{suffix}").value == "invalid"          # the second question too
    history = next(df.value for df in at.dataframe if "version" in df.value.columns)
    assert list(history["version"]) == [2, 1] and list(history["call"]) == ["false positive", "true positive"]
    assert list(history["reasons"]) == ["incomplete removal", ""]


def test_the_evidence_switch_draws_one_panel_and_lime_is_only_looked_up(monkeypatch, flagged_store):
    from sqlalchemy import func, select

    from objrel.store import schema as S

    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice").run()
    assert not at.exception
    assert at.session_state["review_evidence"] == "mutations"                                  # the default
    assert any("label" in t.value.columns for t in at.table)                                  # the top-5
    assert not at.get("plotly_chart")                                                          # not drawn
    at.session_state["review_evidence"] = "size"
    at.run()
    assert at.get("plotly_chart") and not any("label" in t.value.columns for t in at.table)
    at.session_state["review_evidence"] = "lime"
    at.run()
    assert any("LIME not computed yet" in c.value for c in at.caption)
    with store.engine.connect() as c:
        assert c.execute(select(func.count()).select_from(S.explanations)).scalar() == 0   # nothing computed


def test_the_evidence_choice_is_kept_with_the_account(monkeypatch, flagged_store):
    from objrel.review.settings import EVIDENCE_PANEL, my_settings

    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice").run()
    at.button_group(key="review_evidence").set_value("size").run()
    assert not at.exception, at.exception
    assert my_settings(actor_of(store, "alice"), store)[EVIDENCE_PANEL] == "size"
    # a new session of the same account opens on it
    again = page(monkeypatch, store, "alice").run()
    assert again.session_state["review_evidence"] == "size" and again.get("plotly_chart")


def test_the_lime_after_my_call_setting_is_kept_with_the_account(monkeypatch, flagged_store):
    from objrel.review.settings import LIME_AFTER_CALL, my_settings

    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice")
    at.session_state["review_evidence"] = "lime"
    at.run()
    at.toggle(key="review_lime_after_call").set_value(True).run()
    assert not at.exception
    assert my_settings(actor_of(store, "alice"), store)[LIME_AFTER_CALL] is True
    assert any("once you have made your call" in c.value for c in at.caption)
    assert not any("LIME not computed yet" in c.value for c in at.caption)


def test_choosing_another_relation_writes_it_and_its_item_into_the_url(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice")
    at.query_params.update({"run": str(run_id), "relation": "MR-2", "queue": "all", "item": "4"})
    at.run()
    at.radio(key="review_relation").set_value("MR-1").run()
    assert not at.exception
    assert (at.query_params["relation"], at.query_params["item"]) == ("MR-1", "1")   # MR-1's first open item
    assert at.session_state["review_selection"]["relation"] == "MR-1"


def store_fake_lime(store, run_id: int, sample_id: str, key: str) -> None:
    """A stored LIME explanation of one image (two superpixels, the left one positive), as the cache holds it."""
    import numpy as np

    from objrel.explain import Explanation, settings_string
    from objrel.store.explanations import add_explanation

    label = int(store.predictions(run_id, sample_id)["source"]["prediction"]["top_labels"][0])
    segments = np.zeros((40, 48), np.int32)
    segments[:, 24:] = 1
    add_explanation(store, run_id, sample_id, key, Explanation(label, segments, {0: 0.5, 1: -0.2},
                                                               settings_string(300), 0.4).to_row())


def test_a_cached_lime_overlay_shows_without_a_click_and_toggles(monkeypatch, flagged_store):
    from objrel.review.settings import LIME_AFTER_CALL, set_my_setting

    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice")
    at.session_state["review_evidence"] = "lime"
    at.query_params.update({"run": str(run_id), "relation": "MR-2", "queue": "all", "item": "2"})
    at.run()
    from objrel.review.items import review_item

    mutant = review_item(store, run_id, "2", "MR-2").violating_mutant("MR-2").key
    for key in ("source", mutant):
        store_fake_lime(store, run_id, "2", key)
    at.run()
    assert not at.exception
    lime_images = [i for i in at.get("image") if "LIME" in str(i.proto)]
    assert len(lime_images) == 2
    assert {m.value for m in at.metric if m.label == "LIME object share"} == {"40.0%"}
    at.toggle(key="review_lime_show").set_value(False).run()
    assert not [i for i in at.get("image") if "LIME" in str(i.proto)]
    # with "reveal LIME only after my call", an item not yet called shows none
    set_my_setting(actor_of(store, "alice"), store, LIME_AFTER_CALL, True)
    at.toggle(key="review_lime_show").set_value(True).run()
    assert not [i for i in at.get("image") if "LIME" in str(i.proto)]
    item_button(at, "judge_tp").click().run()
    item_button(at, "review_prev").click().run()
    assert at.query_params["item"] == "2"
    assert len([i for i in at.get("image") if "LIME" in str(i.proto)]) == 2


def test_the_histograms_this_item_label_sits_above_the_bars(monkeypatch, flagged_store):
    """Found: the "this item" label sat inside the plot area, over the bar it marks."""
    import json

    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice")
    at.session_state["review_evidence"] = "size"
    at.run()
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if "share flagged" in c.proto.spec)
    label = next(a for a in spec["layout"]["annotations"] if a["text"] == "this item")
    assert (label["yref"], label["y"], label["yanchor"]) == ("paper", 1.0, "bottom")
    assert spec["layout"]["margin"]["t"] > 10


def test_the_only_script_on_the_page_is_the_constant_key_listener(monkeypatch, flagged_store):
    """No text from the data reaches a script: every HTML element the page adds, on every item, is the key
    listener (a constant) or the app's style; sample ids and file names are drawn as plain text only."""
    from objrel.app.review_keys import key_script

    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")
    at = page(monkeypatch, store, "alice")
    at.query_params.update({"run": str(run_id), "relation": "MR-2", "queue": "all"})
    at.run()
    seen = set()
    for _ in range(3):
        bodies = [h.proto.body for h in at.get("html")]
        scripts = [b for b in bodies if "<script" in b]
        assert scripts == [key_script()], scripts
        seen.add(at.query_params["item"])
        item_button(at, "review_next").click().run()
    assert len(seen) == 3           # three items, one and the same script
