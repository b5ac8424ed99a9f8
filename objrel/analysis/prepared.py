"""The results the pages show of every run, computed and kept as soon as a run ends (``objrel.store.kept``),
so the first person to open Overview, Explore or Runs after a long run reads them instead of waiting for them.
"""

from __future__ import annotations

import time

from objrel.analysis import flag_tables as A
from objrel.analysis.overview import STRIKING_EXAMPLES, run_striking_examples, sample_issue_total
from objrel.analysis.summary import summarize
from objrel.store import Store


def prepare_run(store: Store, run_id: int) -> float:
    """Compute (or find kept) the run's headline, per-label, size and model tables, its striking examples and
    its issue count; returns the seconds it took.  Results over several runs are computed when first asked."""
    t0 = time.perf_counter()
    rid = int(run_id)
    summarize(store, rid)
    sample_issue_total(store, rid)
    if store.get_run(rid).n_tested:
        A.per_label(store, rid)
        A.run_figures(store, store.get_run(rid))
        for relation in A.RELATIONS:
            A.size_counts(store, rid, relation)
        for include_incorrect in (False, True):
            run_striking_examples(store, rid, STRIKING_EXAMPLES, include_incorrect)
    return time.perf_counter() - t0
