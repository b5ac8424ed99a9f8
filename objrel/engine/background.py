"""The process a background run lives in (started by ``objrel.engine.jobs.start_run``).

    python -m objrel.engine.background --store URL --run-id-file FILE --config-json FILE
    python -m objrel.engine.background --store URL --run-id-file FILE --resume RUN

A classifier or detection run alike: the configuration says which (``config_from_dict``: a
``detector`` key makes it a detection run; ``objrel.engine.runs.engine_for`` picks the worker).
The process takes the run's lease (``objrel.store.leases``) and then writes the run id to
``--run-id-file``; a run another live process holds is refused (exit status 2, the holder named).
Progress, heartbeat and status then go through the store.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from objrel.config import DetectionConfig, RunConfig, config_from_dict
from objrel.engine.runs import engine_for
from objrel.errors import ObjrelError
from objrel.store import Store, leases

# Exit status of a run that could not start (bad settings, missing data), as the objrel command uses.
BAD_SETTINGS_EXIT = 2


def run_in_this_process(store: Store, config: RunConfig | DetectionConfig | None = None, resume: int | None = None,
                        run_id_file: str | Path | None = None):
    """Create (or resume) the run, report its id to ``run_id_file``, execute it; returns the RunReport."""
    if (config is None) == (resume is None):
        raise ValueError("give either a configuration or the id of a run to resume")
    if resume is not None:
        config = config_from_dict(store.get_run(resume).config)
    engine = engine_for(store, config)
    run_id = int(resume) if resume is not None else engine.create_run()
    leases.acquire(store, run_id)  # RunHeld before the id is reported: a held run is not resumed twice
    if run_id_file:
        Path(run_id_file).write_text(str(run_id))
    return engine.execute(run_id=run_id)


def main(argv=None) -> int:
    """Run or resume one run in this process (a background job's entry point); the exit status."""
    ap = argparse.ArgumentParser(prog="python -m objrel.engine.background", description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="database URL or SQLite file")
    ap.add_argument("--run-id-file", required=True, help="the run id is written here once the run exists")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--config-json", help="a RunConfig or DetectionConfig as JSON")
    what.add_argument("--resume", type=int, metavar="RUN", help="continue a stopped run with its stored settings")
    args = ap.parse_args(argv)
    try:
        config = config_from_dict(json.loads(Path(args.config_json).read_text())) if args.config_json else None
        report = run_in_this_process(Store(args.store), config, args.resume, args.run_id_file)
    except (ObjrelError, KeyError, FileNotFoundError, ValueError) as exc:
        print(f"objrel: error: {exc.args[0] if isinstance(exc, KeyError) and exc.args else exc}", file=sys.stderr)
        return BAD_SETTINGS_EXIT
    print(f"run {report.run_id}: {report.status}; {report.processed} processed, {report.tested} tested, "
          f"{sum(report.skipped.values())} skipped ({report.seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
