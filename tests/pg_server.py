"""Start a throwaway PostgreSQL server for tests (Debian's postgresql binaries, loopback only)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager


def pg_bindir() -> str | None:
    for cand in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(cand, "initdb")):
            return cand
    found = shutil.which("initdb")
    return os.path.dirname(os.path.realpath(found)) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def postgres_server():
    """Yield a SQLAlchemy URL of a fresh cluster on 127.0.0.1; stop and delete it afterwards.

    As root, initdb refuses to run, so the server runs as the ``postgres`` system user.
    """
    bindir = pg_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    base = tempfile.mkdtemp(prefix="objrel-pg-")
    os.chmod(base, 0o777)
    data = os.path.join(base, "data")
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C"}
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", data, "-U", "objrel", "--auth=trust", "-E", "UTF8"],
                   check=True, capture_output=True, env=env)
    log = os.path.join(base, "server.log")
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-l", log, "-w", "-t", "60", "-o",
                              f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                   check=True, capture_output=True, env=env)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"postgresql+psycopg://objrel@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"],
                       capture_output=True, env=env)
        shutil.rmtree(base, ignore_errors=True)
