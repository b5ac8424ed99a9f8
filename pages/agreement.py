"""Agreement: Cohen's kappa of two reviewers, adjudication of their disagreements, and the
precision of the flags from the consensus (EMSE21 s5.1, Tables 1-3).

Every figure comes from objrel.review.agreement; this page only picks the run, relation and reviewers,
draws, and passes the adjudication forms on to ``review.adjudicate``.  Anyone (signed in or not) sees the
precision tables (a compact view, the full table in an expander); only adjudicators and admins see the kappas,
the pair's calls and disagreements (``review.pair_view`` and ``pair_kappas`` check the signed-in account's
role, not this page).
"""

import streamlit as st

from objrel import access, review
from objrel.app import captions, review_keys, review_panels, threads
from objrel.app.text import plain
from objrel.app.team_adjudication import team_section
from objrel.app.caches import cached_item_card, open_store
from objrel.app.formats import decimals, percent
from objrel.app.state import arrival_params, keep_choice, remember_selection, remembered_selection
from objrel.app.tables import decimal_columns, frame, percent_columns, table
from objrel.app.widgets import page_sidebar, use_app_navigation
from objrel.errors import NotAllowed, StoreBusy
from objrel.review.agreement import pair_kappas, precision_summary
from objrel.app.rater_panels import k_rater_section
from objrel.review.coefficients import COEFFICIENT_LABELS, COEFFICIENTS
from objrel.review.export import to_long_csv, to_wide_csv
from objrel.review.my_work import my_work

use_app_navigation()

FLASH_KEY = "agreement_flash"   # a message that survives the rerun after a saved decision
LINK_KEY = "agreement_link_written"     # the run and relation this page wrote into the URL last
# Adjudication forms drawn at once, each with its item's thumbnails: the open ones first (the rest wait until
# these are decided), the decided ones a page at a time.  Twice this fits the page's card cache.
MAX_FORMS = 8
PERCENT_COLUMNS = ("true positive %", "false positive %")
SUMMARY_PERCENT_COLUMNS = ("precision",)
DECIMAL_COLUMNS = ("kappa",)


def adjudication_form(d, run_id, relation, name_a, name_b, actor):
    """One disagreement with its form; widget keys carry run, relation and sample id."""
    key = f"{run_id}_{relation}_{d.sample_id}"
    card = cached_item_card(store, run_id, d.sample_id, relation)
    with st.form(key=f"adj_form_{key}"):
        st.markdown(captions.disagreement_heading(d, card.rel_path))
        review_panels.item_card(card)
        st.markdown(captions.disagreement_calls(d, name_a, name_b))
        if d.resolved:
            st.caption(captions.decision_text(d))
        verdict = st.radio("Decision", review.VERDICTS, key=f"adj_verdict_{key}", horizontal=True,
                           index=review.VERDICTS.index(d.resolved_verdict) if d.resolved else None,
                           format_func=review.VERDICT_LABELS.get)
        reasons = st.multiselect("False-positive reasons (only with a false positive)", review.FP_REASONS,
                                 default=list(d.resolved_reasons), key=f"adj_reasons_{key}",
                                 format_func=review.REASON_LABELS.get)
        note = st.text_area("Note (required with the reason \u201cother\u201d)", value=d.resolved_note or "",
                            key=f"adj_note_{key}", height=68)
        validity = st.radio("Is the mutant a valid test?", review.VALIDITY, key=f"adj_validity_{key}",
                            horizontal=True, format_func=review.VALIDITY_LABELS.get,
                            index=(review.VALIDITY.index(d.resolved_validity)
                                   if getattr(d, "resolved_validity", None) in review.VALIDITY else None))
        submitted = st.form_submit_button("Save decision", key=f"adj_submit_{key}")
    # the item's comment thread: the adjudicator reads every party's entries at once (objrel.review.comments)
    threads.thread_panel(actor, store, run_id, relation, d.sample_id,
                         f"adj_{review_keys.item_suffix(run_id, relation, d.sample_id)}")
    if submitted:
        if verdict is None:
            st.error(f"{plain(d.sample_id)}: choose a decision first.")
            return
        try:
            review.adjudicate(actor, store, run_id, d.sample_id, relation, verdict, reasons, note, validity)
        except (ValueError, NotAllowed, StoreBusy) as exc:    # busy: nothing saved, the form keeps the decision
            st.error(f"{plain(d.sample_id)}: {plain(exc)}")
            return
        st.session_state[FLASH_KEY] = (f"{captions.saved_call(run_id, relation, card.rel_path or d.sample_id, verdict)}"
                                       f" (decided by {plain(actor.name)}).")
        st.rerun()


st.title("Reviewer agreement")
st.caption("Two reviewers judge the same flagged inferences independently (EMSE21 s5.1). Cohen's kappa says how "
           "far they agree beyond chance; their disagreements are decided here, and only decided items count "
           "in the precision tables.")
if FLASH_KEY in st.session_state:
    st.success(st.session_state.pop(FLASH_KEY))

store = open_store()
actor = page_sidebar(store)
def run_number(text) -> int | None:
    """A run id written in the URL: 1 to 18 ASCII digits (an SQLite integer), else None."""
    import re

    return int(text) if isinstance(text, str) and re.fullmatch(r"[0-9]{1,18}", text) else None


linked_run = st.query_params.get("run")     # a run the URL named itself (a link, a reload), before the session's
selection = arrival_params()     # the run and relation Review (or this page) showed last, back in the URL
all_runs = store.list_runs()
if not all_runs:
    st.info("No runs yet. Start one with `objrel run --dataset demo` or `make run`.")
    st.stop()
judged = review.judged_runs(store)
if not judged:
    st.info("No judgments yet. Reviewers judge flagged inferences on the Review page; come back when two of them "
            "have judged the same items.")
    st.stop()

# ---------------------------------------------------------------- precision (Tables 1-3): for everyone

st.subheader("Precision of the flags (EMSE21 Tables 1-3)")
st.caption("From decided items only (agreed by every reviewer, or adjudicated), counted over the drawn "
           "review sample once two reviewers have judged every item of it (until then every item is pending, so "
           "no number here gives a reviewer's call away). Precision is the share of the decided items that are "
           "true positives (uncertain ones count in the denominator), with its Wilson 95% interval. "
           "Kappa compares the run's first two "
           "reviewers (adjudicators and admins only). The full table below each adds the false-positive "
           "reasons, the task (Table 3 is a multi-label model's) and the items still open: unresolved ones "
           "await a decision, pending ones a second judgment.")
for rel in review.RELATIONS:
    rel_judged = [r for r in judged if rel in r.relations]
    if not rel_judged:
        continue
    precision = review.precision_table(store, [r.run_id for r in rel_judged], rel)
    summary = precision_summary(precision, pair_kappas(actor, store, rel_judged, rel))
    st.markdown(f"**{rel}**")
    table(summary, f"agreement_precision_{rel}", f"precision_{rel}_summary.csv",
          {**percent_columns(summary, SUMMARY_PERCENT_COLUMNS), **decimal_columns(summary, DECIMAL_COLUMNS)})
    with st.expander(f"Full {rel} table: reasons, uncertain, unresolved and pending items"):
        table(precision, f"agreement_precision_full_{rel}", f"precision_{rel}.csv",
              percent_columns(precision, PERCENT_COLUMNS))

# ---------------------------------------------------------------- judgments export

if access.permits(actor, access.EXPORT_JUDGMENTS):
    with st.expander("Export judgments (one row per item and reviewer, with the adjudication)"):
        st.caption("Adjudicators and admins export every call; a reviewer exports their own calls, and the pair's "
                   "once both closed the sample. Also on the server: `objrel judgments export`.")
        rows = review.judgment_export(actor, store)
        e1, e2 = st.columns(2)
        e1.download_button(f"Download CSV ({len(rows)} rows)", review.to_csv(rows), file_name="judgments.csv",
                           mime="text/csv", key="agreement_export_csv", on_click="ignore")
        e2.download_button(f"Download JSON ({len(rows)} rows)", review.to_json(rows), file_name="judgments.json",
                           mime="application/json", key="agreement_export_json", on_click="ignore")
        st.caption("For tools that take every reviewer at once (Fleiss' kappa, Krippendorff's alpha): the calls "
                   "alone, long (one row per item and reviewer) or wide (one row per item, a column per reviewer).")
        e3, e4 = st.columns(2)
        e3.download_button("Download long CSV", to_long_csv(rows), file_name="judgments_long.csv", mime="text/csv",
                           key="agreement_export_long", on_click="ignore")
        e4.download_button("Download wide CSV", to_wide_csv(rows), file_name="judgments_wide.csv", mime="text/csv",
                           key="agreement_export_wide", on_click="ignore")

if not access.permits(actor, access.SEE_CALLS):
    chosen_run = run_number(selection.get("run"))
    if actor.signed_in and chosen_run is not None and selection.get("relation") in review.RELATIONS:
        review_panels.my_pace(actor, store, [(chosen_run, selection["relation"])],
                              f"on run {chosen_run}, {selection['relation']}")
        review_panels.calibration(actor, store, chosen_run, selection["relation"])
    st.info("While a review sample is open, the reviewers' calls, their kappa and their disagreements are shown to "
            "adjudicators and admins only (review stays blind); a reviewer sees them here as calibration once both "
            "have judged every item of the sample.")
    st.stop()

# ---------------------------------------------------------------- run, relation, reviewers

by_id = {r.run_id: r for r in judged}
run_ids = list(by_id)


def go_to(params: dict[str, str]) -> None:
    st.query_params.clear()
    st.query_params.update(params)


def offer_choices() -> None:
    """Buttons to the runs where the signed-in adjudicator has open disagreements (nothing opens by itself)."""
    entries = my_work(actor, store).open_disputes
    for i, e in enumerate(entries):
        st.button(captions.work_choice(e), key=f"agreement_choice_{i}", on_click=go_to,
                  args=({"run": str(e.run_id), "relation": e.relation},))
    if not entries:
        st.caption("No run has open disagreements for you; pick a run above.")


def open_work_params() -> dict[str, str]:
    """The first run and relation with open disagreements for the signed-in person, else the newest run two
    reviewers judged; {} when none was."""
    first = my_work(actor, store).first_open_dispute
    if first is not None:
        return {"run": str(first.run_id), "relation": first.relation}
    pairs = [(r.run_id, rel) for r in judged for rel in r.relations if len(r.reviewers_of(rel)) >= 2]
    return {"run": str(pairs[-1][0]), "relation": pairs[-1][1]} if pairs else {}


# The selection comes from the URL (a link, a reload), else from the session's last one (a page switch drops
# the query string and this page's widget state), else from the signed-in person's open work.  A run the URL
# names that has no judgments is said, never replaced by another.
url = st.query_params.to_dict()
if "agreement_run" not in st.session_state or url.get("run") != st.session_state.get(LINK_KEY, {}).get("run") \
        or url.get("relation") != st.session_state.get(LINK_KEY, {}).get("relation"):
    wanted = selection if "agreement_run" not in st.session_state else url
    if not wanted.get("run"):
        wanted = open_work_params()
    named = wanted.get("run", "")
    if named and not linked_run and not (named.isascii() and named.isdigit() and int(named) in by_id):
        # the run Review showed last has no judgments: open the signed-in person's work instead (a link that
        # names such a run is said below, never replaced)
        wanted = open_work_params()
        named = wanted.get("run", "")
    if named and not (named.isascii() and named.isdigit() and int(named) in by_id):
        known = named.isascii() and named.isdigit() and any(r.id == int(named) for r in all_runs)
        st.warning(captions.unjudged_run_text(int(named)) if known
                   else captions.unknown_run_text(named).replace("no tested inferences", "no judgments"))
        offer_choices()
        pick = st.selectbox("Run", run_ids, index=None, placeholder="Choose a run", key="agreement_pick_run",
                            format_func=lambda i: f"#{i} {by_id[i].name} ({by_id[i].model})")
        if pick is not None:
            go_to({"run": str(pick)})
            st.rerun()
        st.stop()
    if named:
        st.session_state.agreement_run = int(named)
        if wanted.get("relation") in by_id[int(named)].relations:
            st.session_state.agreement_relation = wanted["relation"]
keep_choice("agreement_run", run_ids[-1], run_ids)
c1, c2, c3, c4 = st.columns([3, 1, 2, 2])
run_id = c1.selectbox("Run", run_ids, key="agreement_run",
                      format_func=lambda i: f"#{i} {by_id[i].name} ({by_id[i].model})")
run = by_id[run_id]
relations = list(run.relations)
keep_choice("agreement_relation", relations[0], relations)
relation = c2.radio("Relation", relations, key="agreement_relation")
st.query_params.update({"run": str(run_id), "relation": relation})
st.session_state[LINK_KEY] = {"run": str(run_id), "relation": relation}
kept = remembered_selection()
remember_selection({"run": run_id, "relation": relation,
                    **({} if (kept.get("run"), kept.get("relation")) == (str(run_id), relation) else {"item": ""})})
names = list(run.reviewers_of(relation))
if len(names) < 2:
    st.text(f"Only {names[0]} has judged {relation} flags of run {run_id}; agreement needs a second reviewer.")
    offer_choices()
    st.stop()
keep_choice("agreement_reviewer_a", names[0], names)
name_a = c3.selectbox("Reviewer A", names, key="agreement_reviewer_a")
others = [n for n in names if n != name_a]
keep_choice("agreement_reviewer_b", others[0], others)
name_b = c4.selectbox("Reviewer B", others, key="agreement_reviewer_b")

try:
    view = review.pair_view(actor, store, run_id, relation, name_a, name_b)
except NotAllowed as exc:
    st.error(plain(exc))
    st.stop()
ag, state = view.agreement, view.state
waiting = sum(1 for d in view.disagreements if not d.resolved)
if waiting and actor.name not in (name_a, name_b) and access.permits(actor, access.ADJUDICATE):
    st.warning(f"{waiting} open disagreement{'s' if waiting != 1 else ''} of run {run_id}, {plain(relation)} "
               "wait for your decision: [go to them](#disagreements)")
if state.closed:
    st.caption(f"The review sample ({state.drawn} items) is closed: {plain(', '.join(state.closed_by))} "
               "judged every item. "
               "Changes from now on are kept as new versions.")
else:
    st.caption(f"The review sample ({state.drawn} items) is still open: reviewers see only their own calls until "
               f"{state.waiting_for}.")
k_rater_section(actor, store, run_id, relation)   # every reviewer together: Fleiss' kappa, alpha, per call, pairs
team_section(actor, store, run_id, relation, FLASH_KEY)   # k > 2 or teams: every item without consensus
if ag.kappa is None:
    st.text(f"{name_a} ({ag.n_a} items) and {name_b} ({ag.n_b} items) have not judged any item in common yet.")
    st.stop()

# ---------------------------------------------------------------- kappa

k = ag.kappa
st.subheader("Agreement")
m1, m2, m3, m4 = st.columns([1, 1.6, 1.3, 1])   # the interval is the widest value
m1.metric("Cohen's kappa", "undefined" if k.kappa is None else decimals(k.kappa),
          help="(p_o - p_e) / (1 - p_e): observed agreement beyond what the two reviewers' call frequencies give "
               "by chance.")
m2.metric(f"{percent(k.ci_level, 0)} CI", captions.kappa_interval(k),
          help="kappa -+ z se, with se the asymptotic standard error of Fleiss, Cohen & Everitt (1969), clipped "
               "to [-1, 1].")
m3.metric("Landis & Koch", k.band,
          help="< 0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial, "
               "0.81-1 almost perfect.")
m4.metric("Items both judged", k.n, help=f"{plain(name_a)} judged {ag.n_a}, {plain(name_b)} judged {ag.n_b}.")
st.caption(f"Observed agreement p_o = {percent(k.observed)}, chance agreement p_e = {percent(k.expected)}.")
if k.kappa is None:
    st.caption("Kappa is undefined: both reviewers gave every item the same single call, so chance alone explains "
               "their agreement (p_e = 1).")
elif k.note:
    st.caption(f"Kappa's {plain(k.note)}.")

# Beyond kappa: AC1 and PABAK stay meaningful when one call dominates (kappa's paradox), with the prevalence.
coef = review.agreement_coefficients([a for _, a, _ in ag.pairs], [b for _, _, b in ag.pairs])
st.markdown("**Beyond kappa** (each with its 95% interval; Gwet's AC1 and PABAK stay meaningful when one call "
            "dominates, where kappa drops although the reviewers agree)")
frame(captions.coefficient_frame(coef), "agreement_coefficients")
st.caption(captions.prevalence_text(coef))
validity = review.validity_agreement(store, run_id, relation, name_a, name_b)
if validity.n:
    st.markdown(f"**Is the mutant a valid test?** Agreement on the second question ({validity.n} items both "
                "answered); items decided invalid are left out of precision and counted apart.")
    frame(captions.coefficient_frame(validity), "agreement_validity")
with st.expander("Plan a sample: how many items does a chosen interval width need?"):
    pc = st.columns(3)
    which = pc[0].selectbox("Coefficient", COEFFICIENTS, format_func=COEFFICIENT_LABELS.get,
                            key="agreement_plan_coefficient")
    width = pc[1].number_input("Interval width (hi - lo)", min_value=0.02, max_value=2.0, value=0.2, step=0.02,
                               key="agreement_plan_width")
    expected = pc[2].number_input("Expected value", min_value=-0.9, max_value=0.99, value=0.6, step=0.05,
                                  key="agreement_plan_expected")
    share = st.slider("Share of true positives among the calls (prevalence)", 0.05, 0.95, 0.7, 0.05,
                      key="agreement_plan_prevalence")
    try:
        needed = review.items_for_width(float(width), which, float(expected), prevalence=float(share))
        st.markdown(f"**{needed} items** give a {COEFFICIENT_LABELS[which]} interval at most "
                    f"{decimals(width, 2)} wide, if it comes out near {decimals(expected, 2)} with "
                    f"{percent(share, 0)} true positives (asymptotic variance; t quantile for AC1 and PABAK).")
    except ValueError as exc:
        st.warning(plain(exc))

review_panels.team_pace(actor, store, run_id, relation)
st.markdown(f"**Calls of the two reviewers** (rows: {plain(name_a)}, columns: {plain(name_b)})")
st.dataframe(k.confusion_frame(name_a, name_b), width="content", key="agreement_confusion")
with st.expander(f"Every item both judged ({ag.n_both})"):
    table(ag.calls_frame(), "agreement_calls", f"calls_run{run_id}_{relation}.csv")

# ---------------------------------------------------------------- disagreements

st.subheader("Disagreements", anchor="disagreements")
dis = list(view.disagreements)
open_items = [d for d in dis if not d.resolved]
done_items = [d for d in dis if d.resolved]
if not dis:
    st.success(f"{plain(name_a)} and {plain(name_b)} agree on every item both judged.")
    st.stop()
st.caption(f"{len(open_items)} open, {len(done_items)} decided. An adjudication overrides both reviewers' calls.")
if actor.name in (name_a, name_b):
    st.info("You judged these items yourself: another adjudicator decides their disagreements.")
    st.stop()
for d in open_items[:MAX_FORMS]:
    adjudication_form(d, run_id, relation, name_a, name_b, actor)
if len(open_items) > MAX_FORMS:
    st.caption(f"{len(open_items) - MAX_FORMS} more open disagreements appear as these are decided.")
if done_items:
    with st.expander(f"Decided disagreements ({len(done_items)}): change a decision"):
        pages = -(-len(done_items) // MAX_FORMS)
        page = 1
        if pages > 1:
            page = int(st.number_input(f"Page (of {pages}, {MAX_FORMS} a page)", min_value=1, max_value=pages,
                                       value=1, step=1, key=f"agreement_decided_page_{run_id}_{relation}"))
        for d in done_items[(page - 1) * MAX_FORMS:page * MAX_FORMS]:
            adjudication_form(d, run_id, relation, name_a, name_b, actor)
