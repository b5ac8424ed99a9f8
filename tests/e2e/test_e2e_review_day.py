"""A whole review day in a real browser (Debian's chromium through Playwright) on the demo store.

Two reviewers work at once in two browser contexts (two people, two cookie jars): alice and bob each start
from My work, judge run 1's MR-2 review sample blind, reload the page mid-queue (and stay signed in, on the
same item) and go to Agreement and back through the top bar (and stay on the same run).  carol, the
adjudicator, opens the disagreement from her own list and decides it with a note.  Both reviewers then see
their calibration: the coefficients, the disagreement and carol's decision with its note.  admin uploads a
zip made the way ``zip -r x.zip images`` makes one (the images in a folder) and the run tests every image.
Finally the judgments export from the Agreement page holds every call and the adjudication.  Screenshots of
each step go to test-artifacts/review-day/, and of the reviewers' pages at 1,400 and 900 px.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from objrel import review
from objrel.review.lime_ahead import AHEAD_ENV, PROCESSES_ENV, live_processes
from objrel.store import Store
from tests.e2e.app_server import serving
from tests.e2e.test_e2e_browser import CHROMIUM, CHROMIUM_ARGS, call_until_counted, choose, click_until_url, \
    settled, upload_until_listed

pytestmark = [pytest.mark.browser, pytest.mark.subprocess]

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("OBJREL_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "review-day"
PASS = {"alice": "alice-demo-pass", "bob": "bob-demo-pass", "carol": "carol-demo-pass", "admin": "admin-demo-pass"}
RUN, RELATION = 1, "MR-2"
# The calls by queue position (the review sample's draw order, the same for both): they disagree on the second.
ALICE = ["tp", "tp", "fp"]
BOB = ["tp", "fp", "fp"]
BUTTON = {"tp": "True positive", "fp": "False positive", "uncertain": "Uncertain"}
NOTE = "checked at full size: the object is gone"
N_UPLOADED = 6
WIDTHS = (1400, 900)


# The cap on LIME processes the day runs under, and how long a LIME process may take to end once the server has.
LIME_CAP = 1
LIME_END_S = 15


@pytest.fixture
def day_server(tmp_path, demo_db):
    """The app on a copy of the demo store, with an uploads folder of its own and LIME computed ahead (at most
    LIME_CAP processes).  Once the server has stopped, no LIME process of its store may be left."""
    db = tmp_path / "demo.db"
    shutil.copyfile(demo_db, db)
    store = Store(str(db))
    with serving(tmp_path, str(db), data_roots=True, env={AHEAD_ENV: "1", PROCESSES_ENV: str(LIME_CAP)}) as base:
        yield base, store, tmp_path / "streamlit.log"
    left = lime_pids(store)
    deadline = time.time() + LIME_END_S
    while left and time.time() < deadline:
        time.sleep(0.2)
        left = lime_pids(store)
    for pid in left:                # never left behind, even by a failing test
        os.kill(pid, 9)
    store.dispose()
    assert not left, f"LIME processes {left} outlived the server"


def lime_pids(store: Store) -> list[int]:
    """The LIME processes of the store still running on this host (a zombie has ended)."""
    return live_processes(store)


def shot(page, name: str) -> None:
    settled(page)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def sign_in(page, base: str, name: str) -> None:
    page.goto(base)
    page.get_by_label("Name").wait_for(timeout=60_000)
    page.get_by_label("Name").fill(name)
    page.get_by_label("Passphrase").fill(PASS[name])
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=60_000)


def current_item(page) -> str:
    heading = page.locator("h3", has_text="(sample ").first
    heading.wait_for(timeout=60_000)
    return re.search(r"\(sample (\S+)\)", heading.inner_text()).group(1)


def url_run(page) -> str | None:
    m = re.search(r"[?&]run=(\d+)", page.url)
    return m.group(1) if m else None


# The top bar's pages the test visits: title -> url path.
URL_PATHS = {"My work": "my-work", "Review": "review", "Agreement": "agreement", "Runs": "runs"}


def top_bar(page, title: str) -> None:
    """Switch page through the app's top bar (as a person does; the query string is dropped by Streamlit),
    clicking again when a click is lost to a rerun."""
    click_until_url(page, page.get_by_role("link", name=re.compile(rf"{title}$")).first, URL_PATHS[title])
    settled(page)


def judge(page, verdict: str, judged_before: int) -> str:
    """Call the item shown ``verdict`` (through ``call_until_counted``, which settles the page first and
    presses again when a click was refused or swallowed) and return its id once the save is confirmed."""
    item = call_until_counted(page, lambda p: (current_item(p), BUTTON[verdict]),
                              page.get_by_text(f"you judged {judged_before + 1}").first)
    page.get_by_text(re.compile(rf"Saved: run {RUN}, {RELATION}, .+: {re.escape(verdict_word(verdict))}")).first \
        .wait_for(timeout=60_000)
    return item


def verdict_word(verdict: str) -> str:
    return review.VERDICT_LABELS[verdict]


def open_my_queue(page) -> None:
    """From My work (through the top bar), the run's MR-2 queue: its 'Next open item' button."""
    top_bar(page, "My work")
    page.get_by_role("heading", name="My work").wait_for(timeout=60_000)
    page.get_by_text(f"Run {RUN}, {RELATION}").first.wait_for()
    if "alice" in page.get_by_text(re.compile("^Signed in as")).first.inner_text():
        shot(page, "01-alice-my-work")
    page.locator(f".st-key-home_queue_{RUN}_{RELATION} button").click()
    current_item(page)
    assert url_run(page) == str(RUN), page.url


def reload_and_stay(page, name: str, item: str) -> None:
    page.reload()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=60_000)
    assert current_item(page) == item, f"{name}: after a reload the page shows another item"
    assert url_run(page) == str(RUN), page.url


def agreement_and_back(page, item: str) -> None:
    top_bar(page, "Agreement")
    page.get_by_role("heading", name="Reviewer agreement").wait_for(timeout=60_000)
    top_bar(page, "Review")
    assert current_item(page) == item, "back from Agreement the page shows another item"
    assert url_run(page) == str(RUN), page.url


def make_nested_upload(folder: Path) -> tuple[Path, Path]:
    """A COCO .json naming bare file names and a zip whose images sit in images/ (``zip -r x.zip images``)."""
    import numpy as np
    from PIL import Image

    images_dir = folder / "images"
    images_dir.mkdir(parents=True)
    cats = [{"id": 1, "name": "balloon", "imagenet_index": 417}, {"id": 2, "name": "orange", "imagenet_index": 950}]
    images, anns = [], []
    for i in range(1, N_UPLOADED + 1):
        arr = np.full((96, 96, 3), (30, 90, 160), np.uint8)
        yy, xx = np.mgrid[:96, :96]
        arr[(yy - 48) ** 2 + (xx - 48) ** 2 < 28 ** 2] = (220, 40, 30) if i % 2 else (250, 140, 20)
        Image.fromarray(arr).save(images_dir / f"disc{i}.png")
        images.append({"id": i, "file_name": f"disc{i}.png", "width": 96, "height": 96})
        anns.append({"id": i, "image_id": i, "category_id": 1 if i % 2 else 2, "bbox": [20, 20, 56, 56]})
    zpath = folder / "x.zip"
    subprocess.run(["zip", "-q", "-r", str(zpath), "images"], cwd=folder, check=True) if shutil.which("zip") else \
        _zip_r(zpath, folder, "images")
    ann = folder / "discs.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    return ann, zpath


def _zip_r(zpath: Path, cwd: Path, top: str) -> None:
    """What ``zip -r`` writes: the folder's own entry, then each file under its folder."""
    with zipfile.ZipFile(zpath, "w") as zf:
        zf.write(cwd / top, f"{top}/")
        for f in sorted((cwd / top).iterdir()):
            zf.write(f, f"{top}/{f.name}")


def test_a_review_day(day_server, tmp_path):
    from playwright.sync_api import sync_playwright

    base, store, server_log = day_server
    most_lime = 0
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        people = {}
        for name in ("alice", "bob"):
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            page = ctx.new_page()
            page.set_default_timeout(60_000)
            sign_in(page, base, name)
            people[name] = page
        for page in people.values():
            open_my_queue(page)
        shot(people["alice"], "02-alice-review")
        # the first screen: the source and the violating mutants; every other piece of evidence is one key away:
        # the size histogram (H), LIME ahead with its progress (L), every mutation with its top-5 (M)
        alice = people["alice"]
        assert alice.locator('[data-testid="stImage"]').count() >= 2
        alice.keyboard.press("h")
        alice.get_by_text("Object size: where does this item sit?").first.wait_for()
        alice.keyboard.press("l")
        alice.get_by_text(re.compile(r"LIME: (\d+/\d+ images explained|starting|.*waiting)|LIME overlays|"
                                     r"LIME source")).first.wait_for(timeout=60_000)
        alice.keyboard.press("m")
        alice.get_by_text(re.compile(r"top-5$")).first.wait_for()
        # blind: bob's first item shows no call of alice's
        people["bob"].get_by_text("Your call: not yet").first.wait_for()

        judged = {"alice": {}, "bob": {}}
        calls = {"alice": ALICE, "bob": BOB}
        for position in range(len(ALICE)):
            for name, page in people.items():       # the two work at once, item by item
                if position == 1:                   # mid-queue: a reload, then Agreement and back
                    item = current_item(page)
                    reload_and_stay(page, name, item)
                    agreement_and_back(page, item)
                item = judge(page, calls[name][position], position)
                judged[name][item] = calls[name][position]
                most_lime = max(most_lime, len(lime_pids(store)))
        stored = {(j.reviewer, j.sample_id): j.verdict for j in review.judgments(store, RUN, RELATION)}
        assert stored == {**{("alice", k): v for k, v in judged["alice"].items()},
                          **{("bob", k): v for k, v in judged["bob"].items()}}
        assert judged["alice"].keys() == judged["bob"].keys()
        disputed = [k for k in judged["alice"] if judged["alice"][k] != judged["bob"][k]]
        assert len(disputed) == 1
        shot(alice, "03-alice-queue-done")

        # carol decides from her own list
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        carol = ctx.new_page()
        carol.set_default_timeout(60_000)
        sign_in(carol, base, "carol")
        top_bar(carol, "My work")
        carol.get_by_role("heading", name="My work").wait_for()
        carol.get_by_text("1 open, 0 decided").first.wait_for()
        shot(carol, "04-carol-my-work")
        carol.locator(f".st-key-home_dispute_{RUN}_{RELATION} button").click()
        carol.get_by_role("heading", name="Reviewer agreement").wait_for()
        assert url_run(carol) == str(RUN), carol.url
        form = carol.locator('[data-testid="stForm"]').first
        form.wait_for()
        form.get_by_text("true positive", exact=True).click()
        form.get_by_label(re.compile("^Note")).fill(NOTE)
        form.get_by_role("button", name="Save decision").click()
        carol.get_by_text(re.compile(rf"Saved: run {RUN}, {RELATION}, .+: true positive \(decided by carol\)")) \
            .first.wait_for()
        decided = [c for c in review.consensus(store, RUN, RELATION) if c.source == "adjudicated"]
        assert [(c.sample_id, c.verdict, c.adjudicator, c.note) for c in decided] == \
            [(disputed[0], "tp", "carol", NOTE)]
        shot(carol, "05-carol-decided")

        # the reviewers' calibration: the coefficients, the disagreement, carol's decision and note
        for page in people.values():
            page.reload()
            page.get_by_text(f"Calibration: run {RUN}, {RELATION}").first.wait_for()
            page.get_by_text(re.compile("Cohen's kappa")).first.wait_for()
            # shown as typed: objrel.app.text.plain keeps a word joiner before ':' so no link can form
            page.get_by_text(re.compile(re.escape(NOTE).replace(":", "\u2060?:"))).first.wait_for()
        shot(alice, "06-alice-calibration")

        # the export holds every call and the adjudication
        top_bar(carol, "Agreement")
        carol.get_by_text("Export judgments").first.click()
        with carol.expect_download() as download:
            carol.get_by_role("button", name=re.compile(r"^Download CSV \(\d+ rows\)")).click()
        rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))
        exported = {(r["reviewer"], r["item"]): r["call"] for r in rows if r["run"] == str(RUN)
                    and r["relation"] == RELATION}
        assert exported == {k: v for k, v in stored.items()}
        adjudicated = {r["item"]: (r["adjudicator"], r["adjudicated_call"], r["adjudication_note"]) for r in rows
                       if r["run"] == str(RUN) and r["adjudicator"]}
        assert adjudicated == {disputed[0]: ("carol", "tp", NOTE)}

        # the reviewers' pages at both widths
        for width in WIDTHS:
            alice.set_viewport_size({"width": width, "height": 1000})
            for path in ("Review", "Agreement", "My work"):
                top_bar(alice, path)
                shot(alice, f"07-alice-{path.lower().replace(' ', '-')}-{width}")
        alice.set_viewport_size({"width": 1400, "height": 1000})

        # admin brings a zip whose images sit in a folder; the run tests them
        ann, zpath = make_nested_upload(tmp_path / "byod")
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        admin = ctx.new_page()
        admin.set_default_timeout(60_000)
        sign_in(admin, base, "admin")
        runs_before = {r.id for r in store.list_runs()}
        top_bar(admin, "Runs")
        admin.get_by_role("heading", name="Runs").first.wait_for()
        shot(admin, "08-admin-runs")
        admin.get_by_text("Bring your own data").click()
        admin.get_by_label("Name (letters, digits, _ . -)").fill("discs")
        admin.get_by_label("Name (letters, digits, _ . -)").press("Tab")
        settled(admin)
        uploaders = admin.locator('[data-testid="stFileUploader"]')
        upload_until_listed(admin, uploaders.filter(has_text="Annotations"), ann)
        upload_until_listed(admin, uploaders.filter(has_text="Images"), zpath)
        settled(admin)
        admin.get_by_role("button", name="Upload dataset").click()
        admin.get_by_text(f"Dataset discs stored: {N_UPLOADED} images, {N_UPLOADED} samples").wait_for()
        shot(admin, "08-admin-upload")
        admin.get_by_role("button", name="Use in the start form").click()
        settled(admin)
        admin.get_by_text("Start a run").first.click()
        choose(admin, "Model", "efficientnet-lite0")
        admin.get_by_text("Test incorrect inferences too").click()
        admin.get_by_label("Name (optional)").fill("nested discs")
        admin.get_by_role("button", name="Start run").click()
        started = admin.get_by_text(re.compile(r"Run \d+ started"))
        started.wait_for(timeout=120_000)
        run_new = int(re.search(r"Run (\d+) started", started.inner_text()).group(1))
        assert run_new not in runs_before
        deadline = time.time() + 300
        while time.time() < deadline and store.get_run(run_new).status not in ("finished", "failed", "cancelled"):
            time.sleep(0.5)
        final = store.get_run(run_new)
        assert final.status == "finished" and final.n_total == N_UPLOADED
        assert final.n_tested == N_UPLOADED and final.n_skipped == 0, (final.n_tested, final.n_skipped)
        admin.get_by_text(re.compile(rf"finished: {N_UPLOADED}/{N_UPLOADED} samples")).first.wait_for(timeout=30_000)
        shot(admin, "09-admin-run-finished")
        browser.close()
    # the LIME queue kept to its cap, and the whole day left no deprecation warning in the server's log
    assert most_lime <= LIME_CAP
    log = server_log.read_text(errors="replace")
    assert "deprecat" not in log.lower(), log[-3000:]
