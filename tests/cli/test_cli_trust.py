"""The CLI refuses broken stores, weights and settings with one `objrel: error:` line, never a traceback."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from objrel.cli.main import ERROR_EXIT, main
from objrel.store import Store
from objrel.store import schema as S


def error_of(capsys, argv) -> str:
    assert main(argv) == ERROR_EXIT
    err = capsys.readouterr().err
    assert err.startswith("objrel: error: ") and "Traceback" not in err
    return err


def test_a_store_in_a_missing_folder_is_refused_and_nothing_is_created(tmp_path, capsys):
    target = tmp_path / "no-such-dir" / "runs.db"
    err = error_of(capsys, ["runs", "--store", str(target)])
    assert "does not exist" in err and "no-such-dir" in err
    assert not (tmp_path / "no-such-dir").exists()
    assert main(["runs", "--store", str(tmp_path / "new.db")]) == 0     # a new file in an existing folder is fine
    assert (tmp_path / "new.db").is_file()


def test_a_corrupt_store_file_is_refused(tmp_path, capsys):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    assert "not a usable objrel database" in error_of(capsys, ["runs", "--store", str(bad)])


def test_a_store_from_a_newer_objrel_is_refused(tmp_path, capsys):
    path = tmp_path / "future.db"
    s = Store(path)
    with s.engine.begin() as c:
        c.execute(update(S.meta).where(S.meta.c.key == "schema_version").values(value=str(S.SCHEMA_VERSION + 1)))
    s.dispose()
    err = error_of(capsys, ["runs", "--store", str(path)])
    assert f"schema version {S.SCHEMA_VERSION + 1}" in err and f"supports ({S.SCHEMA_VERSION})" in err


def test_a_schema_2_store_gains_the_new_columns(tmp_path):
    from sqlalchemy import create_engine, inspect, text

    path = tmp_path / "old.db"
    s = Store(path)
    s.dispose()
    eng = create_engine(f"sqlite:///{path}")
    with eng.begin() as c:          # what a schema-2 store looked like: no dropped/notes columns, no Alembic
        c.execute(text("DROP TABLE alembic_version"))
        c.execute(text("ALTER TABLE samples DROP COLUMN dropped"))
        c.execute(text("ALTER TABLE samples DROP COLUMN notes"))
        c.execute(text("UPDATE objrel_meta SET value = '2' WHERE key = 'schema_version'"))
    eng.dispose()
    s = Store(path)
    assert {"dropped", "notes"} <= {c["name"] for c in inspect(s.engine).get_columns("samples")}
    with s.engine.connect() as c:
        stamped = c.execute(text("SELECT value FROM objrel_meta WHERE key='schema_version'")).scalar()
        assert stamped == str(S.SCHEMA_VERSION)
    s.dispose()


def test_a_negative_limit_is_refused(tmp_path, capsys):
    err = error_of(capsys, ["run", "--dataset", "demo", "--limit", "-3", "--store", str(tmp_path / "s.db")])
    assert "-3" in err and "limit" in err


@pytest.mark.parametrize("content", [b"", b"garbage bytes, not a torch file"], ids=["empty", "garbage"])
def test_an_empty_or_broken_weights_file_is_refused(tmp_path, content):
    from objrel.errors import UnsafeWeightsError
    from objrel.models.safe_load import load_state_dict

    p = tmp_path / "w.pt"
    p.write_bytes(content)
    with pytest.raises(UnsafeWeightsError) as exc:
        load_state_dict(p)
    assert str(p) in str(exc.value)
    assert ("empty (0 bytes)" in str(exc.value)) == (content == b"")


def test_weights_of_another_architecture_are_refused_clearly(tmp_path):
    import torch

    from objrel.models.safe_load import WeightsMismatchError, load_weights_into

    p = tmp_path / "w.pt"
    torch.save(torch.nn.Linear(4, 2).state_dict(), p)
    with pytest.raises(WeightsMismatchError) as exc:
        load_weights_into(torch.nn.Linear(5, 3), p, "a 5->3 linear layer")
    assert "does not fit a 5->3 linear layer" in str(exc.value)
