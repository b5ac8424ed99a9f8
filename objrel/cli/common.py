"""What the command groups share: the ``--store`` option, comma lists, the progress bar, and how a run is
started, watched and reported on the terminal."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass

from tqdm import tqdm

from objrel.config import DetectionConfig, RunConfig, config_from_dict
from objrel.store import Store

STORE_HELP = "database URL or SQLite file (default: $OBJREL_STORE or ./objrel.db)"


def add_store_option(parser) -> None:
    """Add the ``--store`` option (the store URL or SQLite file) to ``parser``."""
    parser.add_argument("--store", default=None, help=STORE_HELP)


def comma_list(text: str | None) -> tuple[str, ...]:
    """``"a, b,,c"`` -> ``("a", "b", "c")``; None or an empty text -> ``()``."""
    return tuple(part.strip() for part in (text or "").split(",") if part.strip())


@contextmanager
def progress_bar(total: int, quiet: bool):
    """A tqdm bar on standard error; yields ``progress(done, total)``, the callback the engines take."""
    bar = tqdm(total=total, unit="img", disable=quiet, file=sys.stderr)

    def progress(done: int, new_total: int) -> None:
        bar.total = new_total
        bar.n = done
        bar.refresh()

    try:
        yield progress
    finally:
        bar.close()


@dataclass(frozen=True)
class RunWords:
    """How a task's run counts read on the terminal."""

    items: str           # what a run processes: samples, images
    tested: str
    untested: str
    skipped: str
    passes: str          # model calls
    mutations: str       # mutations per tested thing


CLASSIFIER_WORDS = RunWords(items="samples", tested="tested", untested="not tested (incorrect inference)",
                            skipped="skipped", passes="forward passes", mutations="mutations each")
DETECTION_WORDS = RunWords(items="images", tested="units tested", untested="not tested", skipped="images skipped",
                           passes="detector passes", mutations="mutations per unit")


# The command that resumes a run of each kind.
RESUME_COMMANDS = {RunConfig: "objrel run --resume", DetectionConfig: "objrel detect --resume"}


def stored_config(store: Store, run_id: int, expected: type[RunConfig] | type[DetectionConfig]):
    """The stored configuration of ``run_id``, refused unless it is an ``expected``."""
    record = store.get_run(run_id)
    config = config_from_dict(record.config)
    if not isinstance(config, expected):
        raise ValueError(f"run {run_id} is a {record.task!r} run, which `{RESUME_COMMANDS[expected]}` cannot "
                         f"continue; resume it with `{RESUME_COMMANDS[type(config)]}`")
    return config


def execute_with_progress(engine, run_id: int | None, model_name: str, words: RunWords, quiet: bool):
    """Create the run unless ``run_id`` is given, say what runs (standard error), execute it under a
    progress bar and return the ``RunReport``."""
    run_id = run_id if run_id is not None else engine.create_run()
    print(f"run {run_id}: {model_name} on {engine.dataset.name} ({len(engine.samples)} {words.items}, "
          f"{len(engine.mutations)} {words.mutations}) -> {engine.store!r}", file=sys.stderr)
    with progress_bar(len(engine.samples), quiet) as progress:
        report = engine.execute(run_id=run_id, progress=progress)
    if report.status == "finished":   # the pages' tables of the run, kept now rather than on the first view
        from objrel.analysis.prepared import prepare_run

        prepare_run(engine.store, report.run_id)
    return report


def print_run_report(report, words: RunWords, out=None) -> None:
    """One line of counts, then one line per skip reason with an example."""
    out = out or sys.stdout
    print(f"run {report.run_id}: {report.status}; {report.processed} {words.items} processed this time, "
          f"{report.tested} {words.tested}, {report.untested} {words.untested}, "
          f"{sum(report.skipped.values())} {words.skipped} ({report.forward_passes} {words.passes}, "
          f"{report.seconds:.1f} s)", file=out)
    if report.steps:
        print("  time by step: " + ", ".join(f"{k} {sec:.{1 if sec >= 1 else 2}f} s ({share:.0%})"
                                             for k, sec, share in report.step_shares()), file=out)
    for code, n in report.skipped.most_common():
        print(f"  skipped {n} x {code}: e.g. {report.skip_examples[code]}", file=out)
