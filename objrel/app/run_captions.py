"""Lines the Runs and Overview pages show about a run's outcome and progress (no Streamlit here)."""

from __future__ import annotations

from objrel.app.text import plain

# What a skip code most often means for a run that tested nothing, in the words a visitor acts on.
SKIP_HINTS = {
    "missing-file": "the annotation's image names match no file in the images folder",
    "unknown-label": "the annotation's labels are not among the model's classes",
    "corrupt-image": "the image files do not decode",
}


def _counts(pairs) -> str:
    return ", ".join(f"{code} {n}" for code, n in pairs)


def nothing_tested_text(t) -> str:
    """``Run 7 (x) finished but tested nothing: 6 skipped (missing-file 6: ...)`` for an
    ``objrel.analysis.overview.NothingTested``; markdown-safe (the run's name, the one part people write, shown
    as typed; skip codes and hints are the app's own words)."""
    parts = []
    if t.skipped:
        hint = SKIP_HINTS.get(t.skipped[0][0])
        parts.append(f"{t.n_skipped} skipped ({_counts(t.skipped)})" + (f"; most: {hint}" if hint else ""))
    if t.untested:
        parts.append(f"{t.n_untested} untested ({_counts(t.untested)})")
    return (f"Run {t.run_id} ({plain(t.name)}) finished but tested nothing: {'; '.join(parts)}. The list of "
            "skipped and untested samples on the Runs page gives each one's reason.")
