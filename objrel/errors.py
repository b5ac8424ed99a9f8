"""Exceptions objrel raises.  Each message says what was expected and what arrived."""


class ObjrelError(Exception):
    """Base class of every error objrel raises on purpose."""


class BadSampleError(ObjrelError):
    """One sample cannot be tested: the run records ``reason`` and goes on.

    ``code`` is a short machine-readable tag (``corrupt-image``, ``missing-file``,
    ``empty-region``, ``box-outside-image``, ``unknown-label``, ``bad-rle``,
    ``path-escapes-root``, ...) used to count skips by cause.
    """

    def __init__(self, code: str, reason: str, path: str | None = None):
        self.code = code
        self.reason = reason
        self.path = path
        where = f"{path}: " if path else ""
        super().__init__(f"{where}{reason}")


class AnnotationError(ObjrelError):
    """An annotation file as a whole cannot be read (not JSON, wrong schema)."""


class UnsafeWeightsError(ObjrelError):
    """A weights file would need full unpickling, which can run arbitrary code."""


class ConfigError(ObjrelError, ValueError):
    """A run configuration, model name or operator name is invalid."""
