"""Tables with their CSV download and charts with their PNG download, drawn the same way on every page.

Widget keys derive from one ``key``: ``{key}_table`` and ``{key}_csv`` for a table, ``{key}_chart`` for a chart.
Table headers show the columns' readable names (``objrel.app.formats.COLUMN_LABELS``); the CSV keeps the
column names.  Every CSV is written by ``objrel.csvsafe.frame_csv``: text a spreadsheet would evaluate as a
formula is escaped.

Every table fits its container at 1,400 px: a text column whose longest value would be wider than
``TEXT_COLUMN_MAX_PX`` is capped at that width (its whole text is in the CSV), and a missing value shows as
``objrel.app.formats.MISSING`` in every column, never as "None" beside "-".
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import streamlit as st

from objrel.app.formats import COLUMN_LABELS, MISSING, is_missing
from objrel.csvsafe import frame_csv

CSV_MIME = "text/csv"
# A text column is capped at this width; the estimate of its width is CHAR_PX per character plus the cell's
# padding (the grid's font is about 7 px per character at its 14 px size).
TEXT_COLUMN_MAX_PX = 220
CHAR_PX = 7.5
CELL_PADDING_PX = 24
# The width a table may take: the main area at a 1,400 px window (938 px shown there, less a scrollbar's room);
# a table whose columns would be wider gets every column a width that fits.
FULL_WIDTH_PX = 900
# The narrowest a column is squeezed to (a short number and a little padding).
MIN_COLUMN_PX = 48
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


def _is_text(column: pd.Series) -> bool:
    return column.dtype == object or pd.api.types.is_string_dtype(column)


def _natural_px(df: pd.DataFrame, column, label: str) -> int:
    """About how wide ``column`` is drawn when left to size itself: its longest cell or its label."""
    cells = [len(str(v)) for v in df[column]] if not df.empty else []
    return int(max([len(label), *cells]) * CHAR_PX + CELL_PADDING_PX)


def _water_level(widths: list[int], budget: int) -> int:
    """The largest cap ``c`` with ``sum(min(w, c)) <= budget`` (never below MIN_COLUMN_PX)."""
    lo, hi = MIN_COLUMN_PX, max(widths)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(w, mid) for w in widths) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fitted_columns(df: pd.DataFrame, column_config: dict | None = None, budget_px: int = FULL_WIDTH_PX) -> dict:
    """``readable_columns`` with each long text column capped at ``TEXT_COLUMN_MAX_PX`` (unless its settings
    already give a width); when the columns would still be wider than ``budget_px`` together, the widest are
    cut to one common width so that they fit (the full text stays in the cell and in the CSV)."""
    out = readable_columns(df, column_config)
    natural = {}
    for c in df.columns:
        cfg = out.get(c)
        label = cfg.get("label") if isinstance(cfg, dict) and cfg.get("label") else str(c)
        given = cfg.get("width") if isinstance(cfg, dict) and isinstance(cfg.get("width"), int) else None
        natural[c] = given or _natural_px(df, c, label)
        if _is_text(df[c]) and not df.empty and given is None and natural[c] > TEXT_COLUMN_MAX_PX:
            natural[c] = TEXT_COLUMN_MAX_PX
            if cfg is None:
                out[c] = st.column_config.Column(width=TEXT_COLUMN_MAX_PX)
            elif isinstance(cfg, dict) and not cfg.get("width"):
                out[c] = {**cfg, "width": TEXT_COLUMN_MAX_PX}
    if not natural or sum(natural.values()) <= budget_px:
        return out
    level = _water_level(list(natural.values()), budget_px)
    for c, w in natural.items():
        cfg = out.get(c)
        width = min(w, level)
        if cfg is None:
            out[c] = st.column_config.Column(width=width)
        elif isinstance(cfg, dict):
            out[c] = {**cfg, "width": width}
    return out


def _is_image(cfg) -> bool:
    return isinstance(cfg, dict) and (cfg.get("type_config") or {}).get("type") == "image"


def shown_missing(df: pd.DataFrame, column_config: dict | None = None) -> pd.DataFrame:
    """``df`` with the missing values of its text columns written as ``MISSING`` (number columns keep
    their type and show a missing value as an empty cell; an image column keeps its gaps empty)."""
    config = column_config or {}
    text = [c for c in df.columns
            if _is_text(df[c]) and not _is_image(config.get(c)) and any(is_missing(v) for v in df[c])]
    if not text:
        return df
    out = df.copy()
    for c in text:
        out[c] = [MISSING if is_missing(v) else v for v in out[c]]
    return out


def _number_text(value, fmt: str | None) -> str:
    """One number as its column would show it: Streamlit's ``percent`` format, a printf format, or plain."""
    if is_missing(value):
        return MISSING
    if fmt == "percent":
        return f"{100 * value:.1f}%"
    if fmt and fmt.startswith("%"):
        return fmt % value
    return f"{value:g}" if isinstance(value, float) else str(value)


def missing_numbers_as_text(df: pd.DataFrame, column_config: dict | None = None) -> tuple[pd.DataFrame, dict]:
    """Streamlit draws a missing number as "None": each number column with a missing value becomes text, in its
    own format, with ``MISSING`` in the gaps (the CSV keeps the numbers)."""
    config = dict(column_config or {})
    gaps = [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
            and df[c].isna().any()]
    if not gaps:
        return df, config
    out = df.copy()
    for c in gaps:
        cfg = config.get(c) if isinstance(config.get(c), dict) else {}
        fmt = (cfg.get("type_config") or {}).get("format")
        out[c] = [_number_text(v, fmt) for v in df[c]]
        config[c] = st.column_config.TextColumn(cfg.get("label"), width=cfg.get("width"), help=cfg.get("help"))
    return out, config


def frame(df: pd.DataFrame, key: str, column_config: dict | None = None, budget_px: int = FULL_WIDTH_PX,
          where=None) -> None:
    """``df`` as a table that fits its container (no CSV button) of ``budget_px``; ``key`` is the widget key;
    ``where`` the container to draw in (a column; default the page).  Every missing value shows as ``MISSING``."""
    df, column_config = missing_numbers_as_text(df, column_config)
    (where or st).dataframe(shown_missing(df, column_config), hide_index=True, width="stretch", key=key,
                            column_config=fitted_columns(df, column_config, budget_px))


def static_table(df: pd.DataFrame, where=None) -> None:
    """``df`` as a plain HTML table (no grid, no scrolling, no sorting): light to draw where a page redraws
    often (the Review page's evidence).  Every missing value shows as ``MISSING``."""
    from objrel.app.text import plain

    df, _ = missing_numbers_as_text(df, None)
    shown = shown_missing(df).rename(columns=lambda c: COLUMN_LABELS.get(c, c))
    # st.table draws its cells as Markdown: text from the data (labels, keys) is escaped to stay plain text
    shown = shown.apply(lambda col: col.map(plain) if _is_text(col) else col)
    (where or st).table(shown, hide_index=True)


def table(df: pd.DataFrame, key: str, file_name: str, column_config: dict | None = None,
          download: pd.DataFrame | None = None) -> None:
    """``df`` as a table with a CSV download button; ``download`` replaces what the CSV holds (the full
    table behind a shortened view)."""
    frame(df, f"{key}_table", column_config)
    csv = frame_csv(df if download is None else download)
    st.download_button("Download CSV", csv, file_name=file_name, mime=CSV_MIME, key=f"{key}_csv", on_click="ignore")


def chart(fig, key: str, file_name: str) -> None:
    """A plotly figure whose toolbar camera saves ``file_name``.png."""
    st.plotly_chart(fig, width="stretch", key=f"{key}_chart",
                    config={"toImageButtonOptions": {"format": "png", "filename": file_name}})
