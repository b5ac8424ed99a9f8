"""Exceptions objrel raises.  Each message says what was expected and what arrived."""


class ObjrelError(Exception):
    """Base class of every error objrel raises on purpose."""


class BadSampleError(ObjrelError):
    """One sample cannot be tested: the run records ``reason`` and goes on.

    ``code`` is a short machine-readable tag (``corrupt-image``, ``missing-file``,
    ``empty-region``, ``box-outside-image``, ``unknown-label``, ``bad-rle``,
    ``path-escapes-root``, ...) used to count skips by cause.  ``path`` names the file as the dataset does
    (relative to its root); it may be set after the error is raised, and the message follows it.
    """

    def __init__(self, code: str, reason: str, path: str | None = None):
        self.code = code
        self.reason = reason
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}" if self.path else self.reason

    def __reduce__(self):
        return type(self), (self.code, self.reason, self.path)


class AnnotationError(ObjrelError):
    """An annotation file as a whole cannot be read (not JSON, wrong schema)."""


class UnsafeWeightsError(ObjrelError):
    """A weights file would need full unpickling, which can run arbitrary code."""


class ConfigError(ObjrelError, ValueError):
    """A run configuration, model name or operator name is invalid."""


class NotAllowed(ObjrelError, PermissionError):
    """An account asked for something its roles do not permit.

    ``who``: the account (None: nobody signed in); ``action``: what was asked; ``needed``: the
    roles any one of which would permit it; ``held``: the roles the account has.
    """

    def __init__(self, who: str | None, action: str, needed: tuple[str, ...], held: tuple[str, ...],
                 reason: str | None = None):
        self.who, self.action, self.needed, self.held = who, action, tuple(needed), tuple(held)
        account = f"{who!r}" if who else "nobody signed in"
        if reason is not None:
            msg = f"{account} may not {action}: {reason}"
        else:
            has = ", ".join(self.held) if self.held else "no role"
            msg = f"{account} may not {action}: it needs the role {' or '.join(self.needed)}; {who or 'it'} has {has}"
        super().__init__(msg)


class SignInThrottled(ObjrelError):
    """Too many failed sign-ins for a name or a client: try again in ``wait_s`` seconds."""

    def __init__(self, wait_s: float):
        self.wait_s = float(wait_s)
        super().__init__(f"too many failed sign-ins; try again in {max(1, round(wait_s))} s")


class StoreError(ObjrelError, ValueError):
    """The store cannot be used: a missing folder, a file that is not a database, a database of another
    application, a damaged file, or a schema this objrel does not know."""


class StoreTooNew(StoreError):
    """The store was written by a newer objrel (a schema revision this one does not know)."""


class RunHeld(ObjrelError):
    """A run is held by a live process (its lease): a second process may not work on it."""


class RunLeaseLost(ObjrelError):
    """A process lost the lease on its run (the run was deleted, or a process took over a lease it let go
    stale): it stops without writing anything more into the store."""


class InputFileError(AnnotationError, ValueError):
    """A JSON or XML file refused before or while parsing: missing, over its size or nesting limit, not
    UTF-8 or not well formed."""


class StoreBusy(ObjrelError):
    """A write found the store locked by other writers for longer than it waits (SQLite's busy timeout, or no
    free pooled connection in time): nothing of it was saved, and the same write may simply be tried again."""


class WorkRefused(ObjrelError, ValueError):
    """Costly work (a run, LIME, a report, a benchmark) was not started: a cap of the work queue is reached,
    the same work already runs, or a visitor without an account asked for work that is not public
    (``objrel.work_queue``).  Nothing was started; the same request may be made again later (a ValueError
    too, as the refusal of a second quick benchmark always was)."""


class MissingExtra(ObjrelError, ImportError):
    """A command needs a package of an optional extra (``pip install 'objrel[app]'`` and the like) that this
    installation was made without."""
