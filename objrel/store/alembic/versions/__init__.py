"""The store's revisions, one module each, oldest first (``0001`` creates schema 1)."""
