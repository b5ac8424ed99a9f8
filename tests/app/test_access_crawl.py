"""Crawl every page as every role and hold what happened against the declared action table.

Each page (app.py's Overview and every file in pages/) is opened with Streamlit's AppTest as a visitor, a
reviewer, an adjudicator, a run operator and an admin, each on a fresh copy of one fixture store.  The crawl
presses every button with the page's own values, then fills every input (text with hostile values: a system
file, a path that climbs out, code, a server file beside the store) and presses every button again, re-reading
the page after each press.  A disabled button is pressed too, as a forged widget message (a client can send one
whatever the browser shows); Streamlit discards such a change, and the crawl checks that nothing happened.

What happened is observed with real mechanisms: the store's rows are compared before and after each step,
an audit hook records every process start and every file opened, and ``objrel.access.watch()`` records the
gate's decisions.  Each step is then held against ``objrel.access.ACTIONS``:

* every decision the gate granted names one of the actor's roles (or a public action);
* a change to the store follows a granted action that ``WRITES``; a process start one that ``STARTS``; a file
  opened in the results folders, the data roots or the logs one that opens a server path (``READS_PATH``;
  logs only ``read-run-log`` or the actions that write them); a typed path is never opened;
* a page shows another reviewer's calls only to a role that may see them, and a server path only to the
  roles that run the server's work (run operators, admins);
* no page shows a traceback.

Streamlit's ``file_uploader`` cannot be driven by AppTest; the upload actions are covered by
tests/engine and tests/app/test_page_inspect.py.
"""

from __future__ import annotations

import collections
import hashlib
import json
import os
import shutil
import signal
import sqlite3
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import element_tree as ET

from objrel import access as A
from objrel import review as R
from objrel.access import SERVER

pytestmark = pytest.mark.subprocess

REPO = Path(__file__).resolve().parents[2]
# Overview is app.py's default page (its page links need app.py's navigation); the others open on their own.
PAGES = {**{p.stem: p for p in sorted((REPO / "pages").glob("*.py"))}, "overview": REPO / "app.py"}
EXPECTED_PAGES = {"overview", "my_work", "explore", "review", "agreement", "runs", "inspect", "shortcut", "users"}

# The roles the crawl signs in as: (account, roles); None is a visitor without an account.
ROLE_ACCOUNTS = {
    "anonymous": (None, ()),
    "reviewer": ("alice", (A.REVIEWER,)),
    "adjudicator": ("dave", (A.ADJUDICATOR,)),
    "run-operator": ("olga", (A.RUN_OPERATOR,)),
    "admin": ("adam", (A.ADMIN,)),
}
OTHER_REVIEWER = "bob"       # the second reviewer of the fixture; never crawls
NOTES = {"alice": "alice-note-x7q", "bob": "bob-note-k2w"}   # each reviewer's own words on the disagreement
HOSTILE_TEXT = ("/etc/passwd", "../../x", "py:os:system")
MAX_CLICKS = 14              # presses per pass of one page as one role
SKIPPED_BUTTONS = {"signout_btn", "signout_all_btn", "oidc_login_btn"}  # would change who crawls, not what they may
SIGN_IN_BUTTON = "signin_submit"
# A failed sign-in is counted for throttling, a good one opens a session: public by nature, no action.
SIGN_IN_TABLES = {"sign_in_failures", "app_sessions"}
# Results any view computes from the runs and keeps (objrel.store.kept): what the runs already say, written by
# whoever looks first; no one's action.
DERIVED_TABLES = {"run_summaries"}
PATH_ROLES = {"run-operator", "admin"}  # may see server paths (log files, run processes)
LOG_ACTIONS = {A.READ_LOG, A.START_RUN, A.RESUME_RUN, A.START_BENCHMARK}
PROCESS_EVENTS = {"subprocess.Popen", "os.posix_spawn", "os.fork", "os.forkpty", "os.exec", "os.spawn",
                  "os.system", "os.startfile"}
SAFE_OPEN_PREFIXES = ("/proc/", "/dev/", "/sys/", "/usr/share/zoneinfo", "/etc/localtime", "/usr/lib/",
                      "/usr/share/", "/etc/mime.types", "/etc/ssl/", "/etc/pki/", "/etc/ld.so")


# ---------------------------------------------------------------- one audit hook for the whole process

@dataclass
class Recorder:
    on: bool = False
    opens: list = field(default_factory=list)       # (path, mode)
    processes: list = field(default_factory=list)   # (event, what)

    def hook(self, event, args):
        if not self.on:
            return
        if event == "open":
            path, mode = args[0], args[1] if len(args) > 1 else "r"
            if isinstance(path, bytes):
                path = path.decode(errors="replace")
            if isinstance(path, (str, os.PathLike)):
                self.opens.append((os.fspath(path), str(mode)))
        elif event == "sqlite3.connect" and isinstance(args[0], (str, os.PathLike)):
            self.opens.append((os.fspath(args[0]), "sqlite"))   # SQLite opens its files in C, past "open"
        elif event in PROCESS_EVENTS:
            self.processes.append((event, repr(args)[:200]))


RECORDER = Recorder()
sys.addaudithook(RECORDER.hook)   # an audit hook cannot be removed: it records only while RECORDER.on


# ---------------------------------------------------------------- the fixture world


@pytest.fixture(autouse=True)
def fast_scrypt(monkeypatch):
    monkeypatch.setattr(R.accounts, "SCRYPT_N", 2 ** 10)


@dataclass(frozen=True)
class World:
    template: Path      # the store and folders each crawl gets a fresh copy of
    roots: Path         # the allowed data roots (shared, read only)
    rundata: Path       # the finished run's dataset (shown on Overview and Review to everyone)
    secret: Path        # a server file beside the data that nothing typed may open


def build_world(base: Path) -> World:
    from objrel.config import RunConfig
    from objrel.engine.classify import Engine
    from objrel.review.roles import actor_of
    from objrel.store import Store
    from objrel.studies.deepinspect import inspect_dataset

    from tests.conftest import write_flagged_set
    from tests.fixtures.colour_model import factory
    from tests.studies import test_deepinspect as di

    template, roots = base / "template", base / "roots"
    ann = write_flagged_set(base / "rundata", n_flagged=4, n_clean=1)
    template.mkdir()
    store = Store(template / "app.db")
    run_id = Engine(store, RunConfig(model="py:tests.fixtures.colour_model:factory", dataset=str(ann),
                                     plan="colours3", name="colour run"), model=factory()).execute().run_id
    # a stopped run with samples left, so the Runs page offers Resume
    stopped = store.create_run(name="stopped run", model="ResNet", model_config={}, task="single",
                               class_names=["a"], dataset="d", dataset_config={"root": "/"}, plan={"groups": []},
                               config={}, seed=0, n_total=3)
    store.update_run(stopped, status="cancelled")
    for account, roles in ROLE_ACCOUNTS.values():
        if account:
            R.create_reviewer(store, account, f"{account}-passphrase", roles=list(roles))
    R.create_reviewer(store, OTHER_REVIEWER, "bob-passphrase", roles=[A.REVIEWER])
    for relation in ("MR-1", "MR-2"):
        drawn = R.draw_review_sample(SERVER, store, run_id, relation)
        assert drawn, relation
        for i, sid in enumerate(drawn):
            for who in ("alice", OTHER_REVIEWER):
                disagree = i == 0 and who == OTHER_REVIEWER   # the first item: alice tp, bob fp
                R.record_judgment(actor_of(store, who), store, run_id, sid, relation,
                                  "fp" if disagree else "tp", ["other"] if disagree else (),
                                  NOTES[who] if disagree or (i == 0) else None)
    store.dispose()
    # the Inspect page's results folder: a real DeepInspect result whose dataset lies in the data roots
    coco = di.write_four_colour_coco(roots / "colours")
    inspect_dataset(di.mean_colour_classifier(), __import__("objrel.data", fromlist=["load_dataset"])
                    .load_dataset(coco)).save(template / "inspect" / "colours.json")
    # the Shortcut page's results folder: a results file it cannot draw (it says so) and a quick benchmark
    # "running" (its lock names a live process: this one), whose log line names a server path
    quick = template / "shortcut" / "quick"
    quick.mkdir(parents=True)
    (template / "shortcut" / "results.json").write_text("{}")
    (quick / "quick.lock").write_text(json.dumps({"pid": os.getpid(), "by": "olga", "at": time.time()}))
    (quick / "quick.log").write_text(f"training biased seed 0 in {template}/shortcut/quick\n")
    Store(quick / "shortcut.db").dispose()
    (template / "logs").mkdir()
    (template / "var" / "uploads").mkdir(parents=True)
    secret = base / "secret" / "annotations.json"
    secret.parent.mkdir()
    secret.write_text('{"images": [], "annotations": [], "categories": []}')
    return World(template, roots, base / "rundata", secret)


def copy_store(src: Path, dst: Path) -> None:
    with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
        a.backup(b)


# ---------------------------------------------------------------- observing one step


def snapshot(db: Path) -> dict[str, tuple[int, str]]:
    """Each table's row count and a digest of its rows."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        out = {}
        for t in tables:
            rows = sorted(repr(r) for r in con.execute(f'select * from "{t}"'))
            out[t] = (len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest())
        return out
    finally:
        con.close()


def children_of_this_process() -> set[int]:
    me, kids = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                kids.add(int(entry))
    return kids


def shown_text(at: AppTest) -> str:
    """Everything the page shows, as text: every element's message (and every table's cells)."""
    parts = []
    for node in at._tree:
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        if isinstance(node, ET.Dataframe):
            try:
                parts.append(node.value.to_string())
            except Exception:  # an unreadable table shows nothing more than its message
                pass
    return "\n".join(parts)


@dataclass
class Step:
    page: str
    role: str
    what: str
    decisions: list
    opens: list
    processes: list
    changed_tables: set
    shown: str
    exception: list


@dataclass
class Crawl:
    world: World
    home: Path                     # this crawl's copy of the template
    page: str
    role: str
    steps: list = field(default_factory=list)
    unsupported: set = field(default_factory=set)
    outside: set = field(default_factory=set)     # files opened outside the allow-list (should stay empty)

    @property
    def db(self) -> Path:
        return self.home / "app.db"

    def step(self, at: AppTest, what: str) -> None:
        before, kids = snapshot(self.db), children_of_this_process()
        RECORDER.opens.clear()
        RECORDER.processes.clear()
        with A.watch() as decisions:
            RECORDER.on = True
            try:
                at.run()
            finally:
                RECORDER.on = False
        opens, processes = list(RECORDER.opens), list(RECORDER.processes)
        for pid in children_of_this_process() - kids:   # a run process a permitted role started: stop it
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        after = snapshot(self.db)
        changed = {t for t in set(before) | set(after) if before.get(t) != after.get(t)}
        self.steps.append(Step(self.page, self.role, what, list(decisions), opens, processes, changed,
                               shown_text(at), [e.value for e in at.exception]))


def widgets(at: AppTest) -> list:
    return [n for n in at._tree if isinstance(n, ET.Widget)]


def widget_id(w) -> str:
    return f"{w.type}:{w.key or getattr(w, 'label', '') or w.id}"


def raw_value(w, label: str):
    """The page's own value that ``w`` shows as the option ``label``, or None.  AppTest holds the options as
    shown and the value as the page's object: the options themselves, the current value, small ints (run
    ids) and the review and role keys are tried."""
    current = w.value if isinstance(w.value, (list, tuple)) else [w.value]
    for value in (label, *current, *range(len(w.options) + 20), *R.FP_REASONS, *R.VERDICTS, *A.ROLES):
        try:
            if str(w.format_func(value)) == label:
                return value
        except Exception:  # not a value of this widget
            continue
    return None


def choose_last(w) -> bool:
    value = raw_value(w, w.options[-1])
    if value is None:
        return False
    w.set_value(value)
    return True


def fill(crawl: Crawl, at: AppTest) -> int:
    """Give every input on the page a value: hostile text, the last choice, the lowest number, the other state
    of a switch.  Returns how many inputs were set."""
    n = 0
    for i, w in enumerate(widgets(at)):
        if getattr(w.proto, "disabled", False):
            continue
        try:
            if isinstance(w, (ET.TextInput, ET.TextArea)):
                w.set_value(HOSTILE_TEXT[i % len(HOSTILE_TEXT)] if i % 4 else str(crawl.world.secret))
            elif isinstance(w, ET.NumberInput):
                w.set_value(w.min if w.min is not None else 0)
            elif isinstance(w, (ET.Selectbox, ET.Radio)):
                if not w.options or not choose_last(w):
                    continue
            elif isinstance(w, ET.Multiselect):
                w.set_value([])   # none: the choice that passes the pages' own checks (reasons only with fp)
            elif isinstance(w, (ET.Checkbox, ET.Toggle)):
                w.set_value(True)
            elif isinstance(w, ET.SelectSlider):
                w.set_value(w.options[0])
            elif isinstance(w, ET.Slider):
                w.set_value(w.proto.min)
            elif isinstance(w, (ET.Button, ET.DownloadButton)):
                continue
            else:
                crawl.unsupported.add(w.type)
                continue
        except Exception as exc:  # a value AppTest refuses for this widget: say which
            crawl.unsupported.add(f"{w.type} ({type(exc).__name__})")
            continue
        n += 1
    return n


def press_every_button(crawl: Crawl, at: AppTest, label: str, filled: bool = False,
                       first: tuple[str, ...] = ()) -> None:
    """Press each button once (re-reading the page after each press); ``filled``: give every input its value
    again before each press, so a form is submitted with the values (AppTest sends a form's values with its
    submit button only) and inputs a press made appear get one too.  Buttons whose key starts with one of
    ``first`` are pressed before the others (a call moves Review to the next item and draws new buttons)."""
    pressed: set[str] = set()
    for _ in range(MAX_CLICKS):
        todo = [b for b in widgets(at) if isinstance(b, ET.Button) and b.key not in SKIPPED_BUTTONS
                and widget_id(b) not in pressed]
        todo.sort(key=lambda b: not (b.key or "").startswith(first) if first else False)
        if not todo:
            return
        b = todo[0]
        pressed.add(widget_id(b))
        if filled:
            fill(crawl, at)
        if getattr(b.proto, "disabled", False):
            b._value = True      # a forged press: the browser would not send it, a client can
            how = "forged press"
        else:
            b.click()
            how = "press"
        crawl.step(at, f"{label}: {how} {widget_id(b)}")


def crawl_page(world: World, base: Path, page: str, role: str, monkeypatch) -> Crawl:
    home = base / f"{page}-{role}"
    shutil.copytree(world.template, home, ignore=shutil.ignore_patterns("app.db*"))
    copy_store(world.template / "app.db", home / "app.db")
    monkeypatch.setenv("OBJREL_STORE", str(home / "app.db"))
    monkeypatch.setenv("OBJREL_INSPECT_DIR", str(home / "inspect"))
    monkeypatch.setenv("OBJREL_SHORTCUT_DIR", str(home / "shortcut"))
    monkeypatch.setenv("OBJREL_LOG_DIR", str(home / "logs"))
    monkeypatch.setenv("OBJREL_DATA_ROOTS", os.pathsep.join([str(world.roots), str(home / "var" / "uploads")]))
    monkeypatch.chdir(home)
    crawl = Crawl(world, home, page, role)
    at = AppTest.from_file(str(PAGES[page]), default_timeout=120)
    account = ROLE_ACCOUNTS[role][0]
    if account:
        at.session_state["reviewer"] = account
    crawl.step(at, "open")
    press_every_button(crawl, at, "as drawn")
    if page == "review":
        # the evidence under an item is one panel at a time: open each and press what it offers
        from objrel.review.settings import EVIDENCE_PANELS

        for panel in EVIDENCE_PANELS:
            at.session_state["review_evidence"] = panel
            crawl.step(at, f"evidence: {panel}")
            press_every_button(crawl, at, f"evidence {panel}", first=("review_lime_", "review_retest_", "rb_"))
    if fill(crawl, at):
        crawl.step(at, "filled")
        press_every_button(crawl, at, "filled", filled=True)
    return crawl


# ---------------------------------------------------------------- holding a step against the table


def actor_for(role: str):
    """The role's account as the action table sees it (for reading the table; the gate trusts only actors
    loaded from the store, which the pages use)."""
    account, roles = ROLE_ACCOUNTS[role]
    return A.Actor(account, frozenset(roles))


def table_permits(role: str, action: str, target) -> bool:
    rule = A.ACTIONS[action]
    actor = actor_for(role)
    return rule.public or actor.holds(rule.roles) or (target.owner is not None and target.owner == actor.name)


def under(path: str, root: Path) -> bool:
    try:
        Path(path).resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError):
        return False


def allowed_elsewhere(path: str, crawl: Crawl) -> bool:
    """Files any page may open whoever asks: the store, Python and its packages, the repository's code and
    assets, the run's own dataset, system files libraries read, Streamlit's and the caches' files."""
    if not path.startswith("/"):
        path = str(Path(crawl.home, path))
    store = str(crawl.db)
    if path.startswith(store):                       # -wal, -shm, -journal
        return True
    if path.endswith("/.streamlit/secrets.toml") or path.endswith("/.streamlit/config.toml"):
        return True                                  # Streamlit's own settings, read on every run
    if Path(path).name in {e for e in sys.path if e and not e.startswith("/")}:
        return True                                  # an import looks up a relative sys.path entry (an editable
                                                     # install's path hook) under the working folder
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, *sysconfig.get_paths().values(), str(REPO),
                str(crawl.world.rundata), *SAFE_OPEN_PREFIXES}
    return any(path.startswith(p) for p in prefixes if p)


@dataclass
class Verdicts:
    holes: list = field(default_factory=list)

    def hole(self, step: Step, text: str) -> None:
        self.holes.append(f"{step.page} as {step.role}, {step.what}: {text}")


def results_roots(crawl: Crawl) -> list[Path]:
    return [crawl.home / "inspect", crawl.home / "shortcut"]


def unexplained_open(crawl: Crawl, p: str, mode: str, granted: list) -> str | None:
    """Why opening ``p`` was not the table's, or None.  Writing needs a granted action that writes or starts
    work; a log, reading it or an action that writes it (or a role the table lets read logs); a results file,
    a granted open-results that names it or another action that opens server files; other files of the data
    roots, any granted action that opens server files."""
    actions = {act for act, _ in granted}
    kinds = {k for act in actions for k in A.ACTIONS[act].kinds}
    home = crawl.home
    results = next((r for r in results_roots(crawl) if under(p, r)), None)
    area = ("logs" if under(p, home / "logs") or (results and p.endswith(".log")) else
            "results" if results else
            "data" if under(p, crawl.world.roots) or under(p, home / "var") else None)
    if area is None:
        if not allowed_elsewhere(p, crawl):
            crawl.outside.add(p)
        return None
    rel = str(Path(p).resolve().relative_to(results.resolve())) if results else str(Path(p).relative_to(
        crawl.world.roots.parent) if under(p, crawl.world.roots) else Path(p).relative_to(home))
    shown = str(Path(p).relative_to(home)) if under(p, home) else rel
    done = f"granted: {', '.join(sorted(actions)) or 'none'}"
    if any(c in mode for c in "wax+"):
        if not kinds & {A.WRITES, A.STARTS}:
            return f"wrote {shown} ({mode}) without a granted action that writes or starts work ({done})"
        return None
    if area == "logs":
        if actions & LOG_ACTIONS or table_permits(crawl.role, A.READ_LOG, A.Target()):
            return None
        return f"opened the log {shown} without {A.READ_LOG} or an action that writes it ({done})"
    if area == "results":
        if any(act == A.OPEN_RESULTS and repr(rel) in tgt.what for act, tgt in granted):
            return None
        if any(A.READS_PATH in A.ACTIONS[act].kinds for act in actions - {A.OPEN_RESULTS}):
            return None
        return f"opened {shown} without a granted action that opens it ({done})"
    if A.READS_PATH not in kinds:
        return f"opened {shown} without a granted action that opens server files ({done})"
    return None


def check_step(crawl: Crawl, step: Step, v: Verdicts) -> None:
    actor = actor_for(crawl.role)
    mine = [(act, tgt, ok) for who, act, tgt, ok in step.decisions if who.name == actor.name and not who.server]
    granted = {act for act, _, ok in mine if ok}
    granted_kinds = {k for act in granted for k in A.ACTIONS[act].kinds}
    # every grant is the table's
    for act, tgt, ok in mine:
        if ok and not table_permits(crawl.role, act, tgt):
            v.hole(step, f"the gate granted {act} ({tgt.what}), which the table does not give a {crawl.role}")
    # decisions the page made as someone else: only the server, only after the actor's own grant of that action
    for who, act, _target, _ok in step.decisions:
        if who.name == actor.name and not who.server:
            continue
        if not (who.server and act in granted):
            v.hole(step, f"the page asked the gate for {act} as {who.label}, not as the signed-in actor")
    # writes
    writes = step.changed_tables - DERIVED_TABLES - (SIGN_IN_TABLES if SIGN_IN_BUTTON in step.what else set())
    if writes and A.WRITES not in granted_kinds:
        v.hole(step, f"the store changed ({', '.join(sorted(writes))}) without a granted action that writes "
                     f"(granted: {sorted(granted) or 'none'})")
    # processes
    if step.processes and A.STARTS not in granted_kinds:
        v.hole(step, f"a process started ({step.processes[0][0]}) without a granted action that starts work")
    # files
    for path, mode in step.opens:
        p = path if path.startswith("/") else str(crawl.home / path)
        if any(h in p for h in HOSTILE_TEXT[:2]) or under(p, crawl.world.secret.parent):
            v.hole(step, f"opened a path typed into the page: {p} ({mode})")
            continue
        why = unexplained_open(crawl, p, mode, [(act, tgt) for act, tgt, ok in mine if ok])
        if why:
            v.hole(step, why)
    # what the page shows
    # an adjudicator sees every call; a reviewer who closed a review sample sees the other closer's calls as
    # calibration (make_world: alice and bob close every drawn sample)
    closers = {"alice", OTHER_REVIEWER}
    may_see = {name for name in NOTES if table_permits(crawl.role, A.SEE_CALLS, A.Target(owner=name))
               or (actor.name in closers and table_permits(crawl.role, A.SEE_CALIBRATION, A.Target()))}
    for name, note in NOTES.items():
        if note in step.shown and name not in may_see:
            v.hole(step, f"shows {name}'s note on the disagreement ({note!r})")
    if crawl.role not in PATH_ROLES and str(crawl.world.template.parent) in step.shown:
        v.hole(step, "shows a server path")
    if step.exception:
        v.hole(step, f"shows a traceback: {step.exception[0][:200]}")


# ---------------------------------------------------------------- the test

# Holes this crawl found in the app, reported for fixing (each: page, the start of what check_step says).  The
# test fails on any other hole, and on an entry here that no longer happens: delete it with its fix.
KNOWN_HOLES = ()   # every hole the first crawl found is closed; a new one fails the test


def summarise(crawl: Crawl) -> dict:
    name = ROLE_ACCOUNTS[crawl.role][0]
    # a grant on the account's own data (Target.owner: a reviewer's own call history) is no role's grant; each
    # step already held it against the table with its target
    decisions = [(act, ok) for s in crawl.steps for who, act, tgt, ok in s.decisions
                 if who.name == name and not who.server and not (ok and tgt.owner == name)]
    return {"steps": len(crawl.steps),
            "granted": sorted({a for a, ok in decisions if ok}),
            "refused": sorted({a for a, ok in decisions if not ok}),
            "writes": sorted({t for s in crawl.steps for t in s.changed_tables}),
            "processes": sum(len(s.processes) for s in crawl.steps),
            "outside": sorted(crawl.outside)}


@pytest.mark.slow
def test_every_page_as_every_role_does_what_the_action_table_says(tmp_path_factory, monkeypatch):
    assert set(PAGES) == EXPECTED_PAGES, "a page was added or removed: the crawl covers every page"
    base = tmp_path_factory.mktemp("crawl")
    world = build_world(base)
    started = time.time()
    verdicts = Verdicts()
    summary, unsupported = {}, set()
    for page in sorted(PAGES):
        for role in ROLE_ACCOUNTS:
            crawl = crawl_page(world, base, page, role, monkeypatch)
            for step in crawl.steps:
                check_step(crawl, step, verdicts)
            summary[(page, role)] = summarise(crawl)
            unsupported |= crawl.unsupported
    print(f"\ncrawled {len(summary)} page/role pairs, {sum(s['steps'] for s in summary.values())} steps, in "
          f"{time.time() - started:.0f} s; inputs AppTest cannot drive: {sorted(unsupported) or 'none'}")
    for (page, role), s in summary.items():
        print(f"{page:10s} {role:12s} steps {s['steps']:2d}  granted {','.join(s['granted']) or '-'}  refused "
              f"{','.join(s['refused']) or '-'}  writes {','.join(s['writes']) or '-'}  processes {s['processes']}")

    known = {k: [] for k in KNOWN_HOLES}
    unknown = []
    for hole in verdicts.holes:
        entry = next((k for k in KNOWN_HOLES if hole.startswith(f"{k[0]} as ") and f": {k[1]}" in hole), None)
        (known[entry].append if entry else unknown.append)(hole)
    for entry, seen in known.items():
        print(f"known hole {entry}: {len(seen)} steps, e.g. {seen[0] if seen else '(not seen)'}")
    assert not unknown, "the pages did what the action table does not allow:\n" + "\n".join(unknown)
    assert all(known.values()), f"fixed (delete from KNOWN_HOLES): {[k for k, seen in known.items() if not seen]}"

    # The overall picture equals the table: each role's grants are the table's, and the actions that must be
    # refused to a role were asked for and refused somewhere in the crawl.
    for (page, role), s in summary.items():
        allowed = {a for a, rule in A.ACTIONS.items() if rule.public or actor_for(role).holds(rule.roles)}
        assert set(s["granted"]) <= allowed, (page, role, sorted(set(s["granted"]) - allowed))
        assert not s["outside"], (page, role, s["outside"])
    anonymous = [s for (_, role), s in summary.items() if role == "anonymous"]
    assert not {t for s in anonymous for t in s["writes"]} - SIGN_IN_TABLES - DERIVED_TABLES
    assert not any(s["processes"] for s in anonymous)
    refused = collections.defaultdict(set)
    granted = collections.defaultdict(set)
    for (_page, role), s in summary.items():
        refused[role] |= set(s["refused"])
        granted[role] |= set(s["granted"])
    # The pages offer each role only what the table gives it (they ask access.permits), so the gate refuses
    # only where a page shows a panel to a role that may not use it: Review's LIME and re-test to a run operator.
    assert {A.EXPLAIN, A.RETEST} <= refused["run-operator"]
    assert not refused["anonymous"] and not granted["anonymous"] - {a for a, r in A.ACTIONS.items() if r.public}
    # and the permitted roles really did what the crawl pressed (so the observers saw real effects)
    assert {A.JUDGE, A.EXPLAIN, A.RETEST} <= granted["reviewer"]
    assert {A.SEE_CALLS, A.ADJUDICATE} <= granted["adjudicator"]
    assert {A.START_RUN, A.RESUME_RUN, A.CANCEL_RUN, A.RENAME_RUN, A.TRAIN_PLANTED} <= granted["run-operator"]
    assert {A.INVITE, A.GRANT_ROLE, A.REVOKE_ROLE, A.ALLOW_MODEL, A.SEE_CALLS} <= granted["admin"]
    # review teams (Users): k and who judges which item, and every reviewer's workload, only for admins
    assert {A.ASSIGN_REVIEWERS, A.SEE_WORKLOAD} <= granted["admin"]
    # comment threads (Review, Agreement) for the review's parties; gold items (Users) only for admins
    assert {A.COMMENT, A.SEE_COMMENTS} <= granted["reviewer"] and A.SEE_COMMENTS in granted["adjudicator"]
    assert {A.MARK_GOLD, A.SEE_GOLD} <= granted["admin"]
    runs_op = summary[("runs", "run-operator")]
    assert runs_op["processes"] >= 1 and "runs" in runs_op["writes"]
