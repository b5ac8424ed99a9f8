"""Messages a run operator reads on the web name no server path (finding W1): a run process that failed to
start, and an uploads folder outside the allowed roots."""

from __future__ import annotations

import pytest

from objrel.engine import jobs, manage
from objrel.errors import ConfigError
from objrel.store import Store


def test_a_failed_start_quotes_its_log_with_file_names_not_server_paths(tmp_path):
    log = tmp_path / "logs" / "run-1.log"
    log.parent.mkdir()
    log.write_text('Traceback (most recent call last):\n  File "/srv/objrel/objrel/engine/loop.py", line 9, in run\n'
                   f"OSError: cannot open {tmp_path}/var/uploads/cats/cats.json (see https://example.org/a/b)\n")
    tail = jobs._tail(log)
    assert str(tmp_path) not in tail and "/srv/objrel" not in tail
    assert 'File "loop.py", line 9' in tail and "cannot open cats.json" in tail
    assert "https://example.org/a/b" in tail          # a web address is not a server path


def test_an_uploads_folder_outside_the_roots_is_named_by_its_folder_name(tmp_path, monkeypatch):
    store = Store(tmp_path / "w1.db")
    monkeypatch.setattr(manage, "UPLOADS_DIR", tmp_path / "srv" / "uploads")
    monkeypatch.setattr(manage, "data_roots", lambda: (tmp_path / "allowed-data",))
    with pytest.raises(ConfigError) as refused:
        manage.uploads_root(store)
    assert str(tmp_path) not in str(refused.value)
    assert "(uploads)" in str(refused.value) and "(allowed-data)" in str(refused.value)
    store.dispose()
