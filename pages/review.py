"""Review: judge flagged inferences one by one, blind to the other reviewer."""

import plotly.graph_objects as go
import streamlit as st

from objrel import review
from objrel.app.caches import cached_flagged, cached_review_item, cached_size_bins, open_store, run_label, run_model
from objrel.review.items import draw_box, thumbnail
from objrel.app.widgets import percent, sign_in_box
from objrel.app.widgets import use_app_navigation

use_app_navigation()

RELATIONS = ["MR-1", "MR-2"]
MODES = ["Review sample (Cochran)", "All flagged"]
VERDICT_LABEL = {"tp": "True positive", "fp": "False positive", "uncertain": "Uncertain"}

store = open_store()
who = sign_in_box(store)
st.title("Review flagged inferences")

runs = [r for r in store.list_runs() if r.n_tested > 0]
if not runs:
    st.info("No run with tested inferences yet. Start one on the Runs page or with `objrel run`.")
    st.stop()
run_ids = [r.id for r in runs]
by_id = {r.id: r for r in runs}

# Deep link (?run=&relation=&item=) initialises the selection once per session.
qp = st.query_params
if "review_run" not in st.session_state:
    linked = int(qp["run"]) if qp.get("run", "").isdigit() and int(qp["run"]) in by_id else run_ids[-1]
    st.session_state.review_run = linked
    st.session_state.review_relation = qp.get("relation") if qp.get("relation") in RELATIONS else "MR-2"
    st.session_state.review_mode = MODES[1] if qp.get("queue") == "all" else MODES[0]
    st.session_state.review_goto = qp.get("item")

c1, c2, c3 = st.columns([3, 1, 2])
run_id = c1.selectbox("Run", run_ids, format_func=lambda i: run_label(by_id[i]), key="review_run")
relation = c2.radio("Relation", RELATIONS, key="review_relation", horizontal=True)
mode = c3.radio("Queue", MODES, key="review_mode", horizontal=True,
                help="The review sample is drawn once per run and relation with Cochran's formula "
                     "(95% confidence, 5% margin, finite-population correction) from a stored seed.")

if not who:
    st.info("Sign in (sidebar) to review: every judgment records who made it and when.")
    st.stop()

flagged = cached_flagged(store, run_id, relation)
if not flagged:
    st.info(f"No inference of run {run_id} is flagged by {relation}.")
    st.stop()

if mode == MODES[0]:
    review.draw_review_sample(store, run_id, relation)
    queue = review.review_queue(store, run_id, relation, who)
    ids = [q.sample_id for q in queue]
    mine = {q.sample_id: q.my_verdict for q in queue if q.judged_by_me}
    st.caption(f"{len(ids)} of {len(flagged)} flagged inferences drawn for review.")
else:
    ids = flagged
    mine = {j.sample_id: j.verdict for j in review.judgments(store, run_id, relation, reviewer=who)}

pos_key = f"review_pos_{run_id}_{relation}_{mode}"
if pos_key not in st.session_state:
    goto = st.session_state.pop("review_goto", None)
    first_open = next((i for i, sid in enumerate(ids) if sid not in mine), 0)
    st.session_state[pos_key] = ids.index(goto) if goto in ids else first_open
pos = min(st.session_state[pos_key], len(ids) - 1)


def move(step: int) -> None:
    st.session_state[pos_key] = max(0, min(len(ids) - 1, st.session_state[pos_key] + step))


sample_id = ids[pos]
st.query_params.update({"run": str(run_id), "relation": relation, "item": sample_id})

nav = st.columns([1.4, 1.2, 4, 2])
nav[0].button("Previous (P)", key="review_prev", on_click=move, args=(-1,), shortcut="P", disabled=pos == 0)
nav[1].button("Next (N)", key="review_next", on_click=move, args=(1,), shortcut="N", disabled=pos >= len(ids) - 1)
nav[2].progress((len(mine)) / len(ids), text=f"Item {pos + 1} of {len(ids)} - you judged {len(mine)}")
nav[3].markdown(f"Your call: **{VERDICT_LABEL.get(mine.get(sample_id), 'not yet')}**")

item = cached_review_item(store, run_id, sample_id, relation)
detection = item.task == "detection"  # a detection unit: boxes before/after, IoU instead of certainty

st.subheader(f"{item.rel_path}  (sample {sample_id})")
m = st.columns(5)
m[0].metric("Ground truth", ", ".join(item.ground_truth) or "-")
m[1].metric("Object area ratio", percent(item.area_ratio))
m[2].metric("S_p (preserving)", "-" if item.s_p is None else f"{item.s_p:.3f}")
m[3].metric("S_r (removing)", "-" if item.s_r is None else f"{item.s_r:.3f}")
votes = {v["relation"]: v for v in item.votes.values() if v["is_primary"]}
m[4].metric(f"{relation} vote", f"{votes[relation]['violations']}/{votes[relation]['n']} violated"
            if relation in votes else "-")


def caption(panel) -> str:
    top = panel.top[0] if panel.top else (("no record", None) if detection else ("-", 0.0))
    text = f"**{top[0]}**" + ("" if top[1] is None else f" {top[1]:.3f}")
    if panel.verdict:
        mark = {"violated": ":red[violated]", "holds": ":green[holds]"}.get(panel.verdict, panel.verdict)
        text += f" - {panel.relation} {mark}"
    measure = "IoU with the object" if detection else "certainty"
    if panel.source_certainty is not None and panel.mutant_certainty is not None:
        text += f"  \n{measure} {panel.source_certainty:.3f} -> {panel.mutant_certainty:.3f}"
    elif detection and panel.source_certainty is not None and panel.key == "source":
        text += f"  \n{measure} {panel.source_certainty:.3f}"
    if panel.note:
        text += f"  \n{panel.note}"
    return text


cols = st.columns(4)
with cols[0]:
    st.image(item.source.image, caption="source: object (gold), detections (blue), compared record (magenta)"
             if detection else "source (target outlined)", width="stretch")
    st.markdown(caption(item.source))
for i, panel in enumerate(item.mutants):
    with cols[i % 3 + 1]:  # the relation under review on the first row, the other below
        st.image(panel.image, caption=panel.key, width="stretch")
        st.markdown(caption(panel))

with st.expander("Detections before and after, and every other mutation" if detection
                 else "Top-5 before and after, and every other mutation"):
    choice = st.selectbox("Mutant", [p.key for p in item.mutants], key="review_top5_choice")
    chosen = next(p for p in item.mutants if p.key == choice)
    t1, t2 = st.columns(2)
    if detection:
        t1.caption("source")
        t1.dataframe(list(item.source.detections), hide_index=True, key="review_top5_src")
        t2.caption(choice)
        t2.dataframe(list(chosen.detections), hide_index=True, key="review_top5_mut")
    else:
        t1.dataframe({"label": [a for a, _ in item.source.top], "p": [b for _, b in item.source.top]},
                     hide_index=True, key="review_top5_src")
        t2.dataframe({"label": [a for a, _ in chosen.top], "p": [b for _, b in chosen.top]},
                     hide_index=True, key="review_top5_mut")
    if item.others:
        st.dataframe(item.others, hide_index=True, key="review_others")

with st.expander("LIME: where does the model look?"):
    if detection:
        st.caption("LIME explains classifier outputs; it is not available for detection runs.")
    else:
        st.caption("LIME fits a local linear model over superpixels (fixed random state, cached in the store). "
                   "The object share is the part of the positive LIME weight inside the target region: a model "
                   "that looks at the object puts most of it there.")
        lime_choice = st.selectbox("Explain the source and", [p.key for p in item.mutants], key="review_lime_choice")
        lime_n = st.select_slider("LIME samples", [100, 300, 1000], value=300, key="review_lime_n")
        if st.button("Compute LIME", key="review_lime_btn"):
            from objrel.explain import explanation_for, overlay
            from objrel.mutations.rebuild import rebuild_mutant

            bar = st.progress(0.0, text="LIME ...")
            model = run_model(store, run_id)
            shown = []
            for j, key in enumerate(["source", lime_choice]):
                exp = explanation_for(store, model, run_id, sample_id, key, num_samples=lime_n,
                                      progress=lambda d, t, j=j: bar.progress(min(1.0, (j + d / max(t, 1)) / 2),
                                                                             text=f"LIME {key} {d}/{t}"))
                rebuilt = rebuild_mutant(store, run_id, sample_id, key)
                img = rebuilt.image if key == "source" else rebuilt.mutant
                shown.append((key, thumbnail(overlay(img, exp)), exp.object_share))
            bar.empty()
            lc = st.columns(2)
            for col, (key, img, share) in zip(lc, shown):
                col.image(img, caption=f"LIME {key}", width="stretch")
                col.metric("LIME object share", percent(share))

with st.expander("Object size: where does this item sit?"):
    hist = cached_size_bins(store, run_id, relation)
    fig = go.Figure(go.Bar(x=hist["lower"] + 0.025, y=hist["share"].fillna(0.0), width=0.045,
                           customdata=hist[["tested", "flagged"]], name="share flagged",
                           hovertemplate="area %{x:.3f}: %{customdata[1]} of %{customdata[0]} flagged"))
    fig.add_vline(x=item.area_ratio, line_color="orange", annotation_text="this item")
    fig.update_layout(height=260, margin=dict(l=10, r=10, t=10, b=10), xaxis_title="target area ratio",
                      yaxis_title=f"share flagged by {relation}")
    st.plotly_chart(fig, key="review_size_hist")

with st.expander("Redraw the target box and re-test"):
    if detection:
        st.caption("Re-testing with a redrawn box is available for classifier runs.")
    else:
        st.caption("Imperfect annotations cause most false positives (seed 000 s5.1.3). Move the box and re-test "
                   "this sample with the run's model and primary votes.")
        w, h = item.size
        x1, y1, x2, y2 = item.boxes[0] if item.boxes else (0, 0, w, h)
        b = st.columns(4)
        nx1 = b[0].number_input("x1", 0, w - 1, int(x1), key=f"rb_x1_{run_id}_{sample_id}")
        ny1 = b[1].number_input("y1", 0, h - 1, int(y1), key=f"rb_y1_{run_id}_{sample_id}")
        nx2 = b[2].number_input("x2", 1, w, int(x2), key=f"rb_x2_{run_id}_{sample_id}")
        ny2 = b[3].number_input("y2", 1, h, int(y2), key=f"rb_y2_{run_id}_{sample_id}")
        from objrel.mutations.rebuild import source_of

        src_full, _ = source_of(store, run_id, sample_id)
        st.image(thumbnail(draw_box(src_full, (nx1, ny1, nx2, ny2))), caption="new box", width=320)
        if st.button("Re-test with this box", key="review_retest_btn"):
            from objrel.engine.retest import retest_with_box

            try:
                with st.spinner("Re-testing ..."):
                    res = retest_with_box(store, run_id, sample_id, (nx1, ny1, nx2, ny2), who,
                                          model=run_model(store, run_id))
                for rel, v in res.votes.items():
                    st.write(f"{rel}: {v['violations']} of {v['n']} violated -> "
                             f"{'flagged' if v['flagged'] else 'not flagged'}")
            except ValueError as exc:
                st.error(str(exc))

st.divider()
st.markdown("**Your judgment** (blind: the other reviewer's call is never shown here)")
j1, j2 = st.columns([2, 3])
reasons = j1.multiselect("False-positive reasons", list(review.FP_REASONS), key=f"review_reasons_{sample_id}",
                         help="seed 000 s5.1: several target objects; the object was not completely removed; "
                              "other (say why in the note)")
note = j2.text_input("Note", key=f"review_note_{sample_id}")


def judge(verdict: str) -> None:
    try:
        review.record_judgment(store, run_id, sample_id, relation, who, verdict,
                               reasons=reasons if verdict == "fp" else (), note=note or None)
    except ValueError as exc:
        st.session_state["review_error"] = str(exc)
        return
    st.session_state.pop("review_error", None)
    move(1)


b = st.columns(3)
b[0].button("True positive (T)", key="judge_tp", on_click=judge, args=("tp",), shortcut="T", type="primary")
b[1].button("False positive (F)", key="judge_fp", on_click=judge, args=("fp",), shortcut="F")
b[2].button("Uncertain (U)", key="judge_uncertain", on_click=judge, args=("uncertain",), shortcut="U")
if st.session_state.get("review_error"):
    st.error(st.session_state["review_error"])
