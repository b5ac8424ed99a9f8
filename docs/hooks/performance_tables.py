"""The performance page's tables, generated from the JSON results the benchmarks write to ``benchmarks/results/``.

Each result file has one renderer here; a benchmark's figures reach the docs only through this module, so the
page shows what the last run of each benchmark wrote, with the settings it ran under.  The benchmarks that print
their results instead of writing a file are listed with what they measure (their module docstring).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
BENCHMARKS = ROOT / "benchmarks"
# Modules under benchmarks/ that build inputs for a benchmark rather than measure anything.
HELPERS = ("hostile_inputs", "hostile_web", "synthetic_store")


def _ms(value) -> str:
    return "-" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _s(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def _mark(ok: bool) -> str:
    return "yes" if ok else "**no**"


def pages_at_scale(data: dict) -> str:
    """Server seconds and memory per page at the largest store, per backend, against the benchmark's targets."""
    meta, out = data["meta"], []
    t = meta["targets"]
    out.append(f"Stores of {', '.join(f'{n:,}' for n in meta['sizes'])} tested samples on "
               f"{', '.join(meta['backends'])}; {meta['machine']['cpus']} cores. Targets at {t['size']:,} samples: "
               f"a warm view within {t['warm_s']} s, a cold one (a fresh server) within {t['cold_s']} s, "
               f"at most {t['rss_mb']:.0f} MB of server memory, and at most {t['growth']}x the time of the "
               f"smallest store.")
    for key, target in data["targets"].items():
        backend = key.split("/")[0]
        out.append(f"**{backend}**, {target['size']:,} samples:")
        rows = ["| page | warm s | cold s | server MB | growth | within targets |",
                "| --- | ---: | ---: | ---: | ---: | --- |"]
        for page in meta["pages"]:
            cells = [target[k].get(page) for k in ("warm", "cold", "rss", "growth")]
            if None in cells:
                continue
            warm, cold, rss, growth = cells
            ok = all(c["pass"] for c in cells)
            rows.append(f"| {page} | {_s(warm['s'])} | {_s(cold['s'])} | {rss['mb']:.0f} | "
                        f"{growth['ratio']:.2f}x | {_mark(ok)} |")
        out.append("\n".join(rows))
    builds = ["| backend | samples | table rows written | build s |", "| --- | ---: | ---: | ---: |"]
    for b in data["builds"]:
        builds.append(f"| {b['backend']} | {b['n']:,} | {sum(b['rows'].values()):,} | {b['seconds']['total']:.0f} |")
    out.append("The synthetic stores the pages were measured on:\n\n" + "\n".join(builds))
    return "\n\n".join(out)


def review_concurrency(data: dict) -> str:
    """Review writes under load: rate, latency and what was lost, per backend and store size."""
    s = data["settings"]
    pace = "as fast as the store answers" if not s["think_s"] else f"with {s['think_s']:g} s between calls"
    head = (f"{s['reviewers']} reviewer processes and an adjudicator, {s['calls_per_reviewer']} calls each on "
            f"{s['hot_items']} shared items, {pace}; {s['cores']} cores. Latency targets (p99): "
            + ", ".join(f"{b} {ms:g} ms" for b, ms in s["targets_p99_ms"].items()) + ".")
    rows = ["| backend | samples | calls saved | writes/s | p50 ms | p99 ms | max ms | adjudication p99 ms | "
            "judgments lost | errors |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["rows"]:
        rows.append(f"| {r['backend']} | {r['samples']:,} | {r['saved_calls']:,} / {r['reviewer_calls']:,} | "
                    f"{r['writes_per_s']:.1f} | {_ms(r['p50_ms'])} | {_ms(r['p99_ms'])} | {_ms(r['max_ms'])} | "
                    f"{_ms(r['adjudication_p99_ms'])} | {r['judgments_lost']} | {r['errors']} |")
    return head + "\n\n" + "\n".join(rows)


def review_loop(data: dict) -> str:
    """The review loop in chromium: seconds from a call to the next item drawn, by how the call was made."""
    r = data["after"]
    v = data["viewport"]
    head = (f"{r['calls']} calls on the demo store in chromium at {v['width']} x {v['height']}, keys and mouse "
            f"mixed, LIME running beside them.")
    rows = ["| calls made with | median s |", "| --- | ---: |"]
    rows += [f"| {style} | {_s(sec)} |" for style, sec in r["by_style_p50_s"].items()]
    summary = ["| median s | 90th percentile s | max s | keys lost | forced wait s |",
               "| ---: | ---: | ---: | ---: | ---: |",
               f"| {_s(r['p50_s'])} | {_s(r['p90_s'])} | {_s(r['max_s'])} | {r['keys_lost']} | "
               f"{_s(r['forced_wait_s'])} |"]
    return head + "\n\n" + "\n".join(summary) + "\n\n" + "\n".join(rows)


# (result file, section title, the command that writes it, its renderer), in the order the page shows them.
SECTIONS = (
    ("pages_at_scale.json", "Pages at the scale of the papers' datasets",
     "python benchmarks/pages_at_scale.py --sizes 10000,100000,1000000 --backends sqlite,postgresql",
     pages_at_scale),
    ("review_concurrency.json", "Review writes under load",
     "python benchmarks/review_concurrency.py", review_concurrency),
    ("review_concurrency_stress.json", "Review writes as fast as the store answers",
     "python benchmarks/review_concurrency.py --think-s 0 --out benchmarks/results/review_concurrency_stress.json",
     review_concurrency),
    ("review_loop.json", "The review loop in a browser", "python benchmarks/review_loop.py", review_loop),
)


def _summary_line(path: Path) -> str:
    """The first paragraph of a benchmark module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def other_benchmarks(rendered: set[str]) -> str:
    """The benchmarks whose results are printed rather than written here: what each measures, how to run it."""
    rows = ["| benchmark | what it measures |", "| --- | --- |"]
    for path in sorted(BENCHMARKS.glob("*.py")):
        if path.stem in HELPERS or path.stem in rendered:
            continue
        rows.append(f"| `python benchmarks/{path.name}` | {_summary_line(path).replace('|', '/')} |")
    return "\n".join(rows)


def performance_tables(results: Path = RESULTS) -> str:
    """Every section whose result file exists, then the list of the other benchmarks."""
    parts, rendered = [], set()
    for name, title, command, render in SECTIONS:
        path = results / name
        rendered.add(name.split(".")[0].removesuffix("_stress"))
        if not path.exists():
            parts.append(f"## {title}\n\nNo result yet: run `{command}`.")
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        parts.append(f"## {title}\n\n{render(data)}\n\nWritten by `{command}` to `benchmarks/results/{name}`.")
    parts.append("## Other benchmarks\n\nThese print their figures when run:\n\n" + other_benchmarks(rendered))
    return "\n\n".join(parts)


if __name__ == "__main__":
    print(performance_tables())
