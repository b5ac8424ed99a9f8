"""Hostile web visits: the benchmark's web section (``benchmarks/hostile.py`` registers these kinds).

Every kind is one attack on a served app (``streamlit run serve.py``: app.py behind objrel's web gate), made the
way an attacker makes it: Debian's chromium driven by Playwright, raw HTTP and WebSocket requests, pages served
from another port of the same host, or (for the review's blindness and the gate's actor check, which a page only
relays) the library calls a page makes.  A kind's status is OK only when the app held:

    OK        the attack was made and the app held: no script ran, no link was made, the request was refused,
              the cap refused the work beyond it, the call was not saved, the server's memory stayed put
    BREACHED  the attack worked (a script ran, a link or element was injected, a cap or a gate let it through,
              a call from a signed-out tab was saved, a server path was shown)
    CRASH     the attack could not be made or judged: the server or the browser failed, a payload never
              reached any page (an attack that shows nothing proves nothing), a probe raised

Payloads (``X1``-``X3``) sit in every field a dataset, a run operator or a reviewer writes: COCO image ids, file
names and category names (the model's class names too), the run's name, reviewers' notes, an adjudicator's note
and account names.  Each payload carries its own tag (``window.__pwned_<tag>=1``, a link to
``<tag>.evil.example``), so one crawl of every page as every role judges every kind at once: the kind of tag
``t`` is BREACHED when ``window.__pwned_t`` is set, an ``<a>`` points at ``t.evil.example``, or an element with
an event-handler attribute naming ``t`` is in a page, and OK when none is and the payload's text showed on at
least one page.

One server, one chromium and one crawl serve every kind of a run (``world()``; ``close()`` ends them); the
library kinds run in child processes (``--probe NAME DIR``).  The web section takes about five minutes on two
cores.
"""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
OK, CRASH, BREACHED = "OK", "CRASH", "BREACHED"

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# As tests/e2e/test_e2e_browser.py launches it.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
# Seconds the server has to answer its health check, a page to draw, a probe child to end.
START_TIMEOUT_S = 90
PAGE_TIMEOUT_MS = 60_000
PROBE_TIMEOUT_S = 180
WIDTH, HEIGHT = 1400, 1000
MB = 1024 * 1024
# E1: three anonymous 150 MB uploads; the server's resident memory may move by at most 50 MB.
UPLOAD_MB, UPLOADS, RSS_SLACK_MB = 150, 3, 50
# What objrel.app.text puts where an autolink would start: invisible, removed before text is compared.
WORD_JOINER = "\u2060"
EVIL = "evil.example"


@dataclass(frozen=True)
class Verdict:
    status: str
    answer: str


KINDS: dict[str, Callable] = {}


def kind(name: str):
    def deco(fn):
        if name in KINDS:
            raise ValueError(f"web kind {name!r} registered twice")
        KINDS[name] = fn
        return fn
    return deco


def held(ok: bool, answer: str) -> Verdict:
    return Verdict(OK if ok else BREACHED, answer)


def passphrase(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "-", name) + "-long-passphrase"


# ---------------------------------------------------------------- payloads, each with its own tag

def img(tag: str) -> str:
    return f'<img src=x onerror="window.__pwned_{tag}=1">'


def script(tag: str) -> str:
    return f"<script>window.__pwned_{tag}=1</script>"


def svg(tag: str) -> str:           # script without a "/" (a file name holds none)
    return f"<svg onload=window.__pwned_{tag}=1>"


def md_link(tag: str) -> str:
    return f"[click](http://{tag}.{EVIL}/x)"


def md_link_no_slash(tag: str) -> str:
    return f"[click](http:{tag}.{EVIL})"


def bare_url(tag: str) -> str:
    return f"http://{tag}.{EVIL}/y"


def www(tag: str) -> str:
    return f"www.{tag}.{EVIL}"


def email(tag: str) -> str:
    return f"x@{tag}.{EVIL}"


def plot_link(tag: str) -> str:
    return f'<a href="http://{tag}.{EVIL}/p">p</a>'


def js_url(tag: str) -> str:
    return f"javascript:window.__pwned_{tag}=1"


# (kind suffix, field words, tag, payload maker); the tag names the field and the payload, nothing else
# shares it.  Sample ids take any text; file names no "/"; account names only letters, digits, ". _ - @".
SAMPLE_IDS = [("img", "sid1", img), ("script", "sid2", script), ("md-link", "sid3", md_link),
              ("bare-url", "sid4", bare_url), ("www", "sid5", www), ("email", "sid6", email),
              ("js-url", "sid7", js_url)]
FILE_NAMES = [("img", "file1", img), ("svg", "file2", svg), ("md-link", "file3", md_link_no_slash),
              ("www", "file4", www), ("email", "file5", email)]
# The model's three classes (red, green, blue) and the dataset's categories.
CATEGORY_PARTS = [[("plot-link", "cat1", plot_link), ("md-link", "cat2", md_link), ("img", "cat3", img)],
                  [("www", "cat4", www), ("script", "cat5", script)],
                  [("bare-url", "cat6", bare_url)]]
RUN_NAME_PARTS = [("md-link", "run1", md_link), ("plot-link", "run2", plot_link), ("www", "run3", www),
                  ("img", "run4", img), ("script", "run5", script)]
NOTE_PARTS = [("md-link", "note1", md_link), ("bare-url", "note2", bare_url), ("www", "note3", www),
              ("email", "note4", email), ("img", "note5", img), ("script", "note6", script)]
DECISION_PARTS = [("plot-link", "dec1", plot_link), ("md-link", "dec2", md_link), ("www", "dec3", www),
                  ("img", "dec4", img)]
ACCOUNT_PARTS = [("www", "acct1", www), ("email", "acct2", email)]


def _joined(parts) -> str:
    return " ".join(make(tag) for _, tag, make in parts)


CLASSES = [_joined(p) for p in CATEGORY_PARTS]
RUN_NAME = _joined(RUN_NAME_PARTS)
NOTE = _joined(NOTE_PARTS) + " **b** :red[x] $x$"
DECISION_NOTE = "decided: " + _joined(DECISION_PARTS)
# Account names have at most 40 characters: one payload each.
REVIEWER_A, REVIEWER_B = (make(tag) for _, tag, make in ACCOUNT_PARTS)
ADJUDICATOR, RUN_OPERATOR, ADMIN = "carol", "olga", "adam"
# S3: a reviewer with nothing judged yet; S4: the account whose name an anonymous visitor guesses at;
# B2/E1: a reviewer who may not upload.
FRESH_REVIEWER, GUESSED, PLAIN_REVIEWER = "rita", "sam", "rex"
RELATION = "MR-2"


def flagged_items() -> list[tuple[str, str]]:
    """(image id, file name) of the flagged items: each id one payload, the first file names one each."""
    out = []
    for i, (_, tag, make) in enumerate(SAMPLE_IDS):
        fname = f"f{i} {FILE_NAMES[i][2](FILE_NAMES[i][1])}.png" if i < len(FILE_NAMES) else f"f{i}.png"
        out.append((make(tag), fname))
    return out


def payload_model():
    """The colour model of tests/fixtures with payload class names (a ``py:`` factory: ``hostile_web``)."""
    from objrel.models import CallableClassifier

    sys.path.insert(0, str(ROOT))
    from tests.fixtures.colour_model import dominant_colour_probs

    return CallableClassifier(dominant_colour_probs, CLASSES, name="dominant-colour")


MODEL_SPEC = "py:hostile_web:payload_model"


def write_dataset(root: Path) -> Path:
    """The COCO file and its images: flagged items are a greenish patch annotated as the first class on a red
    field (the model says that class because of the field: MR-1 and MR-2 flag it); two clean items a large red
    object on a dark blue field."""
    import numpy as np
    from PIL import Image

    root.mkdir(parents=True, exist_ok=True)
    flagged = flagged_items()
    images, anns = [], []
    for i, (image_id, file_name) in enumerate(flagged + [("c1", "c1.png"), ("c2", "c2.png")], start=1):
        a = np.zeros((40, 48, 3), np.uint8)
        if i <= len(flagged):
            a[:] = (240 + i % 10, 0, 0)
            a[10:30, 12:32] = (100, 150 + i, 100)
            box = [12, 10, 20, 20]
        else:
            a[:] = (20, 20, 120)
            a[4:36, 6:42] = (220, 20, 20)
            box = [6, 4, 36, 32]
        Image.fromarray(a).save(root / file_name)
        images.append({"id": image_id, "file_name": file_name, "width": 48, "height": 40})
        anns.append({"id": i, "image_id": image_id, "category_id": 1, "bbox": box})
    path = root / "annotations.json"
    path.write_text(json.dumps({"images": images, "annotations": anns,
                                "categories": [{"id": k + 1, "name": n} for k, n in enumerate(CLASSES)]}))
    return path


def run_payload_model(store, ann: Path, name: str) -> int:
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine

    return Engine(store, RunConfig(model=MODEL_SPEC, dataset=str(ann), plan="colours3", name=name),
                  model=payload_model()).execute().run_id


def build_world(base: Path) -> tuple[str, int]:
    """The store (``base/app.db``): the payload run, the accounts, two reviewers' calls on the drawn MR-2
    sample (they disagree on two items, with payload notes), one disagreement decided with a payload note.
    Returns ``(store url, run id)``."""
    from objrel import review as R
    from objrel.access import SERVER
    from objrel.review.roles import actor_of
    from objrel.store import Store

    ann = write_dataset(base / "data")
    store = Store(base / "app.db")
    rid = run_payload_model(store, ann, RUN_NAME)
    for name, roles in ((REVIEWER_A, [R.REVIEWER]), (REVIEWER_B, [R.REVIEWER]), (ADJUDICATOR, [R.ADJUDICATOR]),
                        (RUN_OPERATOR, [R.RUN_OPERATOR]), (ADMIN, [R.ADMIN]), (FRESH_REVIEWER, [R.REVIEWER]),
                        (GUESSED, [R.REVIEWER]), (PLAIN_REVIEWER, [R.REVIEWER])):
        R.create_reviewer(store, name, passphrase(name), roles=roles)
    drawn = R.draw_review_sample(SERVER, store, rid, RELATION)
    for i, sid in enumerate(drawn):
        for who in (REVIEWER_A, REVIEWER_B):
            disagree = i < 2 and who == REVIEWER_B
            R.record_judgment(actor_of(store, who), store, rid, sid, RELATION, "fp" if disagree else "tp",
                              ["other"] if disagree else (), NOTE if i < 2 else None)
    R.adjudicate(actor_of(store, ADJUDICATOR), store, rid, drawn[0], RELATION, "tp", [], DECISION_NOTE)
    url = store.url
    store.dispose()
    return url, rid


# ---------------------------------------------------------------- the served app

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """``streamlit run serve.py`` in a folder of its own (uploads land in its var/uploads)."""

    proc: subprocess.Popen
    port: int
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_mb(self) -> float:
        """The server process's resident memory now."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError(f"no VmRSS for the server's process {self.proc.pid}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def serve(base: Path, store_url: str) -> Server:
    from objrel.engine import run_form

    cwd = base / "srv"
    (cwd / "var" / "uploads").mkdir(parents=True)
    shutil.copytree(ROOT / ".streamlit", cwd / ".streamlit")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJREL_")}
    env.update({"OBJREL_STORE": store_url, "OBJREL_LOG_DIR": str(base / "logs"),
                "PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT), str(BENCH)])),
                run_form.DATA_ROOTS_ENV: os.pathsep.join([str(run_form.DEMO_ASSETS), str(cwd / "var" / "uploads")])})
    port = free_port()
    log = base / "streamlit.log"
    # the app as it is served: behind objrel's web gate where the checkout has one (serve.py), else app.py itself
    entry = ROOT / "serve.py" if (ROOT / "serve.py").exists() else ROOT / "app.py"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(entry),
                                 "--server.headless", "true", "--server.port", str(port), "--server.address",
                                 "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType",
                                 "none"], cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    server = Server(proc, port, log)
    deadline = time.time() + START_TIMEOUT_S
    while time.time() < deadline:
        if not server.alive():
            break
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/_stcore/health")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.3)
    server.stop()
    raise RuntimeError("streamlit did not start: " + log.read_text()[-2000:])


@dataclass
class World:
    """One store, one server, one chromium for every web kind of a run."""

    base: Path
    store_url: str
    run_id: int
    server: Server
    pw: object
    browser: object
    crawled: dict | None = None
    extra: list = field(default_factory=list)

    def store(self):
        from objrel.store import Store

        return Store(self.store_url)

    def context(self):
        return self.browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})


_world: World | None = None
_world_failed: list[str] = []


def world() -> World:
    """The run's world, built on first use (a world that failed to build is not tried again)."""
    global _world
    if _world_failed:
        raise RuntimeError(f"the served app could not be set up: {_world_failed[0]}")
    if _world is None:
        try:
            _world = _build()
        except Exception as exc:
            _world_failed.append(f"{type(exc).__name__}: {str(exc)[:300]}")
            raise
    return _world


def _build() -> World:
    from playwright.sync_api import sync_playwright

    base = Path(tempfile.mkdtemp(prefix="objrel-hostile-web-"))
    url, rid = build_world(base)
    server = serve(base, url)
    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    except Exception:
        pw.stop()
        server.stop()
        raise
    return World(base, url, rid, server, pw, browser)


def close() -> None:
    """End the world's browser and server and remove its folder."""
    global _world
    w, _world = _world, None
    if w is None:
        return
    for step in (w.browser.close, w.pw.stop, w.server.stop):
        try:
            step()
        except Exception:  # noqa: BLE001 - closing what may already be gone
            pass
    for proc in w.extra:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    shutil.rmtree(w.base, ignore_errors=True)


# ---------------------------------------------------------------- driving pages

def settled(page) -> None:
    """Wait until the script run is over: no element is stale, no status widget shows."""
    page.wait_for_function("document.querySelectorAll('[data-stale=\"true\"]').length === 0 && "
                           "!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=PAGE_TIMEOUT_MS)
    page.wait_for_timeout(400)


def open_app(context, base: str, path: str = ""):
    page = context.new_page()
    page.goto(f"{base}/{path}")
    page.get_by_label("Name").wait_for(timeout=PAGE_TIMEOUT_MS)
    settled(page)
    return page


def sign_in(page, name: str, secret: str | None = None) -> None:
    page.get_by_label("Name").fill(name)
    page.get_by_label("Passphrase").fill(secret or passphrase(name))
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=PAGE_TIMEOUT_MS)
    settled(page)


def nav(page, path: str, attempts: int = 3) -> None:
    """Go to a page through the app's top bar (the session, and its sign-in, carries over)."""
    link = (page.locator("a", has_text=re.compile(r"Overview$")).first if not path
            else page.locator(f'a[href$="/{path}"]').first)
    for attempt in range(attempts):
        settled(page)
        link.click()
        try:
            if path:
                page.wait_for_url(re.compile(rf"/{path}(\?|$)"), timeout=15_000)
            break
        except Exception:
            if attempt == attempts - 1:
                raise
    page.locator("h1").first.wait_for(timeout=PAGE_TIMEOUT_MS)
    settled(page)


# ---------------------------------------------------------------- X1-X3: the crawl

# Every page of the top bar: (title, url path).
PAGES = [("Overview", ""), ("My work", "my-work"), ("Explore", "explore"), ("Review", "review"),
         ("Agreement", "agreement"), ("Runs", "runs"), ("Inspect", "inspect"), ("Shortcut", "shortcut"),
         ("Users", "users")]
ROLES = {"anonymous": None, "reviewer": REVIEWER_A, "adjudicator": ADJUDICATOR, "run operator": RUN_OPERATOR,
         "admin": ADMIN}
TAG = r"([a-z]+[0-9]+)"
# Everything the crawl reads in one frame: the __pwned_* globals set, every link's target (HTML href, SVG href /
# xlink:href), the event-handler attributes and injected <script> texts that name a tag, and the text.
PROBE = """() => ({
  pwned: Object.keys(window).filter(k => k.startsWith('__pwned')),
  links: Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href') || a.getAttribute('xlink:href')
                                                          || (a.href && a.href.baseVal) || String(a.href || '')),
  handlers: Array.from(document.querySelectorAll('*')).flatMap(e => Array.from(e.attributes)
      .filter(a => a.name.startsWith('on') && a.value.includes('__pwned')).map(a => e.tagName + ' ' + a.value)),
  scripts: Array.from(document.querySelectorAll('script')).map(s => s.textContent)
      .filter(t => t.includes('__pwned')),
  text: document.body ? document.body.textContent : '',
})"""


@dataclass(frozen=True)
class Crawl:
    """What the crawl saw: per tag, the places (role / page) where it ran, linked or was injected, and where
    its text showed; ``errors``: pages that could not be visited."""

    breaches: dict
    shown: dict
    errors: tuple


def _link_tags(href: str) -> set[str]:
    """The tags a link's target carries as an attack: a ``javascript:`` URL, or a host under ``evil.example``
    (a link of the app's own, to one of its pages with a payload in its query, is none)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(href.strip())
        scheme = parts.scheme.lower()
        if scheme == "javascript":
            return _tags_in(href) or {"javascript"}
        if scheme == "mailto":
            host = parts.path.rsplit("@", 1)[-1]
        elif scheme in ("http", "https"):
            host = parts.hostname or parts.path.lstrip("/").split("/")[0]
        else:
            host = parts.hostname or ""
    except ValueError:
        return set()
    host = host.lower()
    return set(re.findall(TAG + r"\." + re.escape(EVIL) + "$", host)) or ({"evil"} if host.endswith(EVIL) else set())


def _tags_in(text: str) -> set[str]:
    found = set(re.findall(r"__pwned_" + TAG, text))
    found |= set(re.findall(TAG + r"\." + re.escape(EVIL), text.lower()))
    return found


# Roles that also open the Review page on each flagged item by its URL (the item's id and file name in full).
ITEM_ROLES = ("adjudicator",)


def _read(page, where: str, breaches: dict, shown: dict) -> None:
    """Probe every frame of ``page`` (at ``where``) into ``breaches`` and ``shown`` (tag -> places)."""
    for frame in page.frames:
        try:
            found = frame.evaluate(PROBE)
        except Exception:  # noqa: BLE001 - a frame gone while read: read the others
            continue
        for key in found["pwned"]:
            breaches.setdefault(key[len("__pwned_"):], []).append(f"script ran on {where}")
        for href in found["links"]:
            for tag in _link_tags(href):
                breaches.setdefault(tag, []).append(f"link to {href} on {where}")
        for h in found["handlers"] + found["scripts"]:
            for tag in _tags_in(h):
                breaches.setdefault(tag, []).append(f"injected {h[:40]!r} on {where}")
        for tag in _tags_in(found["text"].replace(WORD_JOINER, "")):
            shown.setdefault(tag, []).append(where)


def crawl() -> Crawl:
    """Visit every page of the top bar as every role, each in a browser context of its own (once per run)."""
    from urllib.parse import urlencode

    w = world()
    if w.crawled is None:
        breaches: dict[str, list[str]] = {}
        shown: dict[str, list[str]] = {}
        errors = []
        for role, name in ROLES.items():
            context = w.context()
            try:
                page = open_app(context, w.server.base)
                if name:
                    sign_in(page, name)
                for title, path in PAGES:
                    try:
                        nav(page, path)
                    except Exception as exc:  # noqa: BLE001 - said in the verdicts of the kinds it touches
                        errors.append(f"{role}/{title}: {type(exc).__name__}")
                    _read(page, f"{role}/{title}", breaches, shown)
                if role in ITEM_ROLES:
                    for n, (sid, _) in enumerate(flagged_items(), start=1):
                        query = urlencode({"run": w.run_id, "relation": RELATION, "item": sid, "queue": "all"})
                        try:
                            page.goto(f"{w.server.base}/review?{query}")
                            page.locator("h1").first.wait_for(timeout=PAGE_TIMEOUT_MS)
                            settled(page)
                        except Exception as exc:  # noqa: BLE001
                            errors.append(f"{role}/Review item {n}: {type(exc).__name__}")
                        _read(page, f"{role}/Review item {n}", breaches, shown)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{role}: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
            finally:
                context.close()
        w.crawled = Crawl(breaches, shown, tuple(errors))
    return w.crawled


def crawl_kind(tag: str, field_words: str, payload: str):
    def judge(ctx) -> Verdict:
        c = crawl()
        if tag in c.breaches:
            return Verdict(BREACHED, f"{payload} in a {field_words}: " + "; ".join(sorted(set(c.breaches[tag]))[:3]))
        pages = sorted(set(c.shown.get(tag, ())))
        if not pages:
            why = f" (pages not visited: {', '.join(c.errors[:3])})" if c.errors else ""
            return Verdict(CRASH, f"{payload} in a {field_words} showed on no page: the attack was not made{why}")
        return Verdict(OK, f"shown as text on {len(pages)} pages ({', '.join(pages[:3])}...), never ran or linked")
    return judge


CRAWL_FIELDS = [("sample-id", "COCO image id", SAMPLE_IDS), ("file-name", "COCO file name", FILE_NAMES),
                ("category", "category (class) name", [p for parts in CATEGORY_PARTS for p in parts]),
                ("run-name", "run name", RUN_NAME_PARTS), ("note", "reviewer's note", NOTE_PARTS),
                ("decision-note", "adjudicator's note", DECISION_PARTS), ("account-name", "account name",
                                                                          ACCOUNT_PARTS)]
for _field, _words, _parts in CRAWL_FIELDS:
    for _payload, _tag, _make in _parts:
        _x = "x1" if _payload in ("img", "script", "svg", "js-url") else "x2" if "link" in _payload else "x3"
        kind(f"web-{_x}-{_payload}-in-{_field}")(crawl_kind(_tag, _words, _make(_tag)))


# ---------------------------------------------------------------- sessions of the served app

def session_of(context, path: str = "", name: str | None = None):
    """A page of the app in ``context`` (signed in as ``name`` when given, then on ``path``), its browser
    session id (from Streamlit's first message) and its XSRF cookie."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    w = world()
    page = context.new_page()
    found: list[str] = []

    def frames(ws):
        def on_frame(payload):
            if isinstance(payload, bytes):
                msg = ForwardMsg.FromString(payload)
                if msg.HasField("new_session") and msg.new_session.initialize.session_id:
                    found.append(msg.new_session.initialize.session_id)
        ws.on("framereceived", on_frame)

    page.on("websocket", frames)
    page.goto(w.server.base)
    page.get_by_label("Name").wait_for(timeout=PAGE_TIMEOUT_MS)
    settled(page)
    if name:
        sign_in(page, name)
    if path:
        nav(page, path)
    xsrf = next((c["value"] for c in context.cookies() if c["name"] == "_streamlit_xsrf"), "")
    if not found:
        raise RuntimeError("no browser session id in Streamlit's messages")
    return page, found[-1], xsrf


def put_upload(port: int, session_id: str, xsrf: str, n_bytes: int, serial: int, declared: int | None = None):
    """PUT one multipart file of ``n_bytes`` to Streamlit's upload endpoint (declaring ``declared`` bytes when
    given); its HTTP status, or the error that ended it (the server answered early and closed)."""
    boundary = "objrelboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big{serial}.zip\"\r\n"
            f"Content-Type: application/zip\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.putrequest("PUT", f"/_stcore/upload_file/{session_id}/file-{serial}")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Content-Length", str(declared if declared is not None else len(head) + n_bytes + len(tail)))
        conn.putheader("X-Xsrftoken", xsrf)
        conn.putheader("Cookie", f"_streamlit_xsrf={xsrf}")
        conn.putheader("Origin", f"http://127.0.0.1:{port}")
        conn.endheaders()
        conn.send(head)
        chunk = b"\0" * MB
        for _ in range(n_bytes // MB):
            conn.send(chunk)
        conn.send(tail)
        return conn.getresponse().status
    except OSError as exc:
        try:
            return conn.getresponse().status
        except Exception:  # noqa: BLE001 - the connection is gone: what ended it is the answer
            return type(exc).__name__
    finally:
        conn.close()


def uploads_kind(who: str | None, path: str, words: str):
    def judge(ctx) -> Verdict:
        w = world()
        context = w.context()
        try:
            _, sid, xsrf = session_of(context, path, who)
            before = w.server.rss_mb()
            answers = [put_upload(w.server.port, sid, xsrf, UPLOAD_MB * MB, i) for i in range(UPLOADS)]
            time.sleep(1.0)
            after = w.server.rss_mb()
        finally:
            context.close()
        taken = [a for a in answers if a == 200 or a == 204]
        grew = after - before
        text = (f"{UPLOADS} x {UPLOAD_MB} MB from {words}: answers {answers}, server RSS {before:.0f} -> "
                f"{after:.0f} MB")
        return held(not taken and grew <= RSS_SLACK_MB, text)
    return judge


kind("web-e1-anonymous-3x150MB-uploads")(uploads_kind(None, "", "an anonymous browser session"))
kind("web-e1-reviewer-3x150MB-uploads")(uploads_kind(PLAIN_REVIEWER, "review",
                                                     "a signed-in reviewer (who may not upload)"))


@kind("web-e1-operator-upload-past-its-grant")
def _(ctx) -> Verdict:
    """A run operator on the Runs page (granted uploads up to objrel's limit) declares a file past it."""
    w = world()
    context = w.context()
    try:
        _, sid, xsrf = session_of(context, "runs", RUN_OPERATOR)
        declared = 64 * 1024 * MB
        before = w.server.rss_mb()
        answer = put_upload(w.server.port, sid, xsrf, 8 * MB, 0, declared=declared)
        after = w.server.rss_mb()
    finally:
        context.close()
    return held(answer not in (200, 204) and after - before <= RSS_SLACK_MB,
                f"a 64 GiB declared upload from the run operator's Runs page: answer {answer}, "
                f"server RSS {before:.0f} -> {after:.0f} MB")


# ---------------------------------------------------------------- S1, S2, S5: the web gate

def other_port_page(html: str):
    """Serve ``html`` from another port of the same host (the attacker's page); returns (url, stop)."""
    body = html.encode("utf-8")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server name)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    import threading

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

    def stop():
        srv.shutdown()
        srv.server_close()
    return f"http://127.0.0.1:{srv.server_address[1]}/", stop


def session_cookies(context) -> list[dict]:
    return [c for c in context.cookies() if "objrel_session" in c["name"] and c["value"]]


WEBSOCKET_PROBE = """<!doctype html><title>elsewhere</title><script>
window.result = "pending";
const ws = new WebSocket("ws://127.0.0.1:%(port)s/_stcore/stream", ["streamlit"]);
ws.onopen = () => { window.result = "opened"; ws.close(); };
ws.onclose = (e) => { if (window.result === "pending") window.result = "refused"; };
ws.onerror = () => { if (window.result === "pending") window.result = "refused"; };
</script>"""


@kind("web-s1-cross-port-websocket-with-admins-cookie")
def _(ctx) -> Verdict:
    w = world()
    context = w.context()
    try:
        open_app(context, w.server.base)
        sign_in(context.pages[0], ADMIN)
        url, stop = other_port_page(WEBSOCKET_PROBE % {"port": w.server.port})
        try:
            page = context.new_page()
            page.goto(url)
            page.wait_for_function("window.result !== 'pending'", timeout=PAGE_TIMEOUT_MS)
            result = page.evaluate("window.result")
        finally:
            stop()
    finally:
        context.close()
    return held(result == "refused", f"a page on another port opened Streamlit's WebSocket: {result}")


READ_COOKIE = """<!doctype html><title>elsewhere</title><script>window.seen = document.cookie;</script>"""


@kind("web-s2-page-on-another-port-reads-the-session-cookie")
def _(ctx) -> Verdict:
    from objrel import review

    w = world()
    context = w.context()
    try:
        page = open_app(context, w.server.base)
        sign_in(page, ADMIN)
        in_app = page.evaluate("document.cookie")
        url, stop = other_port_page(READ_COOKIE)
        try:
            other = context.new_page()
            other.goto(url)
            seen = other.evaluate("window.seen")
        finally:
            stop()
        store = w.store()
        live = [c["value"] for c in session_cookies(context) if review.session_user(store, c["value"])]
        store.dispose()
    finally:
        context.close()
    leaked = [t for t in live if t in seen or t in in_app]
    if not live:
        return Verdict(CRASH, "the signed-in browser holds no session cookie to steal")
    return held(not leaked and "objrel_session" not in seen + in_app,
                f"document.cookie on the app: {len(in_app)} chars, on another port: {len(seen)} chars; "
                f"session token among them: {bool(leaked)}")


PLANT = """<!doctype html><title>elsewhere</title><script>
document.cookie = "__Host-Http-objrel_session=%(token)s; Path=/; Secure; SameSite=Strict";
document.cookie = "objrel_session=%(token)s; Path=/; SameSite=Strict";
window.done = true;
</script>"""


@kind("web-s2-page-on-another-port-plants-a-session-cookie")
def _(ctx) -> Verdict:
    from objrel import review

    w = world()
    store = w.store()
    token = review.start_session(store, ADMIN)
    store.dispose()
    context = w.context()
    try:
        url, stop = other_port_page(PLANT % {"token": token})
        try:
            page = context.new_page()
            page.goto(url)
            page.wait_for_function("window.done === true", timeout=PAGE_TIMEOUT_MS)
        finally:
            stop()
        page = open_app(context, w.server.base)
        signed = page.get_by_text(f"Signed in as {ADMIN}").count()
    finally:
        context.close()
    return held(signed == 0, "the visitor opening the app after the planting page is "
                + ("signed in as the planted admin" if signed else "not signed in"))


def _status(port: int, method: str, path: str, headers: dict) -> int | str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path, headers=headers)
        return conn.getresponse().status
    except OSError as exc:
        return type(exc).__name__
    finally:
        conn.close()


@kind("web-s5-rebinding-host-http")
def _(ctx) -> Verdict:
    w = world()
    host = {"Host": f"rebound.example:{w.server.port}"}
    answers = {p: _status(w.server.port, "GET", p, host) for p in ("/", "/_stcore/health", "/_stcore/host-config")}
    own = _status(w.server.port, "GET", "/_stcore/health", {"Host": f"127.0.0.1:{w.server.port}"})
    if own != 200:
        return Verdict(CRASH, f"the app's own host name got {own}")
    return held(all(a != 200 for a in answers.values()), f"Host rebound.example: {answers}")


@kind("web-s5-rebinding-host-websocket")
def _(ctx) -> Verdict:
    import base64

    w = world()
    key = base64.b64encode(os.urandom(16)).decode()
    headers = {"Host": f"rebound.example:{w.server.port}", "Origin": f"http://rebound.example:{w.server.port}",
               "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": key,
               "Sec-WebSocket-Version": "13", "Sec-WebSocket-Protocol": "streamlit"}
    answer = _status(w.server.port, "GET", "/_stcore/stream", headers)
    return held(answer != 101, f"a WebSocket handshake for Host rebound.example: {answer}")


# ---------------------------------------------------------------- S3, S4, R1: sessions that ended

@kind("web-s3-open-tab-saves-no-call-after-end-all-sessions")
def _(ctx) -> Verdict:
    from objrel import review

    w = world()
    context = w.context()
    try:
        page = open_app(context, w.server.base)
        sign_in(page, FRESH_REVIEWER)
        nav(page, "review")
        button = page.get_by_role("button", name="True positive")
        button.first.wait_for(timeout=PAGE_TIMEOUT_MS)
        other = context.new_page()                   # a second tab of the same browser
        other.goto(w.server.base)
        other.get_by_text(f"Signed in as {FRESH_REVIEWER}").wait_for(timeout=PAGE_TIMEOUT_MS)
        settled(other)
        other.get_by_role("button", name="End all my sessions").click()
        other.get_by_label("Passphrase").wait_for(timeout=PAGE_TIMEOUT_MS)
        store = w.store()
        live = review.live_sessions(store, FRESH_REVIEWER)
        if button.count():
            button.first.click(timeout=10_000)
            page.wait_for_timeout(3000)
        calls = [j for j in review.judgments(store, w.run_id) if j.reviewer == FRESH_REVIEWER]
        store.dispose()
    finally:
        context.close()
    if live:
        return Verdict(CRASH, f"'End all my sessions' left {live} sessions live: the attack was not set up")
    return held(not calls, f"the first tab's call after 'End all my sessions': {len(calls)} saved")


@kind("web-s4-anonymous-failed-sign-ins-lock-no-name-out")
def _(ctx) -> Verdict:
    from objrel.review.accounts import THROTTLE_AFTER_FAILURES

    w = world()
    attacker, owner = w.context(), w.context()
    try:
        page = open_app(attacker, w.server.base)
        for _ in range(THROTTLE_AFTER_FAILURES + 3):
            page.get_by_label("Name").fill(GUESSED)
            page.get_by_label("Passphrase").fill("a-wrong-guess-of-the-passphrase")
            page.get_by_role("button", name="Sign in", exact=True).click()
            settled(page)
        mine = open_app(owner, w.server.base)
        mine.get_by_label("Name").fill(GUESSED)
        mine.get_by_label("Passphrase").fill(passphrase(GUESSED))
        mine.get_by_role("button", name="Sign in", exact=True).click()
        mine.wait_for_function(f"document.body.innerText.includes('Signed in as {GUESSED}') || "
                               "document.body.innerText.includes('Too many failed') || "
                               "document.body.innerText.includes('wrong passphrase')", timeout=PAGE_TIMEOUT_MS)
        text = " ".join(mine.inner_text("body").split())
        ok = f"Signed in as {GUESSED}" in text
        text = "signed in at once" if ok else re.sub(r".*?((Too many|Unknown name)[^.]*\.).*", r"\1", text)[:100]
    finally:
        attacker.close()
        owner.close()
    return held(ok, f"after {THROTTLE_AFTER_FAILURES + 3} anonymous failed sign-ins as {GUESSED!r}, its owner: "
                    f"{text}")


@kind("web-r1-signed-out-operators-runs-page-cancels-nothing")
def _(ctx) -> Verdict:
    import datetime as dt

    from objrel.review import sessions

    w = world()
    store = w.store()
    holder = subprocess.Popen(["sleep", "600"])        # the run's live process, as the Runs page sees it
    w.extra.append(holder)
    record = store.get_run(w.run_id)
    t0 = dt.datetime.now(dt.timezone.utc)
    store.update_run(w.run_id, status="running", pid=holder.pid, started_at=t0, heartbeat_at=t0)
    context = w.context()
    try:
        page = open_app(context, w.server.base)
        sign_in(page, RUN_OPERATOR)
        nav(page, "runs")
        cancel = page.get_by_role("button", name="Cancel", exact=True)
        cancel.first.wait_for(timeout=PAGE_TIMEOUT_MS)
        settled(page)
        ended = sessions.end_sessions(store, RUN_OPERATOR, sessions.SIGN_OUT_EVERYWHERE)
        page.wait_for_timeout(5000)                     # the page's history refreshes every 2 s on its own
        offered = cancel.count() > 0
        if offered:
            cancel.first.click(timeout=5000)
            page.wait_for_timeout(4000)
        asked = store.cancel_requested(w.run_id)
    finally:
        context.close()
        store.update_run(w.run_id, status=record.status, pid=record.pid, started_at=record.started_at,
                         heartbeat_at=record.heartbeat_at, cancel_requested=False)
        store.dispose()
        holder.kill()
        holder.wait()
    if not ended:
        return Verdict(CRASH, "the run operator had no session to end: the attack was not set up")
    return held(not asked, f"after a sign-out elsewhere: Cancel still offered {offered}, run asked to stop {asked}")


# ---------------------------------------------------------------- library kinds, each in a child process

PROBES: dict[str, Callable[[Path], tuple[bool, str]]] = {}
# LIME samples per explanation: enough for LIME to fit, few enough for the colour model to answer at once.
FEW = 20
# Seconds a probe's held work waits for the requests made beside it.
HOLD_S = 60


def probe_kind(name: str):
    """Register ``fn(folder) -> (held, answer)`` as the kind ``name``, run in a child process."""
    def deco(fn):
        PROBES[name] = fn

        @kind(name)
        def judge(ctx) -> Verdict:
            folder = Path(ctx.dir) if ctx is not None else Path(tempfile.mkdtemp(prefix="objrel-web-probe-"))
            folder.mkdir(parents=True, exist_ok=True)
            env = {k: v for k, v in os.environ.items() if not k.startswith("OBJREL_")}
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT), str(BENCH)]))
            try:
                done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--probe", name, str(folder)],
                                      cwd=folder, env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                                      stdin=subprocess.DEVNULL)
            except subprocess.TimeoutExpired:
                return Verdict(CRASH, f"hung: killed after {PROBE_TIMEOUT_S} s")
            lines = [s for s in done.stdout.splitlines() if s.startswith("{")]
            if done.returncode != 0 or not lines:
                tail = [s for s in done.stderr.strip().splitlines() if s.strip()]
                return Verdict(CRASH, f"exit {done.returncode}: {tail[-1] if tail else 'no answer'}")
            out = json.loads(lines[-1])
            return held(out["held"], out["answer"])
        return fn
    return deco


def run_probe(name: str, folder: str) -> int:
    """Child side: run probe ``name`` in ``folder`` and print ``{"held": ..., "answer": ...}``."""
    os.chdir(folder)
    ok, answer = PROBES[name](Path(folder))
    print(json.dumps({"held": bool(ok), "answer": answer}), flush=True)
    return 0


def _attempt(call):
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the probe looks at what came back either way
        return exc


def _account(store, name: str, roles):
    """The actor of account ``name`` with ``roles``, loaded from the store as the app loads it (made without a
    passphrase: a provider's subject)."""
    from objrel.review.accounts import ensure_oidc_reviewer
    from objrel.review.roles import actor_of, grant_as_operator

    ensure_oidc_reviewer(store, name, f"hostile-subject-{name}")
    grant_as_operator(store, name, roles)
    return actor_of(store, name)


def _payload_run(d: Path):
    """A store in ``d`` with one payload-model run; ``(store, run id)``."""
    from objrel.store import Store

    store = Store(d / "probe.db")
    return store, run_payload_model(store, write_dataset(d / "data"), "probe run")


def _flagged_ids(store, rid: int) -> list[str]:
    from objrel.review.lime_ahead import ahead_keys

    return [sid for sid, _ in flagged_items() if ahead_keys(store, rid, sid, RELATION)]


def _lime_at_once(d: Path, people: list[str]) -> tuple[int, int, int]:
    """Each of ``people`` asks for LIME of another flagged item at the same moment; the admitted ones hold
    their slot until every request has been answered.  Returns (asked, computing at once, refused)."""
    import threading

    from objrel import review as R
    from objrel.review.lime_ahead import ahead_keys
    from objrel.review.lime_pair import explain_pair

    store, rid = _payload_run(d)
    actors = {n: _account(store, n, [R.REVIEWER]) for n in set(people)}
    sids = _flagged_ids(store, rid)
    model = payload_model()
    computing, answered, release = set(), [], threading.Event()
    lock = threading.Lock()

    def ask(i: int, who: str) -> None:
        sid = sids[i % len(sids)]

        def hold(share, text):
            with lock:
                computing.add(i)
            release.wait(HOLD_S)

        out = _attempt(lambda: explain_pair(actors[who], store, model, rid, sid, ahead_keys(store, rid, sid,
                                                                                              RELATION)[1],
                                            FEW + i, progress=hold))
        with lock:
            answered.append((i, out))

    threads = [threading.Thread(target=ask, args=(i, who)) for i, who in enumerate(people)]
    for t in threads:
        t.start()
    deadline = time.time() + HOLD_S
    while time.time() < deadline:
        with lock:
            if len(computing | {i for i, _ in answered}) == len(people):
                break
        time.sleep(0.05)
    at_once = len(computing)
    release.set()
    for t in threads:
        t.join(HOLD_S)
    refused = sum(1 for _, out in answered if isinstance(out, Exception) and "nothing started" in str(out))
    return len(people), at_once, refused


@probe_kind("web-e2-one-reviewer-6-lime-at-once")
def _(d: Path):
    from objrel import work_queue

    asked, at_once, refused = _lime_at_once(d, ["alice"] * 6)
    cap = work_queue.max_per_person()
    return (0 < at_once <= cap and refused == asked - at_once,
            f"{asked} LIME requests of one reviewer at once: {at_once} computed at once, {refused} refused "
            f"(cap per person {cap})")


@probe_kind("web-e2-three-reviewers-9-lime-at-once")
def _(d: Path):
    from objrel import work_queue

    asked, at_once, refused = _lime_at_once(d, ["alice", "bob", "cora"] * 3)
    cap = work_queue.max_work()
    return (0 < at_once <= cap and refused == asked - at_once,
            f"{asked} LIME requests of three reviewers at once: {at_once} computed at once, {refused} refused "
            f"(server cap {cap})")


@probe_kind("web-e2-lime-ahead-beyond-the-servers-cap")
def _(d: Path):
    import threading

    from objrel import review as R
    from objrel.access import SERVER
    from objrel.review.lime_ahead import LIME_KIND, ahead_keys, start_lime_job
    from objrel.review.lime_pair import explain_pair
    from objrel.store import review_jobs

    os.environ["OBJREL_MAX_WORK"] = "1"            # this server runs one costly job at a time
    store, rid = _payload_run(d)
    alice, bob = _account(store, "alice", [R.REVIEWER]), _account(store, "bob", [R.REVIEWER])
    R.draw_review_sample(SERVER, store, rid, RELATION)
    sid = _flagged_ids(store, rid)[0]
    inside, go_on = threading.Event(), threading.Event()
    worker = threading.Thread(target=lambda: _attempt(lambda: explain_pair(
        alice, store, payload_model(), rid, sid, ahead_keys(store, rid, sid, RELATION)[1], FEW,
        progress=lambda *a: (inside.set(), go_on.wait(HOLD_S)))))
    worker.start()
    started = []
    try:
        if not inside.wait(HOLD_S):
            return False, "the LIME holding the server's slot never began: the attack was not set up"
        ahead = _attempt(lambda: start_lime_job(bob, store, rid, RELATION, num_samples=FEW, tied=True))
        row = review_jobs.latest_job(store, LIME_KIND, rid, RELATION)
        if row is not None and row["pid"] is not None:
            started.append(int(row["pid"]))
    finally:
        go_on.set()
        worker.join(HOLD_S)
        for pid in started:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
    return (not started, f"LIME ahead with the server's one slot taken: {getattr(ahead, 'status', ahead)!s:.80}; "
                         f"processes started: {len(started)}")


REPORT_SESSIONS = 10


@probe_kind("web-e3-ten-anonymous-report-builds-at-once")
def _(d: Path):
    import threading

    import objrel.analysis.report as report_module
    from objrel.access import ANONYMOUS
    from objrel.analysis.shared_report import report_html

    store, rid = _payload_run(d)
    real, built = report_module.build_report, []

    def counted(*args, **kwargs):      # the real build, counted
        built.append(1)
        return real(*args, **kwargs)

    report_module.build_report = counted
    gate, got = threading.Barrier(REPORT_SESSIONS), [None] * REPORT_SESSIONS

    def ask(i: int) -> None:
        gate.wait()
        got[i] = _attempt(lambda: report_html(ANONYMOUS, store, rid))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(REPORT_SESSIONS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PROBE_TIMEOUT_S)
    served = [g for g in got if isinstance(g, str)]
    copies = len({id(g) for g in served})
    return (len(built) == 1 and copies <= 1,
            f"{REPORT_SESSIONS} anonymous report requests at once: {len(built)} builds, {len(served)} served, "
            f"{copies} distinct copies in memory")


def _bench_pids(root: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"objrel.studies.shortcut.bench" in cmd and any(str(root).encode() in c for c in cmd):
                found.append(int(entry.name))
    return found


@probe_kind("web-e4-three-quick-benchmark-starts-at-once")
def _(d: Path):
    import threading

    from objrel import review as R
    from objrel.store import Store
    from objrel.studies.shortcut.browse import start_quick_benchmark

    olga = _account(Store(d / "accounts.db"), "olga", [R.RUN_OPERATOR])
    root = d / "shortcut"
    gate, outcomes = threading.Barrier(3), [None] * 3

    def start(i: int) -> None:
        gate.wait()
        outcomes[i] = _attempt(lambda: start_quick_benchmark(olga, root))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HOLD_S)
    time.sleep(1.0)
    pids = _bench_pids(root)
    for pid in pids:                   # the benchmarks themselves are not the point: ended by their ids
        os.kill(pid, 15)
    refused = sum(isinstance(o, Exception) for o in outcomes)
    return len(pids) <= 1 and refused == 2, f"3 starts at once: {len(pids)} benchmark processes, {refused} refused"


# ---------------------------------------------------------------- B1, B2: blindness

SECRET_NOTE = "bob's-secret-note"


def _blind_world(d: Path, alice_roles, drawn: int = 3, alice_judges: int | None = None):
    """A run whose MR-2 review sample is its first ``drawn`` flagged items; alice (``alice_roles``) judges the
    first ``alice_judges`` of them (all by default) tp, bob all of them, fp with ``SECRET_NOTE`` on the first;
    with every drawn item judged by both, both also judge the first undrawn flagged item differently.
    Returns (store, run id, alice, drawn ids, undrawn id)."""
    from objrel import review as R
    from objrel.store import reviews as review_rows

    store, rid = _payload_run(d)
    alice, bob = _account(store, "alice", alice_roles), _account(store, "bob", [R.REVIEWER])
    review_rows.store_review_sample(store, rid, RELATION, 0, lambda population: population[:drawn], replace=False)
    ids = list(R.draw_review_sample(alice, store, rid, RELATION))
    undrawn = next(s for s in _flagged_ids(store, rid) if s not in ids)
    for i, sid in enumerate(ids):
        R.record_judgment(bob, store, rid, sid, RELATION, "fp" if i == 0 else "tp", ["other"] if i == 0 else (),
                          SECRET_NOTE if i == 0 else None)
        if alice_judges is None or i < alice_judges:
            R.record_judgment(alice, store, rid, sid, RELATION, "tp", (), None)
    if alice_judges is None:
        R.record_judgment(bob, store, rid, undrawn, RELATION, "fp", ["other"], SECRET_NOTE)
        R.record_judgment(alice, store, rid, undrawn, RELATION, "tp", (), None)
    return store, rid, alice, ids, undrawn


@probe_kind("web-b1-calibration-over-an-undrawn-item")
def _(d: Path):
    from objrel import review as R
    from objrel.review.calibration import calibration

    store, rid, alice, ids, undrawn = _blind_world(d, [R.REVIEWER])
    cal = calibration(alice, store, rid, RELATION)
    items = [x.sample_id for x in cal.disagreements]
    shown = undrawn in items or SECRET_NOTE in repr([x for x in cal.disagreements if x.sample_id == undrawn])
    return not shown, f"alice's calibration lists {len(items)} disagreements; bob's call on the undrawn item " + (
        "among them" if shown else "not among them")


@probe_kind("web-b1-export-of-an-undrawn-item")
def _(d: Path):
    from objrel import review as R
    from objrel.review.export import judgment_export

    store, rid, alice, ids, undrawn = _blind_world(d, [R.REVIEWER])
    rows = judgment_export(alice, store, [rid], RELATION)
    seen = [r for r in rows if "bob" in repr(r) and undrawn in repr(r)]
    return not seen, f"alice's export: {len(rows)} rows, {len(seen)} of bob's call on the undrawn item"


def _b2(d: Path, second_role: str, look) -> tuple[bool, str]:
    """alice holds the reviewer role and ``second_role`` and still judges the open sample; ``look(alice,
    store, rid, item)`` is what she asks; held when nothing she gets holds bob's call."""
    from objrel import review as R

    store, rid, alice, ids, _ = _blind_world(d, [R.REVIEWER, second_role], alice_judges=1)
    got = _attempt(lambda: look(alice, store, rid, ids[0]))
    text = repr(got)
    leaked = SECRET_NOTE in text or "'fp'" in text or "verdict='fp'" in text
    what = f"refused: {type(got).__name__}" if isinstance(got, Exception) else f"answered {text[:60]}"
    return not leaked, f"a party to the open sample who also holds {second_role}: {what}"


@probe_kind("web-b2-adjudicator-party-pair-view")
def _(d: Path):
    from objrel.review.agreement import pair_view

    return _b2(d, "adjudicator", lambda a, s, r, item: pair_view(a, s, r, RELATION, "alice", "bob"))


@probe_kind("web-b2-admin-party-pair-view")
def _(d: Path):
    from objrel.review.agreement import pair_view

    return _b2(d, "admin", lambda a, s, r, item: pair_view(a, s, r, RELATION, "alice", "bob"))


@probe_kind("web-b2-adjudicator-party-judgment-history")
def _(d: Path):
    from objrel.review.judgments import judgment_history

    return _b2(d, "adjudicator", lambda a, s, r, item: judgment_history(a, s, r, item, RELATION, "bob"))


@probe_kind("web-b2-adjudicator-party-export")
def _(d: Path):
    from objrel.review.export import judgment_export

    return _b2(d, "adjudicator", lambda a, s, r, item: [x for x in judgment_export(a, s, [r], RELATION)
                                                        if "bob" in repr(x)])


@probe_kind("web-b2-admin-party-my-work-disputes")
def _(d: Path):
    from objrel.review.my_work import my_work

    def look(a, s, r, item):
        disputes = my_work(a, s).disputes
        return [f"verdict='fp' {x}" for x in disputes if x.run_id == r]   # any dispute of her open sample
    return _b2(d, "admin", look)


# ---------------------------------------------------------------- R2: actors not loaded from the store

def _r2(d: Path, forge) -> tuple[bool, str]:
    from objrel import review as R
    from objrel.store import Store

    store = Store(d / "accounts.db")
    actor = forge(_account(store, "rex", [R.REVIEWER]))
    got = _attempt(lambda: R.invite(actor, store, "mallory", "mallory-long-passphrase", [R.ADMIN]))
    made = any(a["name"] == "mallory" for a in R.list_accounts(store))
    return not made, f"invite by {actor!r}: " + ("the admin account was made" if made else
                                                 f"refused ({type(got).__name__})")


@probe_kind("web-r2-actor-built-by-the-caller")
def _(d: Path):
    from objrel.access import ADMIN as ADMIN_ROLE, Actor

    return _r2(d, lambda rex: Actor("rex", frozenset({ADMIN_ROLE})))


@probe_kind("web-r2-loaded-actor-with-roles-replaced")
def _(d: Path):
    import dataclasses

    from objrel.access import ADMIN as ADMIN_ROLE

    return _r2(d, lambda rex: dataclasses.replace(rex, roles=frozenset({ADMIN_ROLE})))


# ---------------------------------------------------------------- W1: no server path in a message

def _paths_in(text: str, d: Path) -> list[str]:
    """Server paths named in ``text``: the probe's folder, the checkout, any absolute path of this machine."""
    found = [p for p in {str(d), str(d.resolve()), str(ROOT)} if p in text]
    return found + re.findall(r"(?<![\w.:/])/(?:tmp|home|work|var|usr|etc|root|srv|opt)/[^\s'\"]*", text)


def _w1(d: Path, act) -> tuple[bool, str]:
    from objrel import review as R
    from objrel.store import Store

    os.environ["OBJREL_DATA_ROOTS"] = str(d / "var" / "uploads")
    store = Store(d / "uploads.db")
    olga = _account(store, "olga", [R.RUN_OPERATOR])
    got = _attempt(lambda: act(olga, store))
    if not isinstance(got, Exception):
        return False, f"not refused: {got!r:.80}"
    leaks = _paths_in(str(got), d)
    return not leaks, f"refused ({type(got).__name__}): {str(got)[:90]}" + (f"; names {leaks}" if leaks else "")


def _zip(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _png() -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (64, 64), (200, 0, 0)).save(buf, format="PNG")
    return buf.getvalue()


def _manifest(names) -> bytes:
    return json.dumps({"images": [{"path": n, "objects": [{"label": "red", "box": [16, 16, 48, 48]}]}
                                  for n in names]}).encode()


@probe_kind("web-w1-upload-a-dataset-name-that-exists")
def _(d: Path):
    from objrel.engine import manage

    def twice(olga, store):
        for _ in range(2):
            manage.upload_dataset(olga, store, "taken", _manifest(["a.png"]), _zip({"a.png": _png()}))
    return _w1(d, twice)


@probe_kind("web-w1-upload-a-zip-member-outside-its-folder")
def _(d: Path):
    from objrel.engine import manage

    return _w1(d, lambda olga, store: manage.upload_dataset(olga, store, "slip", _manifest(["a.png"]),
                                                            _zip({"a.png": _png(), "../../evil.png": _png()})))


@probe_kind("web-w1-run-form-dataset-outside-the-roots")
def _(d: Path):
    from objrel.config import RunConfig
    from objrel.engine.run_form import check_web_config

    def act(olga, store):
        return check_web_config(store, RunConfig(model="efficientnet-lite0", dataset=str(d / "elsewhere.json")))
    return _w1(d, act)


# ---------------------------------------------------------------- the section as a process of its own

@dataclass
class _Folder:
    dir: Path


def run_section(names: list[str], folder: str) -> int:
    """Run the web kinds ``names`` one after the other (one world for all), printing one JSON line per kind:
    ``{"name", "status", "answer"}``.  hostile.py runs this as a child process: Playwright, chromium and the
    threads they bring stay out of its own (capped) address space."""
    try:
        for name in names:
            d = Path(folder) / name
            d.mkdir(parents=True, exist_ok=True)
            try:
                v = KINDS[name](_Folder(d))
            except Exception as exc:  # noqa: BLE001 - the attack could not be made: say so, go on
                traceback.print_exc()
                v = Verdict(CRASH, f"benchmark error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                            if str(exc) else f"benchmark error: {type(exc).__name__}")
            print(json.dumps({"name": name, "status": v.status, "answer": v.answer}), flush=True)
    finally:
        close()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    if len(sys.argv) == 4 and sys.argv[1] == "--probe":
        sys.exit(run_probe(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 4 and sys.argv[1] == "--section":
        sys.exit(run_section(sys.argv[2].split(","), sys.argv[3]))
    sys.exit("usage: hostile_web.py --section NAME,... DIR | --probe NAME DIR (run from benchmarks/hostile.py)")
