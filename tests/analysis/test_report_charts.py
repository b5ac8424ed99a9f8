"""The stakeholder report's charts keep their colours when the app builds the report.

Importing Streamlit makes its own plotly template the default; that template's colours are placeholders
(#000001, #000002, ...) which only Streamlit's frontend swaps for real ones, so a report built in the app's
process once drew every series near-black.  The report is built here the way the app builds it: the
Overview page's button, in the app's own process (AppTest).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
# Streamlit's placeholder colours are #000001 .. #0000ff: black to the eye; plain black counts too.
PLACEHOLDER = re.compile(r"^#0000[0-9a-f]{2}$", re.IGNORECASE)
BLACK = {"black", "#000", "#000000", "rgb(0,0,0)"}


def report_figures(html: str) -> list[tuple[list, dict]]:
    """Each chart's (traces, layout) as the report's ``Plotly.newPlot`` calls pass them."""
    decoder = json.JSONDecoder()
    figures = []
    for m in re.finditer(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*", html):
        traces, end = decoder.raw_decode(html, m.end())
        rest = html[end:].lstrip()
        assert rest.startswith(","), rest[:40]
        layout, _ = decoder.raw_decode(rest[1:].lstrip())
        figures.append((traces, layout))
    return figures


def series_colours(traces: list, layout: dict) -> list[str]:
    """The colour each trace is drawn in: its own marker colour, else its turn in the template's colorway."""
    colorway = layout.get("colorway") or layout.get("template", {}).get("layout", {}).get("colorway") or []
    out = []
    for i, trace in enumerate(traces):
        colour = trace.get("marker", {}).get("color")
        if colour is None:
            assert colorway, f"trace {i} has no colour and the layout no colorway"
            colour = colorway[i % len(colorway)]
        out.append(str(colour).replace(" ", "").lower())
    return out


def test_app_built_report_draws_each_series_in_its_own_real_colour(monkeypatch, flagged_store):
    store, run_id = flagged_store
    monkeypatch.setenv("OBJREL_STORE", store.url)
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    at.button(key="overview_report_btn").click().run()
    assert not at.exception
    from objrel.analysis.shared_report import ready_report

    html = ready_report(store, run_id)      # the report every session now shares, offered for download
    assert html is not None and at.get("download_button")
    figures = report_figures(html)
    assert len(figures) == 2, f"expected the per-label and the object-size chart, found {len(figures)}"
    seen = []
    for traces, layout in figures:
        colours = series_colours(traces, layout)
        seen += colours
        assert len(set(colours)) == len(colours), f"series share a colour: {colours}"
        for c in colours:
            assert not PLACEHOLDER.match(c) and c not in BLACK, \
                f"expected a real colour, got {c} (Streamlit's placeholder)"
    per_label = series_colours(*figures[0])
    assert len(per_label) == 2 and per_label[0] != per_label[1]   # MR-1 and MR-2 side by side


def test_the_report_names_the_runtime_and_the_device_the_run_used():
    from objrel.analysis.report import runtime_phrase

    assert runtime_phrase({}) == "torch, on the CPU"     # a run stored before either was recorded
    assert runtime_phrase({"runtime": "torch", "device": "cuda:0"}) == "torch, on cuda:0"
    exported = {"runtime": "onnxruntime", "runtime_version": "1.20.1", "precision": "f32", "device": "cuda:1",
                "runtime_choice": {"reason": "fastest runtime whose outputs match torch's"}}
    assert runtime_phrase(exported) == \
        "onnxruntime 1.20.1, f32, on cuda:1 (auto: fastest runtime whose outputs match torch's)"
