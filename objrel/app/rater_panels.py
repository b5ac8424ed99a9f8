"""The Agreement page's section on every reviewer of a sample together: Fleiss' kappa and Krippendorff's alpha with
their intervals, the same per verdict (which calls the reviewers disagree on), and the pairwise kappa, AC1 and
PABAK matrix.

Every number comes from ``objrel.review.agreement.many_rater_view``, which checks the signed-in account (only
adjudicators and admins who are no party to an open sample); the frames here only format it.
"""

from __future__ import annotations

from objrel.app.formats import decimals, percent
from objrel.app.text import plain

UNDEFINED = "undefined"
# The pairwise matrix shows this coefficient of every pair (the others are in the long table below it).
MATRIX_COEFFICIENT = "kappa"
# The first column of the k-rater table (apart from the pair's "coefficient" table on the same page).
RATER_COLUMN = "coefficient of every reviewer"


def _interval(c) -> str:
    return f"[{decimals(c.lo)}, {decimals(c.hi)}]" if c.has_interval else UNDEFINED


def rater_frame(result):
    """One row per k-rater coefficient of ``result`` (``ManyRaterAgreement``): value, interval, items, how the
    interval is made and why a value or interval is missing."""
    import pandas as pd

    level = f"{percent(result.confidence, 0)} interval"
    return pd.DataFrame([{RATER_COLUMN: c.label, "value": decimals(c.value) if c.defined else UNDEFINED,
                          level: _interval(c), "items": c.n_items,
                          "how the interval is made": c.method.replace("-+", "\u00b1"), "note": c.note}
                         for c in (result.fleiss, result.alpha)])


def label_frame(result):
    """One row per verdict: how often it was called, on how many items some but not all reviewers called it,
    and Fleiss' kappa and Krippendorff's alpha of that verdict against any other call (a low value names the
    call the reviewers disagree on)."""
    import pandas as pd

    from objrel.review.judgments import VERDICT_LABELS

    level = percent(result.confidence, 0)
    return pd.DataFrame([{"call": VERDICT_LABELS.get(r.category, r.category), "calls": r.calls,
                          "share of calls": percent(r.share), "items it was called on": r.used_on,
                          "items in dispute": r.disputed,
                          "Fleiss' kappa": decimals(r.fleiss.value) if r.fleiss.defined else UNDEFINED,
                          f"kappa {level} interval": _interval(r.fleiss),
                          "Krippendorff's alpha": decimals(r.alpha.value) if r.alpha.defined else UNDEFINED,
                          f"alpha {level} interval": _interval(r.alpha)}
                         for r in result.labels])


def pair_matrix(result):
    """Reviewers x reviewers: Cohen's kappa of each pair over the items both judged (1 on the diagonal)."""
    import pandas as pd

    names = list(result.raters)
    m = pd.DataFrame("", index=names, columns=names)
    for n in names:
        m.loc[n, n] = "1"
    for p in result.pairs:
        c = getattr(p.coefficients, MATRIX_COEFFICIENT)
        text = decimals(c.value) if c.defined else UNDEFINED
        m.loc[p.rater_a, p.rater_b] = m.loc[p.rater_b, p.rater_a] = text
    return m


def pair_frame(result):
    """One row per pair of reviewers: items both judged, kappa, AC1 and PABAK with their intervals."""
    import pandas as pd

    rows = []
    for p in result.pairs:
        row = {"reviewer A": p.rater_a, "reviewer B": p.rater_b, "items both judged": p.coefficients.n}
        for c in p.coefficients.coefficients:
            row[c.label] = decimals(c.value) if c.defined else UNDEFINED
            row[f"{c.label} interval"] = _interval(c)
        rows.append(row)
    return pd.DataFrame(rows)


def k_rater_section(actor, store, run_id: int, relation: str) -> None:
    """Draw the section for (``run_id``, ``relation``); a refusal from the gate is shown as it says, nothing of
    the calls."""
    import streamlit as st

    from objrel.app.tables import frame
    from objrel.errors import NotAllowed
    from objrel.review.agreement import many_rater_view

    st.subheader("Every reviewer together", anchor="every-reviewer")
    try:
        view = many_rater_view(actor, store, run_id, relation)
    except NotAllowed as exc:
        st.error(plain(exc))
        return
    result = view.agreement
    st.caption(f"{len(result.raters)} reviewers ({plain(', '.join(result.raters))}), {result.n_items} drawn items "
               f"with a call, {result.calls} calls. Fleiss' kappa (Fleiss 1971) and Krippendorff's alpha for "
               "nominal calls (Krippendorff 2011) take every reviewer at once and allow items some reviewers have "
               "not judged yet.")
    frame(rater_frame(result), "agreement_k_raters")
    st.markdown("**Per call**: which calls the reviewers disagree on (each call against any other)")
    frame(label_frame(result), "agreement_k_raters_labels")
    if result.pairs:
        st.markdown("**Every pair**: Cohen's kappa over the items both judged")
        st.dataframe(pair_matrix(result), width="content", key="agreement_k_raters_matrix")
        with st.expander("Kappa, Gwet's AC1 and PABAK of every pair, with intervals"):
            frame(pair_frame(result), "agreement_k_raters_pairs")
