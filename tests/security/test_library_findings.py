"""Findings of the hostile review (issue 40) that the objrel library itself must hold, whatever a page does:
blindness over the drawn items (B1) and for a party holding other roles (B2), actors only from the store (R2),
no server path in upload and run-form refusals (W1), the web run policy, sign-in throttling that cannot lock
the owner out (S4), and bounded boxes in annotation files (E5).  Real SQLite stores, real files."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from PIL import Image

from objrel import access as A
from objrel import review as R
from objrel.access import SERVER, Actor
from objrel.config import RunConfig
from objrel.errors import AnnotationError, ConfigError, NotAllowed
from objrel.review import accounts
from objrel.review.agreement import pair_kappas
from objrel.review.roles import actor_of
from objrel.store import Store

from tests.data.test_uploads import coco, make_zip, png_bytes
from tests.review.test_review import ids, make_run
from tests.stored_actors import stored_actor

REL = "MR-1"
# Flagged items of the B1 run: enough that Cochran draws fewer than all of them.
FLAGGED = 200


@pytest.fixture
def store(tmp_path, monkeypatch) -> Store:
    monkeypatch.setattr(accounts, "SCRYPT_N", 2**10)      # cheap hashes: these tests are about who sees what
    return Store(tmp_path / "findings.db")


def test_calibration_and_agreement_show_no_call_on_an_item_outside_the_draw(store):
    """alice and bob close the drawn sample; on a flagged item outside the draw (which either may still judge)
    they called differently, with notes.  Neither calibration, nor agreement, nor the pair's disagreements show
    that item, so bob never reads alice's call there."""
    for name in ("alice", "bob"):
        R.create_reviewer(store, name, f"{name}-passphrase")
    rid = make_run(store, mr1=ids("s", FLAGGED))
    drawn = R.draw_review_sample(SERVER, store, rid, REL)
    undrawn = sorted(set(ids("s", FLAGGED)) - set(drawn))
    assert undrawn, f"Cochran drew all {FLAGGED} flagged items"
    alice, bob = actor_of(store, "alice"), actor_of(store, "bob")
    for sid in drawn:
        R.record_judgment(alice, store, rid, sid, REL, "tp")
        R.record_judgment(bob, store, rid, sid, REL, "tp")
    R.record_judgment(alice, store, rid, undrawn[0], REL, "fp", ["multiple-objects"], "alice-undrawn-note")
    R.record_judgment(bob, store, rid, undrawn[0], REL, "tp", (), "bob-undrawn-note")
    cal = R.calibration(bob, store, rid, REL)
    shown = json.dumps([d.to_dict() for d in cal.disagreements])
    print(f"calibration for bob: {len(cal.disagreements)} disagreements, n = {cal.verdicts.n}")
    assert "alice-undrawn-note" not in shown and undrawn[0] not in shown
    assert cal.verdicts.n == len(drawn)
    ag = R.agreement(store, rid, REL, "alice", "bob")
    assert (ag.n_a, ag.n_both) == (len(drawn), len(drawn)) and undrawn[0] not in {p[0] for p in ag.pairs}
    assert R.disagreements(store, rid, REL, "alice", "bob") == []


def test_a_party_holding_the_adjudicator_role_sees_no_other_call_while_the_sample_is_open(store):
    """eve reviews and adjudicates; she has judged part of the drawn sample, alice all of it.  Until the sample
    closes eve sees none of alice's calls: not through pair_view, the export, a version history or kappa."""
    R.create_reviewer(store, "alice", "alice-passphrase")
    R.create_reviewer(store, "eve", "eve-passphrase", roles=[R.REVIEWER, R.ADJUDICATOR])
    rid = make_run(store, mr1=ids("s", 10))
    drawn = R.draw_review_sample(SERVER, store, rid, REL)
    alice, eve = actor_of(store, "alice"), actor_of(store, "eve")
    for sid in drawn:
        R.record_judgment(alice, store, rid, sid, REL, "fp", ["other"], "alice-open-note")
    R.record_judgment(eve, store, rid, drawn[0], REL, "tp")
    assert not R.sample_state(store, rid, REL).closed
    with pytest.raises(NotAllowed, match="still open") as refused:
        R.pair_view(eve, store, rid, REL, "alice", "eve")
    print(f"pair_view for eve: {refused.value}")
    rows = R.judgment_export(eve, store, rid, REL)
    assert {r.reviewer for r in rows} == {"eve"} and "alice-open-note" not in json.dumps([r.to_dict() for r in rows])
    with pytest.raises(NotAllowed, match="still open"):
        R.judgment_history(eve, store, rid, drawn[0], REL, "alice")
    assert pair_kappas(eve, store, R.judged_runs(store), REL) == {}
    # an adjudicator who judged nothing here still sees the pair
    carol = stored_actor(store, "carol", R.ADJUDICATOR)
    assert R.pair_view(carol, store, rid, REL, "alice", "eve").agreement.n_both == 1


def test_the_gate_refuses_an_actor_the_caller_built(store):
    """An Actor named by the caller (no such account, or roles the store never gave) does nothing that needs a
    role; nor does a copy of a loaded actor with other roles; the store's loader alone issues actors."""
    forged = Actor("mallory", frozenset({A.ADMIN}))
    with pytest.raises(NotAllowed, match="not read from the store") as refused:
        A.authorize(forged, A.GRANT_ROLE, "to 'mallory'")
    print(f"forged actor: {refused.value}")
    assert not A.permits(forged, A.START_RUN)
    alice = stored_actor(store, "alice", R.REVIEWER)
    A.authorize(alice, A.JUDGE)                                          # loaded from the store: trusted
    promoted = dataclasses.replace(alice, roles=frozenset({A.ADMIN}))
    with pytest.raises(NotAllowed, match="not read from the store"):
        A.authorize(promoted, A.INVITE)
    with pytest.raises(NotAllowed):
        R.grant_roles(promoted, store, "alice", R.ADMIN)
    assert R.roles_of(store, "alice") == (R.REVIEWER,)
    assert A.authorize(forged, A.OPEN_RESULTS) is forged                 # public actions stay open to anyone
    with pytest.raises(RuntimeError, match="issued only by"):
        A.claim_actor_loader("objrel.review.roles")                      # claimed once, by the loader itself


def test_upload_and_run_form_refusals_name_no_server_path(tmp_path, monkeypatch):
    """A second upload under a taken name, and a run whose dataset lies outside the allowed folders, are refused
    with messages that name the upload and the folders, never where they are on the server."""
    from objrel.data import uploads as U
    from objrel.engine.run_form import DATA_ROOTS_ENV, check_web_config

    root = tmp_path / "var" / "uploads"
    U.add_dataset(root, "reds", coco("x.png"), make_zip({"x.png": png_bytes()}))
    with pytest.raises(U.UploadError, match="already exists") as taken:
        U.add_dataset(root, "reds", coco("x.png"), make_zip({"x.png": png_bytes()}))
    print(f"upload refusal: {taken.value}")
    assert str(tmp_path) not in str(taken.value)
    allowed = tmp_path / "allowed-data"
    allowed.mkdir()
    monkeypatch.setenv(DATA_ROOTS_ENV, str(allowed))
    elsewhere = tmp_path / "private" / "ann.json"
    with pytest.raises(ConfigError, match="must lie inside an allowed folder") as outside:
        check_web_config(Store(tmp_path / "web.db"), RunConfig(dataset=str(elsewhere)))
    print(f"run form refusal: {outside.value}")
    assert str(tmp_path) not in str(outside.value) and "allowed-data" in str(outside.value)


def test_web_policy_refuses_compile_and_tampered_form_values_and_starts_nothing(tmp_path):
    """compile=True from a base run, and form values the form never offers (a vote of 99, an operator not in
    its list, a switch sent as text), are refused with the field named; no run is created."""
    from objrel.engine import jobs
    from objrel.engine.run_form import CLASSIFIER, RunForm

    store = Store(tmp_path / "web.db")
    olga = stored_actor(store, "olga", A.RUN_OPERATOR)
    base = RunConfig(model="efficientnet-lite0", dataset="demo", compile=True)
    with pytest.raises(ConfigError, match="compile=True") as refused:
        jobs.start_web_run(olga, store, RunForm.from_config(base).to_config(base))
    print(f"compile from a base run: {refused.value}")
    form = RunForm(task=CLASSIFIER, model="efficientnet-lite0", dataset="demo")
    for tampered, field in ((dataclasses.replace(form, vote_k=99), "vote_k"),
                            (dataclasses.replace(form, operators=("no-such-operator",)), "operators"),
                            (dataclasses.replace(form, test_all="yes"), "test_all"),
                            (dataclasses.replace(form, seed=-5), "seed")):
        with pytest.raises(ConfigError, match=field):
            jobs.start_web_run(olga, store, tampered.to_config())
    assert store.list_runs() == []


def test_a_strangers_failures_never_refuse_the_owners_right_passphrase(store):
    """Anonymous clients fail at alice's name, again and again; alice, from her own fresh session, signs in at
    once.  The client that kept failing is the one slowed."""
    R.create_reviewer(store, "alice", "alice-passphrase")
    for i in range(2 * accounts.THROTTLE_AFTER_FAILURES):
        R.verify_reviewer(store, "alice", "wrong guess", client=f"anonymous-{i % 2}")
    answer = R.verify_reviewer(store, "alice", "alice-passphrase", client="alice-fresh-session")
    print(f"alice from a fresh session: ok={answer.ok} wait_s={answer.wait_s}")
    assert answer.ok and answer.name == "alice"
    again = R.verify_reviewer(store, "alice", "alice-passphrase", client="anonymous-0")
    assert not again and again.wait_s > 0


def _images(folder, n: int) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        Image.fromarray(np.full((24, 32, 3), 120, np.uint8)).save(folder / f"im{i}.png")
    return [f"im{i}.png" for i in range(n)]


def test_boxes_per_image_and_per_file_are_bounded(tmp_path, monkeypatch):
    """An image with more than MAX_BOXES_PER_IMAGE boxes is a skipped sample with its reason while the other
    image loads; a file with more than MAX_BOXES_TOTAL boxes is refused as a whole, with the numbers."""
    from objrel.data import box_limits
    from objrel.data.coco import load_coco

    names = _images(tmp_path / "images", 2)
    crowded = box_limits.MAX_BOXES_PER_IMAGE + 1
    anns = [{"id": k, "image_id": 1, "category_id": 1, "bbox": [1, 1, 4, 4]} for k in range(crowded)]
    anns.append({"id": crowded, "image_id": 2, "category_id": 1, "bbox": [2, 2, 10, 10]})
    data = {"images": [{"id": i + 1, "file_name": n, "width": 32, "height": 24} for i, n in enumerate(names)],
            "annotations": anns, "categories": [{"id": 1, "name": "thing"}]}
    path = tmp_path / "crowded.json"
    path.write_text(json.dumps(data))
    first, second = load_coco(path, tmp_path / "images").samples
    print(f"crowded image: {first.problem}")
    assert first.problem == (box_limits.TOO_MANY_BOXES, box_limits.per_image_reason(crowded)) and not first.objects
    assert second.problem is None and len(second.objects) == 1
    monkeypatch.setattr(box_limits, "MAX_BOXES_TOTAL", crowded)
    with pytest.raises(AnnotationError, match=f"holds {crowded + 1:,} annotations; at most {crowded:,}") as refused:
        load_coco(path, tmp_path / "images")
    print(f"whole file: {refused.value}")
