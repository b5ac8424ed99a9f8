"""What the project shows its readers says what the code does, never how the project was developed.

The README, the docs, the comments, docstrings and strings of the shipped code (``objrel/``, ``pages/``,
``app.py``, ``serve.py``, ``benchmarks/``) and the names of the tests are read for phrases that only make sense
to someone who followed the development: a work session ("this stop", "the last stop"), one machine it ran on
("the AMD host", "H200", "2-core build machine"), an experiment log ("tried and left out"), a browser session
("in chromium here"), a promise about another module ("once the library has it"), a design document that is not
in the repository ("ARCHITECTURE.md decision N"), the papers by their file numbers ("seed 000"; a footnote that
maps those numbers to the papers may name them), and tests named after finding ids (``test_f12_...``).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Phrase -> why a reader cannot use it.  Matched case-insensitively on word boundaries.
NARRATION = {
    r"this stop": "a work session, not a property of the code",
    r"(the )?last stop": "a work session, not a property of the code",
    r"the AMD host": "one machine the project was measured on",
    r"the Intel host": "one machine the project was measured on",
    r"tried and left out": "an experiment log",
    r"H200": "one machine the project was measured on",
    r"2-core build machine": "one machine the project was measured on",
    r"in chromium here": "a browser session of the development",
    r"once the library has it": "a promise about another module",
    r"ARCHITECTURE\.md decision": "a design document that is not in the repository",
    r"seed 00\d": "the papers by the file numbers of the development's reading list",
}
NARRATION_RE = re.compile("|".join(rf"\b(?:{p})\b" for p in NARRATION), re.IGNORECASE)
# "seed 00N" may stand in a footnote that maps those numbers to the papers: a Markdown footnote definition
# ("[^1]: ...", "[seed 000]: ...") or a line that starts with the number and says which paper it is
# ("seed 000: Tian et al., ...", "| seed 000 | Tian et al. ... |").
FOOTNOTE_RE = re.compile(r"^[\s>*|#-]*(\[\^?[^\]]+\]:|\[?seed 00\d\]?\s*[:|=])", re.IGNORECASE)
SEED_RE = re.compile(r"\bseed 00\d\b", re.IGNORECASE)
# A test named after a finding id ("test_f12_...", "test_b1_...") says which report found it, not what it checks.
FINDING_NAME_RE = re.compile(r"^test_[a-z]\d{1,2}(_|$)", re.IGNORECASE)

DOCUMENTS = ["README.md"]
DOC_FOLDERS = ["docs"]
DOC_SUFFIXES = (".md", ".txt", ".rst")
CODE = ["app.py", "serve.py"]
CODE_FOLDERS = ["objrel", "pages", "benchmarks"]
TEST_FOLDER = "tests"


def narration_in_line(line: str) -> list[str]:
    """The narrating phrases in one line of prose (a "seed 00N" in a footnote mapping excepted)."""
    found = [m.group(0) for m in NARRATION_RE.finditer(line)]
    if FOOTNOTE_RE.match(line):
        found = [f for f in found if not SEED_RE.fullmatch(f)]
    return found


def code_prose(source: str) -> list[tuple[int, str]]:
    """(line number, text) of every comment and string literal (docstrings included) of one Python file."""
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            for k, line in enumerate(tok.string.splitlines()):
                out.append((tok.start[0] + k, line))
    return out


def _files(folders: list[str], suffixes: tuple[str, ...]) -> list[Path]:
    paths = []
    for folder in folders:
        base = ROOT / folder
        if base.is_dir():
            paths += sorted(p for p in base.rglob("*") if p.is_file() and p.name.endswith(suffixes))
    return paths


def prose_problems() -> list[str]:
    """``path:line: phrase`` for every narrating phrase in the documents and the shipped code's prose."""
    problems = []
    docs = [ROOT / d for d in DOCUMENTS if (ROOT / d).exists()] + _files(DOC_FOLDERS, DOC_SUFFIXES)
    for path in docs:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            problems += [f"{path.relative_to(ROOT)}:{n}: {p!r}" for p in narration_in_line(line)]
    code = [ROOT / c for c in CODE if (ROOT / c).exists()] + _files(CODE_FOLDERS, (".py",))
    for path in code:
        for n, line in code_prose(path.read_text(encoding="utf-8")):
            problems += [f"{path.relative_to(ROOT)}:{n}: {p!r}" for p in narration_in_line(line)]
    return problems


def finding_named_tests() -> list[str]:
    """Test files and test functions named after a finding id."""
    problems = []
    for path in sorted((ROOT / TEST_FOLDER).rglob("test_*.py")):
        rel = path.relative_to(ROOT)
        if FINDING_NAME_RE.match(path.stem):
            problems.append(f"{rel}: file named after a finding")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and FINDING_NAME_RE.match(node.name):
                problems.append(f"{rel}:{node.lineno}: {node.name}")
    return problems


def test_readme_docs_and_code_prose_do_not_narrate_the_development():
    problems = prose_problems()
    assert not problems, "phrases that narrate how the project was developed:\n" + "\n".join(problems)


def test_no_test_is_named_after_a_finding_id():
    problems = finding_named_tests()
    assert not problems, "tests named after finding ids, not after what they check:\n" + "\n".join(problems)


def test_the_phrases_are_found_in_comments_strings_and_prose_but_not_in_ordinary_words():
    source = ('"""Runs on the AMD host."""\n'
              'x = 1  # measured on an H200\n'
              'y = "see ARCHITECTURE.md decision 7"\n'
              'stop = "this stops the run"  # the bus stop\n')
    found = [p for _, line in code_prose(source) for p in narration_in_line(line)]
    assert found == ["the AMD host", "H200", "ARCHITECTURE.md decision"]
    assert narration_in_line("At this stop the batch grew.") == ["this stop"]
    assert narration_in_line("Tried and left out: pinning.") == ["Tried and left out"]
    assert narration_in_line("the vote of seed 000 s4.4") == ["seed 000"]
    # a footnote that maps the numbers to the papers may name them; the same line's other phrases still count
    assert narration_in_line("[seed 000]: Tian et al., EMSE 2021") == []
    assert narration_in_line("seed 001: the detection report, measured on the H200") == ["H200"]


def test_finding_ids_are_told_from_names_that_only_contain_digits():
    assert FINDING_NAME_RE.match("test_f12_the_vote_is_strict")
    assert FINDING_NAME_RE.match("test_b1_calibration_shows_no_call")
    assert FINDING_NAME_RE.match("test_w1_messages")
    assert not FINDING_NAME_RE.match("test_onnxruntime_with_f32")
    assert not FINDING_NAME_RE.match("test_mr1_holds")          # MR-1 is a relation, named by what it is
    assert not FINDING_NAME_RE.match("test_ac1_beside_kappa")   # Gwet's AC1 is a coefficient
    assert not FINDING_NAME_RE.match("test_e2e_browser")        # end to end
