"""``objrel.app.text``: text from data or people is shown by Streamlit and plotly exactly as typed.

Each hostile string is one a dataset, a run operator or a reviewer can write (a COCO file name or category, a
run name, a note); the expected output is written out by hand.  ``J`` is the invisible word joiner that
``plain`` puts before ":" and "@" and into "www.", which no GitHub autolink pattern matches.
"""

from __future__ import annotations

import pytest

from objrel.app.text import LINK_BREAK, plain, plot_text

J = "\u2060"

# (typed, what plain gives)
MARKDOWN_CASES = [
    ("[x](http://evil)", "\\[x\\]\\(http" + J + "\\:\\/\\/evil\\)"),
    ("http://evil.example", "http" + J + "\\:\\/\\/evil\\.example"),
    ("www.evil.example", "www" + J + "\\.evil\\.example"),
    ("WWW.evil.example", "WWW" + J + "\\.evil\\.example"),
    ("x@evil.example", "x" + J + "\\@evil\\.example"),
    ("<img src=x onerror=alert(1)>", "\\<img src\\=x onerror\\=alert\\(1\\)\\>"),
    ("**b**", "\\*\\*b\\*\\*"),
    ("`c`", "\\`c\\`"),
    ("$x$", "\\$x\\$"),
    (":material/home:", J + "\\:material\\/home" + J + "\\:"),
    (":red[x]", J + "\\:red\\[x\\]"),
    ("- item", "\\- item"),
    ("1) one", "1\\) one"),
    ("# title", "\\# title"),
    ("&amp;", "\\&amp\\;"),
    ("two\nlines\r\n\tthen  more", "two lines then more"),
    ("plain words 42", "plain words 42"),
]


@pytest.mark.parametrize(("typed", "shown"), MARKDOWN_CASES, ids=[c[0] for c in MARKDOWN_CASES])
def test_plain_escapes_every_markdown_character_and_breaks_autolinks(typed, shown):
    assert LINK_BREAK == J
    assert plain(typed) == shown


def test_plain_gives_the_text_back_once_escapes_and_joiners_are_read():
    """What a reader sees is the text typed (on one line): every backslash is an escape of the next
    character and every word joiner is invisible."""
    typed = "a *b* [c](http://d.e) www.f.g h@i.j <k> $l$ :m[n] `o` ~p~ | q # r \\ s"
    assert plain(typed).replace(J, "").replace("\\\\", "\0").replace("\\", "").replace("\0", "\\") == typed


def test_plain_takes_any_value():
    assert plain(None) == "None"
    assert plain(ValueError("bad name 'x.y'")) == "bad name \\'x\\.y\\'"


PLOT_CASES = [
    ('<a href="http://evil.example/p">p</a>', '&lt;a href="http://evil.example/p"&gt;p&lt;/a&gt;'),
    ("<br>line<b>bold</b>", "&lt;br&gt;line&lt;b&gt;bold&lt;/b&gt;"),
    ("&amp; & <", "&amp;amp; &amp; &lt;"),
    ("[x](http://evil) www.evil.example", "[x](http://evil) www.evil.example"),
]


@pytest.mark.parametrize(("typed", "shown"), PLOT_CASES, ids=[c[0] for c in PLOT_CASES])
def test_plot_text_writes_plotly_markup_characters_as_entities(typed, shown):
    assert plot_text(typed) == shown
