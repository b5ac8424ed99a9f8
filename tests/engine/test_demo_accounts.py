"""The demo store's accounts: a newcomer signs in and reviews at once (``make run``)."""

from __future__ import annotations

import io

import pytest

from objrel import review as R
from objrel import demo
from objrel.store import Store


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


def test_demo_store_has_accounts_with_roles_and_prints_them(tmp_path, monkeypatch):
    # the runs themselves are tested elsewhere (they take minutes): build only the accounts here
    monkeypatch.setattr(demo, "DEMO_RUNS", ())
    monkeypatch.setattr(demo, "detection_demo_runs", lambda: ())
    monkeypatch.setattr(demo, "detection_demo_sweeps", lambda: ())
    log = io.StringIO()
    db = str(tmp_path / "demo.db")
    demo.build_demo_store(db, log=log)
    store = Store(db)
    got = {a["name"]: a["roles"] for a in R.list_accounts(store)}
    assert got == {"alice": ("reviewer",), "bob": ("reviewer",), "carol": ("adjudicator",),
                   "admin": ("admin", "run-operator")}
    for acc in demo.DEMO_ACCOUNTS:
        assert R.verify_reviewer(store, acc.name, acc.passphrase).ok
        assert acc.name in log.getvalue() and acc.passphrase in log.getvalue()
    # the adjudicator is neither reviewer of the pair; a second build keeps the accounts
    assert not {"alice", "bob"} & {a.name for a in demo.DEMO_ACCOUNTS if R.ADJUDICATOR in a.roles}
    demo.build_demo_store(db, log=io.StringIO())
    assert sorted(R.reviewer_names(store)) == ["admin", "alice", "bob", "carol"]
