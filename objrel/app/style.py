"""The app's few CSS rules, applied once per script run from app.py (``apply_style``).

Streamlit lays out its columns server-side and cannot pick fewer of them on a narrow screen, so these rules
make the same layout hold from 1,400 px down to 900 px: below ``NARROW_PX`` the main area gives up most of
its side margins, a button's keyboard-shortcut badge yields its place to the label ("Previous", not
"P.. P"), and metric values take a smaller font so that a value such as ``0.778`` fits its column.
Everywhere, button labels and metric labels wrap instead of ending in an ellipsis, and a chart never
grows wider than its container.  The Review page's first row of images is held to ``FIRST_SCREEN_IMAGE_PX``
in height so that the judging form under it stays on the first screen at 900 px.
"""

from __future__ import annotations

import streamlit as st

from objrel.app.review_keys import DECISION_KEY   # the judging form's container: its alerts are compact

NARROW_PX = 1200
# Room above a page's first element (Streamlit's default is 6rem): the top bar already sits there.
TOP_PADDING_REM = 3.5
# The tallest an image of the Review page's first row may be: a portrait photo keeps the call buttons on screen.
FIRST_SCREEN_IMAGE_PX = 240
FIRST_SCREEN_KEY = "review_first_screen"
# Below NARROW_PX the first screen's images are held lower still: two rows of them fit beside the form at 900 px.
NARROW_IMAGE_PX = 120

CSS = f"""
<style>
button [data-testid="stMarkdownContainer"], button [data-testid="stMarkdownContainer"] p,
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricLabel"] [data-testid="stMarkdownContainer"] p {{
  white-space: normal; overflow: visible; text-overflow: clip; overflow-wrap: normal;
}}
[data-testid="stMetricValue"] [data-testid="stMarkdownContainer"],
[data-testid="stMetricValue"] [data-testid="stMarkdownContainer"] p {{ overflow: visible; text-overflow: clip; }}
[data-testid="stPlotlyChart"], [data-testid="stPlotlyChart"] .js-plotly-plot {{ max-width: 100%; }}
[data-testid="stMainBlockContainer"] {{ padding-top: {TOP_PADDING_REM}rem; }}
.st-key-{FIRST_SCREEN_KEY} [data-testid="stImage"] img {{ max-height: {FIRST_SCREEN_IMAGE_PX}px; width: auto;
  max-width: 100%; object-fit: contain; }}
.st-key-review_title h1 {{ font-size: 1.6rem; padding: 0 0 0.2rem 0; }}
.st-key-{DECISION_KEY} [data-testid="stAlert"] > div {{ padding: 0.35rem 0.6rem; font-size: 0.9rem; }}
@media (max-width: {NARROW_PX}px) {{
  .st-key-{FIRST_SCREEN_KEY} [data-testid="stImage"] img {{ max-height: {NARROW_IMAGE_PX}px; }}
}}
@media (max-width: {NARROW_PX}px) {{
  [data-testid="stMainBlockContainer"] {{ padding-left: 1.5rem; padding-right: 1.5rem; }}
  button kbd {{ display: none; }}
  [data-testid="stBaseButton-secondary"], [data-testid="stBaseButton-primary"] {{ min-width: max-content; }}
  button [data-testid="stMarkdownContainer"] p {{ word-break: keep-all; overflow-wrap: normal; }}
  [data-testid="stMetricValue"] {{ font-size: 1.5rem; }}
}}
</style>
"""


def apply_style() -> None:
    """Add the app's CSS to the page (once per script run, before the page draws)."""
    st.html(CSS)
