"""The security page's permission table, generated from ``objrel.access.ACTIONS`` (the gate's one declared table)."""

from __future__ import annotations


def action_table() -> str:
    """A Markdown table: each action, what it is, the roles that may do it, and what kind of thing it does."""
    from objrel import access

    roles = access.ROLES
    head = ["action", "what", *(access.ROLE_LABELS[r] for r in roles), "no account", "it"]
    rule_line = ["---"] * 2 + [":---:"] * (len(roles) + 1) + ["---"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(rule_line) + " |"]
    for name, rule in access.ACTIONS.items():
        anyone = rule.roles == access.EVERYONE
        marks = ["yes" if anyone or r in rule.roles else "" for r in roles]
        kinds = "; ".join(rule.kinds) or "only shows"
        lines.append(f"| `{name}` | {rule.what} | " + " | ".join(marks) + f" | {'yes' if anyone else ''} | {kinds} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(action_table())
