"""The `objrel` command: one module per command group."""
