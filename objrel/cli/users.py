"""``objrel users``: accounts and roles, by the server operator (who needs no sign-in).

    objrel users add admin --role admin                 (the first account; asks for the passphrase)
    objrel users add carol --role reviewer --role adjudicator --passphrase-stdin < pass.txt
    objrel users list
    objrel users grant bob --role run-operator
    objrel users revoke bob --role run-operator

In the app, admins invite everyone else (Users page).
"""

from __future__ import annotations

import argparse
import getpass
import sys

from objrel.cli.common import add_store_option
from objrel.review import accounts, roles
from objrel.store import Store


def _passphrase(args) -> str:
    if args.passphrase_stdin:
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass(f"passphrase for {args.name}: ")
    if getpass.getpass("again: ") != first:
        raise ValueError("the two passphrases differ; nothing was created")
    return first


def cmd_add(args) -> int:
    """``objrel users add``: create an account with the given roles and print them."""
    store = Store(args.store)
    who = accounts.create_reviewer(store, args.name, _passphrase(args), roles=args.role)
    print(f"{who.name}: {', '.join(roles.roles_of(store, who.name))}")
    return 0


def cmd_list(args) -> int:
    """``objrel users list``: print each account's name, kind and roles, one per line."""
    rows = accounts.list_accounts(Store(args.store))
    if not rows:
        print("no accounts yet; make the first with: objrel users add NAME --role admin")
    for r in rows:
        print(f"{r['name']}\t{r['kind']}\t{', '.join(r['roles']) or '(no role)'}")
    return 0


def cmd_grant(args) -> int:
    """``objrel users grant``: give an account roles as the server operator and print its roles."""
    now = roles.grant_as_operator(Store(args.store), args.name, args.role)
    print(f"{args.name}: {', '.join(now)}")
    return 0


def cmd_revoke(args) -> int:
    """``objrel users revoke``: take roles from an account as the server operator and print what it keeps."""
    store = Store(args.store)
    now = ()
    for role in args.role:
        now = roles.revoke_as_operator(store, args.name, role)
    print(f"{args.name}: {', '.join(now) or '(no role)'}")
    return 0


def add_users_commands(subparsers) -> argparse.ArgumentParser:
    """Add ``users`` with ``add``, ``list``, ``grant`` and ``revoke``; returns its parser."""
    p = subparsers.add_parser("users", help="accounts and their roles (reviewer, adjudicator, run-operator, admin)")
    sub = p.add_subparsers(dest="users_command", required=True)

    def with_roles(q, required: bool) -> None:
        q.add_argument("name", help="account name (2-40 ASCII letters, digits, . _ - @, inner spaces)")
        q.add_argument("--role", action="append", choices=roles.ROLES, required=required, default=None,
                       help="a role (repeat for several)")
        add_store_option(q)

    q = sub.add_parser("add", help="create a password account with roles")
    with_roles(q, required=True)
    q.add_argument("--passphrase-stdin", action="store_true",
                   help="read the passphrase from the first line of standard input instead of prompting")
    q.set_defaults(fn=cmd_add)
    q = sub.add_parser("list", help="every account with its roles")
    add_store_option(q)
    q.set_defaults(fn=cmd_list)
    q = sub.add_parser("grant", help="give an account more roles")
    with_roles(q, required=True)
    q.set_defaults(fn=cmd_grant)
    q = sub.add_parser("revoke", help="take roles from an account")
    with_roles(q, required=True)
    q.set_defaults(fn=cmd_revoke)
    return p
