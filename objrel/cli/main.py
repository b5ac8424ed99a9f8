"""The ``objrel`` command: the parser built from the command groups, and the one place errors become
a one-line message and exit status 2.

    objrel run | runs | summary | export | report | operators | demo     (objrel.cli.run)
    objrel inspect                                                     (objrel.cli.inspect)
    objrel detect | sweep | detectors                                  (objrel.cli.detect)
    objrel bench shortcut                                              (objrel.cli.bench)
    objrel paper-check                                                 (objrel.cli.paper)
    objrel users add | list | grant | revoke                           (objrel.cli.users)
    objrel judgments export                                            (objrel.cli.judgments)
    objrel store version | upgrade                                     (objrel.cli.store)
    objrel explain-sample                                              (objrel.cli.explain)
"""

from __future__ import annotations

import argparse
import sys

from objrel.cli.bench import add_bench_command
from objrel.cli.detect import add_detection_commands
from objrel.cli.explain import add_explain_command
from objrel.cli.inspect import add_inspect_command
from objrel.cli.judgments import add_judgments_commands
from objrel.cli.paper import add_paper_command
from objrel.cli.run import add_run_commands
from objrel.cli.store import add_store_commands
from objrel.cli.users import add_users_commands
from objrel.errors import ObjrelError

# Each adds its commands to the ``objrel`` sub-parsers, in the order ``--help`` lists them.
COMMAND_GROUPS = (add_run_commands, add_inspect_command, add_detection_commands, add_bench_command,
                  add_users_commands, add_judgments_commands, add_store_commands, add_paper_command,
                  add_explain_command)
# Exit status of a command refused for bad settings or input (argparse uses it for bad flags too).
ERROR_EXIT = 2
# Errors that are the user's to fix: reported in one line, without a traceback.
USER_ERRORS = (ObjrelError, KeyError, FileNotFoundError, ValueError)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="objrel", description="Test image models with object-relevant "
                                 "metamorphic relations (MR-1: corrupt the object; MR-2: corrupt the background).")
    sub = ap.add_subparsers(dest="command", required=True)
    for add_commands in COMMAND_GROUPS:
        add_commands(sub)
    return ap


def main(argv=None) -> int:
    """Run one ``objrel`` command; returns its exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except USER_ERRORS as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"objrel: error: {msg}", file=sys.stderr)
        return ERROR_EXIT
