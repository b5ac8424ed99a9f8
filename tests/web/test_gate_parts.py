"""The web gate's parts without a server: the origin allowlist, one-time codes, upload grants and the refusal
each kind of request gets (``objrel.web.gate.refusal`` on ASGI scopes as uvicorn builds them)."""

from __future__ import annotations

import pytest

from objrel import review
from objrel.access import UPLOAD_DATA, UPLOAD_RESULTS
from objrel.errors import NotAllowed
from objrel.review.roles import actor_of
from objrel.store import Store
from objrel.web import gate, handoff, origins, upload_grants
from objrel.web.session_cookie import COOKIE_NAME, PLAIN_COOKIE_NAME, cookie_name, set_cookie_header

PORT = 8501
MB = 1024 * 1024


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "gate.db")
    review.create_reviewer(s, "olga", "olga-passphrase", roles=(review.RUN_OPERATOR,))
    review.create_reviewer(s, "alice", "alice-passphrase", roles=(review.REVIEWER,))
    yield s
    s.dispose()


@pytest.mark.parametrize("text, expected", [
    ("http://127.0.0.1:8501", "http://127.0.0.1:8501"),
    ("HTTP://LocalHost:8501/", "http://localhost:8501"),
    ("https://objrel.example.org:443", "https://objrel.example.org"),
    ("http://objrel.example.org:80", "http://objrel.example.org"),
    ("http://[::1]:8501", "http://[::1]:8501"),
    ("null", None),
    ("file:///etc/passwd", None),
    ("http://a.example/path", None),
    ("http://user@a.example", None),
    ("http://a.example:99999", None),
])
def test_an_origin_is_scheme_host_and_port_in_one_spelling(text, expected):
    assert origins.normal_origin(text) == expected


def test_the_default_allowlist_is_the_servers_own_loopback_origins_on_its_port():
    allow = origins.allowlist("127.0.0.1", PORT, None)
    assert allow.origins == {"http://127.0.0.1:8501", "http://localhost:8501"}
    assert allow.hosts == {"127.0.0.1:8501", "localhost:8501"}
    assert not allow.origin_ok("http://127.0.0.1:8502")          # another port of the same host
    assert not allow.origin_ok("https://127.0.0.1:8501")         # another scheme
    assert not allow.origin_ok(None)
    assert not allow.host_ok("rebound.example:8501") and not allow.host_ok("127.0.0.1")


def test_a_proxy_names_its_public_origins_and_a_malformed_one_is_refused_by_name():
    allow = origins.allowlist("127.0.0.1", PORT, "https://objrel.example.org, https://review.example.org:8443")
    assert allow.origin_ok("https://objrel.example.org") and allow.host_ok("objrel.example.org")
    assert allow.origin_ok("https://review.example.org:8443") and allow.host_ok("review.example.org:8443")
    assert not allow.origin_ok("http://objrel.example.org")
    with pytest.raises(ValueError, match="OBJREL_ALLOWED_ORIGINS.*'objrel.example.org/app'"):
        origins.parse_origins("objrel.example.org/app")


def test_a_code_gives_its_token_once_and_only_within_its_lifetime():
    code = handoff.offer("token-a", now=100.0)
    assert handoff.well_formed(code) and "token-a" not in code
    assert handoff.take(code, now=100.0 + handoff.CODE_LIFETIME_S - 1) == "token-a"
    assert handoff.take(code, now=101.0) is None and handoff.claimed(code)
    late = handoff.offer("token-b", now=200.0)
    assert handoff.take(late, now=200.0 + handoff.CODE_LIFETIME_S + 1) is None
    assert handoff.take("x" * len(code)) is None and handoff.take(None) is None and handoff.take("a<b") is None


def test_the_cookie_is_httponly_strict_and_prefixed_where_the_browser_can_keep_a_secure_one():
    assert cookie_name("http", "127.0.0.1:8501") == COOKIE_NAME
    assert cookie_name("http", "localhost:8501") == COOKIE_NAME
    assert cookie_name("https", "objrel.example.org") == COOKIE_NAME
    assert cookie_name("http", "objrel.lan:8501") == PLAIN_COOKIE_NAME
    header = set_cookie_header(COOKIE_NAME, "tok", 60)
    assert header == f"{COOKIE_NAME}=tok; Path=/; Max-Age=60; HttpOnly; SameSite=Strict; Secure"
    assert "Secure" not in set_cookie_header(PLAIN_COOKIE_NAME, "tok", 60) and "HttpOnly" in header


def test_an_upload_grant_is_for_an_account_whose_role_uploads(store):
    with pytest.raises(NotAllowed):
        upload_grants.grant(actor_of(store, "alice"), "sess-alice", UPLOAD_DATA, 64 * MB, None)
    with pytest.raises(NotAllowed):
        upload_grants.grant(actor_of(store, None), "sess-anon", UPLOAD_RESULTS, MB, None)
    assert upload_grants.granted("sess-alice") is None and upload_grants.granted("sess-anon") is None


def test_an_upload_goes_through_only_while_its_grant_its_session_and_its_role_hold(store):
    token = review.start_session(store, "olga")
    olga = actor_of(store, "olga")
    upload_grants.grant(olga, "sess-olga", UPLOAD_DATA, 64 * MB, token)
    assert upload_grants.check(store, "sess-olga", str(64 * MB), token) is None
    assert upload_grants.check(store, "sess-olga", str(64 * MB + 1), token)[0] == 413
    assert upload_grants.check(store, "sess-olga", None, token)[0] == 411
    assert upload_grants.check(store, "sess-olga", "lots", token)[0] == 400
    assert upload_grants.check(store, "sess-other", "10", token)[0] == 403   # no grant for that session
    assert upload_grants.check(store, "sess-olga", "10", None)[0] == 403     # not from her signed-in browser
    alice_token = review.start_session(store, "alice")
    assert upload_grants.check(store, "sess-olga", "10", alice_token)[0] == 403
    review.end_session(store, token)                                           # signed out in another tab
    assert upload_grants.check(store, "sess-olga", "10", token)[0] == 403
    assert upload_grants.granted("sess-olga") is None


def test_an_upload_stops_when_the_account_loses_the_role(store):
    token = review.start_session(store, "olga")
    upload_grants.grant(actor_of(store, "olga"), "sess-olga2", UPLOAD_DATA, MB, None)   # single sign-on: no token
    review.create_reviewer(store, "root", "root-passphrase", roles=(review.ADMIN,))
    review.revoke_role(actor_of(store, "root"), store, "olga", review.RUN_OPERATOR)
    assert upload_grants.check(store, "sess-olga2", "10")[0] == 403
    assert review.session_user(store, token) is None          # the role change ended her sessions too


def test_an_accounts_uploads_are_bounded_in_bytes_and_files_over_the_window(store, monkeypatch):
    monkeypatch.setattr(upload_grants, "_sent", {})
    token = review.start_session(store, "olga")
    upload_grants.grant(actor_of(store, "olga"), "sess-budget", UPLOAD_DATA, 10 * MB, token, now=0.0)
    sent = [upload_grants.check(store, "sess-budget", str(10 * MB), token, now=float(i)) for i in range(4)]
    assert sent[:3] == [None, None, None] and sent[3][0] == 429        # a fourth 10 MiB file: 3 x its grant
    later = upload_grants.BUDGET_WINDOW_S + 10.0
    upload_grants.grant(actor_of(store, "olga"), "sess-budget", UPLOAD_DATA, 10 * MB, token, now=later)
    assert upload_grants.check(store, "sess-budget", str(10 * MB), token, now=later) is None   # the window moved
    small = [upload_grants.check(store, "sess-budget", "1", token, now=later + 1) for _ in range(30)]
    assert small.count(None) == upload_grants.MAX_FILES_PER_WINDOW - 1 and small[-1][0] == 429


def scope(kind="http", method="GET", path="/", host=f"127.0.0.1:{PORT}", origin=None, length=None):
    headers = [(b"host", host.encode())] if host is not None else []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    out = {"type": kind, "path": path, "headers": headers}
    if kind == "http":
        out["method"] = method
    return out


@pytest.fixture
def on_port(monkeypatch):
    monkeypatch.setattr(gate, "current_allowlist", lambda: origins.allowlist("127.0.0.1", PORT, None))


def test_the_gate_refuses_each_request_a_hostile_page_or_name_can_make(on_port, store):
    own = f"http://127.0.0.1:{PORT}"
    other = f"http://127.0.0.1:{PORT + 221}"
    assert gate.refusal(scope()) is None
    assert gate.refusal(scope(host=f"rebound.example:{PORT}"))[0] == 421
    assert gate.refusal(scope(host=None))[0] == 421
    assert gate.refusal(scope("websocket", path="/_stcore/stream", origin=own)) is None
    assert gate.refusal(scope("websocket", path="/_stcore/stream", origin=other))[0] == 403
    assert gate.refusal(scope("websocket", path="/_stcore/stream"))[0] == 403
    assert gate.refusal(scope("websocket", path="/_stcore/stream", origin=own, host=f"evil.example:{PORT}"))[0] == 421
    assert gate.refusal(scope(method="POST", path="/_objrel/session", origin=other))[0] == 403
    assert gate.refusal(scope(method="POST", path="/_objrel/session"))[0] == 403
    assert gate.refusal(scope(method="POST", path="/_objrel/session", origin=own)) is None
    upload = "/_stcore/upload_file/sess-none/file-1"
    assert gate.refusal(scope(method="PUT", path=upload, length=10), lambda: store)[0] == 403
    chunked = scope(method="PUT", path=upload, length=10)
    chunked["headers"].append((b"transfer-encoding", b"chunked"))
    assert gate.refusal(chunked, lambda: store)[0] == 411
    twice = scope(method="POST", path="/_objrel/session", origin=own)
    twice["headers"].append((b"origin", f"http://evil.example:{PORT}".encode()))
    assert gate.refusal(twice)[0] == 400
    assert gate.refusal(scope(method="PUT", path=upload, origin=other, length=10), lambda: store)[0] == 403
