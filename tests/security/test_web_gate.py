"""The web gate against a served app (`streamlit run serve.py`) and Debian's chromium.

Each test replays one finding of a hostile visit:

- S1: a page on another port of the same host opened Streamlit's WebSocket with a signed-in admin's cookie and
  drove the Users form.  Now a WebSocket opens only from the app's own origins.
- S2: a page on another port read the session cookie (``document.cookie``) and planted one of its choosing.  Now
  the cookie is HttpOnly with the ``__Host-Http-`` prefix: scripts neither see nor set it.
- S5: a DNS-rebinding name was answered like the app's own.  Now any Host outside the allowlist is refused.
- E1: anyone, with no account, could fill the server's memory through Streamlit's upload endpoint.  Now an upload
  reaches it only from a browser session granted it by a signed-in uploader; others are refused unread.
"""

from __future__ import annotations

import http.client
import http.server
import os
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

from objrel import review
from objrel.store import Store
from objrel.web.session_cookie import COOKIE_NAME, PLAIN_COOKIE_NAME

from tests.e2e.app_server import free_port, serving
from tests.e2e.test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, passphrase, settled

pytestmark = pytest.mark.subprocess

TIMEOUT_MS = 60_000
# The anonymous uploads of finding E1: three of 150 MB; the server's memory may move by at most 50 MB.
UPLOAD_MB = 150
UPLOADS = 3
RSS_SLACK_MB = 50
MB = 1024 * 1024


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("gate")
    store = Store(tmp / "gate.db")
    review.create_reviewer(store, "alice", passphrase("alice"), roles=(review.REVIEWER,))
    review.create_reviewer(store, "dave", passphrase("dave"), roles=(review.ADMIN,))
    with serving(tmp, store.url) as base:
        yield base, store


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@contextmanager
def other_port_page(html: str):
    """A page served by another server on another port of the same host (the attacker's); yields its URL."""
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

    port = free_port()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        srv.shutdown()
        srv.server_close()


def open_app(context, base: str):
    page = context.new_page()
    page.goto(base)
    page.get_by_text("Overview").first.wait_for(timeout=TIMEOUT_MS)
    settled(page)
    return page


def sign_in(page, name: str) -> None:
    page.get_by_label("Name").fill(name)
    page.get_by_label("Passphrase").fill(passphrase(name))
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=TIMEOUT_MS)


def session_cookie(context) -> dict | None:
    deadline = time.time() + TIMEOUT_MS / 1000
    while time.time() < deadline:
        cookie = next((c for c in context.cookies() if c["name"] == COOKIE_NAME and c["value"]), None)
        if cookie:
            return cookie
        time.sleep(0.2)
    return None


@pytest.mark.browser
def test_no_script_of_the_page_can_read_the_session_token(served, browser):
    base, store = served
    context = browser.new_context()
    page = open_app(context, base)
    sign_in(page, "alice")
    cookie = session_cookie(context)
    assert cookie is not None, [c["name"] for c in context.cookies()]
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict", cookie
    assert review.session_user(store, cookie["value"]) == "alice"
    seen = page.evaluate("document.cookie")
    assert cookie["value"] not in seen and "objrel_session" not in seen, seen
    context.close()


WEBSOCKET_PROBE = """<!doctype html><title>elsewhere</title><script>
window.result = "pending";
const ws = new WebSocket("ws://127.0.0.1:%(port)s/_stcore/stream", ["streamlit"]);
ws.onopen = () => { window.result = "opened"; ws.close(); };
ws.onclose = (e) => { if (window.result === "pending") window.result = "refused"; };
ws.onerror = () => { if (window.result === "pending") window.result = "refused"; };
</script>"""


@pytest.mark.browser
def test_a_page_on_another_port_cannot_open_a_session_with_the_visitors_cookie(served, browser):
    """S1: the admin is signed in; a page on another port opens Streamlit's WebSocket, which would carry her
    cookie (cookies are not port-scoped): the handshake is refused."""
    base, _ = served
    context = browser.new_context()
    sign_in(open_app(context, base), "dave")
    assert session_cookie(context) is not None
    port = base.rsplit(":", 1)[1]
    with other_port_page(WEBSOCKET_PROBE % {"port": port}) as url:
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("window.result !== 'pending'", timeout=TIMEOUT_MS)
        assert page.evaluate("window.result") == "refused"
    context.close()


PLANT = """<!doctype html><title>elsewhere</title><script>
document.cookie = "%(prefixed)s=%(token)s; Path=/; Secure; SameSite=Strict";
document.cookie = "%(plain)s=%(token)s; Path=/; SameSite=Strict";
window.done = true;
</script>"""


@pytest.mark.browser
def test_a_page_on_another_port_cannot_plant_a_session(served, browser):
    """S2: a page on another port writes alice's live token into the session cookie's names; the visitor who
    then opens the app is not signed in as alice."""
    base, store = served
    token = review.start_session(store, "alice")
    context = browser.new_context()
    with other_port_page(PLANT % {"prefixed": COOKIE_NAME, "plain": PLAIN_COOKIE_NAME, "token": token}) as url:
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("window.done === true", timeout=TIMEOUT_MS)
    assert not [c for c in context.cookies() if c["name"] == COOKIE_NAME]   # the browser refused the prefixed name
    page = open_app(context, base)
    assert page.get_by_text("Signed in as alice").count() == 0
    page.get_by_role("button", name="Sign in", exact=True).wait_for(timeout=TIMEOUT_MS)
    context.close()


def test_a_host_name_outside_the_allowlist_is_refused(served):
    """S5: a rebinding DNS name pointing at this machine reaches the server with its own Host header."""
    base, _ = served
    port = int(base.rsplit(":", 1)[1])
    for path in ("/", "/_stcore/health", "/_stcore/host-config"):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", path, headers={"Host": f"rebound.example:{port}"})
        answer = conn.getresponse()
        assert answer.status == 421, (path, answer.status)
        conn.close()
    assert urllib.request.urlopen(f"{base}/_stcore/health", timeout=10).status == 200   # its own name still works


def _session_id_and_xsrf(browser, base: str) -> tuple[str, str, object]:
    """An anonymous visitor's browser session id (from Streamlit's first message) and XSRF cookie."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    context = browser.new_context()
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
    page.goto(base)
    page.get_by_text("Overview").first.wait_for(timeout=TIMEOUT_MS)
    settled(page)
    xsrf = next(c["value"] for c in context.cookies() if c["name"] == "_streamlit_xsrf")
    assert found, "no session id in Streamlit's messages"
    return found[0], xsrf, context


def _put(port: int, session_id: str, xsrf: str, n_bytes: int, serial: int) -> int | str:
    """PUT one multipart file of ``n_bytes`` to the upload endpoint; its status, or the error that ended it."""
    boundary = "objrelboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big{serial}.zip\"\r\n"
            f"Content-Type: application/zip\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.putrequest("PUT", f"/_stcore/upload_file/{session_id}/file-{serial}")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        conn.putheader("Content-Length", str(len(head) + n_bytes + len(tail)))
        conn.putheader("X-Xsrftoken", xsrf)
        conn.putheader("Cookie", f"_streamlit_xsrf={xsrf}")
        conn.endheaders()
        conn.send(head)
        chunk = b"\0" * MB
        for _ in range(n_bytes // MB):
            conn.send(chunk)
        conn.send(tail)
        return conn.getresponse().status
    except OSError as e:       # the server answered early and closed: the body was not read
        try:
            return conn.getresponse().status
        except Exception:
            return type(e).__name__
    finally:
        conn.close()


def _server_rss_mb(port: int) -> float:
    """Resident memory of the process listening on ``port`` (Linux: its socket's inode among /proc's fds)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if int(f[1].rsplit(":", 1)[1], 16) == port and f[3] == "0A":     # 0A: LISTEN
                inodes.add(f[9])
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            links = {os.readlink(fd) for fd in (proc / "fd").iterdir()}
        except OSError:
            continue
        if any(f"socket:[{i}]" in links for i in inodes):
            rss_pages = int((proc / "statm").read_text().split()[1])
            return rss_pages * os.sysconf("SC_PAGE_SIZE") / MB
    raise AssertionError(f"no process listens on port {port}")


@pytest.mark.browser
def test_anonymous_uploads_leave_the_servers_memory_where_it_was(served, browser):
    """E1: three 150 MB PUTs from an anonymous browser session (its own session id and XSRF token) to
    Streamlit's upload endpoint."""
    base, _ = served
    port = int(base.rsplit(":", 1)[1])
    session_id, xsrf, context = _session_id_and_xsrf(browser, base)
    before = _server_rss_mb(port)
    answers = [_put(port, session_id, xsrf, UPLOAD_MB * MB, i) for i in range(UPLOADS)]
    time.sleep(1.0)
    after = _server_rss_mb(port)
    print(f"server RSS before {before:.0f} MB, after {UPLOADS} x {UPLOAD_MB} MB anonymous uploads {after:.0f} MB "
          f"(answers {answers})")
    assert all(a == 403 or isinstance(a, str) for a in answers), answers
    assert after - before <= RSS_SLACK_MB, (before, after, answers)
    context.close()


def test_the_cookie_route_takes_only_a_live_code_from_the_apps_own_origin(served):
    """The route that sets the session cookie: a code it never issued, or any request from another origin or
    with no origin, gets no cookie."""
    base, _ = served
    port = int(base.rsplit(":", 1)[1])
    for origin in (base, f"http://127.0.0.1:{port + 1}", None):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"Origin": origin} if origin else {}
        conn.request("POST", "/_objrel/session", body=b"A" * 32, headers=headers)
        answer = conn.getresponse()
        assert answer.status == 403 and answer.getheader("Set-Cookie") is None, (origin, answer.status)
        conn.close()
