"""Lasting sign-in sessions (objrel.review.sessions over objrel.store.sessions), on SQLite and PostgreSQL: the
store keeps the token's hash only, a session ends at its lifetime, at sign-out, at sign-out everywhere and at
every change of the account's roles (through objrel.review.roles), and nowhere else."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select

from objrel import review
from objrel.errors import NotAllowed
from objrel.review import roles as R
from objrel.review import sessions
from objrel.store import Store
from objrel.store import schema as S
from objrel.store import sessions as session_rows

T0 = dt.datetime(2026, 3, 2, 8, 0, tzinfo=dt.timezone.utc)


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(review.accounts, "SCRYPT_N", 2 ** 10)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_store(request, tmp_path):
    url = str(tmp_path / "sessions.db") if request.param == "sqlite" else request.getfixturevalue("pg_url")
    store = Store(url)
    with store.engine.begin() as c:   # one PostgreSQL server serves the module: start each test empty
        for t in (S.app_sessions, S.account_roles, S.reviewers):
            c.execute(t.delete())
    for name, roles in (("alice", (R.REVIEWER,)), ("bob", (R.REVIEWER,)), ("root", (R.ADMIN,))):
        review.create_reviewer(store, name, f"{name}-passphrase", roles=roles)
    yield store
    store.dispose()


def rows(store: Store) -> list[dict]:
    with store.engine.connect() as c:
        return [dict(r._mapping) for r in c.execute(select(S.app_sessions).order_by(S.app_sessions.c.id))]


def test_a_session_opens_with_its_token_and_the_store_keeps_only_the_hash(any_store, tmp_path):
    token = review.start_session(any_store, "alice")
    assert len(token) >= 43 and review.session_user(any_store, token) == "alice"
    (row,) = rows(any_store)
    assert row["token_hash"] == sessions.token_hash(token) != token
    assert token not in repr(row)
    if any_store.engine.dialect.name == "sqlite":     # nowhere in the file or its write-ahead log either
        stored = b"".join(p.read_bytes() for p in tmp_path.glob("sessions.db*"))
        assert token.encode() not in stored and row["token_hash"].encode() in stored
    assert review.session_user(any_store, token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    for junk in (None, "", 42, "x" * 500):
        assert review.session_user(any_store, junk) is None


def test_a_session_ends_after_its_lifetime_and_activity_does_not_stretch_it(any_store):
    token = review.start_session(any_store, "alice", now=T0)
    last = T0 + sessions.SESSION_LIFETIME - dt.timedelta(seconds=1)
    assert review.session_user(any_store, token, now=T0 + dt.timedelta(hours=6)) == "alice"
    assert review.session_user(any_store, token, now=last) == "alice"
    assert review.session_user(any_store, token, now=T0 + sessions.SESSION_LIFETIME) is None
    (row,) = rows(any_store)
    assert session_rows._utc(row["expires_at"]) == T0 + sessions.SESSION_LIFETIME   # fixed from sign-in


def test_last_seen_is_written_at_most_once_a_minute(any_store):
    token = review.start_session(any_store, "alice", now=T0)
    review.session_user(any_store, token, now=T0 + dt.timedelta(seconds=30))
    assert session_rows._utc(rows(any_store)[0]["last_seen_at"]) == T0
    later = T0 + sessions.SESSION_TOUCH_EVERY + dt.timedelta(seconds=1)
    review.session_user(any_store, token, now=later)
    assert session_rows._utc(rows(any_store)[0]["last_seen_at"]) == later


def test_sign_out_ends_one_session_and_sign_out_everywhere_ends_all_of_them(any_store):
    a1, a2, a3 = (review.start_session(any_store, "alice") for _ in range(3))
    b = review.start_session(any_store, "bob")
    assert review.end_session(any_store, a1) is True
    assert review.end_session(any_store, a1) is False             # already ended
    assert review.session_user(any_store, a1) is None and review.session_user(any_store, a2) == "alice"
    assert review.live_sessions(any_store, "alice") == 2
    assert review.end_sessions(any_store, "alice", sessions.SIGN_OUT_EVERYWHERE) == 2
    assert review.session_user(any_store, a2) is None and review.session_user(any_store, a3) is None
    assert review.session_user(any_store, b) == "bob"               # someone else's sessions stay
    why = {r["token_hash"]: r["revoked_because"] for r in rows(any_store)}
    assert why[sessions.token_hash(a1)] == "sign-out"
    assert why[sessions.token_hash(a2)] == why[sessions.token_hash(a3)] == "sign-out-everywhere"
    assert why[sessions.token_hash(b)] is None
    with pytest.raises(ValueError, match="got 'bored'"):
        review.end_sessions(any_store, "alice", "bored")


def test_every_change_of_roles_ends_the_accounts_sessions(any_store):
    admin = review.actor_of(any_store, "root")
    token = review.start_session(any_store, "alice")
    bob = review.start_session(any_store, "bob")
    review.grant_roles(admin, any_store, "alice", R.REVIEWER)        # held already: nothing changes
    assert review.session_user(any_store, token) == "alice"
    assert review.grant_roles(admin, any_store, "alice", R.ADJUDICATOR) == ("adjudicator", "reviewer")
    assert review.session_user(any_store, token) is None
    assert review.session_user(any_store, bob) == "bob"
    assert rows(any_store)[0]["revoked_because"] == "role-change"

    token = review.start_session(any_store, "alice")
    review.revoke_role(admin, any_store, "alice", R.ADJUDICATOR)
    assert review.session_user(any_store, token) is None
    token = review.start_session(any_store, "alice")
    R.grant_as_operator(any_store, "alice", R.RUN_OPERATOR)         # the server's `objrel users grant`
    assert review.session_user(any_store, token) is None
    token = review.start_session(any_store, "alice")
    R.revoke_as_operator(any_store, "alice", R.RUN_OPERATOR)
    assert review.session_user(any_store, token) is None

    token = review.start_session(any_store, "alice")                # a refused change ends nothing
    with pytest.raises(NotAllowed):
        review.grant_roles(review.actor_of(any_store, "bob"), any_store, "alice", R.ADMIN)
    assert review.session_user(any_store, token) == "alice"
