"""CSV that a spreadsheet opens as data: the one writer of every CSV objrel produces (``objrel export``, the
app's downloads).

A cell whose text begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read as a formula by
Excel, LibreOffice and Google Sheets (``=HYPERLINK(...)`` in a sample id becomes a live link).  Following
OWASP's advice on CSV injection, such text gets a leading single quote, which spreadsheets show as text.
Numbers, booleans and empty cells pass unchanged, and so does text that is only a number (``-0.5``), which no
spreadsheet evaluates.  Bottom module: no objrel or third-party imports.
"""

from __future__ import annotations

import csv
import io
import re

# First characters that make a spreadsheet evaluate a cell (OWASP, "CSV Injection").
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")
# What a text cell is prefixed with to be shown as text.
TEXT_PREFIX = "'"
# Text that is just a number (sign, digits, decimal point, exponent): shown as a number, never evaluated.
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# numpy dtype kinds of columns that hold no text: bool, integers, floats, complex, time spans and dates.
NON_TEXT_KINDS = "biufcmM"


def safe_cell(value):
    """``value`` with a text prefix when it is text a spreadsheet would evaluate; anything else unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_LEADS) and not PLAIN_NUMBER.fullmatch(value):
        return TEXT_PREFIX + value
    return value


def csv_text(rows: list[dict]) -> str:
    """CSV of flat rows whose keys may differ: the columns are every key, in first-seen order; every header
    and cell goes through ``safe_cell``."""
    buf = io.StringIO()
    fields = list(dict.fromkeys(k for row in rows for k in row)) or ["sample_id"]
    w = csv.writer(buf)
    w.writerow([safe_cell(f) for f in fields])
    for row in rows:
        w.writerow([safe_cell(row.get(f, "")) for f in fields])
    return buf.getvalue()


def write_rows(out, fields: list[str], rows) -> int:
    """Write CSV to the text stream ``out`` as ``rows`` (an iterable of dicts) arrive: the header ``fields``,
    then one line per row (a key a row lacks is an empty cell); every header and cell goes through
    ``safe_cell``.  Holds one row at a time; returns the rows written.  A row with a key outside ``fields``
    raises ValueError: its value would be lost."""
    w = csv.writer(out)
    w.writerow([safe_cell(f) for f in fields])
    known, n = set(fields), 0
    for row in rows:
        extra = [k for k in row if k not in known]
        if extra:
            raise ValueError(f"a row has columns outside the header: {extra[:5]}")
        w.writerow([safe_cell(row.get(f, "")) for f in fields])
        n += 1
    return n


def frame_csv(df) -> str:
    """CSV of a pandas DataFrame (no index) whose column names and text cells go through ``safe_cell``."""
    out = df.copy()
    for col in out.columns:
        if out[col].dtype.kind not in NON_TEXT_KINDS:
            out[col] = out[col].map(safe_cell)
    out.columns = [safe_cell(str(c)) for c in out.columns]
    return out.to_csv(index=False)
