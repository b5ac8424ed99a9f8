"""Text from data or people, made safe to show: Streamlit shows it literally, as typed (no Streamlit import).

Strings that come from a dataset (sample ids, file names, category and label names), from a run's settings
(run, upload and model names) or from people (notes, reasons, account names, error messages quoting what
they typed) are shown by Streamlit calls that read markdown: ``st.markdown``, ``st.caption``, the
``st.info``/``error``/``warning``/``success`` boxes, titles and headers, image captions, metric labels and
values, labels of widgets, expanders, tabs and page links, ``help=`` tooltips, progress text, radio and
segmented-control options.  There, such text goes through ``plain``:

* every ASCII punctuation character is backslash-escaped, which CommonMark defines as showing that character
  itself.  So emphasis, code, links and images, raw HTML (``<img onerror=...>`` shows as text), headings,
  lists, tables, LaTeX between ``$``, entities and Streamlit's ``:red[...]`` / ``:material/...:`` directives
  never start;
* with ``:``, ``.`` and ``@`` escaped, GitHub's autolinks (``http://...``, ``www....``, ``name@host.org``)
  never form: the escape splits the literal a link is made from;
* line breaks and other runs of whitespace become one space, so a line of user text cannot open a block of
  its own (a list item, a quote, a heading) below the caption's own words.

Plotly draws a subset of HTML in titles, tick labels, legends and hover text (``<a href>``, ``<b>``,
``<br>``); ``plot_text`` writes ``&``, ``<`` and ``>`` as entities there, which plotly shows as the
characters.  Widgets that draw text as text (``st.text``, ``st.code``, selectbox and multiselect options,
dataframe cells) need neither: escaping there would show the backslashes.
"""

from __future__ import annotations

import re
import string

# Every ASCII punctuation character: CommonMark lets each be backslash-escaped (shown as itself), and each
# can start some markup (the directive and autolink starters ":", "." and "@" among them).
MARKDOWN_PUNCTUATION = string.punctuation
_ESCAPED = re.compile("([" + re.escape(MARKDOWN_PUNCTUATION) + "])")
# GitHub's autolinks are found in the text after the escapes are read (Streamlit's markdown links
# "http\:\/\/x" all the same), so the escapes alone do not stop them: an invisible WORD JOINER goes
# before every ":" (a scheme's colon: "http:", "mailto:"), before every "@" (an e-mail address) and between
# "www" and its ".", which no autolink pattern then matches.  Other text keeps its characters as they were.
LINK_BREAK = "\u2060"
_LINK_STARTS = re.compile(r"[:@]|(?<=www)(?=\.)", re.IGNORECASE)
# What plotly's pseudo-HTML reads as markup, with the entity it shows as that character.
PLOT_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_PLOT_SPECIAL = re.compile("[&<>]")


def one_line(text) -> str:
    """``text`` (anything; ``str()`` of it) with every run of whitespace, line breaks included, as one space and
    no blank at either end."""
    return " ".join(str(text).split())


def plain(text) -> str:
    """``text`` as markdown that Streamlit shows exactly as typed (on one line): every ASCII punctuation
    character backslash-escaped, an invisible ``LINK_BREAK`` before each ``:``, ``@`` and the ``.`` of ``www.``,
    whitespace runs folded into one space.  ``None`` shows as ``None``."""
    return _ESCAPED.sub(r"\\\1", _LINK_STARTS.sub(lambda m: LINK_BREAK + m.group(0), one_line(text)))


def plot_text(text) -> str:
    """``text`` for a plotly title, tick label, legend entry or hover label: ``&``, ``<`` and ``>`` written as
    entities, so no tag (a link, a line break) is drawn from it."""
    return _PLOT_SPECIAL.sub(lambda m: PLOT_ENTITIES[m.group(0)], str(text))
