"""Tables with their CSV download and charts with their PNG download, drawn the same way on every page.

Widget keys derive from one ``key``: ``{key}_table`` and ``{key}_csv`` for a table, ``{key}_chart`` for a chart.
Table headers show the columns' readable names (``objrel.app.formats.COLUMN_LABELS``); the CSV keeps the
column names.  Every CSV is written by ``objrel.csvsafe.frame_csv``: text a spreadsheet would evaluate as a
formula is escaped.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import streamlit as st

from objrel.app.formats import COLUMN_LABELS
from objrel.csvsafe import frame_csv

CSV_MIME = "text/csv"
PNG_HINT = "Download a chart as PNG with the camera icon in its toolbar (top right of the chart)."


def share_columns(df: pd.DataFrame, columns: Iterable[str]) -> dict:
    """Column settings that show shares in [0, 1] as percentages, for those of ``columns`` in ``df``."""
    return {c: st.column_config.NumberColumn(format="percent") for c in columns if c in df.columns}


def percent_columns(df: pd.DataFrame, columns: Iterable[str]) -> dict:
    """Column settings for values already in percent (62.5 -> ``62.5%``)."""
    return {c: st.column_config.NumberColumn(format="%.1f%%") for c in columns if c in df.columns}


def decimal_columns(df: pd.DataFrame, columns: Iterable[str], digits: int = 3) -> dict:
    """Column settings that show numbers with ``digits`` decimals (a kappa as ``0.583``)."""
    return {c: st.column_config.NumberColumn(format=f"%.{digits}f") for c in columns if c in df.columns}


def readable_columns(df: pd.DataFrame, column_config: dict | None = None) -> dict:
    """``column_config`` with each column of ``df`` that has a readable name (``COLUMN_LABELS``) labelled so,
    unless its settings already name it."""
    out = dict(column_config or {})
    for c in df.columns:
        if c in COLUMN_LABELS:
            cfg = out.get(c)
            if cfg is None:
                out[c] = st.column_config.Column(COLUMN_LABELS[c])
            elif isinstance(cfg, dict) and not cfg.get("label"):
                out[c] = {**cfg, "label": COLUMN_LABELS[c]}
    return out


def table(df: pd.DataFrame, key: str, file_name: str, column_config: dict | None = None,
          download: pd.DataFrame | None = None) -> None:
    """``df`` as a table with a CSV download button; ``download`` replaces what the CSV holds (the full
    table behind a shortened view)."""
    st.dataframe(df, hide_index=True, width="stretch", key=f"{key}_table",
                 column_config=readable_columns(df, column_config))
    csv = frame_csv(df if download is None else download)
    st.download_button("Download CSV", csv, file_name=file_name, mime=CSV_MIME, key=f"{key}_csv", on_click="ignore")


def chart(fig, key: str, file_name: str) -> None:
    """A plotly figure whose toolbar camera saves ``file_name``.png."""
    st.plotly_chart(fig, width="stretch", key=f"{key}_chart",
                    config={"toImageButtonOptions": {"format": "png", "filename": file_name}})
