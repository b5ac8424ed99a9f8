"""Captions and labels the pages build from data, as Streamlit markdown strings (no Streamlit import).

User text (names, notes, labels, sample ids, file names, run names) never reaches the markdown renderer as
markup: every caption here passes it through ``objrel.app.text.plain``, so a note like
``**urgent** [click](http://x) www.x.org :red[!] $x$`` is shown as typed, links and colours not rendered.
"""

from __future__ import annotations

from objrel.app.formats import MISSING, decimals, percent
from objrel.app.text import plain  # noqa: F401  (the pages' captions escape with it; kept importable from here)

# The reviewer's own call as the Review page names it.
CALL_LABELS = {"tp": "True positive", "fp": "False positive", "uncertain": "Uncertain"}
NOT_JUDGED = "not yet"
VERDICT_MARKS = {"violated": ":red[violated]", "holds": ":green[holds]"}
SOURCE_KEY = "source"
NO_RECORD = "no record"


def store_caption(store) -> str:
    """The sidebar's line naming the store the app reads: the SQLite file's name or the database's name and
    kind, never a server path, host or password (a visitor learns nothing about the server from it)."""
    url = str(store.url)
    backend = url.split(":", 1)[0].split("+", 1)[0]
    name = url.split("?", 1)[0].replace("\\", "/").rsplit("/", 1)[-1] or "(in memory)"
    return f"Results from {plain(name)} ({backend})"


def run_label(run) -> str:
    """``#3 name (status)`` for a run record."""
    return f"#{run.id} {run.name} ({run.status})"


# ---------------------------------------------------------------- Runs page


def model_help() -> str:
    """The model names the run form accepts, comma separated."""
    from objrel.models import model_choices

    return ", ".join(model_choices())


def detector_help() -> str:
    """The detector names the run form accepts, one per line."""
    from objrel.models import detector_choices

    return "  \n".join(detector_choices())


def run_progress(run) -> str:
    """A run's label with its samples done of total and its skipped count."""
    return f"{plain(run_label(run))}: {run.n_done}/{run.n_total} samples, {run.n_skipped} skipped"


# ---------------------------------------------------------------- Review page


def panel_caption(panel, detection: bool) -> str:
    """What the model said about one image: its top label (or compared record) and score, the relation's
    verdict, the certainty (classifiers) or IoU with the object (detectors) before -> after, and a note."""
    top = panel.top[0] if panel.top else ((NO_RECORD, None) if detection else (MISSING, 0.0))
    text = f"**{plain(top[0])}**" + ("" if top[1] is None else f" {top[1]:.3f}")
    if panel.verdict:
        text += f" - {panel.relation} {VERDICT_MARKS.get(panel.verdict, panel.verdict)}"
    measure = "IoU with the object" if detection else "certainty"
    if panel.source_certainty is not None and panel.mutant_certainty is not None:
        text += f"  \n{measure} {panel.source_certainty:.3f} -> {panel.mutant_certainty:.3f}"
    elif detection and panel.source_certainty is not None and panel.key == SOURCE_KEY:
        text += f"  \n{measure} {panel.source_certainty:.3f}"
    if panel.note:
        text += f"  \n{plain(panel.note)}"
    return text


def source_image_caption(detection: bool) -> str:
    """The caption under the source image: what each outline colour marks."""
    return ("source: object (gold), detections (blue), compared record (magenta)" if detection
            else "source (target outlined)")


def detection_thumb_caption(panel) -> str:
    """A detection mutant's thumbnail caption: key, outcome and IoU with the object."""
    iou = MISSING if panel.mutant_certainty is None else f"{panel.mutant_certainty:.2f}"
    return f"{panel.key}: {plain(panel.note)} (IoU {iou})"


def detection_source_caption(panel) -> str:
    """The caption under a detection source image: the panel's note and the outline colours."""
    return f"source: {plain(panel.note)}; object gold, detections blue, compared record magenta"


INCORRECT_BADGE = ":red-badge[:material/error: incorrect inference]"


def incorrect_badge(correct: bool | None, detection: bool = False) -> str | None:
    """The badge of an incorrect inference (tested because the run tested all), None for a correct one:
    a flag on a wrong answer says nothing about the reasons of a right one."""
    if correct is not False:
        return None
    return ":red-badge[:material/error: incorrect: not detected on the source]" if detection else INCORRECT_BADGE


def vote_count(item, relation: str) -> str:
    """``2/3``: violated mutations of the relation's primary vote, MISSING when the item has none."""
    vote = next((v for v in item.votes.values() if v["is_primary"] and v["relation"] == relation), None)
    return MISSING if vote is None else f"{vote['violations']}/{vote['n']}"


def vote_text(item, relation: str) -> str:
    """``2/3 violated`` for the relation's primary vote, MISSING when the item has none."""
    count = vote_count(item, relation)
    return count if count == MISSING else f"{count} violated"


# The run setting that skips the mutations a decided vote no longer needs (objrel.config.RunConfig.lazy).
LAZY_KEY = "lazy"
LAZY_SCORES_NOTE = ("S_p, S_r and S need the prediction of every mutation. This run used lazy votes (the same "
                    "flags from fewer mutants), so they are computed only for runs started with "
                    "`objrel run --no-lazy`.")


def lazy_scores_note(item, run) -> str | None:
    """Why the item's continuous scores show as missing: its run used lazy votes (``run.config['lazy']``; runs
    stored before lazy votes existed have no such key and computed every score).  None when the scores are there
    or missing for another reason."""
    scores_missing = item.s_p is None and item.s_r is None and item.s is None
    lazy = bool((getattr(run, "config", None) or {}).get(LAZY_KEY, False))
    return LAZY_SCORES_NOTE if scores_missing and lazy else None


def my_call(verdict: str | None) -> str:
    """The signed-in reviewer's current call on the item, in words."""
    return f"Your call: **{CALL_LABELS.get(verdict, NOT_JUDGED)}**"


def queue_progress(queue, position: int) -> str:
    """The item's place in the queue and how many items the reviewer has judged."""
    return f"Item {position + 1} of {len(queue)} - you judged {queue.n_judged}"


def queue_end(queue, position: int) -> str | None:
    """What the reviewer should know at the end of the queue: that every item is judged, or how many are
    still open when the last item is reached; None elsewhere."""
    if queue.done:
        return (f"You have judged every item of this queue ({len(queue)}). Once the other reviewer has judged theirs, "
                "your calibration (agreement, disagreements, decisions) appears below and on the Agreement page.")
    if queue.is_last(position) and len(queue) > 1:
        return f"Last item of the queue: {queue.n_open} of {len(queue)} items still wait for your call."
    return None


def saved_call(run_id: int, relation: str, rel_path: str, verdict: str, validity: str | None = None) -> str:
    """The line that confirms a saved call, naming run, relation and file: ``Saved: run 1, MR-2, china.jpg:
    true positive`` (with the mutant's validity call when one was made)."""
    from objrel.review import VERDICT_LABELS

    text = f"Saved: run {int(run_id)}, {plain(relation)}, {plain(rel_path)}: {VERDICT_LABELS.get(verdict, verdict)}"
    return text + (f" (mutant {plain(validity)})" if validity else "")


def call_on_a_left_item(rel_path: str, verdict: str) -> str:
    """The line that refuses a call made with the buttons of an item the page had already left: ``Not saved:
    the true positive click was on china.jpg, ...``."""
    from objrel.review import VERDICT_LABELS

    return (f"Not saved: the {VERDICT_LABELS.get(verdict, verdict)} click was on {plain(rel_path)}, an item the page "
            f"had already left (a click while the page was still drawing, or a shortcut pressed twice). Nothing "
            f"was changed; judge the item shown.")


def busy_call(rel_path: str, verdict: str) -> str:
    """The line that says a call was not saved because the store stayed busy (``objrel.errors.StoreBusy``): the
    page stays on the item with the form as it was, so pressing the call again saves it."""
    from objrel.review import VERDICT_LABELS

    call = VERDICT_LABELS.get(verdict, verdict)
    return (f"Not saved: the store is busy with other reviewers' writes, so your {call} call on {plain(rel_path)} "
            f"was not recorded. Your reasons, validity and note are kept; press the call again.")


def reason_words(reasons) -> str:
    """False-positive reasons in words (``objrel.review.REASON_LABELS``), never their slugs."""
    from objrel.review import REASON_LABELS

    return ", ".join(REASON_LABELS.get(r, r) for r in reasons)


def unknown_run_text(named: str) -> str:
    """What the Review page says when a link names a run with no tested inferences."""
    return (f"The link names run {plain(named)}, which has no tested inferences here (deleted, or never run). "
            "Nothing was opened in its place: choose where to go on.")


def unjudged_run_text(run_id: int) -> str:
    """What the Agreement page says when a link names a run that exists but has no judgments yet."""
    return (f"Run {int(run_id)} has no judgments yet: agreement shows once its reviewers have judged the same "
            "items on the Review page. Nothing was opened in its place: choose where to go on.")


def nothing_for_you_text(run_id: int, relation: str) -> str:
    """What the Review page says when the run has no inference of ``relation`` flagged for review."""
    return (f"Run {int(run_id)} has no {plain(relation)} inference flagged for review. Choose another relation or "
            "run above, or one of your queues below.")


def work_choice(entry) -> str:
    """A button label for one entry of ``objrel.review.my_work``: a queue or an adjudicator's disagreements."""
    if hasattr(entry, "judged"):
        return f"Run {entry.run_id} {entry.relation}: {entry.judged} of {entry.total} judged"
    return f"Run {entry.run_id} {entry.relation}: {entry.open} open disagreements"


def calibration_lines(cal, files: dict[str, str] | None = None) -> list[str]:
    """Markdown lines for a closed sample's calibration (``objrel.review.calibration``): kappa (with AC1 and
    PABAK where given), then each disagreement with both calls and the adjudication with its note, or that it
    is not adjudicated yet.  Fields a calibration lacks are left out."""
    from objrel.app.formats import decimals

    lines = []
    a, b = getattr(cal, "reviewer_a", "A"), getattr(cal, "reviewer_b", "B")
    coefficients = getattr(cal, "verdicts", None)
    if coefficients is not None:
        shown = [f"{getattr(c, 'label', c.name)} **{decimals(c.value)}**"
                 for c in getattr(coefficients, "coefficients", ()) if getattr(c, "value", None) is not None]
        if shown:
            band = getattr(coefficients, "kappa_band", "")
            lines.append(f"Agreement of {plain(a)} and {plain(b)} over {coefficients.n} items: " + ", ".join(shown)
                         + (f" (kappa: {band})" if band else ""))
    else:
        kappa = getattr(cal, "kappa", None)
        value = getattr(kappa, "kappa", kappa)
        if isinstance(value, (int, float)):
            lines.append(f"Cohen's kappa: **{decimals(value)}**")
    items = list(getattr(cal, "disagreements", ()) or ())
    lines.append(f"Disagreements: {len(items)}" + ("" if items else " (you agreed on every item)"))
    for d in items:
        name = (files or {}).get(d.sample_id)
        item = f"{plain(name)} (sample {plain(d.sample_id)})" if name else plain(d.sample_id)
        text = f"- **{item}**: {plain(a)} {call_text(d.verdict_a, d.reasons_a, d.note_a)}; " \
               f"{plain(b)} {call_text(d.verdict_b, d.reasons_b, d.note_b)}"
        if getattr(d, "validity_a", None) or getattr(d, "validity_b", None):
            text += f"; mutant: {plain(d.validity_a or '-')} / {plain(d.validity_b or '-')}"
        text += f". {decision_text(d)}" if d.resolved else ". Not adjudicated yet."
        lines.append(text)
    return lines


def retest_lines(result) -> list[str]:
    """One line per relation of a box re-test: its votes and whether the sample is flagged now."""
    return [f"{rel}: {v['violations']} of {v['n']} violated -> {'flagged' if v['flagged'] else 'not flagged'}"
            for rel, v in result.votes.items()]


def example_caption(example: dict, item, mutant) -> str:
    """A striking example: its relation and the top label before -> after the mutation."""
    before = item.source.top[0][0] if item.source.top else MISSING
    after = mutant.top[0][0] if mutant.top else MISSING
    return f"**{example['relation']}**: {plain(before)} -> {plain(after)}"


# ---------------------------------------------------------------- Agreement page


def call_text(verdict: str, reasons, note: str | None) -> str:
    """A reviewer's call in words: verdict, false-positive reasons, and the note in quotes."""
    from objrel import review

    text = review.VERDICT_LABELS[verdict]
    if reasons:
        text += " (" + ", ".join(review.REASON_LABELS[r] for r in reasons) + ")"
    if note:
        text += f": \u201c{plain(note)}\u201d"
    return text


def disagreement_heading(d, rel_path: str | None = None) -> str:
    """The heading of one disagreement: the item, its place in the review sample and what the calls differ in."""
    where = f"#{d.position + 1} of the review sample" if d.position is not None else "outside the review sample"
    item = f"{plain(rel_path)} (sample {plain(d.sample_id)})" if rel_path else plain(d.sample_id)
    return f"**{item}** ({where}; they differ in the {d.kind})"


def validity_words(validity: str | None) -> str:
    """A reviewer's answer to "is the mutant a valid test?" in words (``mutant: not answered`` when none)."""
    from objrel.review import VALIDITY_LABELS

    return f"mutant: {VALIDITY_LABELS.get(validity, plain(validity)) if validity else 'not answered'}"


def disagreement_calls(d, name_a: str, name_b: str) -> str:
    """Both reviewers' calls on one disagreement, one list line each, with their answers on the mutant."""
    return (f"- {plain(name_a)}: {call_text(d.verdict_a, d.reasons_a, d.note_a)}; {validity_words(d.validity_a)}\n"
            f"- {plain(name_b)}: {call_text(d.verdict_b, d.reasons_b, d.note_b)}; {validity_words(d.validity_b)}")


def card_title(card) -> str:
    """An adjudication card's heading line: the file name and the item's id."""
    return f"{plain(card.rel_path)} (item {plain(card.sample_id)}, run {card.run_id})"


AGREEMENT_URL_PATH = "agreement"    # app.py's url_path of the Agreement page


def agreement_link() -> str:
    """A markdown link to the Agreement page (relative, so it works from any page and in a page's AppTest)."""
    return f":material/handshake: [Agreement page]({AGREEMENT_URL_PATH})"


def review_link(url: str) -> str:
    """A markdown link into Review; ``url`` comes from ``objrel.review.queue.review_url`` (query values encoded)."""
    return f":material/fact_check: [Open in Review]({url})"


def card_problem(card) -> str:
    """What an item card shows in place of an image it could not draw."""
    return f"No image: {plain(card.problem)}"


def card_mutant_caption(panel) -> str:
    """A thumbnail caption (an image caption is markdown): the mutation, its top label (a class name, shown as
    plain text) and the relation's verdict."""
    top = panel.top[0][0] if panel.top else MISSING
    return f"{panel.key}: {plain(top)}" + (f" ({panel.verdict})" if panel.verdict else "")


def decision_text(d) -> str:
    """The adjudicator's decision on a disagreement, in words."""
    return f"Decided by {plain(d.resolved_by)}: {call_text(d.resolved_verdict, d.resolved_reasons, d.resolved_note)}"


# ---------------------------------------------------------------- Inspect and Shortcut pages


# charts.napvd_heatmap draws small distances light (yellow) and large ones dark (Viridis reversed).
NAPVD_HEATMAP_CAPTION = ("Euclidean distance between the classes' neuron activation probability vectors (DeepInspect "
                         "Eq. 2): light (yellow) cells are close pairs the model may not separate; dark cells are "
                         "well separated.")


def inspect_summary(result) -> str:
    """One line on a DeepInspect result: model, source, threshold, task and computing time."""
    source = result.source.get("name", result.source.get("kind"))
    return (f"**{plain(result.model.get('name', '?'))}** on **{plain(source)}**, Th = {result.activation_threshold}, "
            f"{result.task}-label; computed in {result.seconds:.1f} s.")


def shortcut_summary(results: dict) -> str:
    """One line on a shortcut benchmark results file: run size, seeds, scenes, plan and step times."""
    cfg = results["config"]
    times = ", ".join(f"{plain(k)} {v:.0f} s" for k, v in results["timings"].items())
    return (f"**{'Quick' if cfg['quick'] else 'Full'} run**: {len(results['seeds'])} seed(s), K = {cfg['n_classes']} "
            f"classes, rho = {cfg['rho']} vs 1/K, {cfg['n_train']} training / {cfg['n_test']} test scenes, "
            f"plan {plain(cfg['plan'])}, {cfg.get('draws', 1)} counterfactual background(s) per other class's type. "
            f"Times: {times}")


# ---------------------------------------------------------------- agreement beyond kappa


UNDEFINED = "undefined"


def score_flag(value: float | None, box_only: bool) -> str | None:
    """The box-only flag shown under a relevancy score's metric (S_p, S_r or S) when the region has no mask
    (``objrel.relations.common.box_only``); None for a masked region or a missing score.  It stands under the
    value, not inside it: "0.778 (box-only)" at a metric's size ran into the next column."""
    from objrel.relations.common import BOX_ONLY

    return BOX_ONLY if box_only and value is not None else None


def relevancy_note(item) -> str:
    """S of a review item and ORMR's reading of it (low when S <= 0.5), with the box-only caveat where the
    region has no mask; "" when the item has no S (then ``box_only_note`` says what the flag means)."""
    from objrel.relations.common import box_only_caveat, relevancy_verdict

    verdict = relevancy_verdict(item.s, item.box_only, item.scoring_name)
    if verdict is None:
        return ""
    text = f"S = {decimals(item.s)}: {verdict}; ORMR reads S <= 0.5 as low."
    if item.box_only:
        text += f" {_sentence(box_only_caveat(item.scoring_name))}"
    return text


def box_only_note(item) -> str:
    """What a review item's box-only flag means, for a caption under the scores: the S reading with its caveat
    where S is known, else the caveat alone where S_p or S_r carries the flag; "" for a masked region."""
    from objrel.relations.common import box_only_caveat

    if not item.box_only:
        return ""
    reading = relevancy_note(item)
    if reading:
        return reading
    if item.s_p is None and item.s_r is None:
        return ""
    return _sentence(box_only_caveat(item.scoring_name))


def _sentence(clause: str) -> str:
    return f"{clause[0].upper()}{clause[1:]}."


def kappa_interval(k) -> str:
    """Cohen's kappa interval (``objrel.review.Kappa``) as ``[lo, hi]``, or "undefined" when kappa or its
    standard error is (``k.note`` says why): never a zero-width interval from a constant rater."""
    if k.kappa is None or k.ci_low is None or k.ci_high is None:
        return UNDEFINED
    return f"[{decimals(k.ci_low)}, {decimals(k.ci_high)}]"


def coefficient_frame(coef):
    """One row per coefficient of ``coef`` (``objrel.review.AgreementCoefficients``): value, interval, and
    why a value or interval is missing ("undefined", never a zero-width interval)."""
    import pandas as pd

    rows = []
    for c in coef.coefficients:
        rows.append({"coefficient": c.label,
                     "value": decimals(c.value) if c.defined else "undefined",
                     f"{percent(coef.confidence, 0)} interval": (f"[{decimals(c.lo)}, {decimals(c.hi)}]"
                                                                if c.has_interval else UNDEFINED),
                     "how the interval is made": (c.method or MISSING).replace("-+", "\u00b1"),
                     "note": c.note or ""})
    return pd.DataFrame(rows)


def prevalence_text(coef) -> str:
    """The calls' spread, which kappa depends on: the dominant call's share and Byrt's prevalence index."""
    from objrel import review

    p = coef.prevalence
    if p.dominant is None:
        return "No items both called yet."
    shares = ", ".join(f"{review.VERDICT_LABELS.get(s.category, s.category)} {percent(s.pooled)}" for s in p.shares)
    index = "" if p.index is None else (f"; prevalence index {decimals(p.index)}, bias index "
                                        f"{decimals(p.bias_index)} (Byrt, Bishop & Carlin 1993)")
    return (f"Calls over {coef.n} items both judged: {shares}; observed agreement {percent(coef.observed)}{index}. "
            "When one call dominates, kappa is low even with high agreement: read it beside AC1 and PABAK.")
