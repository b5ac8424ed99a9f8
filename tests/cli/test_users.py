"""``objrel users``: the server operator makes the first admin and manages roles without signing in."""

from __future__ import annotations

import io

import pytest

from objrel import review as R
from objrel.cli.main import main
from objrel.store import Store


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


def users(monkeypatch, *args: str, stdin: str = "") -> int:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    return main(["users", *args])


def test_first_admin_then_grant_list_and_revoke(tmp_path, monkeypatch, capsys):
    db = str(tmp_path / "u.db")
    assert users(monkeypatch, "list", "--store", db) == 0
    assert "no accounts yet" in capsys.readouterr().out
    assert users(monkeypatch, "add", "Admin", "--role", "admin", "--passphrase-stdin", "--store", db,
                 stdin="a long passphrase\n") == 0
    assert capsys.readouterr().out.strip() == "Admin: admin"
    assert R.verify_reviewer(Store(db), "admin", "a long passphrase").name == "Admin"
    assert users(monkeypatch, "add", "carol", "--role", "reviewer", "--role", "adjudicator", "--passphrase-stdin",
                 "--store", db, stdin="carol passphrase\n") == 0
    assert users(monkeypatch, "grant", "carol", "--role", "run-operator", "--store", db) == 0
    assert users(monkeypatch, "revoke", "carol", "--role", "reviewer", "--store", db) == 0
    capsys.readouterr()
    assert users(monkeypatch, "list", "--store", db) == 0
    assert capsys.readouterr().out.splitlines() == ["Admin\tpassword\tadmin",
                                                    "carol\tpassword\tadjudicator, run-operator"]


def test_refusals_are_one_line_errors(tmp_path, monkeypatch, capsys):
    db = str(tmp_path / "u.db")
    assert users(monkeypatch, "add", "Admin", "--role", "admin", "--passphrase-stdin", "--store", db,
                 stdin="a long passphrase\n") == 0
    assert users(monkeypatch, "add", "ADMIN", "--role", "admin", "--passphrase-stdin", "--store", db,
                 stdin="another passphrase\n") == 2
    assert "the account name 'ADMIN' is taken" in capsys.readouterr().err
    assert users(monkeypatch, "add", "\u0430dmin", "--role", "admin", "--passphrase-stdin", "--store", db,
                 stdin="another passphrase\n") == 2
    assert "CYRILLIC SMALL LETTER A" in capsys.readouterr().err
    assert users(monkeypatch, "grant", "nobody", "--role", "admin", "--store", db) == 2
    assert "no account named 'nobody'" in capsys.readouterr().err
    with pytest.raises(SystemExit):   # argparse: an unknown role
        users(monkeypatch, "grant", "Admin", "--role", "god", "--store", db)
