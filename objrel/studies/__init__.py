"""The papers' studies beyond the relations: DeepInspect and the planted-shortcut benchmark."""
