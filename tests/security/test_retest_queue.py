"""A box re-test (a model in memory) takes a slot of the work queue like LIME and runs: with the server's slots
held by others it starts nothing and writes nothing (found in a hostile read: it ran beside the caps)."""

from __future__ import annotations

import pytest

from objrel import review as R
from objrel import work_queue
from objrel.config import RunConfig
from objrel.engine.classify import Engine
from objrel.engine.retest import retest_with_box
from objrel.errors import WorkRefused
from objrel.review.roles import actor_of
from objrel.store import Store
from objrel.store.reviews import retests

from tests.engine.test_engine import write_background_driven_scene
from tests.fixtures.colour_model import factory


def test_a_retest_over_the_servers_cap_starts_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)
    monkeypatch.setenv(work_queue.MAX_WORK_ENV, "2")
    root = write_background_driven_scene(tmp_path / "bg").parent
    store = Store(tmp_path / "rt.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(root / "ann.json"), plan="all")
    run_id = Engine(store, cfg, model=factory()).execute().run_id
    for name in ("alice", "bob", "carol"):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=(R.REVIEWER,))
    with work_queue.admit(actor_of(store, "bob"), work_queue.LIME, "bob's LIME"), \
            work_queue.admit(actor_of(store, "carol"), work_queue.LIME, "carol's LIME"):
        with pytest.raises(WorkRefused, match="nothing started"):
            retest_with_box(actor_of(store, "alice"), store, run_id, "1", (0, 0, 40, 40), model=factory())
        assert retests(store, run_id, "1") == []
    res = retest_with_box(actor_of(store, "alice"), store, run_id, "1", (0, 0, 40, 40), model=factory())
    assert res.box == (0, 0, 40, 40) and len(retests(store, run_id, "1")) == 1   # a free slot: it runs
