"""AppTest of the Agreement page on a temporary store with two reviewers' judgments."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from objrel import review as R
from objrel.access import ANONYMOUS, SERVER
from objrel.errors import NotAllowed
from objrel.review.roles import actor_of
from objrel.store import Store
from objrel.store import schema as S

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "agreement.py")
SIDS = [f"s{i:03d}" for i in range(10)]
# a = tp x6, fp x4; b = tp x5, fp, fp x3, tp: p_o = 0.8, p_e = 0.6^2 + 0.4^2 = 0.52,
# kappa = 0.28 / 0.48 = 0.583; se = sqrt(0.16 / (10 * 0.48^2)) = 0.26352, so the 95% CI is
# 0.583 -+ 1.96 * 0.26352 = [0.067, 1.100] -> [0.067, 1.000]; Landis & Koch: moderate.
CALLS_A = ["tp"] * 6 + ["fp"] * 4
CALLS_B = ["tp"] * 5 + ["fp"] + ["fp"] * 3 + ["tp"]


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


def make_run(store: Store, flagged: list[str]) -> int:
    rid = store.create_run(name="colour run", model="ResNet", model_config={}, task="single", class_names=["a"],
                           dataset="d", dataset_config={"root": "/"}, plan={"groups": []}, config={}, seed=0,
                           n_total=len(flagged))
    for sid in flagged:
        votes = [{"sample_id": sid, "group_name": g, "relation": rel, "is_primary": True, "k": 2, "n": 3,
                  "applicable": 3, "violations": 2 if rel == "MR-1" else 0, "flagged": rel == "MR-1"}
                 for g, rel in (("fill_object", "MR-1"), ("fill_background", "MR-2"))]
        store.write_sample(rid, {"sample_id": sid, "rel_path": f"{sid}.png", "status": "tested", "correct": True},
                           [], [], votes)
    store.update_run(rid, status="finished")
    return rid


@pytest.fixture
def judged_store(tmp_path, monkeypatch):
    db = tmp_path / "agreement.db"
    store = Store(db)
    for name in ("alice", "bob"):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=[R.REVIEWER])
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    rid = make_run(store, SIDS)
    assert len(R.draw_review_sample(SERVER, store, rid, "MR-1")) == 10  # 384.1459 / 39.31459 = 9.77 -> 10: all
    for sid, a, b in zip(SIDS, CALLS_A, CALLS_B):
        R.record_judgment(actor_of(store, "alice"), store, rid, sid, "MR-1", a,
                          ["multiple-objects"] if a == "fp" else ())
        R.record_judgment(actor_of(store, "bob"), store, rid, sid, "MR-1", b,
                          ["multiple-objects"] if b == "fp" else ())
    monkeypatch.setenv("OBJREL_STORE", str(db))
    return store, rid


def run_page(reviewer: str | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=60)
    if reviewer:
        at.session_state["reviewer"] = reviewer
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def table_with(at: AppTest, column: str):
    """The first table with ``column`` (read-only st.dataframe elements carry no key in AppTest)."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_adjudicator_sees_hand_computed_kappa_and_the_calls(judged_store):
    at = run_page("carol")
    assert metric(at, "Cohen's kappa") == "0.583"
    # Fleiss-Cohen-Everitt SE by hand (p_o 0.8, p_e 0.52, 1 - kappa = 5/12):
    #   diagonal 0.5 * (1 - 1.2 * 5/12)^2 + 0.3 * (1 - 0.8 * 5/12)^2 = 0.125 + 0.13333 = 0.25833
    #   off-diagonal (5/12)^2 * (0.1 * 1.0^2 + 0.1 * 1.0^2) = 0.03472
    #   minus (0.58333 - 0.52 * 5/12)^2 = 0.13444 -> 0.15861 / (10 * 0.48^2) = 0.068842 -> SE 0.26238
    #   0.58333 -+ 1.96 * 0.26238 = [0.069, 1.098] -> [0.069, 1.000]
    assert metric(at, "95% CI") == "[0.069, 1.000]"
    assert metric(at, "Landis & Koch") == "moderate"
    assert metric(at, "Items both judged") == "10"
    confusion = table_with(at, "bob: tp")
    assert confusion.loc["alice: tp", "bob: tp"] == 5 and confusion.loc["alice: tp", "bob: fp"] == 1
    assert confusion.loc["alice: fp", "bob: tp"] == 1 and confusion.loc["alice: fp", "bob: fp"] == 3
    assert any("closed" in c.value and "alice, bob" in c.value.replace("\\", "") for c in at.caption)
    # the compact precision table carries the kappa for an adjudicator
    summary = table_with(at, "95% CI").iloc[0]
    assert summary["kappa"] == pytest.approx(0.28 / 0.48)


def precision_row(at: AppTest):
    return table_with(at, "true positive %").iloc[0]


@pytest.mark.parametrize("viewer", [None, "alice"])
def test_stakeholders_and_reviewers_see_precision_but_never_the_calls(judged_store, viewer):
    at = run_page(viewer)
    # precision from consensus: s000-s004 agreed tp, s006-s008 agreed fp (multiple objects) -> 8 decided,
    # tp 5/8 = 62.5%, fp 3/8 = 37.5%; s005 and s009 unresolved
    mr1 = precision_row(at)
    assert (mr1["flagged"], mr1["sample size"], mr1["reviewed"], mr1["true positive"]) == (10, 10, 8, 5)
    assert (mr1["true positive %"], mr1["false positive %"], mr1["unresolved"]) == (62.5, 37.5, 2)
    assert at.download_button(key="agreement_precision_MR-1_csv") is not None
    # the compact view (what fits at 1,400 px): 8 decided, tp 5 -> 62.5 %, Wilson 95 % [30.6 %, 86.3 %]; the
    # full table above sits in an expander with its own CSV
    summary = table_with(at, "95% CI")
    assert list(summary.columns) == ["run", "model", "relation", "flagged", "drawn", "decided", "TP", "FP",
                                     "precision", "95% CI"]       # blind: no kappa column
    assert summary.iloc[0][["decided", "TP", "FP", "precision", "95% CI"]].tolist() == [8, 5, 3, 62.5,
                                                                                       "[30.6%, 86.3%]"]
    assert any(e.label.startswith("Full MR-1 table") for e in at.expander)
    assert at.download_button(key="agreement_precision_full_MR-1_csv") is not None
    # blind: no kappa, no confusion of calls, no disagreement, no form
    assert not at.metric
    assert not any("bob: tp" in df.value.columns for df in at.dataframe)
    assert any("adjudicators and admins only" in i.value for i in at.info)
    assert not any(r.key.startswith("adj_verdict_") for r in at.radio)


def test_pair_view_refuses_a_reviewer_server_side(judged_store):
    store, rid = judged_store
    with pytest.raises(NotAllowed, match="'alice' may not see reviewers' calls .the calls of alice and bob.: "
                                         "it needs the role adjudicator or admin; alice has reviewer"):
        R.pair_view(actor_of(store, "alice"), store, rid, "MR-1", "alice", "bob")
    with pytest.raises(NotAllowed, match="nobody signed in"):
        R.pair_view(ANONYMOUS, store, rid, "MR-1", "alice", "bob")
    view = R.pair_view(actor_of(store, "carol"), store, rid, "MR-1", "alice", "bob")
    assert sorted(d.sample_id for d in view.disagreements) == ["s005", "s009"] and view.state.closed


def test_a_party_to_the_disagreement_gets_no_form(judged_store):
    store, rid = judged_store
    from objrel.review.roles import grant_as_operator
    grant_as_operator(store, "alice", R.ADJUDICATOR)
    at = run_page("alice")
    assert metric(at, "Cohen's kappa") == "0.583"
    assert any("judged these items yourself" in i.value for i in at.info)
    assert not any(r.key.startswith("adj_verdict_") for r in at.radio)


def test_notes_are_shown_as_typed_not_as_markdown(judged_store):
    store, rid = judged_store
    R.record_judgment(actor_of(store, "bob"), store, rid, "s005", "MR-1", "fp", ["other"],
                      "**urgent** [see](http://evil.example) :red[x]")
    at = run_page("carol")
    shown = " ".join(m.value for m in at.markdown)
    # every markdown character escaped, and a word joiner before ":" so that no autolink forms
    assert "\\*\\*urgent\\*\\* \\[see\\]\\(http\u2060\\:\\/\\/evil\\.example\\) \u2060\\:red\\[x\\]" in shown
    assert "[see](http" not in shown


def test_adjudication_through_the_form_creates_a_consensus_row(judged_store):
    store, rid = judged_store
    at = run_page("carol")
    keys = sorted(r.key for r in at.radio if r.key.startswith("adj_verdict_"))
    assert keys == [f"adj_verdict_{rid}_MR-1_s005", f"adj_verdict_{rid}_MR-1_s009"]
    at.radio(key=f"adj_verdict_{rid}_MR-1_s005").set_value("fp")
    at.multiselect(key=f"adj_reasons_{rid}_MR-1_s005").set_value(["incomplete-removal"])
    at.text_area(key=f"adj_note_{rid}_MR-1_s005").set_value("only half the object was annotated")
    at.button(key=f"adj_submit_{rid}_MR-1_s005").click()
    at.run()
    assert not at.exception
    with store.engine.connect() as c:
        rows = c.execute(select(S.consensus.c.sample_id, S.consensus.c.verdict, S.consensus.c.reasons,
                                S.consensus.c.adjudicator)).all()
    assert [tuple(r) for r in rows] == [("s005", "fp", ["incomplete-removal"], "carol")]
    # the confirmation names run, relation and file (issue 21: "Saved: 4 is a false positive" named a bare id)
    saved = [s.value.replace("\\", "") for s in at.success]
    assert any(f"Saved: run {rid}, MR-1, s005.png: false positive (decided by carol)" in s for s in saved), saved
    # s005 left the open queue; the precision table now has 9 decided items: fp 4/9 = 44.4%
    open_keys = [r.key for r in at.radio if r.key.startswith("adj_verdict_") and r.value is None]
    assert open_keys == [f"adj_verdict_{rid}_MR-1_s009"]
    mr1 = table_with(at, "true positive %").iloc[0]
    assert (mr1["reviewed"], mr1["false positive"], mr1["false positive %"], mr1["incomplete removal"]) \
        == (9, 4, 44.4, 1)


def test_invalid_decision_shows_the_error_and_writes_nothing(judged_store):
    store, rid = judged_store
    at = run_page("carol")
    at.radio(key=f"adj_verdict_{rid}_MR-1_s009").set_value("fp")
    at.multiselect(key=f"adj_reasons_{rid}_MR-1_s009").set_value(["other"])  # "other" without a note
    at.button(key=f"adj_submit_{rid}_MR-1_s009").click()
    at.run()
    assert any("needs a note" in e.value for e in at.error)
    with store.engine.connect() as c:
        assert c.execute(select(S.consensus.c.id)).first() is None
    assert "s009" not in {x.sample_id for x in R.consensus(store, rid, "MR-1")}


def test_empty_store_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("OBJREL_STORE", str(tmp_path / "empty.db"))
    at = run_page()
    assert any("No runs" in i.value for i in at.info)
    assert not at.metric


def test_runs_without_judgments_point_to_the_review_page(tmp_path, monkeypatch):
    db = tmp_path / "unjudged.db"
    make_run(Store(db), SIDS[:3])
    monkeypatch.setenv("OBJREL_STORE", str(db))
    at = run_page()
    assert any("No judgments yet" in i.value for i in at.info)
    assert not at.metric


def test_adjudication_cards_name_the_file_and_link_to_the_item(judged_store):
    store, rid = judged_store
    at = run_page("carol")
    shown = " ".join(m.value for m in at.markdown)
    # the items' images are not on disk here: the card says so and still names the file and links the item
    assert f"s005.png (item s005, run {rid})" in shown.replace("\\", "")
    assert f"[Open in Review](review?run={rid}&relation=MR-1&item=s005&queue=all)" in shown
    assert any("No image" in c.value for c in at.caption)


# ---------------------------------------------------------------- issue 21: open on open work, URL state


def test_opens_on_the_run_with_open_disagreements_not_on_the_newest_judged_run(judged_store):
    """Found: Agreement opened on the newest judged run, where only one reviewer had judged, and dead-ended
    the adjudicator there."""
    store, rid = judged_store
    newer = make_run(store, ["t1", "t2"])
    R.record_judgment(actor_of(store, "bob"), store, newer, "t1", "MR-1", "tp")
    at = run_page("carol")
    assert at.session_state["agreement_run"] == rid and at.query_params["run"] == str(rid)
    assert at.query_params["relation"] == "MR-1"
    assert any(r.key == f"adj_verdict_{rid}_MR-1_s005" for r in at.radio)


def test_a_link_to_a_run_without_judgments_is_said_and_offers_the_open_work(judged_store):
    store, rid = judged_store
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["reviewer"] = "carol"
    at.query_params["run"] = "77"
    at.run()
    assert not at.exception
    assert any("names run 77" in w.value for w in at.warning) and at.query_params["run"] == "77"
    assert not any(r.key and r.key.startswith("adj_verdict_") for r in at.radio)
    at.button(key="agreement_choice_0").click().run()
    assert not at.exception and at.query_params["run"] == str(rid)
    assert any(r.key == f"adj_verdict_{rid}_MR-1_s005" for r in at.radio)


def test_a_link_to_a_finished_run_nobody_judged_yet_says_so_not_deleted(judged_store):
    """Found by a reviewer in the browser: an adjudicator who came from Review on a run with no judgments yet read
    'no judgments here (deleted, or never run)' about a run that exists and finished."""
    store, rid = judged_store
    fresh = make_run(store, ["t1", "t2"])
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["reviewer"] = "carol"
    at.query_params["run"] = str(fresh)
    at.run()
    assert not at.exception
    said = " ".join(w.value for w in at.warning)
    assert f"Run {fresh} has no judgments yet" in said and "deleted" not in said
    assert at.query_params["run"] == str(fresh)


def test_the_kappa_interval_help_names_the_variance_the_number_uses(judged_store):
    at = run_page("carol")
    ci = next(m for m in at.metric if m.label.endswith("CI"))
    assert "Fleiss, Cohen & Everitt (1969)" in ci.help and "sqrt(p_o (1 - p_o)" not in ci.help


def test_ac1_pabak_and_the_prevalence_sit_beside_kappa(judged_store):
    # The same 10 calls (p_o = 0.8; both reviewers: tp 6/10, fp 4/10, uncertain 0), by hand over the three
    # declared calls (q = 3):
    #   PABAK = (q p_o - 1) / (q - 1) = (2.4 - 1) / 2 = 0.700
    #   Gwet's AC1: pi = (0.6, 0.4, 0); p_e = sum pi (1 - pi) / (q - 1) = (0.24 + 0.24) / 2 = 0.24,
    #   AC1 = (0.8 - 0.24) / (1 - 0.24) = 0.56 / 0.76 = 0.737
    at = run_page("carol")
    coef = table_with(at, "coefficient").set_index("coefficient")["value"].to_dict()
    assert coef == {"Cohen's kappa": "0.583", "Gwet's AC1": "0.737", "PABAK": "0.700"}
    prevalence = " ".join(c.value for c in at.caption)
    assert "True positive 60.0%" in prevalence or "true positive 60.0%" in prevalence.lower()
    # the planner answers for the width asked
    assert any("items** give a" in m.value for m in at.markdown)


def test_the_export_offers_every_call_to_the_adjudicator(judged_store):
    at = run_page("carol")
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download CSV (20 rows)" in labels and "Download JSON (20 rows)" in labels


def test_a_constant_reviewer_gives_an_undefined_kappa_interval_not_zero_width(tmp_path, monkeypatch):
    """Three items, alice calls all tp, bob tp, tp, fp: kappa is 0 with no standard error (Fleiss' variance
    is exactly 0; statsmodels gives NaN).  The page says "undefined" and why, never "[0, 0]"."""
    db = tmp_path / "constant.db"
    store = Store(db)
    for name in ("alice", "bob"):
        R.create_reviewer(store, name, f"{name}-passphrase", roles=[R.REVIEWER])
    R.create_reviewer(store, "carol", "carol-passphrase", roles=[R.ADJUDICATOR])
    rid = make_run(store, SIDS[:3])
    assert len(R.draw_review_sample(SERVER, store, rid, "MR-1")) == 3
    for sid, b in zip(SIDS[:3], ["tp", "tp", "fp"]):
        R.record_judgment(actor_of(store, "alice"), store, rid, sid, "MR-1", "tp")
        R.record_judgment(actor_of(store, "bob"), store, rid, sid, "MR-1", b, ["multiple-objects"] if b == "fp"
                          else ())
    monkeypatch.setenv("OBJREL_STORE", str(db))
    at = run_page("carol")
    assert metric(at, "Cohen's kappa") == "0.000"
    ci = next(m for m in at.metric if m.label.endswith("CI"))
    assert ci.value == "undefined"
    captions = " ".join(c.value for c in at.caption)
    assert "interval undefined" in captions and "called every item true positive" in captions
    # the coefficient table agrees with the headline: kappa 0.000, its interval undefined
    shown = " ".join(str(df.value.to_dict()) for df in at.dataframe) + " ".join(str(t.value) for t in at.table)
    assert "'tp'" not in captions and "0.000" in shown


def test_an_adjudicator_sees_each_reviewers_pace(judged_store):
    at = run_page("carol")
    pace = table_with(at, "s per item")
    assert list(pace["reviewer"]) == ["alice", "bob"] and list(pace["calls"]) == [10, 10]


def test_a_remembered_run_without_judgments_opens_the_adjudicators_work_instead(judged_store):
    """Review last showed a run nobody judged: Agreement, opened from the top bar (no run in its URL), opens
    carol's open disagreements instead of a dead end; a link naming that run still says so."""
    store, rid = judged_store
    unjudged = make_run(store, SIDS)
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["reviewer"] = "carol"
    at.session_state["review_selection"] = {"run": str(unjudged), "relation": "MR-1"}
    at.run()
    assert not at.exception and not any("has no judgments yet" in w.value for w in at.warning)
    assert at.session_state["agreement_run"] == rid
    linked = AppTest.from_file(PAGE, default_timeout=60)
    linked.session_state["reviewer"] = "carol"
    linked.query_params["run"] = str(unjudged)
    linked.run()
    assert any("has no judgments yet" in w.value for w in linked.warning)
