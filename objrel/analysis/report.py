"""A self-contained HTML report of one run for stakeholders (``objrel report RUN``, Overview page).

One file, no network: the headline row (EMSE21 Table 5/6), per-label violations,
the object-size chart (Fig. 8), the precision tables from the reviewers' consensus
(Tables 1-3) and a gallery of flagged examples with their mutants (JPEG thumbnails
inlined as data URIs; plotly.js inlined once).
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io

import pandas as pd
from PIL import Image

from objrel.analysis import flag_tables as analysis
from objrel.review.agreement import precision_table, sample_state
from objrel.review.items import review_item
from objrel.analysis.summary import summarize
from objrel.extras import require
from objrel.store import Store

GALLERY_ITEMS = 6          # flagged examples shown per relation
GALLERY_THUMB = 220        # pixels, longer side
JPEG_QUALITY = 80
# The report's charts name their template and colours: importing Streamlit makes its own template plotly's
# default, and that one holds placeholder colours (#000001, ...) only Streamlit's frontend replaces, so a
# report built inside the app would draw every series near-black.
REPORT_TEMPLATE = "plotly"
SERIES_COLOURS = {"MR-1": "#1f77b4", "MR-2": "#ff7f0e"}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#222}
h1{margin-bottom:0}.sub{color:#666;margin-top:.2rem}table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border:1px solid #ddd;padding:.3rem .6rem;text-align:right}th{background:#f4f4f4}td:first-child{text-align:left}
.gallery{display:flex;flex-wrap:wrap;gap:.4rem;margin-bottom:1.2rem}.card{font-size:.75rem;width:224px}
.card img{width:100%;border:1px solid #ccc}.bad{color:#b00020}.ok{color:#1b7f3b}.note{color:#555;font-size:.9rem}
.badge{display:inline-block;background:#fde7ea;color:#b00020;border-radius:.6rem;padding:0 .5rem;font-weight:600}
.tablewrap{max-width:100%;overflow-x:auto}.tablewrap table{width:100%;font-size:.8rem}
.tablewrap th{white-space:normal;text-align:center}
"""
INCORRECT_LABEL = "incorrect inference"
REPORT_DROPPED = ("run", "model", "dataset", "task", "relation")  # precision-table columns the report's title says
# Said instead of the precision table while a relation's review sample is open (its calls count nowhere yet).
OPEN_SAMPLE_NOTE = ("the review sample is still open: reviewers' calls are counted once two reviewers have judged "
                    "every drawn item.")


def _img(arr) -> str:
    im = Image.fromarray(arr)
    im.thumbnail((GALLERY_THUMB, GALLERY_THUMB))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=JPEG_QUALITY)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _table(df: pd.DataFrame) -> str:
    """An HTML table no wider than the page: percentage columns (``... %``, 0-100) with one decimal and a
    % sign, other floats with three decimals; the table wraps its headers and scrolls if it must."""
    shown = df.copy()
    for col in shown.columns:
        if str(col).endswith("%"):
            shown[col] = [percent_text(v) for v in shown[col]]
    table = shown.to_html(index=False, border=0, na_rep="-", float_format=lambda v: f"{v:.3f}")
    return f"<div class='tablewrap'>{table}</div>"


def percent_text(value) -> str:
    """A 0-100 percentage as ``50.0%``; ``-`` for a missing one."""
    return "-" if value is None or pd.isna(value) else f"{float(value):.1f}%"


def _gallery(store: Store, run_id: int, relation: str) -> str:
    ids = store.flagged_sample_ids(run_id, relation, limit=GALLERY_ITEMS)
    if not ids:
        return f"<p class='note'>No inference is flagged by {relation}.</p>"
    parts = []
    for sid in ids:
        item = review_item(store, run_id, sid, relation, side=GALLERY_THUMB)
        top = item.source.top[0] if item.source.top else ("-", 0.0)
        badge = f"<br><span class='badge'>{INCORRECT_LABEL}</span>" if item.is_incorrect else ""
        cards = [f"<div class='card'><img src='{_img(item.source.image)}' alt='source {html.escape(sid)}'>"
                 f"<b>source</b> {html.escape(item.rel_path)}<br>{html.escape(top[0])} {top[1]:.2f}{badge}</div>"]
        for p in item.mutants:
            if p.relation != relation:
                continue
            t = p.top[0] if p.top else ("-", 0.0)
            cls = "bad" if p.verdict == "violated" else "ok"
            cards.append(f"<div class='card'><img src='{_img(p.image)}' alt='{html.escape(p.key)}'>"
                         f"{html.escape(p.key)}<br>{html.escape(t[0])} {t[1]:.2f} "
                         f"<span class='{cls}'>{html.escape(p.verdict or '')}</span></div>")
        parts.append("<div class='gallery'>" + "".join(cards) + "</div>")
    return "".join(parts)


def runtime_phrase(model_config: dict) -> str:
    """Which runtime ran a run's model, and on what, from its stored model record: ``onnxruntime 1.32.0, f32, on
    the CPU (auto: fastest matching runtime ...)``, ``torch, on cuda:0``.  Runs stored before the runtime was
    recorded ran on torch; a model record names its device only when it is not the CPU."""
    runtime = model_config.get("runtime", "torch")
    words = " ".join(str(p) for p in (runtime, model_config.get("runtime_version")) if p)
    if model_config.get("precision"):
        words += f", {model_config['precision']}"
    device = model_config.get("device")
    words += f", on {device}" if device else ", on the CPU"
    choice = model_config.get("runtime_choice")
    if isinstance(choice, dict) and choice.get("reason"):
        words += f" (auto: {choice['reason']})"
    return words


def build_report(store: Store, run_id: int) -> str:
    """The report as one HTML string."""
    go = require("plotly.graph_objects", "the HTML report's charts")
    run = store.get_run(run_id)
    s = summarize(store, run_id)
    head = pd.DataFrame([s.table_row()])
    sections = [f"<h1>objrel report: run {run_id}</h1>",
                f"<p class='sub'>{html.escape(run.name)} - model <b>{html.escape(run.model)}</b> run by "
                f"{html.escape(runtime_phrase(run.model_config))} on "
                f"<b>{html.escape(run.dataset)}</b>, seed {run.seed}, generated "
                f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC</p>",
                "<p>MR-1 corrupts the annotated object and expects the prediction to change or lose certainty; "
                "MR-2 corrupts everything else and expects it to stay. A correct inference that breaks either "
                "relation (2 of 3 colour mutations) was made for reasons other than the object.</p>",
                f"<h2>Headline</h2><p class='note'>{s.samples} samples, {s.skipped} skipped, {s.evaluated} "
                f"evaluated, {s.correct} correct; ratios are over correct inferences (EMSE21 Tables 5-6).</p>",
                _table(head)]
    figs = []
    per = analysis.per_label(store, run_id)
    if not per.empty:
        per = per.sort_values("mr2", ascending=False).head(20)
        fig = go.Figure([go.Bar(name=rel, x=per["class_name"], y=per[col], marker_color=SERIES_COLOURS[rel])
                         for rel, col in (("MR-1", "mr1"), ("MR-2", "mr2"))])
        fig.update_layout(template=REPORT_TEMPLATE, barmode="group", height=340,
                          title="Flagged correct inferences per label",
                          margin=dict(l=40, r=10, t=40, b=80))
        figs.append(fig)
    bins = analysis.size_bins(store, [run_id], "MR-2")
    fig = go.Figure(go.Bar(x=bins["x"], y=bins["share"].fillna(0.0), customdata=bins[["tested", "flagged"]],
                           marker_color=SERIES_COLOURS["MR-2"],
                           hovertemplate="%{customdata[1]} of %{customdata[0]} flagged"))
    fig.update_layout(template=REPORT_TEMPLATE, height=300,
                      title="Share flagged by MR-2 per object size (EMSE21 Fig. 8)",
                      xaxis_title="target area ratio", margin=dict(l=40, r=10, t=40, b=40))
    figs.append(fig)
    sections.append("<h2>Where it happens</h2>")
    for i, f in enumerate(figs):
        sections.append(f.to_html(full_html=False, include_plotlyjs="inline" if i == 0 else False))
    sections.append("<h2>Verified by reviewers (EMSE21 Tables 1-3)</h2>")
    for rel in ("MR-1", "MR-2"):
        pt = precision_table(store, [run_id], rel)   # closed review samples only: blind until then
        state = sample_state(store, run_id, rel)
        if state.drawn and not state.closed:
            sections.append(f"<p class='note'>{rel}: {OPEN_SAMPLE_NOTE}</p>")
        elif pt.empty or int(pt["reviewed"].fillna(0).sum()) == 0:
            sections.append(f"<p class='note'>{rel}: no reviewed items yet.</p>")
        else:
            # one run, one relation: the identifying columns are the report's title and this heading
            sections.append(f"<h3>{rel}</h3>" + _table(pt.drop(columns=list(REPORT_DROPPED), errors="ignore")))
    sections.append("<h2>Examples</h2>")
    for rel in ("MR-2", "MR-1"):
        sections.append(f"<h3>Flagged by {rel}</h3>" + _gallery(store, run_id, rel))
    body = "\n".join(sections)
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>objrel report run {run_id}</title>"
            f"<style>{CSS}</style></head><body>{body}</body></html>")
