"""Run management: rename, delete with every row of the run, skipped / untested lists, uploads; roles checked."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, func, select

from objrel.access import ANONYMOUS
from objrel.config import RunConfig
from objrel.engine import manage
from objrel.engine.classify import Engine
from objrel.errors import ConfigError, NotAllowed
from objrel.review import record_judgment
from objrel.review import roles as R
from objrel.review.roles import actor_of
from objrel.store import Store
from objrel.store import schema as S

from tests.data.test_uploads import make_zip, manifest, png_bytes
from tests.engine.test_jobs_retest import account
from tests.fixtures.colour_model import factory

RUN_TABLES = [t for t in S.metadata.sorted_tables if "run_id" in t.c]


def counts(store: Store, run_id: int) -> dict[str, int]:
    with store.engine.connect() as c:
        return {t.name: c.execute(select(func.count()).select_from(t).where(t.c.run_id == run_id)).scalar()
                for t in RUN_TABLES}


def colour_run(store, colour_set, name="colours") -> int:
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3",
                    name=name)
    return Engine(store, cfg, model=factory()).execute().run_id


@pytest.fixture
def two_runs(flagged_store, colour_set):
    """Run a (flagged inferences, one judged) and run b, in one store."""
    store, a = flagged_store
    b = colour_run(store, colour_set, "b")
    account(store, "alice", (R.REVIEWER,))
    record_judgment(actor_of(store, "alice"), store, a, store.flagged_sample_ids(a, "MR-1")[0], "MR-1", "tp")
    store.record_attempts(a, ["x"])
    return store, a, b


def test_delete_run_removes_every_row_of_it_and_only_it(two_runs):
    store, a, b = two_runs
    op = account(store)
    before_a, before_b = counts(store, a), counts(store, b)
    assert before_a["samples"] and before_a["predictions"] and before_a["verdicts"] and before_a["attempts"]
    assert before_a["judgments"] == 1 and before_a["judgment_versions"] >= 1
    with pytest.raises(NotAllowed):
        manage.delete_run(actor_of(store, "alice"), store, a, confirm=str(a))
    with pytest.raises(NotAllowed):
        manage.delete_run(ANONYMOUS, store, a, confirm=str(a))
    with pytest.raises(ConfigError, match=f"type its id {a} to confirm; got '{b}'"):
        manage.delete_run(actor_of(store, op), store, a, confirm=str(b))
    store.update_run(a, status="running")
    with pytest.raises(ConfigError, match="is running"):
        manage.delete_run(actor_of(store, op), store, a, confirm=str(a))
    store.update_run(a, status="finished")
    deleted = manage.delete_run(actor_of(store, op), store, a, confirm=f" {a} ")
    assert deleted["runs"] == 1 and deleted["samples"] == before_a["samples"]
    assert all(n == 0 for n in counts(store, a).values())
    assert counts(store, b) == before_b
    assert [r.id for r in store.list_runs()] == [b]
    with pytest.raises(KeyError, match=f"no run {a}"):
        store.delete_run(a)


def _cascade_check(store: Store, colour_set):
    rid = colour_run(store, colour_set)
    store.record_attempts(rid, ["x"])
    assert sum(counts(store, rid).values()) > 0
    with store.engine.begin() as c:  # only the runs row: the children must go by ON DELETE CASCADE
        c.execute(delete(S.runs).where(S.runs.c.id == rid))
    assert counts(store, rid) == {t.name: 0 for t in RUN_TABLES}


def test_on_delete_cascade_works_on_sqlite(store, colour_set):
    _cascade_check(store, colour_set)


def test_on_delete_cascade_works_on_postgresql(pg_url, colour_set):
    store = Store(pg_url)
    try:
        _cascade_check(store, colour_set)
    finally:
        store.dispose()


def test_rename_run_checks_role_and_name(two_runs):
    store, a, _ = two_runs
    op = account(store)
    with pytest.raises(NotAllowed, match="'alice' may not rename run"):
        manage.rename_run(actor_of(store, "alice"), store, a, "new")
    with pytest.raises(ConfigError, match="1 to 200 characters; got 0"):
        manage.rename_run(actor_of(store, op), store, a, "   ")
    manage.rename_run(actor_of(store, op), store, a, "  <b>new</b> name ")
    assert store.get_run(a).name == "<b>new</b> name"
    with pytest.raises(KeyError, match="no run 999"):
        manage.rename_run(actor_of(store, op), store, 999, "x")


def test_sample_issues_list_skipped_and_untested_with_reasons(store, colour_set):
    rid = colour_run(store, colour_set)
    issues = {i.sample_id: i for i in manage.sample_issues(store, rid)}
    rows = {r["sample_id"]: r for r in store.samples(rid)}
    skipped = {s for s, r in rows.items() if r["status"] == "skipped"}
    untested = {s for s, r in rows.items() if r["status"] == "untested"}
    assert skipped and untested, f"the colour set has both kinds; got {rows}"
    assert skipped | untested <= set(issues)
    for s in skipped:
        assert issues[s].code == rows[s]["skip_code"] and issues[s].reason == rows[s]["skip_reason"]
    for s in untested:
        assert issues[s].status == "untested" and issues[s].reason
    for s, i in issues.items():
        if rows[s]["dropped"]:
            assert i.dropped.count("\n") == len(rows[s]["dropped"]) - 1


def test_uploads_need_the_operator_role_and_an_allowed_root(store, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OBJREL_DATA_ROOTS", str(tmp_path / "var" / "uploads"))
    op = account(store)
    account(store, "alice", (R.REVIEWER,))
    z = make_zip({"a.png": png_bytes()})
    with pytest.raises(NotAllowed, match="'alice' may not upload datasets"):
        manage.upload_dataset(actor_of(store, "alice"), store, "d", manifest("a.png"), z)
    up = manage.upload_dataset(actor_of(store, op), store, "d", manifest("a.png"), z)
    assert up.folder == (tmp_path / "var" / "uploads" / manage.store_folder_name(store) / "d").resolve()
    assert [u.name for u in manage.uploads(store)] == ["d"]
    with pytest.raises(NotAllowed, match="may not upload weights"):
        manage.upload_weights(actor_of(store, "alice"), store, "w", "resnet18", b"x")
    monkeypatch.setenv("OBJREL_DATA_ROOTS", str(tmp_path / "elsewhere"))
    with pytest.raises(ConfigError, match="not inside the allowed data roots"):
        manage.upload_dataset(actor_of(store, op), store, "e", manifest("a.png"), z)
    assert manage.uploads(store) == []


def test_each_store_keeps_its_uploads_apart(tmp_path, monkeypatch):
    """Two stores served from one folder: an upload to one is neither listed nor offered by the other."""
    from objrel.engine.run_form import root_choices
    from objrel.store import Store

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OBJREL_DATA_ROOTS", str(tmp_path / "var" / "uploads"))
    stores = [Store(tmp_path / "a" / "team.db", make_parents=True), Store(tmp_path / "b" / "team.db",
                                                                          make_parents=True)]
    try:
        ops = [actor_of(s, account(s)) for s in stores]
        assert manage.store_folder_name(stores[0]) != manage.store_folder_name(stores[1])   # one file name, two
        assert manage.store_folder_name(stores[0]).startswith("team-")
        up = manage.upload_dataset(ops[0], stores[0], "d", manifest("a.png"), make_zip({"a.png": png_bytes()}))
        assert [u.name for u in manage.uploads(stores[0])] == ["d"] and manage.uploads(stores[1]) == []
        assert str(up.annotation) in root_choices("annotation", manage.form_roots(stores[0]))
        assert not any("d.json" in c for c in root_choices("annotation", manage.form_roots(stores[1])))
    finally:
        for s in stores:
            s.dispose()
