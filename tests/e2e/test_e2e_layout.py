"""The app's layout in a real browser (Debian's chromium through Playwright) at 1,400 and 900 px.

A copy of the demo store (built once per test session: tests/conftest.py demo_db) is served by
`streamlit run app.py`; an admin (and, for the Review page, the reviewer alice) visits every page of the top
bar at each width.  A screenshot of the whole page is saved as test-artifacts/layout/<page>-<width>.png.  Checked
on every page:

- at 1,400 px no table (``stDataFrame`` / ``stTable``) is wider than its container, neither its box nor its
  columns (the grid's scroll width against its visible width: a horizontal scroll bar cuts columns off);
- at both widths no button label ends in an ellipsis (a label element whose scroll width exceeds its
  visible width), and no metric value is cut short the same way.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.e2e.app_server import serving
from tests.e2e.test_e2e_browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, PAGES, settled

LAYOUT = ARTIFACTS / "layout"
WIDTHS = (1400, 900)
TABLE_WIDTH = 1400            # tables are checked at this width
SLACK_PX = 1                  # rounding between scroll and client widths
# (name, passphrase) of the demo accounts (objrel.demo.DEMO_ACCOUNTS); the reviewer sees Review
ADMIN = ("admin", "admin-demo-pass")
REVIEWER = ("alice", "alice-demo-pass")

pytestmark = [pytest.mark.browser, pytest.mark.subprocess,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason="Debian chromium is not installed (.ci/run installs it)")]

# What the page shows that does not fit, as a list of one-line findings.
MEASURE = """(checkTables) => {
  const found = [];
  const slack = %d;
  const shown = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const named = el => {
    let e = el.closest('[data-testid="stElementContainer"]');
    while (e && e.previousElementSibling) {
      e = e.previousElementSibling;
      const h = e.querySelector('h1, h2, h3, h4, [data-testid="stCaptionContainer"]');
      if (h) return h.innerText.slice(0, 50);
    }
    return '?';
  };
  if (checkTables) {
    for (const t of document.querySelectorAll('[data-testid="stDataFrame"], [data-testid="stTable"]')) {
      if (!shown(t)) continue;
      const r = t.getBoundingClientRect(), p = t.parentElement.getBoundingClientRect();
      if (r.right > p.right + slack || r.width > p.width + slack)
        found.push(`table after "${named(t)}": ${Math.round(r.width)} px wide in a `
                   + `${Math.round(p.width)} px container`);
      const inner = t.querySelector('.dvn-scroller') || t.querySelector('table');
      const box = t.querySelector('.dvn-scroller') || t;
      if (inner && inner.scrollWidth > box.clientWidth + slack)
        found.push(`table after "${named(t)}": columns ${inner.scrollWidth} px wide, ${box.clientWidth} px shown`);
    }
  }
  for (const b of document.querySelectorAll('button')) {
    if (!shown(b)) continue;
    for (const l of b.querySelectorAll('[data-testid="stMarkdownContainer"], p')) {
      if (shown(l) && l.scrollWidth > l.clientWidth + slack) {
        found.push(`button "${b.innerText.replace(/\\s+/g, ' ').trim()}": `
                   + `label ${l.scrollWidth} px in ${l.clientWidth} px`);
        break;
      }
    }
  }
  for (const m of document.querySelectorAll('[data-testid="stMetricValue"]')) {
    for (const l of [m, ...m.querySelectorAll('*')]) {
      if (shown(l) && l.scrollWidth > l.clientWidth + slack) {
        found.push(`metric value "${m.innerText.trim()}": ${l.scrollWidth} px in ${l.clientWidth} px`);
        break;
      }
    }
  }
  return found;
}""" % SLACK_PX


@pytest.fixture
def demo_server(tmp_path, demo_db):
    db = tmp_path / "demo.db"
    shutil.copyfile(demo_db, db)
    with serving(tmp_path, str(db)) as base:
        yield base


def sign_in(page, base: str, account: tuple[str, str]) -> None:
    page.goto(base)
    page.get_by_label("Name").fill(account[0])
    page.get_by_label("Passphrase").fill(account[1])
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {account[0]}").wait_for(timeout=60_000)


def go(page, path: str) -> None:
    """Open a page through the top bar (the session carries over); below some width the bar folds its last
    pages into an "N more" menu, whose links are clicked in place."""
    link = page.locator(f'a[href$="/{path}"]').first if path else \
        page.locator("a", has_text=re.compile(r"Overview$")).first
    # a link folded into the "N more" menu stays in the page but inert: its own click handler opens the page
    link.evaluate("a => a.click()")
    page.locator("h1").first.wait_for()
    settled(page)
    page.wait_for_timeout(1000)     # the grids and charts size themselves after the script run ends


def full_screenshot(page, path: Path, width: int) -> None:
    """The whole page at ``width``: the viewport grows to the main area's height (the main area scrolls
    inside the page, so a full-page screenshot alone would cut it)."""
    height = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
        return m ? m.scrollHeight : document.body.scrollHeight; }""")
    page.set_viewport_size({"width": width, "height": max(1000, min(int(height) + 40, 12_000))})
    settled(page)
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": width, "height": 1000})


def test_every_page_fits_at_1400_and_900_px(demo_server):
    from playwright.sync_api import sync_playwright

    base = demo_server
    LAYOUT.mkdir(parents=True, exist_ok=True)
    problems = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        tabs = {}
        for account in (ADMIN, REVIEWER):
            tab = browser.new_context(viewport={"width": WIDTHS[0], "height": 1000}).new_page()
            tab.set_default_timeout(60_000)
            sign_in(tab, base, account)
            tabs[account] = tab
        for width in WIDTHS:
            for title, path in PAGES:
                page = tabs[REVIEWER if path == "review" else ADMIN]
                name = title.lower()
                page.set_viewport_size({"width": width, "height": 1000})
                go(page, path)
                tables = width == TABLE_WIDTH
                problems += [f"{name} at {width} px: {p}" for p in page.evaluate(MEASURE, tables)]
                full_screenshot(page, LAYOUT / f"{name}-{width}.png", width)
        browser.close()
    for width in WIDTHS:
        for title, _ in PAGES:
            shot = LAYOUT / f"{title.lower()}-{width}.png"
            assert shot.stat().st_size > 10_000, f"expected a screenshot of the page, got {shot.stat().st_size} bytes"
    assert not problems, "\n".join(problems)
