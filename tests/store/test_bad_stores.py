"""F19: a file that is not an objrel store (random bytes, another application's SQLite database, a truncated
store) is refused with one StoreError line saying what was expected and what arrived, never an SQL traceback:
by the library, by the CLI (exit status 2) and by the app (one message, the page stops).  Another
application's database is left as it was."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from objrel.errors import StoreError
from objrel.store import Store
from tests.store.helpers import new_database, store_at_first_revision

ROOT = Path(__file__).resolve().parents[2]


def random_bytes(path: Path) -> Path:
    path.write_bytes(bytes((i * 131 + 17) % 256 for i in range(8192)))
    return path


def other_app(path: Path, with_runs: bool) -> Path:
    """Another application's SQLite database: its own tables, one of them perhaps named ``runs``."""
    c = sqlite3.connect(path)
    c.execute("CREATE TABLE users (name TEXT)")
    c.execute("INSERT INTO users VALUES ('ann')")
    if with_runs:
        c.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, km REAL)")
        c.execute("INSERT INTO runs VALUES (1, 5.2)")
    c.commit()
    c.close()
    return path


def truncated_store(path: Path, tmp_path: Path) -> Path:
    """An objrel store with rows, cut after its first pages (its schema readable, its rows gone)."""
    url = store_at_first_revision(new_database("sqlite", tmp_path))
    Store(url).dispose()                       # upgraded to the head and checkpointed on close
    full = Path(url.removeprefix("sqlite:///"))
    for _ in range(3):
        fill_schema_1_more(url)
    data = full.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def fill_schema_1_more(url: str) -> None:
    store = Store(url)
    rid = store.create_run(name="big", model="m", model_config={}, task="single", class_names=["red"], dataset="d",
                           dataset_config={}, plan={}, config={"pad": "x" * 4000}, seed=1, n_total=200)
    store.write_samples(rid, [({"sample_id": f"s{i}", "rel_path": f"{i}.png" * 50, "status": "tested"}, [], [], [])
                              for i in range(200)])
    store.dispose()


CASES = {
    "random bytes": lambda p, t: random_bytes(p),
    "another app's database": lambda p, t: other_app(p, with_runs=False),
    "another app's database with a runs table": lambda p, t: other_app(p, with_runs=True),
    "a truncated store": truncated_store,
}
EXPECTED = {
    "random bytes": "not a usable objrel database (file is not a database)",
    "another app's database": "is not an objrel store: expected objrel's tables",
    "another app's database with a runs table": "found another application's tables (runs, users)",
    "a truncated store": "database disk image is malformed",
}


@pytest.fixture(params=list(CASES))
def bad(request, tmp_path) -> tuple[str, Path]:
    return request.param, CASES[request.param](tmp_path / "bad.db", tmp_path)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.subprocess
def test_the_cli_refuses_it_in_one_line(bad):
    case, path = bad
    before = digest(path)
    code = "import sys; from objrel.cli.main import main; sys.exit(main(sys.argv[1:]))"
    for argv in (["runs"], ["summary", "1"], ["store", "version"], ["store", "upgrade"]):
        out = subprocess.run([sys.executable, "-c", code, *argv, "--store", str(path)], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 2, out
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("objrel: error: "), out.stderr
        assert EXPECTED[case] in lines[0] and "SELECT" not in lines[0] and "sqlalche.me" not in lines[0]
    if case != "a truncated store":
        assert digest(path) == before          # nothing added to a file that is not ours


def test_the_library_raises_one_store_error(bad):
    case, path = bad
    with pytest.raises(StoreError) as err:
        Store(path).list_runs()
    assert EXPECTED[case] in str(err.value) and "\n" not in str(err.value) and "SELECT" not in str(err.value)


def test_the_app_shows_one_message_and_stops(bad, monkeypatch):
    from streamlit.testing.v1 import AppTest

    _, path = bad

    def page():
        import os

        from objrel.app.caches import open_store

        store = open_store(os.environ["BAD_STORE"])
        store.list_runs()
        import streamlit as st

        st.write("unreachable")

    monkeypatch.setenv("BAD_STORE", str(path))
    at = AppTest.from_function(page, default_timeout=60).run()
    assert not at.exception, at.exception
    assert len(at.error) == 1 and "objrel" in at.error[0].value and "SELECT" not in at.error[0].value
    assert not at.markdown or all("unreachable" not in m.value for m in at.markdown)
