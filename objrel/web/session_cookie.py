"""The session cookie: set and cleared only by the server, never readable or writable by a page's scripts.

``COOKIE_NAME`` carries the ``__Host-Http-`` prefix: a browser stores a cookie of that name only from a
``Set-Cookie`` header over a secure connection (https, or http to this machine's loopback names, which browsers
count as secure), with ``Path=/``, no ``Domain`` and ``HttpOnly``.  So ``document.cookie`` never shows it, and
no script, from this origin or from a page on another port of the same host, can plant one.  A deployment
reached over plain http by another host name cannot hold a secure cookie: there the cookie is
``PLAIN_COOKIE_NAME``, still HttpOnly and SameSite=Strict (serve such a deployment over https).

Routes (``ROUTE_PATH``), both behind the web gate's origin check:

- ``POST`` with a one-time code from ``objrel.web.handoff`` as its body: the answer sets the cookie to the
  session token kept under that code.
- ``DELETE``: the answer clears the cookie (the app has already ended the session in the store).
"""

from __future__ import annotations

from objrel.review.sessions import SESSION_LIFETIME
from objrel.web import handoff
from objrel.web.origins import LOOPBACK_NAMES

COOKIE_NAME = "__Host-Http-objrel_session"
PLAIN_COOKIE_NAME = "objrel_session"
ROUTE_PATH = "/_objrel/session"
# The longest body the route reads (a one-time code is 32 characters).
MAX_BODY_BYTES = 256


def secure_context(scheme: str, host: str | None) -> bool:
    """Whether a browser at ``scheme``://``host`` keeps a secure (``__Host-Http-``) cookie."""
    from urllib.parse import urlsplit

    try:
        name = urlsplit(f"//{host or ''}").hostname or ""
    except ValueError:
        return False
    return scheme in ("https", "wss") or name in LOOPBACK_NAMES or name == "::1"


def cookie_name(scheme: str, host: str | None) -> str:
    """The session cookie's name for a browser at ``scheme``://``host``."""
    return COOKIE_NAME if secure_context(scheme, host) else PLAIN_COOKIE_NAME


def set_cookie_header(name: str, value: str, max_age: int) -> str:
    """The ``Set-Cookie`` value for the session cookie ``name`` (``max_age`` 0 clears it)."""
    secure = "; Secure" if name == COOKIE_NAME else ""
    return f"{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"


async def session_route(request):
    """``POST``: set the cookie from a one-time code; ``DELETE``: clear it."""
    from starlette.responses import Response

    name = cookie_name(request.url.scheme, request.headers.get("host"))
    if request.method == "DELETE":
        response = Response(status_code=204)
        response.headers.append("Set-Cookie", set_cookie_header(name, "", 0))
        return response
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return Response("a sign-in code is short", status_code=413, media_type="text/plain")
    token = handoff.take(body.decode("ascii", "replace").strip())
    if token is None:
        return Response("unknown or used sign-in code", status_code=403, media_type="text/plain")
    response = Response(status_code=204)
    response.headers.append("Set-Cookie", set_cookie_header(name, token, int(SESSION_LIFETIME.total_seconds())))
    response.headers["Cache-Control"] = "no-store"
    return response


def routes() -> list:
    """The Starlette routes of the session cookie."""
    from starlette.routing import Route

    return [Route(ROUTE_PATH, session_route, methods=["POST", "DELETE"])]
