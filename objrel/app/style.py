"""The app's few CSS rules, applied once per script run from app.py (``apply_style``).

Streamlit lays out its columns server-side and cannot pick fewer of them on a narrow screen, so these rules
make the same layout hold from 1,400 px down to 900 px: below ``NARROW_PX`` the main area gives up most of
its side margins, a button's keyboard-shortcut badge yields its place to the label ("Previous", not
"P.. P"), and metric values take a smaller font so that a value such as ``0.778`` fits its column.
Everywhere, button labels and metric labels wrap instead of ending in an ellipsis, and a chart never
grows wider than its container.
"""

from __future__ import annotations

import streamlit as st

NARROW_PX = 1200

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


# Scrolls the app's main area (and the window) to the top from a zero-height component: Streamlit keeps the
# scroll position across reruns, so after a save at the bottom of a long page the next item would open out of
# sight.  The token makes the component's HTML differ each time, so the script runs again.
SCROLL_TOP_HTML = """<script>/* {token} */
const doc = window.parent.document;
const main = doc.querySelector('[data-testid="stMain"]') || doc.querySelector('section.main');
if (main) {{ main.scrollTo({{top: 0}}); }}
window.parent.scrollTo(0, 0);
</script>"""


def scroll_to_top(token: str) -> None:
    """Bring the top of the page into view (once per distinct ``token``, e.g. the item just opened)."""
    import streamlit.components.v1 as components

    components.html(SCROLL_TOP_HTML.format(token=token), height=0)
