"""Build the embedded demo store: EfficientNet-Lite0 over the bundled real photos, two real face
detectors (OpenCV's Haar cascades, MTCNN) over the same photos' face boxes, and demo accounts with
every role so a newcomer can sign in and review at once."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from objrel.engine.sweep import run_sweep
from objrel.config import DetectionConfig, RunConfig
from objrel.engine.classify import Engine
from objrel.engine.detect import DetectionEngine
from objrel.progress import Estimate, estimate_text, rate_and_eta
from objrel import access as roles
from objrel.review import accounts
from objrel.review.roles import grant_as_operator
from objrel.store import Store

DEMO_STORE = "var/demo.db"
# Least seconds between two progress lines the demo build prints per run.
DEMO_PROGRESS_EVERY_S = 5.0
# The demo's review samples get LIME started again when they have none yet or it stopped unfinished.
DEMO_LIME_RESTART = ("none", "failed", "cancelled")
RELATIONS = ("MR-1", "MR-2")


class ProgressPrinter:
    """A worker's ``pass_progress`` (``objrel.engine.loop.PassTicker``) that prints one line at most every
    ``every`` seconds: samples, forward passes, images per second and ETA (``objrel.progress``)."""

    def __init__(self, label: str, log=sys.stderr, every: float = DEMO_PROGRESS_EVERY_S):
        self.label, self.log, self.every = label, log, every
        self._last: float | None = None

    def __call__(self, samples: int, total: int, passes: int, expected: int, seconds: float) -> None:
        """Print one progress line, unless the last one was printed less than ``every`` seconds ago."""
        if self.log is None or (self._last is not None and seconds - self._last < self.every):
            return
        self._last = seconds
        rate, eta = rate_and_eta(passes, expected, seconds)
        print(f"  {self.label}: " + estimate_text(Estimate(samples, total, passes, expected, rate, eta)),
              file=self.log, flush=True)


def _sample_lines(label: str, log):
    """A per-sample ``progress(done, total)`` that prints a line each (for the sweep, whose engine is built
    inside ``run_sweep``)."""
    def report(done: int, total: int) -> None:
        if log is not None:
            print(f"  {label}: {done}/{total} images", file=log, flush=True)
    return report


def _with_printer(engine, label: str, log):
    engine.pass_progress = ProgressPrinter(label, log)
    return engine


@dataclass(frozen=True)
class _NoJob:
    status: str = "none"


_NEVER = _NoJob()


@dataclass(frozen=True)
class DemoAccount:
    name: str
    passphrase: str
    roles: tuple[str, ...]


# The demo's accounts: two reviewers for the blind pair, an adjudicator who is neither of them, and an
# admin who also operates runs.  Their passphrases are public: fine for a local demo, never for a shared
# server (make real accounts there with `objrel users add`).
DEMO_ACCOUNTS = (
    DemoAccount("alice", "alice-demo-pass", (roles.REVIEWER,)),
    DemoAccount("bob", "bob-demo-pass", (roles.REVIEWER,)),
    DemoAccount("carol", "carol-demo-pass", (roles.ADJUDICATOR,)),
    DemoAccount("admin", "admin-demo-pass", (roles.ADMIN, roles.RUN_OPERATOR)),
)


def ensure_demo_accounts(store: Store, log=sys.stderr) -> None:
    """Create the missing ``DEMO_ACCOUNTS`` (an existing one keeps its passphrase and gets its demo roles)
    and print every name, passphrase and role to ``log`` (None: print nothing)."""
    have = set(accounts.reviewer_names(store))
    for acc in DEMO_ACCOUNTS:
        if acc.name in have:
            grant_as_operator(store, acc.name, acc.roles)
        else:
            accounts.create_reviewer(store, acc.name, acc.passphrase, roles=acc.roles)
    if log is None:
        return
    print("demo accounts (public passphrases: for this local demo only):", file=log)
    for acc in DEMO_ACCOUNTS:
        print(f"  {acc.name:<6} passphrase {acc.passphrase:<16} {', '.join(acc.roles)}", file=log)


# The demo's runs: the paper's 3-colour plan with every other operator beside it,
# and every inference with a dilated region.  Both evaluate every mutation (lazy=False), so reviewers
# see all six mutants' verdicts and the relevancy scores S_p / S_r / S are stored.
DEMO_RUNS = (
    RunConfig(model="efficientnet-lite0", dataset="demo", plan="all", lazy=False,
              name="EfficientNet-Lite0 on demo photos (all operators)"),
    RunConfig(model="efficientnet-lite0", dataset="demo", plan="colours3", test_all=True, dilate=3, lazy=False,
              name="EfficientNet-Lite0 on demo photos (3 colours, all inferences, region dilated 3 px)"),
)


def detection_demo_runs():
    """The demo's detection runs over ``assets/demo/faces.json`` (face and cat-face boxes) with DetReport's
    plan: OpenCV's frontal-face and cat-face Haar cascades together, and MTCNN (facenet-pytorch's weights)."""
    return (
        DetectionConfig(detector="haar:frontalface_default+haar:frontalcatface", dataset="demo-faces",
                        name="OpenCV Haar face + cat face on demo photos (random erase + noise plan)"),
        DetectionConfig(detector="mtcnn", dataset="demo-faces",
                        name="MTCNN faces on demo photos (random erase + noise plan)"),
    )


def detection_demo_sweeps():
    """The demo's sweep (DetReport s5.1): MTCNN under random erase at ratios 0.1 ... 0.9.  Each ratio is a
    one-mutation vote group, the first (0.1) the primary MR-1 vote, so the faces MTCNN still finds after a
    small erase are flagged and reviewable with their boxes before and after."""
    return ((DetectionConfig(detector="mtcnn", dataset="demo-faces",
                             name="MTCNN random-erase sweep on demo photos (DetReport Table 3 layout)"),
             "random_erase"),)


def _finished_names(store: Store) -> set[str]:
    return {r.name for r in store.list_runs() if r.status == "finished"}


def _already_there(config, finished: set[str], force: bool, log) -> bool:
    """True (and says so) when a finished run of ``config``'s name is in the store and ``force`` is off."""
    if config.name in finished and not force:
        print(f"demo run already present: {config.name}", file=log)
        return True
    return False


def build_detection_demo(store: Store, force: bool = False, log=sys.stderr) -> Store:
    """Add the detection demo runs and sweep unless the store already holds finished runs of the same names."""
    have = _finished_names(store)
    for cfg in detection_demo_runs():
        if _already_there(cfg, have, force, log):
            continue
        print(f"demo run starting: {cfg.name}", file=log, flush=True)
        report = _with_printer(DetectionEngine(store, cfg), cfg.detector, log).execute()
        print(f"demo run {report.run_id}: {cfg.name}: {report.tested} units tested, "
              f"{sum(report.skipped.values())} images skipped, {report.seconds:.1f} s", file=log)
    for cfg, operator in detection_demo_sweeps():
        if _already_there(cfg, have, force, log):
            continue
        print(f"demo run starting: {cfg.name}", file=log, flush=True)
        result = run_sweep(store, cfg, operator, progress=_sample_lines(cfg.detector, log))
        print(f"demo run {result.run_id}: {cfg.name}\n{result.table()}", file=log)
    return store


def build_demo_store(url: str | None = None, force: bool = False, log=sys.stderr,
                     explain_ahead: bool = True) -> Store:
    """Create the demo accounts, then the demo runs unless the store already holds finished runs of the
    same names; with ``explain_ahead``, draw the classifier runs' review samples and start their LIME in
    the background (``start_demo_lime``)."""
    store = Store(url or DEMO_STORE, make_parents=True)
    ensure_demo_accounts(store, log=None)  # first, so the app can be signed into while the runs build
    have = _finished_names(store)
    model = None
    for cfg in DEMO_RUNS:
        if _already_there(cfg, have, force, log):
            continue
        print(f"demo run starting: {cfg.name}", file=log, flush=True)
        engine = _with_printer(Engine(store, cfg, model=model), cfg.model, log)
        model = engine.model  # load the network once for every demo run
        report = engine.execute()
        print(f"demo run {report.run_id}: {cfg.name}: {report.tested} tested, {sum(report.skipped.values())} "
              f"skipped, {report.seconds:.1f} s", file=log)
    build_detection_demo(store, force=force, log=log)
    if explain_ahead:
        start_demo_lime(store, log=log)
    ensure_demo_accounts(store, log=log)  # printed last, where a newcomer looks
    return store


def demo_review_samples(store: Store) -> list[tuple[int, str]]:
    """(run id, relation) of every finished demo classifier run and relation with flagged inferences, their
    review samples drawn (seed ``DEFAULT_REVIEW_SEED``, the one the Review page would draw with)."""
    from objrel.access import SERVER
    from objrel.review.lime_ahead import explainable_run
    from objrel.review.sampling import draw_review_sample

    names = {cfg.name for cfg in DEMO_RUNS}
    out = []
    for run in store.list_runs():
        if run.name not in names or run.status != "finished" or not explainable_run(store, run.id):
            continue
        for relation in RELATIONS:
            if store.flagged_sample_ids(run.id, relation):
                draw_review_sample(SERVER, store, run.id, relation)
                out.append((run.id, relation))
    return out


def _echo_safe() -> bool:
    """Whether the background LIME process may write to this process's standard error: a terminal or a file,
    not a pipe (a reader such as ``| tee`` would wait for the background process to close it)."""
    import os
    import stat

    try:
        mode = os.fstat(2).st_mode
    except OSError:
        return False
    return not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode))


def start_demo_lime(store: Store, log=sys.stderr) -> None:
    """Draw the demo's review samples and start LIME for them in one background process, whose lines
    (``LIME run 1 MR-2 3/12: ...``) go to this process's standard error while the app starts; samples
    already explained (or being explained) are left alone."""
    from objrel.access import SERVER
    from objrel.review.lime_ahead import lime_job_status, start_lime_jobs

    t0 = time.perf_counter()
    samples = demo_review_samples(store)
    todo = [s for s in samples if (lime_job_status(store, *s) or _NEVER).status in DEMO_LIME_RESTART]
    if not todo:
        if samples and log is not None:
            print(f"demo LIME: the {len(samples)} review samples are explained already", file=log, flush=True)
        return
    echo = log is not None and _echo_safe()
    statuses = start_lime_jobs(SERVER, store, todo, echo=echo)
    if log is not None:
        where = ", ".join(f"run {rid} {relation}" for rid, relation in todo)
        lines = "its lines follow" if echo else "its lines go to a log file"
        print(f"demo LIME: review samples of {where} drawn; their LIME runs in one background process "
              f"(low priority, {lines}; the Review page shows its progress) "
              f"[{time.perf_counter() - t0:.1f} s]", file=log, flush=True)
        for (rid, relation), st in zip(todo, statuses):
            if st.status == "failed":
                print(f"demo LIME: run {rid} {relation} could not start: {st.error}", file=log, flush=True)
