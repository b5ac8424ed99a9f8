"""Run management and uploads from the app, each write behind a role check (run operators and admins).

``rename_run`` and ``delete_run`` change the store; ``upload_dataset`` and ``upload_weights`` add files under
the uploads root (``objrel.data.uploads`` checks them), which must be one of the app's allowed data roots
(``objrel.engine.run_form.data_roots``) so runs can then be started on them.  ``sample_issues`` (reading) is
open to everyone who sees the run history.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from objrel.data import uploads as U
from objrel.engine.run_form import DATA_ROOTS_ENV, UPLOADS_DIR, data_roots
from objrel.errors import ConfigError
from objrel import access as A
from objrel.access import Actor
from objrel.store import Store

# Longest run name accepted (the column holds 200 characters).
MAX_RUN_NAME = 200
# What an untested sample's reason says when the store keeps no skip code for it.
UNTESTED_INCORRECT = "the source inference was incorrect; the run tests correct inferences only"
UNTESTED_NOTHING = "nothing was tested on this sample (no unit passed the run's filter)"


@dataclass(frozen=True)
class SampleIssue:
    sample_id: str
    status: str        # skipped | untested | tested (tested rows appear for their dropped annotations)
    code: str
    reason: str
    dropped: str       # the dropped annotations, one "category: code (reason)" per line


# Characters of the hash of a store's URL in the name of its uploads folder (two stores with one file name, in
# two folders, keep apart).
STORE_TAG_CHARS = 8


def store_folder_name(store: Store) -> str:
    """The name of ``store``'s own folder under the uploads folder: the store's file (SQLite) or database name
    and a short hash of its URL without the password, e.g. ``demo-3f2a9c1b``."""
    import hashlib
    import re

    from objrel.store.store import database_name

    stem, public_url = database_name(store.url)
    tag = hashlib.sha256(public_url.encode()).hexdigest()[:STORE_TAG_CHARS]
    return f"{re.sub(r'[^A-Za-z0-9_.-]', '_', stem)[:40]}-{tag}"


def uploads_root(store: Store) -> Path:
    """The folder ``store``'s uploads go to: its own folder under ``var/uploads`` (resolved), which must be
    inside an allowed data root.  Every store keeps its uploads apart: a team's upload never shows in another
    store's app."""
    base = UPLOADS_DIR.expanduser().resolve()
    roots = data_roots()
    if not any(base == r or r in base.parents for r in roots):
        # named by their last folder only: the message reaches the web page, which shows no server path
        raise ConfigError(f"the uploads folder ({base.name}) is not inside the allowed data roots "
                          f"({', '.join(r.name for r in roots) or 'none'}); the server's operator adds it to "
                          f"{DATA_ROOTS_ENV} to accept uploads")
    return base / store_folder_name(store)


def form_roots(store: Store) -> tuple[Path, ...]:
    """The folders the web form offers files from for ``store``: the allowed data roots, with the uploads
    folder narrowed to ``store``'s own (another store's uploads are not offered)."""
    base = UPLOADS_DIR.expanduser().resolve()
    roots = [r for r in data_roots() if r != base]
    try:
        roots.append(uploads_root(store))
    except ConfigError:
        pass
    return tuple(roots)


def rename_run(actor: Actor, store: Store, run_id: int, name: str) -> None:
    """Rename run ``run_id`` if ``actor`` may; ConfigError unless the name is 1 to MAX_RUN_NAME characters."""
    A.authorize(actor, A.RENAME_RUN, f"run {int(run_id)}")
    name = (name or "").strip()
    if not name or len(name) > MAX_RUN_NAME:
        raise ConfigError(f"a run name is 1 to {MAX_RUN_NAME} characters; got {len(name)}")
    store.rename_run(run_id, name)


def delete_run(actor: Actor, store: Store, run_id: int, *, confirm: str) -> dict[str, int]:
    """Delete run ``run_id`` with every row of it (samples, predictions, verdicts, votes, judgments, ...).

    ``confirm`` must repeat the run's id (the page asks for it); a running run is refused: cancel it first."""
    A.authorize(actor, A.DELETE_RUN, f"run {int(run_id)}")
    if str(confirm).strip() != str(int(run_id)):
        raise ConfigError(f"to delete run {int(run_id)} type its id {int(run_id)} to confirm; got {confirm!r}")
    run = store.get_run(run_id)
    if run.status == "running":
        raise ConfigError(f"run {int(run_id)} is running; cancel it and wait until it stops, then delete it")
    return store.delete_run(run_id)


def _dropped_text(dropped) -> str:
    return "\n".join(f"{d.get('category')}: {d.get('code')} ({d.get('reason')})" for d in dropped or [])


def sample_issues(store: Store, run_id: int, offset: int = 0, limit: int | None = None) -> list[SampleIssue]:
    """Run ``run_id``'s skipped and untested samples with their reasons, and samples whose annotations were
    partly dropped, by sample id: from the ``offset``-th on, at most ``limit`` (all when None)."""
    out = []
    for r in store.sample_issues(run_id, offset, limit):
        if r["status"] == "skipped":
            code, reason = r["skip_code"] or "", r["skip_reason"] or ""
        elif r["status"] == "untested":
            incorrect = r["correct"] is False
            code = r["skip_code"] or ("incorrect" if incorrect else "not-tested")
            reason = r["skip_reason"] or (UNTESTED_INCORRECT if incorrect else UNTESTED_NOTHING)
        else:
            code, reason = "", ""
        out.append(SampleIssue(r["sample_id"], r["status"], code, reason, _dropped_text(r["dropped"])))
    return out


def upload_dataset(actor: Actor, store: Store, name: str, annotation, images_zip) -> U.Upload:
    """``actor`` (a run operator or admin) adds a dataset upload to ``store``'s uploads folder: ``annotation``
    and ``images_zip`` as bytes or binary file objects (spooled to disk in chunks)."""
    A.authorize(actor, A.UPLOAD_DATA, repr(name))
    root = uploads_root(store)
    root.mkdir(parents=True, exist_ok=True)
    return U.add_dataset(root, name, annotation, images_zip)


def upload_weights(actor: Actor, store: Store, name: str, architecture: str, weights) -> U.Upload:
    """``actor`` (a run operator or admin) adds a state dict for ``architecture`` to ``store``'s uploads
    folder: bytes or a binary file object (spooled to disk in chunks)."""
    from objrel.models.torchvision import check_weights_file

    A.authorize(actor, A.UPLOAD_WEIGHTS, repr(name))
    root = uploads_root(store)
    root.mkdir(parents=True, exist_ok=True)
    return U.add_weights(root, name, architecture, weights, check_weights_file)


def uploads(store: Store) -> list[U.Upload]:
    """``store``'s registered uploads (empty when the uploads folder is not an allowed root)."""
    try:
        return U.list_uploads(uploads_root(store))
    except ConfigError:
        return []
