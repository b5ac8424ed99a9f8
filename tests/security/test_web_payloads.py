"""No payload in the data or in people's text runs script or becomes a link, on any page, for any role.

One served app (tests/e2e/app_server.serving) over the store of tests/security/hostile_world.py: COCO image
ids, file names and class names, the run's name, reviewers' notes, an adjudicator's note and account names hold
script and link payloads (``<img onerror>``, ``<script>``, ``javascript:``, a markdown link, bare URLs,
``www.`` and e-mail addresses, plotly's ``<a href>``).  One chromium visits every page of the top bar as a
visitor, a reviewer (whose name is a web and an e-mail address), an adjudicator, a run operator and an admin,
each in a browser context of its own, and checks on the page and in every frame that

* ``window.__pwned`` (what every script payload would set) stays undefined;
* no ``<a>`` (HTML or SVG) leads to an "evil" host or path or a ``javascript:`` URL (a markdown link, an
  autolink, a plotly link); the app's own links to an item carry its id in the query, encoded, and stay;
* no element carries an ``onerror`` attribute (an injected ``<img>``).

The payloads must reach the pages as text: the Overview's examples, the Review item, My work and the
Agreement page's disagreements are checked to show them (so a page that dropped them would not pass here).
"""

from __future__ import annotations

import pytest

from objrel import review
from tests.e2e.app_server import serving
from tests.e2e.test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, nav, settled
from tests.security import hostile_world as H

pytestmark = [pytest.mark.browser, pytest.mark.subprocess]

# Every page of the top bar: (title, url path).
PAGES = [("Overview", ""), ("My work", "my-work"), ("Explore", "explore"), ("Review", "review"),
         ("Agreement", "agreement"), ("Runs", "runs"), ("Inspect", "inspect"), ("Shortcut", "shortcut"),
         ("Users", "users")]
ROLES = {"anonymous": None, "reviewer": H.REVIEWER_A, "adjudicator": H.ADJUDICATOR,
         "run operator": H.RUN_OPERATOR, "admin": H.ADMIN}
# Where the payloads must show as text, for each role that sees them there: (role, page) -> what shows.
SHOWN = {("anonymous", "Overview"): "evil.example", ("reviewer", "Overview"): H.REVIEWER_A,
         ("reviewer", "Review"): "onerror", ("reviewer", "My work"): "evil.example/r",
         ("adjudicator", "Agreement"): "window.__pwned=1", ("admin", "Agreement"): "decided:"}
WIDTH, HEIGHT = 1400, 1000
PAGE_TIMEOUT_MS = 60_000
WORD_JOINER = "\u2060"          # objrel.app.text puts it where an autolink would start: invisible

# Everything the checks read in one frame: __pwned, where each link leads (HTML href, SVG href / xlink:href,
# resolved against the page: scheme, host and path; the query is left out, where the app's own links to an item
# carry its id, encoded) and the tags of elements with an onerror attribute.
PROBE = """() => ({
  pwned: typeof window.__pwned,
  links: Array.from(document.querySelectorAll('a')).map(a => {
    const raw = a.getAttribute('href') || a.getAttribute('xlink:href') || '';
    try { const u = new URL(raw, document.baseURI); return u.protocol + '//' + u.host + u.pathname; }
    catch (e) { return raw; }
  }),
  onerror: Array.from(document.querySelectorAll('[onerror]')).map(e => e.tagName),
})"""


def leads_astray(target: str) -> bool:
    """A link target a payload made: to an "evil" host or path, or a javascript: URL."""
    return "evil" in target.lower() or target.lower().startswith("javascript:")


@pytest.fixture
def world(tmp_path):
    store, run_id = H.build(tmp_path / "world")
    yield store, run_id
    store.dispose()


def test_account_names_refuse_markup():
    """Account names keep to a safe alphabet: the markup payloads are refused, so the hostile names the test
    signs in with are the web and e-mail addresses that alphabet allows."""
    from objrel.review.accounts import normalise_name

    for name in H.REFUSED_NAMES:
        with pytest.raises(ValueError, match="may use only ASCII letters"):
            normalise_name(name)
    assert normalise_name(H.REVIEWER_A) == H.REVIEWER_A and normalise_name(H.REVIEWER_B) == H.REVIEWER_B


def sign_in(page, name: str) -> None:
    """Sign in from the sidebar (the session, and its sign-in, carries over the top bar's links)."""
    page.get_by_label("Name").fill(name)
    page.get_by_label("Passphrase").fill(H.passphrase(name))
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=PAGE_TIMEOUT_MS)


def visit(page, path: str) -> tuple[str, list[str]]:
    """Open a page through the top bar, let it settle, and return its text and what the probe found wrong in it
    or its frames."""
    nav(page, path)
    page.locator("h1").first.wait_for(timeout=PAGE_TIMEOUT_MS)
    settled(page)
    wrong = []
    for frame in page.frames:
        found = frame.evaluate(PROBE)
        if found["pwned"] != "undefined":
            wrong.append(f"window.__pwned set in {frame.url or 'the page'}")
        wrong += [f"link to {target}" for target in found["links"] if leads_astray(target)]
        wrong += [f"<{tag.lower()}> with onerror" for tag in found["onerror"]]
    return page.text_content("body").replace(WORD_JOINER, ""), wrong     # folded expanders' text too


def test_no_payload_runs_or_links_on_any_page_for_any_role(world, tmp_path):
    from playwright.sync_api import sync_playwright

    store, _ = world
    assert review.list_accounts(store)
    problems, shown = {}, {}
    with serving(tmp_path, store.url) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for role, name in ROLES.items():
                context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
                page = context.new_page()
                page.goto(base)
                page.get_by_label("Name").wait_for(timeout=PAGE_TIMEOUT_MS)
                if name:
                    sign_in(page, name)
                for title, path in PAGES:
                    text, wrong = visit(page, path)
                    shown[(role, title)] = text
                    if wrong:
                        problems[(role, title)] = sorted(set(wrong))
                context.close()
        finally:
            browser.close()
    assert not problems, problems
    missing = {where: what for where, what in SHOWN.items() if what not in shown[where]}
    assert not missing, {where: (what, shown[where][-1500:]) for where, what in missing.items()}
