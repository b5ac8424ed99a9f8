"""``objrel store``: the store's schema revision, by hand.

    objrel store version [--store URL]     where the store stands (revision, this objrel's head); changes nothing
    objrel store upgrade [--store URL]     bring the store to this objrel's head revision; one line says what it did

Opening a store (any command, the app) upgrades an older one as well; ``upgrade`` is for doing it at a
chosen moment (after a backup, before the app starts).  A store written by a newer objrel, and another
application's database, are refused with one line and exit status 2.
"""

from __future__ import annotations

from objrel.cli.common import add_store_option
from objrel.store import Store, revisions


def _open(args) -> Store:
    """The store at ``--store`` without the upgrade that opening does."""
    return Store(args.store, create=False)


def cmd_version(args) -> int:
    """``objrel store version``: print the store's schema revision beside this objrel's head."""
    store = _open(args)
    try:
        print(f"{store!r}: {revisions.version(store.engine).line()}")
    finally:
        store.dispose()
    return 0


def cmd_upgrade(args) -> int:
    """``objrel store upgrade``: upgrade the store to this objrel's head revision and say what was done."""
    store = _open(args)
    try:
        print(f"{store!r}: {revisions.upgrade(store.engine).line()}")
    finally:
        store.dispose()
    return 0


def add_store_commands(sub) -> None:
    """Add the ``store`` command and its ``version`` and ``upgrade`` subcommands to the subparsers ``sub``."""
    p = sub.add_parser("store", help="the store's schema revision: version, upgrade")
    group = p.add_subparsers(dest="store_command", required=True)
    v = group.add_parser("version", help="the store's schema revision and this objrel's head (changes nothing)")
    add_store_option(v)
    v.set_defaults(fn=cmd_version)
    u = group.add_parser("upgrade", help="upgrade the store to this objrel's head revision")
    add_store_option(u)
    u.set_defaults(fn=cmd_upgrade)
