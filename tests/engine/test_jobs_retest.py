"""Background runs started from the app, and the reviewer's box re-test."""

from __future__ import annotations

import time

import pytest

from objrel import review as R
from objrel.config import DetectionConfig, RunConfig
from objrel.engine import jobs
from objrel.engine.classify import Engine
from objrel.engine.retest import retest_with_box
from objrel.errors import ConfigError, NotAllowed
from objrel.review.roles import actor_of
from objrel.store import Store, leases
from objrel.store.reviews import retests

from tests.conftest import write_background_driven_scene
from tests.fixtures.colour_model import factory

OPERATOR = "olga"


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


def account(store: Store, name: str = OPERATOR, roles=(R.RUN_OPERATOR,)) -> str:
    """``name``, made in ``store`` with ``roles`` unless it is there already."""
    if name not in R.reviewer_names(store):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    return name


def wait_for(pred, timeout=90.0, step=0.1):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


@pytest.mark.subprocess
def test_background_run_finishes_and_reports_progress(tmp_path, colour_set):
    store = Store(tmp_path / "bg.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(colour_set), plan="colours3")
    job = jobs.start_run(actor_of(store, account(store)), store.url, cfg)
    assert store.get_run(job.run_id).n_total == 10
    assert wait_for(lambda: store.get_run(job.run_id).status == "finished"), open(job.log).read()
    run = store.get_run(job.run_id)
    assert (run.n_done, run.n_skipped) == (10, 4)
    assert leases.display_status(run) == "finished"


@pytest.mark.subprocess
def test_background_run_can_be_cancelled(tmp_path, colour_set):
    store = Store(tmp_path / "cancel.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:slow_factory", dataset=str(colour_set), plan="colours3",
                    batch_size=1)
    job = jobs.start_run(actor_of(store, account(store)), store.url, cfg)
    assert wait_for(lambda: store.get_run(job.run_id).n_done >= 1)
    jobs.cancel(actor_of(store, OPERATOR), store, job.run_id)
    assert wait_for(lambda: store.get_run(job.run_id).status == "cancelled")
    assert store.get_run(job.run_id).n_done < 10
    # and it can be resumed to the end
    again = jobs.start_run(actor_of(store, account(store)), store.url, resume=job.run_id)
    assert again.run_id == job.run_id
    assert wait_for(lambda: store.get_run(job.run_id).status == "finished", timeout=120)
    assert len(store.samples(job.run_id)) == 10


def test_dead_process_shows_as_stalled(tmp_path):
    store = Store(tmp_path / "stall.db")
    rid = store.create_run(name="x", model="m", model_config={}, task="single", class_names=["a"], dataset="d",
                           dataset_config={}, plan={"groups": []}, config={}, seed=0, n_total=3)
    store.update_run(rid, status="running", pid=2**22 + 12345)  # no such process
    run = store.get_run(rid)
    assert leases.display_status(run, now_ts=time.time() + leases.STALL_AFTER_S + 5) == "stalled"


@pytest.mark.subprocess
def test_start_failure_is_reported(tmp_path):
    store = Store(tmp_path / "fail.db")
    with pytest.raises(RuntimeError, match="exited with code 2"):
        jobs.start_run(actor_of(store, account(store)), store.url,
                       RunConfig(model="py:nowhere:nothing", dataset=str(tmp_path / "none.json")))


def test_retest_with_a_box_over_the_whole_image(tmp_path):
    """The background-driven image of test_engine (greenish object labelled red on a red field) is flagged
    by both relations.  Redrawn to cover the whole 40x40 image, there is no background left: filling it
    changes nothing, so MR-2 holds 3/3; filling the "object" (everything) with a gray level makes all three
    channels equal, the label stays red (first of three ties) with certainty 0 < source: MR-1 holds 3/3."""
    root = write_background_driven_scene(tmp_path / "bg").parent
    store = Store(tmp_path / "rt.db")
    cfg = RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(root / "ann.json"), plan="all")
    rep = Engine(store, cfg, model=factory()).execute()
    assert set(store.flagged_sample_ids(rep.run_id, "MR-2")) == {"1"}
    account(store, "alice", (R.REVIEWER,))
    res = retest_with_box(actor_of(store, "alice"), store, rep.run_id, "1", (0, 0, 40, 40), model=factory())
    assert res.box == (0, 0, 40, 40) and res.area_ratio == 1.0
    assert res.votes["MR-2"]["violations"] == 0 and not res.votes["MR-2"]["flagged"]
    assert res.votes["MR-1"]["violations"] == 0
    assert set(res.verdicts) == {f"fill_{w}(colour={c})" for w in ("object", "background")
                                 for c in ("black", "gray", "white")}  # primary votes only
    stored = retests(store, rep.run_id, "1")
    assert len(stored) == 1 and stored[0]["reviewer"] == "alice" and stored[0]["box"] == [0, 0, 40, 40]
    # the original verdicts are untouched
    assert set(store.flagged_sample_ids(rep.run_id, "MR-2")) == {"1"}
    with pytest.raises(ValueError, match="lies entirely outside the 40x40 image"):
        retest_with_box(actor_of(store, "alice"), store, rep.run_id, "1", (50, 0, 90, 40), model=factory())


FACES = dict(detector="haar:frontalface_default", dataset="demo-faces")


@pytest.mark.subprocess
def test_background_detection_run_finishes(tmp_path):
    from objrel.config import DetectionConfig

    store = Store(tmp_path / "det.db")
    job = jobs.start_run(actor_of(store, account(store)), store.url, DetectionConfig(**FACES, limit=1, name="faces"))
    run = store.get_run(job.run_id)
    assert (run.task, run.model, run.n_total, run.name) == ("detection", "haar:frontalface_default", 1, "faces")
    assert wait_for(lambda: store.get_run(job.run_id).status == "finished"), open(job.log).read()
    assert leases.display_status(store.get_run(job.run_id)) == "finished"


@pytest.mark.subprocess
def test_stopped_detection_run_resumes_in_the_background(tmp_path):
    """A detection run stopped after two of three images is resumed by a background process: it does the third
    image only and ends with the rows of an uninterrupted run."""
    from objrel.config import DetectionConfig
    from objrel.engine.detect import DetectionEngine

    config = DetectionConfig(**FACES, limit=3)
    store = Store(tmp_path / "resume.db")
    stopped = DetectionEngine(store, config).execute(stop_after=2)
    run = store.get_run(stopped.run_id)
    assert stopped.status == "pending" and (run.n_done, run.n_total) == (2, 3)
    assert jobs.is_resumable(run) and [r.id for r in jobs.resumable_runs(store)] == [stopped.run_id]
    job = jobs.start_run(actor_of(store, account(store)), store.url, resume=stopped.run_id)
    assert job.run_id == stopped.run_id
    assert wait_for(lambda: store.get_run(job.run_id).status == "finished"), open(job.log).read()
    assert store.get_run(job.run_id).n_done == 3 and not jobs.is_resumable(store.get_run(job.run_id))
    whole = Store(tmp_path / "whole.db")
    whole_id = DetectionEngine(whole, config).execute().run_id

    def votes(s, rid):   # one row per tested unit and vote group, for either task
        return sorted((v["sample_id"], v["group_name"], v["violations"], v["flagged"]) for v in s.votes(rid))

    assert sorted(r["sample_id"] for r in store.samples(job.run_id)) == \
        sorted(r["sample_id"] for r in whole.samples(whole_id)) == ["1", "2", "3"]
    assert votes(store, job.run_id) == votes(whole, whole_id)
    assert any(v[0].startswith("3/") for v in votes(whole, whole_id))   # the resumed image has tested units


@pytest.mark.subprocess
def test_start_run_takes_a_config_or_a_run_to_resume(tmp_path):
    with pytest.raises(ValueError, match="not both"):
        jobs.start_run(actor_of(Store(tmp_path / "x.db"), OPERATOR), Store(tmp_path / "x.db").url, RunConfig(),
                       resume=1)


def test_run_states_for_the_runs_page(tmp_path):
    store = Store(tmp_path / "states.db")
    rid = store.create_run(name="x", model="m", model_config={}, task="single", class_names=["a"], dataset="d",
                           dataset_config={}, plan={"groups": []}, config={}, seed=0, n_total=4)
    store.update_run(rid, status="cancelled", n_done=1)
    run = store.get_run(rid)
    assert jobs.progress_share(run) == 0.25 and jobs.is_resumable(run)
    assert not jobs.is_active(run) and not jobs.can_cancel(run)
    store.update_run(rid, status="finished", n_done=4)
    run = store.get_run(rid)
    assert jobs.progress_share(run) == 1.0 and not jobs.is_resumable(run)
    from objrel.analysis.overview import run_history

    table = run_history(store.list_runs())
    # four samples done, none tested: the history says so
    assert table.loc[0, ["task", "status", "samples"]].tolist() == ["single", "finished, tested nothing", "4/4"]
    store.update_run(rid, n_tested=3)
    table = run_history(store.list_runs())
    assert table.loc[0, ["task", "status", "samples"]].tolist() == ["single", "finished", "4/4"]


# ---------------------------------------------------------------- who may start, cancel, resume, re-test


def _run_row(store: Store) -> int:
    rid = store.create_run(name="x", model="m", model_config={}, task="single", class_names=["a"], dataset="d",
                           dataset_config={}, plan={"groups": []}, config={}, seed=0, n_total=4)
    store.update_run(rid, status="running")
    return rid


@pytest.mark.subprocess
@pytest.mark.parametrize("who, roles", [(None, ()), ("rita", (R.REVIEWER,)), ("adam", (R.ADJUDICATOR,))])
def test_only_run_operators_and_admins_start_cancel_and_resume(tmp_path, who, roles):
    store = Store(tmp_path / "deny.db")
    if who is not None:
        account(store, who, roles)
    rid = _run_row(store)
    held = ", ".join(roles) if roles else "no role"
    with pytest.raises(NotAllowed, match=f"may not start runs: it needs the role run-operator or admin; .* {held}"):
        jobs.start_run(actor_of(store, who), store.url, DetectionConfig(**FACES, limit=1))
    with pytest.raises(NotAllowed, match=f"may not resume runs .run {rid}."):
        jobs.start_run(actor_of(store, who), store.url, resume=rid)
    with pytest.raises(NotAllowed, match=f"may not cancel runs .run {rid}."):
        jobs.cancel(actor_of(store, who), store, rid)
    with pytest.raises(NotAllowed, match="may not read run logs"):
        jobs.log_tail(actor_of(store, who), tmp_path / "any.log")
    assert store.list_runs()[0].id == rid and not store.cancel_requested(rid)   # nothing started or asked


def test_an_admin_may_cancel_and_read_logs(tmp_path):
    store = Store(tmp_path / "admin.db")
    rid = _run_row(store)
    boss = account(store, "boss", (R.ADMIN,))
    jobs.cancel(actor_of(store, boss), store, rid)
    assert store.cancel_requested(rid)
    log = tmp_path / "run.log"
    log.write_text("\n".join(f"line {i}" for i in range(30)))
    assert jobs.log_tail(actor_of(store, boss), log, lines=2) == "line 28\nline 29"


def test_retest_needs_a_reviewer_role(tmp_path):
    store = Store(tmp_path / "rt-deny.db")
    account(store, OPERATOR)
    with pytest.raises(NotAllowed, match="'olga' may not re-test a sample with a redrawn box .'1' of run 1.: "
                                         "it needs the role reviewer or adjudicator or admin; olga has run-operator"):
        retest_with_box(actor_of(store, OPERATOR), store, 1, "1", (0, 0, 4, 4))


# ---------------------------------------------------------------- the web app's policy


def test_web_runs_refuse_code_unlisted_models_and_paths_outside_the_roots(tmp_path, monkeypatch, colour_set):
    store = Store(tmp_path / "web.db")
    op = account(store)
    with pytest.raises(ConfigError, match="never runs code named by a model spec"):
        jobs.start_web_run(actor_of(store, op), store,
                           RunConfig(model="py:tests.fixtures.colour_model:factory", dataset="demo"))
    with pytest.raises(ConfigError, match="never runs code"):
        jobs.start_web_run(actor_of(store, op), store,
                           DetectionConfig(detector="mtcnn+py:evil:f", dataset="demo-faces"))
    with pytest.raises(ConfigError, match="must be one of the app's list .* got 'torchvision:resnet101'"):
        jobs.start_web_run(actor_of(store, op), store, RunConfig(model="torchvision:resnet101", dataset="demo"))
    # the architectures listed for uploaded state dicts run only with a weights file, from the allowed roots
    with pytest.raises(ConfigError, match="runs with an uploaded weights file; got no weights file"):
        jobs.start_web_run(actor_of(store, op), store, RunConfig(model="torchvision:resnet18", dataset="demo"))
    with pytest.raises(ConfigError, match="weights file must lie inside an allowed folder"):
        jobs.start_web_run(actor_of(store, op), store,
                           RunConfig(model="torchvision:resnet18", dataset="demo", weights="/tmp/w.pt"))
    with pytest.raises(ConfigError, match="dataset must lie inside an allowed folder"):
        jobs.start_web_run(actor_of(store, op), store, RunConfig(model="efficientnet-lite0", dataset=str(colour_set)))
    with pytest.raises(ConfigError, match="weights file must lie inside an allowed folder"):
        jobs.start_web_run(actor_of(store, op), store,
                           RunConfig(model="efficientnet-lite0", dataset="demo", weights="/etc/passwd"))
    with pytest.raises(ConfigError, match="dataset must lie inside"):   # no escape with ..
        jobs.start_web_run(actor_of(store, op), store,
                           DetectionConfig(**{**FACES, "dataset": str(tmp_path / "up" / ".." / "x.json")}))
    with pytest.raises(NotAllowed, match="may not start runs"):
        jobs.start_web_run(actor_of(store, account(store, "rita", (R.REVIEWER,))), store,
                           DetectionConfig(**FACES, limit=1))
    assert store.list_runs() == []
    monkeypatch.setenv("OBJREL_DATA_ROOTS", str(colour_set.parent))
    from objrel.engine.run_form import check_web_config
    assert check_web_config(store, RunConfig(model="efficientnet-lite0", dataset=str(colour_set))).dataset == \
        str(colour_set)


def test_web_runs_refuse_code_in_any_setting_also_inherited(tmp_path):
    """F20: the web policy checked only the fields the form shows, so ``regions_from: py:...`` (loaded as code)
    passed, also when inherited through "Start from the settings of" a run started on the server."""
    from objrel.engine.run_form import RunForm, check_web_config

    store = Store(tmp_path / "web.db")
    op = actor_of(store, account(store))
    evil = DetectionConfig(**FACES, regions_from="py:os:system")
    with pytest.raises(ConfigError, match="never runs code named in a run's settings .* regions_from='py:os:system'"):
        check_web_config(store, evil)
    with pytest.raises(ConfigError, match="regions_from must be one of the app's detectors"):
        check_web_config(store, DetectionConfig(**FACES, regions_from="haar:../../x"))
    # inherited: the form's fields over a server run's settings keep its regions_from
    form = RunForm(task="detector", model="haar:frontalface_default", weights="", dataset="demo-faces", images="",
                   plan="erase_noise", operators=(), vote_k=2, dilate=0, test_all=False, detected_only=False, seed=0,
                   limit=1, name="")
    inherited = form.to_config(evil)
    assert inherited.regions_from == "py:os:system"
    with pytest.raises(ConfigError, match="never runs code"):
        jobs.start_web_run(op, store, inherited)
    assert store.list_runs() == []                     # nothing started


def test_web_runs_refuse_settings_the_form_does_not_offer(tmp_path):
    """A base run started on the server may carry settings the form never offers: a synset mapping outside the
    allowed folders, the Ray engine with thousands of workers, a huge batch; the web policy refuses each."""
    from objrel.engine.run_form import MAX_WEB_BATCH, check_web_config

    store = Store(tmp_path / "web.db")
    base = RunConfig(model="efficientnet-lite0", dataset="demo")
    with pytest.raises(ConfigError, match="synset mapping must lie inside an allowed folder"):
        check_web_config(store, base.replace(synset_mapping="/etc/passwd"))
    with pytest.raises(ConfigError, match="runs on this machine only .engine local.; got engine='ray'"):
        check_web_config(store, base.replace(engine="ray", workers=9999))
    with pytest.raises(ConfigError, match=f"batch_size must be at most {MAX_WEB_BATCH}"):
        check_web_config(store, base.replace(batch_size=10**9))
    # a run started on a GPU with the objrel command: the app's processes share no GPU, and its form shows none
    with pytest.raises(ConfigError, match="runs models on the CPU .device cpu.; got device='cuda:0'. Start GPU runs"):
        check_web_config(store, base.replace(device="cuda:0"))
    assert check_web_config(store, base) == base


def test_admins_register_models_for_the_web_list(tmp_path):
    from objrel.engine.run_form import CLASSIFIER, allow_model, web_models

    store = Store(tmp_path / "models.db")
    boss = account(store, "boss", (R.ADMIN,))
    with pytest.raises(NotAllowed, match="'olga' may not register models"):
        allow_model(actor_of(store, account(store)), store, CLASSIFIER, "torchvision:resnet101")
    with pytest.raises(ConfigError, match="never code"):
        allow_model(actor_of(store, boss), store, CLASSIFIER, "py:tests.fixtures.colour_model:factory")
    with pytest.raises(ConfigError, match="or a path"):
        allow_model(actor_of(store, boss), store, CLASSIFIER, "haar:/tmp/cascade.xml")
    assert allow_model(actor_of(store, boss), store, CLASSIFIER, "torchvision:resnet101")[-1] == "torchvision:resnet101"
    assert "torchvision:resnet101" in web_models(store, CLASSIFIER)
    from objrel.engine.run_form import check_web_config
    assert check_web_config(store, RunConfig(model="torchvision:resnet101", dataset="demo")).model == \
        "torchvision:resnet101"
