"""The architecture page's stage table, generated from ``objrel.stages.STAGES`` (the one place the order is stated)."""

from __future__ import annotations


def stage_table() -> str:
    """A Markdown table: each stage in import order, its modules and the stages it may import."""
    from objrel.stages import STAGES

    lines = ["| stage | modules and packages | may import |", "| --- | --- | --- |"]
    for stage in STAGES:
        modules = ", ".join(f"`{m}`" for m in stage.modules)
        allowed = ", ".join(stage.may_import) if stage.may_import else "the standard library only"
        lines.append(f"| **{stage.name}** | {modules} | {allowed} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(stage_table())
