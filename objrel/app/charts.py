"""The pages' plotly figures, built from the tables objrel computes (no Streamlit: the pages draw them
with ``objrel.app.tables.chart``).

Plotly draws a subset of HTML (links, line breaks, bold) in tick labels, legends, titles and hover text, so
every name that comes from data or people (class names, run labels, model and detector names) passes through
``objrel.app.text.plot_text`` before it reaches a figure: shown as typed, never as a tag."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from objrel.app.text import plot_text

PERCENT_AXIS = ".0%"
# Size-histogram bars: bins are 5 % wide; a bar 4.5 % wide leaves a gap, centred in its bin.
SIZE_BIN_WIDTH = 0.05
SIZE_BAR_WIDTH = 0.045
SIZE_HIST_HEIGHT = 260
HEATMAP_MIN_HEIGHT = 320
HEATMAP_ROW_PX = 18
AUCEC_HEIGHT = 380
METHOD_STYLE = {"deepinspect": "solid", "weights": "dashdot", "random": "dash", "optimal": "dot"}
SCORE_COLOURS = (("precision", "#1f77b4"), ("recall", "#ff7f0e"))
MEAN_SEED = "mean"


def _counts(flagged, total) -> list[str]:
    """Bar labels ``flagged/total`` (blank where the total is 0)."""
    return [f"{k}/{n}" if n else "" for k, n in zip(flagged, total)]


def _labels_outside(fig: go.Figure) -> go.Figure:
    fig.update_traces(textposition="outside", cliponaxis=False)
    return fig


def _plot_texts(values) -> list[str]:
    """Each of ``values`` as plotly shows it literally (``plot_text``)."""
    return [plot_text(v) for v in values]


def _facet_titles(fig: go.Figure) -> go.Figure:
    """Facet titles without plotly's ``column=`` prefix (``measure=MR-2 ratio`` -> ``MR-2 ratio``)."""
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=", 1)[-1]))
    return fig


# ---------------------------------------------------------------- Review


def size_histogram(bins: pd.DataFrame, area_ratio: float, relation: str) -> go.Figure:
    """Share flagged per object-size bin with a line at this item's target area ratio."""
    fig = go.Figure(go.Bar(x=bins["lower"] + SIZE_BIN_WIDTH / 2, y=bins["share"].fillna(0.0), width=SIZE_BAR_WIDTH,
                           customdata=bins[["tested", "flagged"]], name="share flagged",
                           hovertemplate="area %{x:.3f}: %{customdata[1]} of %{customdata[0]} flagged"))
    fig.add_vline(x=area_ratio, line_color="orange", annotation_text="this item")
    fig.update_layout(height=SIZE_HIST_HEIGHT, margin=dict(l=10, r=10, t=10, b=10), xaxis_title="target area ratio",
                      yaxis_title=f"share flagged by {relation}")
    return fig


BOX_SELECT_HEIGHT = 420
BOX_GRID = 24          # invisible selectable points per side of the box-drawing figure


def box_select_figure(image, size, box=None) -> go.Figure:
    """The source (a thumbnail) on axes in full-size pixels (``size`` = (width, height)), ready to draw a
    box with the mouse (dragmode ``select``); ``box`` (xyxy) is outlined."""
    h, w = image.shape[:2]
    sx, sy = size[0] / w, size[1] / h
    fig = go.Figure(go.Image(z=image, x0=sx / 2, dx=sx, y0=sy / 2, dy=sy, hoverinfo="x+y"))
    # image traces cannot be selected: an invisible grid of points gives the box selection something to
    # select, so the browser reports every box drawn over the image
    gx = [size[0] * (i + 0.5) / BOX_GRID for i in range(BOX_GRID)]
    gy = [size[1] * (j + 0.5) / BOX_GRID for j in range(BOX_GRID)]
    fig.add_trace(go.Scatter(x=[x for x in gx for _ in gy], y=[y for _ in gx for y in gy], mode="markers",
                             marker=dict(opacity=0, size=4), hoverinfo="skip", showlegend=False))
    if box is not None:
        x1, y1, x2, y2 = box
        fig.add_shape(type="rect", x0=x1, y0=y1, x1=x2, y1=y2, line=dict(color="#00c8ff", width=2))
    fig.update_layout(dragmode="select", height=BOX_SELECT_HEIGHT, margin=dict(l=10, r=10, t=10, b=10),
                      xaxis=dict(range=[0, size[0]], showgrid=False, constrain="domain"),
                      yaxis=dict(range=[size[1], 0], showgrid=False, scaleanchor="x"))
    return fig


# ---------------------------------------------------------------- Explore


def per_label_bars(labels: pd.DataFrame, stem: str, relation: str) -> go.Figure:
    """Share of each class's correct answers flagged (``stem`` is the relation's column stem)."""
    labels = labels.assign(class_name=_plot_texts(labels["class_name"]))
    fig = px.bar(labels, x="class_name", y=f"{stem}_ratio", text=_counts(labels[stem], labels["correct"]),
                 labels={"class_name": "label", f"{stem}_ratio": f"share flagged ({relation})"})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS, xaxis={"categoryorder": "array",
                                                            "categoryarray": list(labels["class_name"])})
    return _labels_outside(fig)


def size_bars(bins: pd.DataFrame, relation: str) -> go.Figure:
    """Bars of the share flagged by ``relation`` per object-size bin, labelled flagged / tested."""
    fig = px.bar(bins, x="interval", y="share", text=_counts(bins["flagged"], bins["tested"]),
                 labels={"interval": "object area / image area", "share": f"share flagged ({relation})"})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS)
    return _labels_outside(fig)


def overlap_bars(overlap: pd.DataFrame) -> go.Figure:
    """Bars of the share of flagged images by how many runs flag each one."""
    fig = px.bar(overlap, x="n_models", y="share", text="inputs",
                 labels={"n_models": "number of runs flagging the image", "share": "share of flagged images"})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS, xaxis_dtick=1)
    return _labels_outside(fig)


# The reliable-accuracy table's accuracy columns as the chart's legend names them.
RELIABLE_SUBSETS = {"original": "all answers", "unreliable_accuracy": "unreliable answers",
                    "reliable_accuracy": "reliable answers"}


def reliable_accuracy_bars(table: pd.DataFrame, run_labels: dict) -> go.Figure:
    """Original, unreliable and reliable accuracy per run (``run_labels``: run id -> label)."""
    long = table.melt(id_vars=["run", "model"], value_vars=["original", "unreliable_accuracy", "reliable_accuracy"],
                      var_name="subset", value_name="accuracy")
    long["run"] = [plot_text(run_labels[r]) for r in long["run"]]
    long["subset"] = long["subset"].map(RELIABLE_SUBSETS)
    fig = px.bar(long, x="run", y="accuracy", color="subset", barmode="group", labels={"subset": "accuracy on"})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS)
    return fig


MODEL_MEASURES = {"accuracy": "accuracy", "mr1_ratio": "MR-1 flagged", "mr2_ratio": "MR-2 flagged",
                  "both_ratio": "MR-1&2 flagged"}


def model_comparison_bars(comparison: pd.DataFrame, run_labels: dict) -> go.Figure:
    """Accuracy and the share of correct answers each relation flags, one bar per run in each group (bar
    labels: the counts behind the shares)."""
    rows = []
    for _, r in comparison.iterrows():
        counts = {"accuracy": (r["correct"], r["evaluated"]), "mr1_ratio": (r["mr1"], r["correct"]),
                  "mr2_ratio": (r["mr2"], r["correct"]), "both_ratio": (r["both"], r["correct"])}
        for col, name in MODEL_MEASURES.items():
            k, n = counts[col]
            rows.append({"run": plot_text(run_labels.get(int(r["run"]), str(r["run"]))), "measure": name,
                         "share": r[col],
                         "count": f"{int(k)}/{int(n)}" if n else ""})
    long = pd.DataFrame(rows, columns=["run", "measure", "share", "count"])
    fig = px.bar(long, x="measure", y="share", color="run", barmode="group", text="count",
                 labels={"measure": "", "share": "share"})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS, legend_title_text="run")
    return _labels_outside(fig)


def mcnemar_bars(result) -> go.Figure:
    """The discordant pairs of McNemar's test: flagged by run A only (b) and by run B only (c)."""
    fig = go.Figure(go.Bar(x=[f"only run {result.run_a} (b)", f"only run {result.run_b} (c)",
                              "both (a)"],
                           y=[result.only_a, result.only_b, result.both],
                           text=[result.only_a, result.only_b, result.both],
                           marker_color=["#1f77b4", "#ff7f0e", "#9e9e9e"]))
    fig.update_layout(yaxis_title=f"inferences flagged ({result.relation})", height=300,
                      margin=dict(l=10, r=10, t=10, b=10))
    return _labels_outside(fig)


def accuracy_scatter(corr, relation: str) -> go.Figure:
    """Each run's accuracy against its flagged share, with the least-squares line of ``corr``."""
    table = corr.table.assign(model=_plot_texts(corr.table["model"]))
    fig = px.scatter(table, x="accuracy", y="ratio", hover_name="model", hover_data=["run"],
                     labels={"ratio": f"share of correct answers flagged ({relation})"})
    xs = [table["accuracy"].min(), table["accuracy"].max()]
    fig.add_trace(go.Scatter(x=xs, y=[corr.slope * x + corr.intercept for x in xs], mode="lines",
                             name="least-squares line"))
    fig.update_layout(xaxis_tickformat=PERCENT_AXIS, yaxis_tickformat=PERCENT_AXIS)
    return fig


# ---------------------------------------------------------------- Inspect


def napvd_heatmap(frame: pd.DataFrame) -> go.Figure:
    """A heatmap of the NAPVD matrix (``frame``'s rows and columns are the classes)."""
    frame = frame.set_axis(_plot_texts(frame.index), axis=0).set_axis(_plot_texts(frame.columns), axis=1)
    fig = px.imshow(frame, color_continuous_scale="Viridis_r", aspect="auto",
                    labels={"color": "NAPVD", "x": "", "y": ""})
    fig.update_layout(height=max(HEATMAP_MIN_HEIGHT, HEATMAP_ROW_PX * len(frame)))
    return fig


def aucec_figure(result, error: str) -> go.Figure:
    """Cost-effectiveness curves of every method for ``error`` (confusion or bias), with DeepInspect's
    one-standard-deviation cut-off."""
    from objrel.studies.deepinspect.result import aucec_curves

    fig = go.Figure()
    for method, part in aucec_curves(result, error).groupby("method", sort=False):
        ev = result.evaluation(error, method)
        label = f"{method} (AUCEC {ev.aucec:.3f})" if ev and ev.aucec is not None else method
        fig.add_trace(go.Scatter(x=part["inspected"], y=part["found"], mode="lines", name=label,
                                 line={"dash": METHOD_STYLE.get(method, "solid")}))
    di = result.evaluation(error, "deepinspect")
    if di and di.n_pairs:
        fig.add_vline(x=di.n_flagged / di.n_pairs, line_color="red", line_dash="dash",
                      annotation_text="1-std cut-off")
    fig.update_layout(xaxis_title="share of pairs inspected", yaxis_title="share of true errors found",
                      height=AUCEC_HEIGHT, xaxis_range=[0, 1], yaxis_range=[0, 1.02])
    return fig


# ---------------------------------------------------------------- Shortcut


def _per_seed(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["seed"].astype(str) != MEAN_SEED]


def flag_ratio_bars(ratios: pd.DataFrame) -> go.Figure:
    """Flag ratios and the true reliant share per model: the mean over seeds where there is one."""
    is_mean = ratios["seed"].astype(str) == MEAN_SEED
    means = ratios[is_mean] if is_mean.any() else ratios
    means = means.assign(model=_plot_texts(means["model"]))
    long = means.melt(id_vars=["model"], value_vars=["MR-1 ratio", "MR-2 ratio", "MR-1&2 ratio", "reliant (truth)"],
                      var_name="measure", value_name="share")
    fig = px.bar(long, x="measure", y="share", color="model", barmode="group",
                 labels={"share": "share of correct inferences", "measure": ""})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS)
    return fig


def precision_recall_bars(scores: pd.DataFrame) -> go.Figure:
    """Precision and recall per detector with their Wilson 95 % intervals as error bars."""
    fig = go.Figure()
    for metric, colour in SCORE_COLOURS:
        v = scores[metric].astype(float)
        fig.add_bar(name=metric, x=_plot_texts(scores["detector"]), y=v, marker_color=colour,
                    error_y={"type": "data", "symmetric": False,
                             "array": (scores[f"{metric}_hi"].astype(float) - v).clip(lower=0),
                             "arrayminus": (v - scores[f"{metric}_lo"].astype(float)).clip(lower=0)})
    fig.update_layout(barmode="group", yaxis_tickformat=PERCENT_AXIS, yaxis_range=[0, 1.05],
                      yaxis_title="with Wilson 95% interval")
    return fig


def repair_bars(repair: pd.DataFrame) -> go.Figure:
    """Grouped bars per seed of the MR-2 ratio and accuracies before, in the control and after the repair."""
    long = _per_seed(repair).melt(id_vars=["seed", "when"], value_vars=["MR-2 ratio", "swapped accuracy", "accuracy"],
                                  var_name="measure", value_name="value")
    long["seed"] = long["seed"].astype(str)
    fig = px.bar(long, x="seed", y="value", color="when", facet_col="measure", barmode="group",
                 category_orders={"when": ["before", "control", "after"]}, labels={"value": "", "when": "model"})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS)
    return _facet_titles(fig)


def share_search_lines(sweep: pd.DataFrame) -> go.Figure:
    """Lines of the MR-2 ratios and swapped accuracy against the share of mutants added to training."""
    tuned = sweep[sweep["share asked"].astype(str) != "original"].copy()
    tuned["seed"] = tuned["seed"].astype(str)
    fig = px.line(tuned, x="share", y=["val MR-2 ratio", "test MR-2 ratio", "swapped accuracy"], line_dash="seed",
                  markers=True, labels={"share": "share of added mutants in the training set", "value": "",
                                        "variable": "measure"})
    fig.update_layout(yaxis_tickformat=PERCENT_AXIS)
    return fig


ATTACK_SCENARIOS = {1: "1: object not recognised", 2: "2: label without object"}


def attack_bars(attack: pd.DataFrame) -> go.Figure:
    """Grouped bars of the attack successes per scenario and strategy, one panel per model."""
    named = attack.assign(scenario=attack["scenario"].map(ATTACK_SCENARIOS), model=_plot_texts(attack["model"]),
                          strategy=_plot_texts(attack["strategy"]))
    return _facet_titles(px.bar(named, x="scenario", y="successes", color="strategy", facet_col="model",
                                barmode="group", text="successes"))
