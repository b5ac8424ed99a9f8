"""The CLI reference, generated from the ``objrel`` argument parser (``objrel.cli.main.build_parser``).

Every command and sub-command becomes a section with its help line, its usage and a table of its arguments, so
the page says what ``objrel <command> --help`` says and cannot drift from it.
"""

from __future__ import annotations

import argparse

# Terminal width the usage lines are wrapped to.
USAGE_WIDTH = 100


def _cell(text: str) -> str:
    """Text made safe for one Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help with ``%(default)s`` and friends expanded, as ``--help`` prints it."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return parser._get_formatter()._expand_help(action)


def _default(action: argparse.Action) -> str:
    """The default worth showing: none for flags, help actions and unset values."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._HelpAction)):
        return ""
    if action.default in (None, argparse.SUPPRESS) or action.required:
        return ""
    return f"`{action.default}`"


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    """The argument table of one parser (without its sub-command list and ``--help``)."""
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._SubParsersAction, argparse._HelpAction)):
            continue
        name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
        if action.choices is not None and not isinstance(action.choices, dict):
            name += "<br>one of " + ", ".join(f"`{c}`" for c in action.choices)
        rows.append(f"| {name} | {_cell(_help(parser, action))} | {_default(action)} |")
    if not rows:
        return []
    return ["| argument | what it does | default |", "| --- | --- | --- |", *rows]


def _commands(parser: argparse.ArgumentParser, path: str) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """``(command path, its help line, its parser)`` for every sub-command below ``parser``, depth first."""
    out = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help or "" for a in action._choices_actions}
        for name, sub in action.choices.items():
            out.append((f"{path} {name}", helps.get(name, ""), sub))
            out.extend(_commands(sub, f"{path} {name}"))
    return out


def cli_reference() -> str:
    """The whole reference as Markdown: one ``##`` section per command, ``###`` per sub-command."""
    from objrel.cli.main import build_parser

    root = build_parser()
    parts = [root.description or ""]
    for path, help_line, parser in _commands(root, root.prog):
        depth = path.count(" ")
        parts.append(f"{'#' * (depth + 1)} `{path}`")
        text = help_line or ""
        if parser.description and parser.description != help_line:
            text = f"{text}\n\n{parser.description}" if text else parser.description
        if text:
            parts.append(text.strip())
        formatter = argparse.HelpFormatter(path, width=USAGE_WIDTH)
        formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
        parts.append("```\n" + formatter.format_help().strip() + "\n```")
        table = _arguments(parser)
        if table:
            parts.append("\n".join(table))
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(cli_reference())
