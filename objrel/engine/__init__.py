"""Run loops: the shared loop, the classifier and detection workers, background jobs, re-tests and the demo store.

``run(config, store)`` and ``resume(run_id, store)`` start or continue a run of either task.
"""

from objrel.engine.runs import engine_for, resume, run

__all__ = ["run", "resume", "engine_for"]
