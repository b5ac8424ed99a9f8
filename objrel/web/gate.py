"""The web gate: one ASGI middleware in front of every request the server answers.

In this order, each refusal a short plain-text answer that reads nothing further of the request:

1. The Host header must be one of the app's own (``objrel.web.origins``): a rebinding DNS name is refused.
2. A WebSocket (Streamlit's session channel) must come from one of the app's own origins: a page on another
   port or host cannot open a session with the visitor's cookie.
3. A request that changes something (any method but GET, HEAD and OPTIONS) must come from one of the app's own
   origins when it names one, and must name one to reach objrel's own routes.
4. An upload to Streamlit's endpoint must be granted to its browser session (``objrel.web.upload_grants``),
   sent with that account's session cookie, with one plain Content-Length (no Transfer-Encoding) within the
   grant: refused before its body is read otherwise.  Its body is counted as it arrives and cut off past the
   length it declared.

A request that repeats a header the gate decides by (Host, Origin, Content-Length, Transfer-Encoding) is refused:
no browser sends two, and a server behind may read the other one.
"""

from __future__ import annotations

import re
import threading

from objrel.web import upload_grants
from objrel.web.origins import current_allowlist
from objrel.web.session_cookie import COOKIE_NAME, PLAIN_COOKIE_NAME, ROUTE_PATH

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
UPLOAD_PATH = re.compile(r"^/_stcore/upload_file/(?P<session>[^/]+)/[^/]+$")
# Streamlit's code for a WebSocket closed as a policy refusal (its handshake gets HTTP 403).
POLICY_CLOSE = 1008

# Headers the gate decides by: a request naming one twice is refused.
SINGLE_HEADERS = ("host", "origin", "content-length", "transfer-encoding")

_serving = threading.Event()


def serving() -> bool:
    """Whether this process serves the app through the gate (``WebGate`` has been built)."""
    return _serving.is_set()


def _headers(scope) -> tuple[dict[str, str], set[str]]:
    """The request's headers by lower-case name (the first of each), and the names it repeats."""
    out: dict[str, str] = {}
    repeated: set[str] = set()
    for k, v in scope.get("headers", ()):
        key = k.decode("latin-1").lower()
        if key in out:
            repeated.add(key)
        else:
            out[key] = v.decode("latin-1")
    return out, repeated


def _session_cookie(cookie_header: str | None) -> str | None:
    """The session token in a Cookie header (either of the session cookie's names), or None."""
    from http.cookies import CookieError, SimpleCookie

    jar = SimpleCookie()
    try:
        jar.load(cookie_header or "")
    except CookieError:
        return None
    for name in (COOKIE_NAME, PLAIN_COOKIE_NAME):
        if name in jar and jar[name].value:
            return jar[name].value
    return None


def refusal(scope, store_for_uploads=None) -> tuple[int, str] | None:
    """Why the gate refuses the request ``scope`` (HTTP status, reason), or None to let it through.
    ``store_for_uploads``: a callable returning the app's store, asked only for an upload."""
    allow = current_allowlist()
    headers, repeated = _headers(scope)
    if repeated & set(SINGLE_HEADERS):
        return 400, f"a request names {', '.join(sorted(repeated & set(SINGLE_HEADERS)))} once"
    if not allow.host_ok(headers.get("host")):
        return 421, "this server answers only its own host names"
    origin = headers.get("origin")
    if scope["type"] == "websocket":
        return None if allow.origin_ok(origin) else (403, "a session opens only from the app's own pages")
    method = scope.get("method", "GET").upper()
    path = scope.get("path", "")
    if method not in SAFE_METHODS:
        if origin is not None and not allow.origin_ok(origin):
            return 403, "changes are accepted only from the app's own pages"
        if origin is None and path == ROUTE_PATH:
            return 403, "changes are accepted only from the app's own pages"
        upload = UPLOAD_PATH.match(path)
        if upload and method == "PUT":
            if "transfer-encoding" in headers:
                return 411, "an upload states its length (Content-Length) and is sent in one piece"
            store = store_for_uploads() if store_for_uploads else None
            return upload_grants.check(store, upload["session"], headers.get("content-length"),
                                       _session_cookie(headers.get("cookie")))
    return None


def _counted(receive, limit: int):
    """``receive`` that ends the request (as a disconnect) once its body passes ``limit`` bytes."""
    seen = 0

    async def counted():
        nonlocal seen
        message = await receive()
        if message.get("type") == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                return {"type": "http.disconnect"}
        return message

    return counted


def _app_store():
    from objrel.app.caches import open_store

    return open_store()


class WebGate:
    """ASGI middleware: ``refusal`` for every HTTP request and WebSocket before the app sees it."""

    def __init__(self, app, store_for_uploads=_app_store):
        self.app = app
        self.store_for_uploads = store_for_uploads
        _serving.set()

    async def __call__(self, scope, receive, send):
        """Answer a refused request here; hand every other to the app unchanged."""
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        refused = refusal(scope, self.store_for_uploads)
        if refused is None:
            if scope["type"] == "http" and scope.get("method", "").upper() == "PUT":
                length, _ = _headers(scope)
                if "content-length" in length:     # an upload let through: no more body than it declared
                    receive = _counted(receive, int(length["content-length"]))
            return await self.app(scope, receive, send)
        status, reason = refused
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": POLICY_CLOSE, "reason": reason})
            return
        body = reason.encode("utf-8")
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode()), (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})
