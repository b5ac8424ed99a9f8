"""Which origins and hosts the app answers: an exact allowlist of scheme, host and port.

By default, the origins the server is reached at on this machine: ``http://127.0.0.1:PORT`` and
``http://localhost:PORT``, plus ``http://ADDRESS:PORT`` when it is bound to one named address, plus this
machine's host name and its addresses when it listens on every address (``0.0.0.0``).  A deployment behind
a proxy (another scheme, host or port than the server's own) names its public origins in
``OBJREL_ALLOWED_ORIGINS`` (comma-separated, e.g. ``https://objrel.example.org``); they are added to the
defaults.

A browser sends its page's origin with every WebSocket handshake and every request that changes something, and
the Host it asked for with every request: a page from another port or host (S1), or a name that a rebinding DNS
points at this machine (S5), is not on the list.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

ALLOWED_ORIGINS_ENV = "OBJREL_ALLOWED_ORIGINS"
DEFAULT_PORTS = {"http": 80, "https": 443}
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
ANY_ADDRESS = ("0.0.0.0", "::", "")


@dataclass(frozen=True)
class Allowlist:
    """``origins``: exact ``scheme://host[:port]`` texts; ``hosts``: the Host header values they imply."""

    origins: frozenset[str]
    hosts: frozenset[str]

    def origin_ok(self, origin: str | None) -> bool:
        """Whether ``origin`` (a request's Origin header) is one of the list's."""
        return origin is not None and normal_origin(origin) in self.origins

    def host_ok(self, host: str | None) -> bool:
        """Whether ``host`` (a request's Host header) names the app as one of the list's origins does."""
        return host is not None and host.strip().lower() in self.hosts


def normal_origin(text: str) -> str | None:
    """``text`` as ``scheme://host[:port]`` in lower case with a default port left out; None when it is not an
    http(s) origin (``null``, a path, another scheme)."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.query or parts.fragment or parts.username or parts.password:
        return None
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{parts.scheme}://{host}" + ("" if port in (None, DEFAULT_PORTS[parts.scheme]) else f":{port}")


def _host_of(origin: str) -> str:
    """The Host header a browser sends for ``origin`` (host, and port unless it is the scheme's default)."""
    return origin.split("://", 1)[1]


def parse_origins(text: str | None) -> list[str]:
    """The origins named in ``text`` (comma-separated); ValueError naming the first that is not an origin."""
    out = []
    for item in (text or "").split(","):
        if not item.strip():
            continue
        origin = normal_origin(item)
        if origin is None:
            raise ValueError(f"{ALLOWED_ORIGINS_ENV} holds origins such as https://objrel.example.org "
                             f"(scheme, host and an optional port); got {item.strip()!r}")
        out.append(origin)
    return out


def _own_addresses() -> list[str]:
    """This machine's IPv4 addresses under its host name (what a visitor on the network types), loopback aside."""
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        return []
    return sorted({i[4][0] for i in infos if not i[4][0].startswith("127.")})


@lru_cache(maxsize=8)
def allowlist(address: str | None, port: int, extra: str | None) -> Allowlist:
    """The allowlist of a server bound to ``address``:``port`` with the ``extra`` origins (the environment's)."""
    names = list(LOOPBACK_NAMES)
    address = (address or "").strip()
    if address in ANY_ADDRESS:
        names.append(socket.gethostname())
        names += _own_addresses()
    elif address not in names:
        names.append(address)
    origins = {normal_origin(f"http://{n}:{port}") for n in names} | set(parse_origins(extra))
    origins.discard(None)
    return Allowlist(frozenset(origins), frozenset(_host_of(o) for o in origins))


def current_allowlist() -> Allowlist:
    """The allowlist of the running Streamlit server (its address and port as configured now)."""
    from streamlit import config

    return allowlist(config.get_option("server.address"), int(config.get_option("server.port")),
                     os.environ.get(ALLOWED_ORIGINS_ENV))
