"""Streamlit-only helpers for the app's pages.

caches (cached store reads, models, inspection results), widgets (navigation, sign-in), state
(widget state set only when absent), tables (tables with CSV, charts with PNG), review_panels (the
Review page's pieces); and, without Streamlit: charts (plotly figures), captions (markdown built from
data), formats (number formats).
"""
