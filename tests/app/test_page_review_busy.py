"""The Review page on a busy store: a call the store could not take is said so, and stays on the page."""

from __future__ import annotations

import pytest

from objrel import review
from objrel.app.review_keys import item_suffix
from objrel.errors import StoreBusy
from objrel.review import queue
from tests.app.test_page_review import item_button, page


@pytest.fixture(autouse=True)
def fast_hash(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2**10)


def test_a_call_the_busy_store_refuses_stays_on_the_item_with_the_form(monkeypatch, flagged_store):
    store, run_id = flagged_store
    review.create_reviewer(store, "alice", "alice-passphrase")

    def busy(*args, **kwargs):
        raise StoreBusy("the store is busy (other writers held the store's lock; waited 30.0 s): nothing was "
                        "saved, try again")

    # the call buttons' callback is the one of the run that drew them: the store is busy from the first run on
    real = queue.record_call
    monkeypatch.setattr(queue, "record_call", busy)
    at = page(monkeypatch, store, "alice").run()
    assert not at.exception, at.exception
    item = at.query_params["item"]
    suffix = item_suffix(run_id, "MR-2", item)
    at.checkbox(key=f"review_reason_1_{suffix}").check()
    at.text_input(key=f"review_note_{suffix}").input("half of it left")
    at.radio(key=f"review_validity_{suffix}").set_value("invalid")
    item_button(at, "judge_fp").click().run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any(e.startswith("Not saved: the store is busy") and "press the call again" in e for e in errors), errors
    assert at.query_params["item"] == item                                       # not moved on
    assert review.judgments(store, run_id, "MR-2", reviewer="alice") == []
    assert at.checkbox(key=f"review_reason_1_{suffix}").value                    # the form as it was sent
    assert at.text_input(key=f"review_note_{suffix}").value == "half of it left"
    assert at.radio(key=f"review_validity_{suffix}").value == "invalid"

    monkeypatch.setattr(queue, "record_call", real)                             # the store is free again
    at.run()
    item_button(at, "judge_fp").click().run()
    assert not at.exception, at.exception
    [j] = review.judgments(store, run_id, "MR-2", reviewer="alice")
    assert (j.sample_id, j.verdict, j.reasons, j.note, j.validity) == \
        (item, "fp", (review.FP_REASONS[1],), "half of it left", "invalid")
    assert at.query_params["item"] != item and not any("store is busy" in e.value for e in at.error)
