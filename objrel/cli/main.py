"""The ``objrel`` command: the parser built from the command groups, and the one place errors become
a one-line message and exit status 2.

    objrel run | operators | demo                                       (objrel.cli.run)
    objrel runs | summary | export | report                            (objrel.cli.results)
    objrel inspect                                                     (objrel.cli.inspect)
    objrel detect | sweep | detectors                                  (objrel.cli.detect)
    objrel bench shortcut | bggap                                      (objrel.cli.bench)
    objrel paper-check                                                 (objrel.cli.paper)
    objrel users add | list | grant | revoke                           (objrel.cli.users)
    objrel judgments export                                            (objrel.cli.judgments)
    objrel store version | upgrade                                     (objrel.cli.store)
    objrel explain-sample                                              (objrel.cli.explain)
"""

from __future__ import annotations

import argparse
import importlib
import sys

from objrel.errors import ObjrelError

# The command groups, in the order ``--help`` lists them: (module, its function that adds the group's commands to
# the ``objrel`` sub-parsers, the commands it adds).  A command imports only its own group's module, so listing
# runs loads no model library; ``--help`` (or an unknown command) imports them all.
COMMAND_GROUPS = (
    ("objrel.cli.run", "add_run_commands", ("run", "operators", "demo")),
    ("objrel.cli.results", "add_results_commands", ("runs", "summary", "export", "report")),
    ("objrel.cli.inspect", "add_inspect_command", ("inspect",)),
    ("objrel.cli.detect", "add_detection_commands", ("detect", "sweep", "detectors")),
    ("objrel.cli.bench", "add_bench_command", ("bench",)),
    ("objrel.cli.users", "add_users_commands", ("users",)),
    ("objrel.cli.judgments", "add_judgments_commands", ("judgments",)),
    ("objrel.cli.store", "add_store_commands", ("store",)),
    ("objrel.cli.paper", "add_paper_command", ("paper-check",)),
    ("objrel.cli.explain", "add_explain_command", ("explain-sample",)),
)
# Exit status of a command refused for bad settings or input (argparse uses it for bad flags too).
ERROR_EXIT = 2
# Errors that are the user's to fix: reported in one line, without a traceback.
USER_ERRORS = (ObjrelError, KeyError, FileNotFoundError, ValueError)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``objrel`` parser: with ``command`` (one of the groups' commands) only that command's group, else all."""
    ap = argparse.ArgumentParser(prog="objrel", description="Test image models with object-relevant "
                                 "metamorphic relations (MR-1: corrupt the object; MR-2: corrupt the background).")
    sub = ap.add_subparsers(dest="command", required=True)
    for module, add, commands in COMMAND_GROUPS:
        if command is None or command in commands:
            getattr(importlib.import_module(module), add)(sub)
    return ap


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` names when it names a known one first, else None (``--help``, a typo: every group)."""
    known = {c for _, _, commands in COMMAND_GROUPS for c in commands}
    return argv[0] if argv and argv[0] in known else None


def main(argv=None) -> int:
    """Run one ``objrel`` command; returns its exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command(argv)).parse_args(argv)
    try:
        return args.fn(args)
    except USER_ERRORS as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"objrel: error: {msg}", file=sys.stderr)
        return ERROR_EXIT
