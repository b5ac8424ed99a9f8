"""Run loops: the shared loop, the classifier and detection workers, background jobs, re-tests and the demo store.

``run(config, store)`` and ``resume(run_id, store)`` start or continue a run of either task.  They are imported
on first use, so a page that only reads results or manages runs (``objrel.engine.jobs``, ``manage``,
``run_form``) loads no model library.
"""

__all__ = ["run", "resume", "engine_for"]


def __getattr__(name: str):
    if name in __all__:
        from objrel.engine import runs

        return getattr(runs, name)
    raise AttributeError(f"module 'objrel.engine' has no attribute {name!r}")
