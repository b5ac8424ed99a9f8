"""Throughput against the model's limit on the fastest runtime here: the bare network, the adapter, objrel
(lazy off / on) and Ray, in one process.

All sides see the same images: every demo photo the model classifies correctly (listed ``--copies``
times) and the mutants of the plan made from them, in batches of ``--batch-size``:

  limit   the bare network on inputs preprocessed beforehand, on every way this machine can run it: torch
          in the default and channels_last memory formats, torch.compile (compiled once before the timed
          repeats; a line says why when it cannot run), and the exported ONNX file on each installed runtime,
          in both input layouts (NCHW, the network's own, and NHWC, channel-last; objrel's preprocessing writes
          the one ``objrel.models.runtimes.INPUT_LAYOUTS`` gives the runtime) (ONNX Runtime: in its default
          session and objrel's; OpenVINO, f32).  Each one's images/s is printed; the fastest is the limit, the
          ceiling no engine can pass;
  plain   the adapter's ``predict`` on that fastest runtime (preprocessing included);
  objrel  a full run on that fastest runtime (decode, mutate, predict, check, vote, commit to SQLite), lazy
          votes off and on: images/s (forward passes) and tested sources/s, and the share of passes lazy saves.
          objrel runs on every runtime still in contention after the first pass (its line is printed), so the
          ratios are always objrel against the bare network on the same runtime;
  ray     (``--ray``) the same run on a local Ray with ``--ray-workers`` actors.

  ratio_limit = objrel(lazy off) images/s / limit images/s                   (target >= 0.85)
  ratio_lazy  = objrel(lazy on) sources/s / (limit images/s / passes per source)   (target >= 1.10)

Medians of ``--repeats`` interleaved repeats (drift on a shared machine hits every side alike); the two
ratios are medians of per-repeat pairs, each run divided by the limit measured just before and after it.
The limit of a pair is one session's figure: the session with the highest median over the repeats (the best
of several near-equal sessions measured in each repeat would be the largest of several noisy figures,
above every session's own speed).  Every candidate is measured in a first pass; those slower than
``CONTENDER_SHARE`` of the fastest there cannot be the limit and are not measured again (their line says so).
``--quick`` runs fewer copies and repeats (a smoke check, noisier figures).

    python benchmarks/throughput.py [--copies 18] [--repeats 5] [--plan colours3] [--quick] [--ray]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

from objrel.config import RunConfig  # noqa: E402
from objrel.constants import ONNXRUNTIME, TORCH_RUNTIME  # noqa: E402
from objrel.data import load_demo, load_rgb  # noqa: E402
from objrel.data.bundled import DEMO_IMAGES  # noqa: E402
from objrel.engine.classify import Engine  # noqa: E402
from objrel.models import load_classifier  # noqa: E402
from objrel.models.runtimes import with_runtime  # noqa: E402
from objrel.models.threads import configure_inference_threads  # noqa: E402
from objrel.mutations import NotApplicable, derive_seed, make_mutant  # noqa: E402
from objrel.relations.classify import Prediction  # noqa: E402
from objrel.store import Store  # noqa: E402


# Photos listed and interleaved repeats: the default figures, and --quick's.  18 copies of the 7 photos the
# model gets right: 126 sources, 882 forward passes, runs of about 4 s on 2 cores, whose start-up (recording
# the run, its lease, the store's first writes) weighs a third of what it does in a run of 6 copies.
COPIES, REPEATS = 18, 5
QUICK_COPIES, QUICK_REPEATS = 2, 3
# A candidate slower than this share of the fastest in the first pass is not measured in the repeats: it
# cannot be the limit (the torch candidates run at 0.3-0.6 of ONNX Runtime here).
CONTENDER_SHARE = 0.75


def correct_subset(model, copies: int, workdir: Path) -> Path:
    """A COCO file listing the demo photos the model classifies correctly, each ``copies`` times,
    so every sample is tested and every side sees identical work."""
    ds = load_demo()
    demo = json.loads(Path(ds.annotation).read_text())
    images = [load_rgb(s.image_path) for s in ds.samples]
    top1 = model.predict(images).argmax(axis=1)
    keep = {int(s.sample_id) for s, t in zip(ds.samples, top1) if t == s.objects[0].class_index}
    out = {"categories": demo["categories"], "images": [], "annotations": []}
    for c in range(copies):
        for im in demo["images"]:
            if im["id"] not in keep:
                continue
            new_id = c * 1000 + im["id"]
            out["images"].append({**im, "id": new_id})
            out["annotations"] += [{**a, "id": c * 100000 + a["id"], "image_id": new_id}
                                   for a in demo["annotations"] if a["image_id"] == im["id"]]
    path = workdir / "bench.json"
    path.write_text(json.dumps(out))
    return path


def run_config(ann: Path, plan: str, batch_size: int, **kw) -> RunConfig:
    return RunConfig(dataset=str(ann), images=str(DEMO_IMAGES), plan=plan, batch_size=batch_size, **kw)


def same_images(model, cfg: RunConfig, workdir: Path) -> list:
    """The sources and every applicable mutant an objrel run (lazy off) feeds the model, in its order."""
    store = Store(workdir / "images.db")
    eng = Engine(store, cfg, model=model)
    preps = [eng._prepare(s) for s in eng.samples]
    live = [p for p in preps if p.skip is None]
    probs = model.predict([p.image for p in live])
    found = Prediction.from_batch(probs, model.task, [p.labels for p in live], threshold=model.threshold)
    for p, src in zip(live, found):
        eng._decide(p, src)
    images = []
    for p in live:
        images.append(p.image)
        if not p.tested:
            continue
        for m in eng.mutations:
            try:
                images.append(make_mutant(p.image, p.target, m, derive_seed(cfg.seed, p.sample.sample_id, m.key)))
            except NotApplicable:
                pass
    store.dispose()
    return images


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class Candidate:
    """One way to run the bare network: ``run(x)`` on each of the batches ``prepared`` before timing (``(x,
    images in it)``), after ``setup()`` (a torch candidate puts the module in its memory format)."""

    def __init__(self, name: str, runtime: str, prepared: list, run, note: str = "", session: str = "",
                 setup=None):
        self.name, self.runtime, self.prepared, self.run, self.note = name, runtime, prepared, run, note
        self.label = f"{name}, {session}" if session else name
        self.setup = setup

    def images_per_s(self) -> float:
        if self.setup is not None:
            self.setup()
        self.run(self.prepared[0][0])  # warm-up: the last candidate may have left the caches cold
        t = time.perf_counter()
        for x, _ in self.prepared:
            self.run(x)
        return sum(n for _, n in self.prepared) / (time.perf_counter() - t)


def contenders(candidates: list[Candidate], first_pass: dict[str, float],
               share: float = CONTENDER_SHARE) -> list[Candidate]:
    """The candidates that may be the limit: those whose first-pass images/s (``first_pass``, by label) is at
    least ``share`` of the fastest's."""
    top = max(first_pass.values())
    return [c for c in candidates if first_pass[c.label] >= share * top]


def limit_session(contending: list[Candidate], repeats: list[dict[str, float]]) -> Candidate:
    """The limit: the contender with the highest median images/s over the repeats (each repeat's figures by
    label), one session for every pair, not each repeat's best."""
    return max(contending, key=lambda c: statistics.median(r[c.label] for r in repeats))


def contending_ways(contending: list[Candidate], first_pass: dict[str, float]) -> list[str]:
    """The ways of running the network (``Candidate.name``: a runtime, or a torch form) among ``contending``,
    each once, the fastest in the first pass (``first_pass``, by label) first: objrel runs on each of them."""
    best: dict[str, float] = {}
    for c in contending:
        best[c.name] = max(best.get(c.name, 0.0), first_pass[c.label])
    return sorted(best, key=lambda name: -best[name])


def torch_candidates(model, images: list, batch_size: int) -> tuple[list[Candidate], str | None]:
    """The bare module in each memory format, and torch.compile'd (compiled here, outside the timed repeats:
    every batch shape once); the second value says why torch.compile cannot run, or None.  The module is
    left in the adapter's own format."""
    module = model.module
    own = torch.channels_last if model.channels_last else torch.contiguous_format
    tensors = [model.preprocess(b) for b in batches(images, batch_size)]
    out = []

    def runner(fn):
        def run(x):
            with torch.inference_mode():
                fn(x)
        return run

    for name, fmt in (("torch default", torch.contiguous_format), ("torch channels_last", torch.channels_last)):
        xs = [(x.contiguous(memory_format=fmt), len(x)) for x in tensors]
        out.append(Candidate(name, TORCH_RUNTIME, xs, runner(module),
                             setup=lambda fmt=fmt: module.to(memory_format=fmt)))
    # torch.compile on the full batches only: one shape, one compile (each further shape compiles again)
    xs = [(x.contiguous(memory_format=own), len(x)) for x in tensors if len(x) == batch_size] or \
        [(x.contiguous(memory_format=own), len(x)) for x in tensors]
    failed = None
    try:
        module.to(memory_format=own)
        fn = torch.compile(module, dynamic=False)
        t = time.perf_counter()
        with torch.inference_mode():
            fn(xs[0][0])  # compiled now, not in a timed pass
        out.append(Candidate("torch.compile", TORCH_RUNTIME, xs, runner(fn),
                             note=f"compiled in {time.perf_counter() - t:.0f} s before the repeats",
                             setup=lambda: module.to(memory_format=own)))
    except Exception as exc:  # no compiler, an unsupported op...: said in its line, the others still run
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        failed = f"cannot run here ({type(exc).__name__}: {first})"
    module.to(memory_format=own)
    return out, failed


def runtime_candidates(model, images: list, batch_size: int, threads: int) -> tuple[list[Candidate], dict]:
    """The exported network on each installed runtime, on float32 arrays made beforehand: the bare network's
    graph (NCHW input) and the graph taking NHWC input (the channel axis moved first inside it), each in
    objrel's session and, for ONNX Runtime, in ONNX Runtime's default one; the second value maps a runtime that
    cannot run this model to why."""
    import numpy as np

    from objrel.models import runtimes as rt

    out, missing = [], {}
    nhwc = [(np.ascontiguousarray(model.preprocess(b).permute(0, 2, 3, 1).numpy()), len(b))
            for b in batches(images, batch_size)]
    nchw = [(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), n) for x, n in nhwc]
    for runtime in rt.EXPORTED_RUNTIMES:
        if runtime not in rt.installed_runtimes():
            missing[runtime] = "not installed"
            continue
        for layout, arrays in ((rt.NCHW, nchw), (rt.NHWC, nhwc)):
            try:
                path = rt.export_onnx(model, layout)
            except rt.RuntimeUnavailable as exc:
                missing[runtime] = str(exc)
                break
            sessions = {"objrel's session": rt._SESSIONS[runtime](path, threads)}
            if runtime == ONNXRUNTIME:  # ONNX Runtime's own defaults too (spinning threads), with the same threads
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = threads
                options.log_severity_level = 3
                bare = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                name = bare.get_inputs()[0].name
                sessions["ONNX Runtime's defaults"] = lambda x, bare=bare, name=name: bare.run(None, {name: x})[0]
            for label, session in sessions.items():
                out.append(Candidate(runtime, runtime, arrays, session, session=f"{layout} input, {label}"))
    return out, missing


def plain(model, images: list, batch_size: int) -> float:
    t = time.perf_counter()
    for b in batches(images, batch_size):
        model.predict(b)
    return len(images) / (time.perf_counter() - t)


def objrel_run(model, cfg: RunConfig, workdir: Path, tag: str) -> tuple[float, int, int, dict]:
    """(seconds, forward passes, tested sources, seconds by step) of one run into a fresh SQLite store."""
    store = Store(workdir / f"bench-{tag}.db")
    engine = Engine(store, cfg, model=model)
    t = time.perf_counter()
    report = engine.execute()
    elapsed = time.perf_counter() - t
    store.dispose()
    return elapsed, report.forward_passes, report.tested, dict(report.steps)


def start_up(model, cfg: RunConfig, workdir: Path, times: int = 3) -> float:
    """Seconds a run takes with no sample to test (recorded, leased, its progress written, released): what
    every run pays once, whatever its size (median of ``times``)."""
    out = []
    for i in range(times):
        store = Store(workdir / f"empty-{i}.db")
        engine = Engine(store, cfg, model=model)
        t = time.perf_counter()
        engine.execute(stop_after=0)
        out.append(time.perf_counter() - t)
        store.dispose()
    return statistics.median(out)


def ray_run(cfg: RunConfig, workdir: Path, tag: str, workers: int) -> tuple[float, int, int]:
    from objrel.engine.ray_engine import RayEngine

    store = Store(workdir / f"ray-{tag}.db")
    engine = RayEngine(store, cfg.replace(engine="ray"), workers=workers)
    t = time.perf_counter()
    report = engine.execute()
    elapsed = time.perf_counter() - t
    store.dispose()
    return elapsed, report.forward_passes, report.tested


def objrel_model(base, candidate: Candidate):
    """The adapter objrel runs on for a limit candidate: the exported runtime's, or a torch adapter of the
    candidate's own form (a shallow copy of ``base`` sharing its module: channels_last or not, compiled for
    torch.compile), ``base`` itself where its form is the candidate's.  ``base`` is left as it was.  A torch
    form's module format is the candidate's ``setup`` to call before each run."""
    if candidate.runtime != TORCH_RUNTIME:
        return with_runtime(base, candidate.runtime)
    compiled = candidate.name == "torch.compile"
    channels_last = base.channels_last if compiled else candidate.name == "torch channels_last"
    if not compiled and channels_last == base.channels_last and not base.compile:
        return base
    adapter = copy.copy(base)
    adapter.channels_last = channels_last
    adapter.compile = compiled
    return adapter


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="efficientnet-lite0")
    ap.add_argument("--plan", default="colours3")
    ap.add_argument("--copies", type=int, default=None, help="times each correct demo photo is listed (6; quick 2)")
    ap.add_argument("--repeats", type=int, default=None, help="interleaved repeats (5; quick 3)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="fewer copies and repeats: a quicker, noisier check")
    ap.add_argument("--ray", action="store_true", help="also run the plan on a local Ray")
    ap.add_argument("--ray-workers", type=int, default=2)
    args = ap.parse_args(argv)
    copies = args.copies or (QUICK_COPIES if args.quick else COPIES)
    repeats = args.repeats or (QUICK_REPEATS if args.quick else REPEATS)

    threads = configure_inference_threads()
    base = load_classifier(args.model)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ann = correct_subset(base, copies, work)
        full_cfg = run_config(ann, args.plan, args.batch_size, lazy=False)
        lazy_cfg = run_config(ann, args.plan, args.batch_size, lazy=True)
        images = same_images(base, full_cfg, work)
        candidates, compile_failed = torch_candidates(base, images, args.batch_size)
        exported, missing = runtime_candidates(base, images, args.batch_size, threads)
        candidates += exported

        def limits(which: list[Candidate]) -> dict[str, float]:
            """images/s of each candidate in ``which``, by label (a runtime's sessions each under its own)."""
            out = {c.label: c.images_per_s() for c in which}
            base.module.to(memory_format=torch.channels_last if base.channels_last else torch.contiguous_format)
            return out

        once = limits(candidates)  # the first pass: every candidate
        contending = contenders(candidates, once)
        # objrel runs on every runtime in contention, so whichever the repeats find fastest, its ratios compare
        # objrel on that runtime with that runtime's bare session (a first pass alone can rank two runtimes
        # within a few percent of each other the wrong way round)
        ways = contending_ways(contending, once)
        way_of = {name: next(c for c in contending if c.name == name) for name in ways}
        models = {name: objrel_model(base, way_of[name]) for name in ways}

        def form(name: str) -> None:
            """The module in the way's memory format, before objrel runs on a torch way (no-op for a runtime)."""
            if way_of[name].setup is not None:
                way_of[name].setup()

        for name, model in models.items():
            form(name)
            objrel_run(model, full_cfg, work, f"warm-up-{name}")  # sessions opened, a compile done, caches warm
        form(ways[0])
        empty = start_up(models[ways[0]], full_cfg, work)
        res: dict = {"sessions": [], "ray": [], **{k: {n: [] for n in ways} for k in ("plain", "full", "lazy")}}
        for rep in range(repeats):  # interleaved, so drift hits every side alike
            before = limits(contending)
            for name, model in models.items():
                form(name)
                res["plain"][name].append(plain(model, images, args.batch_size))
                res["full"][name].append(objrel_run(model, full_cfg, work, f"full-{name}-{rep}"))
                res["lazy"][name].append(objrel_run(model, lazy_cfg, work, f"lazy-{name}-{rep}"))
            after = limits(contending)  # before and after the runs: load drift averages out
            res["sessions"].append({k: (before[k] + after[k]) / 2 for k in before})
            if args.ray:
                res["ray"].append(ray_run(full_cfg, work, f"{rep}", args.ray_workers))
        med = lambda xs: statistics.median(xs)  # noqa: E731
        by_label = {c.label: med([r[c.label] for r in res["sessions"]]) if c in contending else once[c.label]
                    for c in candidates}
        top = limit_session(contending, res["sessions"])
        fastest, lim = top.name, by_label[top.label]
        full, lazy = res["full"][fastest], res["lazy"][fastest]
        n_images = len(images)
        passes_full, tested = full[0][1], full[0][2]
        passes_lazy = lazy[0][1]
        per_source = passes_full / tested
        t_full = med([r[0] for r in full])
        t_lazy = med([r[0] for r in lazy])
        full_ips, full_sps = passes_full / t_full, tested / t_full
        lazy_ips, lazy_sps = passes_lazy / t_lazy, tested / t_lazy
        # Paired ratios: each repeat's runs against the limit session measured around them in that repeat, so a
        # slow spell of the shared machine divides out; the median of the pairs is the figure.
        pair_limit = [passes_full / r[0] / lim_r[top.label] for r, lim_r in zip(full, res["sessions"])]
        pair_lazy = [tested / r[0] / (lim_r[top.label] / per_source) for r, lim_r in zip(lazy, res["sessions"])]
        spread = lambda xs: f"pairs {min(xs):.3f}..{max(xs):.3f}"  # noqa: E731
        print(f"model {args.model}, plan {args.plan}, batch {args.batch_size}, {threads} threads, {repeats} "
              f"interleaved repeats (medians); {tested} tested sources, {n_images} images (sources + applicable "
              f"mutants), {per_source:.2f} forward passes per source")
        for c in candidates:
            notes = [c.note] if c.note else []
            if c not in contending:
                notes.append(f"measured once, in the first pass: under {CONTENDER_SHARE:.2f} of the fastest")
            said = f"  ({'; '.join(notes)})" if notes else ""
            print(f"limit  {c.label:<42} {by_label[c.label]:7.1f} images/s{said}")
        if compile_failed:
            print(f"limit  {'torch.compile':<42} {compile_failed}")
        for runtime, why in missing.items():
            print(f"limit  {runtime:<42} {why}")
        print(f"limit  = fastest: {top.label} {lim:.1f} images/s (bare network, inputs preprocessed beforehand)")
        for name in ways:
            if name != fastest:
                t_other = med([r[0] for r in res["full"][name]])
                print(f"objrel lazy off on {name}: {t_other:.2f} s, {passes_full / t_other:.1f} images/s, "
                      f"{tested / t_other:.2f} sources/s (also in contention; the ratios below are on {fastest})")
        print(f"plain  (adapter predict on {fastest}, preprocessing included): {med(res['plain'][fastest]):.1f} "
              f"images/s")
        print(f"objrel lazy off on {fastest}: {t_full:.2f} s, {full_ips:.1f} images/s, {full_sps:.2f} sources/s "
              f"({passes_full} forward passes)")
        print(f"objrel start-up of a run (no sample tested): {empty * 1000:.1f} ms, {empty / t_full:.1%} of the "
              f"lazy-off run")
        print(f"objrel lazy on  on {fastest}: {t_lazy:.2f} s, {lazy_ips:.1f} images/s, {lazy_sps:.2f} sources/s "
              f"({passes_lazy} forward passes, {1 - passes_lazy / passes_full:.1%} saved)")
        steps: dict = {}
        for r in full:
            for k, v in r[3].items():
                steps[k] = steps.get(k, 0.0) + v
        total = sum(r[0] for r in full)
        shares = sorted(steps.items(), key=lambda kv: -kv[1]) + [("other", total - sum(steps.values()))]
        print("objrel lazy off, time by step (the run's thread, all repeats): "
              + ", ".join(f"{k} {v / total:.1%}" for k, v in shares))
        # the forward passes inside a run against the bare session on the same images: what the engine's work
        # beside the passes costs them (caches, cores), apart from its own time
        pair_forward = [passes_full / r[3]["forward"] / lim_r[top.label] for r, lim_r in zip(full, res["sessions"])]
        print(f"objrel lazy off, its forward passes against the bare session: {med(pair_forward):.3f}  (median of "
              f"{spread(pair_forward)}; 1 = as fast as the bare network)")
        if args.ray:
            t_ray = med([r[0] for r in res["ray"]])
            print(f"ray ({args.ray_workers} actors, lazy off, runtime {full_cfg.runtime}): {t_ray:.2f} s, "
                  f"{res['ray'][0][1] / t_ray:.1f} images/s, {res['ray'][0][2] / t_ray:.2f} sources/s "
                  f"(start-up included)")
        pair_plain = [passes_full / r[0] / p for r, p in zip(full, res["plain"][fastest])]
        print(f"objrel(lazy off) images/s / plain = {med(pair_plain):.3f}  (median of {spread(pair_plain)}: the "
              f"pipeline against the adapter's own sequential predict)")
        print(f"ratio_limit = objrel(lazy off) images/s / limit = {med(pair_limit):.3f}  "
              f"(median of {spread(pair_limit)}; target >= 0.85)")
        print(f"ratio_lazy  = objrel(lazy on) sources/s / (limit / {per_source:.2f} passes per source) = "
              f"{med(pair_lazy):.3f}  (median of {spread(pair_lazy)}; target >= 1.10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
