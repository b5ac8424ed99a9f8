"""A reviewer's own settings (stored as JSON with their account): read and changed only by themselves.

``LIME_AFTER_CALL``: show LIME on the Review page only once the reviewer has made their call on the item
(an explanation seen first can anchor a judgment).  Off unless the reviewer turns it on.  The settings are
about judging, so changing them asks the gate for the judge action (the account's own row, nobody else's);
reading them reads only the signed-in account's own row.
"""

from __future__ import annotations

from objrel import access as A
from objrel.access import Actor, Target
from objrel.store import Store
from objrel.store import accounts as account_rows

LIME_AFTER_CALL = "lime_after_call"
# The evidence panel the Review page opens under an item (every mutation, LIME, the object-size histogram or
# the box editor), kept with the account so it stays what the reviewer last chose.
EVIDENCE_PANEL = "evidence_panel"
EVIDENCE_PANELS = ("mutations", "lime", "size", "box")
EVIDENCE_LABELS = {"mutations": "All mutations", "lime": "LIME", "size": "Object size", "box": "Redraw the box"}
DEFAULTS = {LIME_AFTER_CALL: False, EVIDENCE_PANEL: EVIDENCE_PANELS[0]}
# Settings whose value must be one of a fixed list.
CHOICES = {EVIDENCE_PANEL: EVIDENCE_PANELS}


def _signed_in(actor: Actor, what: str) -> str:
    if not actor.signed_in:
        raise ValueError(f"settings belong to a signed-in account; nobody is signed in to {what} them")
    return actor.name


def my_settings(actor: Actor, store: Store) -> dict:
    """``actor``'s own settings, DEFAULTS filled in for those never saved."""
    saved = account_rows.settings(store, _signed_in(actor, "read"))
    # a stored value no longer among a setting's choices reads as its default
    kept = {k: v for k, v in saved.items() if k not in CHOICES or v in CHOICES[k]}
    return {**DEFAULTS, **kept}


def set_my_setting(actor: Actor, store: Store, key: str, value) -> dict:
    """Change one of ``actor``'s own settings (a key of DEFAULTS, a value of the default's type); NotAllowed
    without the reviewer role."""
    if key not in DEFAULTS:
        raise ValueError(f"setting must be one of {', '.join(DEFAULTS)}; got {key!r}")
    if type(value) is not type(DEFAULTS[key]):
        raise ValueError(f"setting {key!r} takes a {type(DEFAULTS[key]).__name__}; got {value!r}")
    if key in CHOICES and value not in CHOICES[key]:
        raise ValueError(f"setting {key!r} must be one of {', '.join(CHOICES[key])}; got {value!r}")
    who = _signed_in(actor, "change")
    A.authorize(actor, A.JUDGE, Target(f"{who}'s review settings"))
    return {**DEFAULTS, **account_rows.set_setting(store, who, key, value)}
