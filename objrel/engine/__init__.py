"""Run loops: the classifier and detection workers, background jobs, re-tests and the demo store."""
