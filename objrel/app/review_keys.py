"""The Review page's keyboard: one listener on the page, whatever element has the focus.

Streamlit's own button shortcuts stop as soon as a radio, a checkbox or a multiselect holds the focus, which
on a review item is nearly always.  This module's script is added once to the page (``st.html`` with
JavaScript, not an iframe) and listens on the window in the capture phase, before any widget sees the key.
It only ever *clicks the controls the page drew* (the judging form's submit buttons, its checkboxes and radio,
the move buttons, the evidence switch): a call therefore goes to the server as one form submit that carries
the values of the item it was drawn for, and the server refuses it when the page has left that item.

The script is a constant: no run, sample id, label or any other text from the data ever enters it.  While a
text field has the focus the keys type into it; Escape leaves the field.
"""

from __future__ import annotations

from dataclasses import dataclass

# Widget keys (prefixes) the script looks for; the page builds its keys from these.
DECISION_KEY = "review_decision"        # the container of the judging form
CALL_KEY_PREFIX = "judge_"               # judge_tp_<item>, judge_fp_<item>, judge_uncertain_<item>
REASON_KEY_PREFIX = "review_reason_"     # review_reason_<n>_<item>, one checkbox per false-positive reason
VALIDITY_KEY_PREFIX = "review_validity_"
NOTE_KEY_PREFIX = "review_note_"
NEXT_KEY_PREFIX = "review_next_"
PREV_KEY_PREFIX = "review_prev_"
SKIP_KEY_PREFIX = "review_skip_"
UNDO_KEY_PREFIX = "review_undo_"
EVIDENCE_KEY = "review_evidence"


# Hex characters of a sample id's hash in the widget keys of its item.
ITEM_TAG_CHARS = 16


def item_suffix(run_id: int, relation: str, sample_id: str) -> str:
    """The tail of every widget key of one item: ``<run>_<relation>_<hash of the sample id>``.  A sample id is
    any text up to 300 characters; Streamlit turns a key into a CSS class (other characters become ``-``), so
    a raw id could collide with another item's or pose as another control's key.  The hash keeps every key
    to letters, digits, ``_`` and ``-``, one per item."""
    import hashlib

    tag = hashlib.sha256(str(sample_id).encode("utf-8")).hexdigest()[:ITEM_TAG_CHARS]
    return f"{int(run_id)}_{relation}_{tag}"


@dataclass(frozen=True)
class Key:
    """One key of the legend: the key, what it does."""

    key: str
    does: str


CALL_KEYS = {"tp": "T", "fp": "F", "uncertain": "U"}
# A call key pressed within this many milliseconds of the last one is taken for a double press (or a key held
# down) and dropped on the page: faster than anyone judges an item, and the second press of a pair can then
# never land on the item the first one opened.  The server refuses a call on an item the page has left, too.
DOUBLE_PRESS_MS = 400
VALIDITY_KEYS = ("V", "I", "Q")          # valid test, invalid mutant, unsure (objrel.review.VALIDITY's order)
EVIDENCE_KEYS = ("M", "L", "H", "B")     # in the order of objrel.review.settings.EVIDENCE_PANELS

LEGEND = (
    Key("T / F / U", "true positive / false positive / uncertain (saves and opens the next item)"),
    Key("1 2 3", "false-positive reasons"),
    Key("V / I / Q", "mutant: valid test / invalid / unsure"),
    Key("/", "write a note (Esc leaves it)"),
    Key("N / P", "next / previous item"),
    Key("S", "skip to the next item you have not called"),
    Key("Z", "undo: back to the item you called last"),
    Key("M L H B", "evidence: mutations, LIME, object size, box"),
)

SCRIPT = """<script>
(() => {
  if (window.__objrelReviewKeys) { return; }
  window.__objrelReviewKeys = true;
  const TYPED = new Set(["text", "password", "search", "email", "number", "url", "tel"]);
  const isTyping = (el) => !!el && (el.isContentEditable || el.tagName === "TEXTAREA" ||
    (el.tagName === "INPUT" && TYPED.has((el.getAttribute("type") || "text").toLowerCase())));
  // the elements whose own key starts with prefix (a class that merely contains it does not count)
  const keyed = (root, prefix) => [...root.querySelectorAll('[class*="st-key-"]')]
    .filter((el) => [...el.classList].some((c) => c.startsWith("st-key-" + prefix)));
  const within = (root, prefix) => keyed(root, prefix)[0] || null;
  const usable = (el) => el && !el.disabled && el.getAttribute("aria-disabled") !== "true";
  // what the last key did, for a look from outside (the browser tests): acted, waiting, no-control
  const mark = (what) => document.documentElement.setAttribute("data-objrel-key", what);
  const click = (el) => {
    if (usable(el)) { el.click(); mark("acted"); return true; }
    mark("no-control");
    return false;
  };
  const button = (root, prefix) => { const box = within(root, prefix); return box && box.querySelector("button"); };
  // A call button's own key (st-key-judge_tp_ followed by run, relation and item) names the item it was drawn for.
  const keyOf = (el) => {
    const box = el && keyed(document, "__CALL__").find((b) => b.contains(el));
    return box ? [...box.classList].find((c) => c.startsWith("st-key-__CALL__")) || null : null;
  };
  // A call pressed while its button is not usable (the page still submitting the last call, or connecting) is
  // tried again for up to WAIT_MS, on that button only: once the page shows another item, it is dropped.
  const WAIT_MS = 5000;
  const callWhenReady = (want, started) => {
    const box = want && keyed(document, "__CALL__").find((el) => el.classList.contains(want));
    const b = box && box.querySelector("button");
    if (!b) { mark("no-control"); return; }
    if (usable(b)) { b.click(); mark("acted"); return; }
    if (Date.now() - started > WAIT_MS) { mark("no-control"); return; }
    mark("waiting");
    setTimeout(() => callWhenReady(want, started), 50);
  };
  // the n-th of several keyed boxes (one checkbox each), or the n-th of a kind inside a single one (a radio)
  const nth = (root, prefix, n, what) => {
    const boxes = keyed(root, prefix);
    if (boxes.length > 1) { return boxes[n] ? boxes[n].querySelector(what) : null; }
    return boxes.length ? boxes[0].querySelectorAll(what)[n] : null;
  };
  const focusNote = (panel) => {
    const box = within(panel, "__NOTE__");
    const field = box && box.querySelector("input, textarea");
    if (field) { field.focus(); mark("acted"); } else { mark("no-control"); }
  };
  const evidence = (n) => {
    const box = within(document, "__EVIDENCE__");
    click(box && box.querySelectorAll("button")[n]);
  };
  // A call key this soon after the last one is the same press again (a double press, a key held down): it is
  // dropped, so it can never become a call on the item the first press opened.  No one judges an item faster.
  const DOUBLE_PRESS_MS = __DOUBLE_PRESS_MS__;
  let lastCall = 0;
  const CALLS = {t: "tp", f: "fp", u: "uncertain"};
  const VALIDITY = {v: 0, i: 1, q: 2};
  const EVIDENCE = {m: 0, l: 1, h: 2, b: 3};
  const MOVES = {n: "__NEXT__", p: "__PREV__", s: "__SKIP__", z: "__UNDO__"};
  window.addEventListener("keydown", (e) => {
    const panel = within(document, "__DECISION__");
    if (!panel || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) { return; }
    const el = document.activeElement;
    if (isTyping(el)) {
      if (e.key === "Escape") { el.blur(); e.preventDefault(); e.stopPropagation(); }
      return;
    }
    const k = e.key.length === 1 ? e.key.toLowerCase() : e.key;
    let act = null;
    if (k in CALLS) {
      const now = Date.now();
      if (e.repeat || now - lastCall < DOUBLE_PRESS_MS) { e.preventDefault(); mark("double-press"); return; }
      lastCall = now;
      act = () => callWhenReady(keyOf(button(panel, "__CALL__" + CALLS[k] + "_")), now);
    }
    else if (k >= "1" && k <= "9") {
      act = () => click(nth(panel, "__REASON__", Number(k) - 1, 'input[type="checkbox"]'));
    }
    else if (k in VALIDITY) { act = () => click(nth(panel, "__VALIDITY__", VALIDITY[k], 'input[type="radio"]')); }
    else if (k === "/") { act = () => focusNote(panel); }
    else if (k in MOVES) { act = () => click(button(document, MOVES[k])); }
    else if (k in EVIDENCE) { act = () => evidence(EVIDENCE[k]); }
    else if (k === "Escape") { act = () => {}; }
    if (act === null) { return; }
    e.preventDefault();
    e.stopPropagation();
    if (el && el !== document.body && typeof el.blur === "function") { el.blur(); }
    act();
  }, true);
})();
</script>"""


def key_script() -> str:
    """The listener's ``<script>`` with the page's widget keys filled in (constants of this module only).

    Streamlit passes ``st.html`` through DOMPurify, which drops a script whose text holds ``<`` followed by a
    letter or a slash (markup inside text): the script's body never does (tested)."""
    return (SCRIPT.replace("__DECISION__", DECISION_KEY).replace("__CALL__", CALL_KEY_PREFIX)
            .replace("__REASON__", REASON_KEY_PREFIX).replace("__VALIDITY__", VALIDITY_KEY_PREFIX)
            .replace("__NOTE__", NOTE_KEY_PREFIX).replace("__NEXT__", NEXT_KEY_PREFIX)
            .replace("__PREV__", PREV_KEY_PREFIX).replace("__SKIP__", SKIP_KEY_PREFIX)
            .replace("__UNDO__", UNDO_KEY_PREFIX).replace("__EVIDENCE__", EVIDENCE_KEY)
            .replace("__DOUBLE_PRESS_MS__", str(DOUBLE_PRESS_MS)))


def legend_markdown() -> str:
    """The key legend as one Markdown line of ``key`` what-it-does pairs."""
    return " · ".join(f"`{k.key}` {k.does}" for k in LEGEND)
