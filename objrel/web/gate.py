"""The web gate: one ASGI middleware in front of every request the server answers.

In this order, each refusal a short plain-text answer that reads nothing further of the request:

1. The Host header must be one of the app's own (``objrel.web.origins``): a rebinding DNS name is refused.
2. A WebSocket (Streamlit's session channel) must come from one of the app's own origins: a page on another
   port or host cannot open a session with the visitor's cookie.
3. A request that changes something (any method but GET, HEAD and OPTIONS) must come from one of the app's own
   origins when it names one, and must name one to reach objrel's own routes.
4. An upload to Streamlit's endpoint must be granted to its browser session (``objrel.web.upload_grants``):
   refused before its body is read otherwise, or when it declares more than its grant.
"""

from __future__ import annotations

import re
import threading

from objrel.web import upload_grants
from objrel.web.origins import current_allowlist
from objrel.web.session_cookie import ROUTE_PATH

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
UPLOAD_PATH = re.compile(r"^/_stcore/upload_file/(?P<session>[^/]+)/[^/]+$")
# Streamlit's code for a WebSocket closed as a policy refusal (its handshake gets HTTP 403).
POLICY_CLOSE = 1008

_serving = threading.Event()


def serving() -> bool:
    """Whether this process serves the app through the gate (``WebGate`` has been built)."""
    return _serving.is_set()


def _headers(scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", ()):
        key = k.decode("latin-1").lower()
        if key not in out:  # the first of a repeated header (a second Host or Origin counts for nothing)
            out[key] = v.decode("latin-1")
    return out


def refusal(scope, store_for_uploads=None) -> tuple[int, str] | None:
    """Why the gate refuses the request ``scope`` (HTTP status, reason), or None to let it through.
    ``store_for_uploads``: a callable returning the app's store, asked only for an upload."""
    allow = current_allowlist()
    headers = _headers(scope)
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
            store = store_for_uploads() if store_for_uploads else None
            return upload_grants.check(store, upload["session"], headers.get("content-length"))
    return None


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
