"""End to end in a real browser: Debian's chromium driven by Playwright against `streamlit run app.py`.

Two reviewers (accounts an admin made, with the reviewer role) sign in one after the other, judge the same
six flagged items with two disagreements; an adjudicator who is neither of them signs in, the Agreement
page shows her the kappa a hand computation gives, and she adjudicates one disagreement from a card that
shows the item's thumbnails.  A run operator then uploads a small dataset (a COCO .json and a .zip of
generated PNGs) on the Runs page, starts an EfficientNet-Lite0 run on it and the page's live progress line
shows the forward-pass count rising.  Finally an admin visits every page of the top bar; a screenshot of
each, at 1,400 px width, is saved under test-artifacts/ (page-<n>-<name>.png).
"""

from __future__ import annotations

import os
import re
import shutil
import time
import zipfile
from pathlib import Path

import pytest

from objrel import review
from tests.e2e.app_server import serving

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("OBJREL_TEST_ARTIFACTS", ROOT / "test-artifacts"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

# Hand-made calls on the six flagged items (sample ids 1..6):
ALICE = {"1": "tp", "2": "tp", "3": "tp", "4": "tp", "5": "fp", "6": "fp"}
BOB = {"1": "tp", "2": "tp", "3": "tp", "4": "fp", "5": "fp", "6": "tp"}
# p_o = 4/6; both reviewers call tp 4/6 and fp 2/6, so p_e = (4/6)^2 + (2/6)^2 = 20/36;
# kappa = (24/36 - 20/36) / (1 - 20/36) = (4/36) / (16/36) = 0.25
EXPECTED_KAPPA = "0.250"
BUTTON = {"tp": "True positive", "fp": "False positive", "uncertain": "Uncertain"}

pytestmark = [pytest.mark.browser, pytest.mark.subprocess,
              pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                 reason="Debian chromium is not installed (.ci/run installs it)")]


# The accounts of the test: made on the server (as `objrel users add` does), never from the browser.
ACCOUNTS = {"alice": (review.REVIEWER,), "bob": (review.REVIEWER,), "carol": (review.ADJUDICATOR,),
            "olga": (review.RUN_OPERATOR,), "dave": (review.ADMIN,)}
# Every page of the app's top bar, in its order: (title, url path).
PAGES = [("Overview", ""), ("Explore", "explore"), ("Review", "review"), ("Agreement", "agreement"),
         ("Runs", "runs"), ("Inspect", "inspect"), ("Shortcut", "shortcut"), ("Users", "users")]
WIDTH = 1400
# The live progress line of a running run (objrel.progress.estimate_text).
PROGRESS = re.compile(r"(\d+)/(\d+) samples, (\d+)(?:/(\d+))? forward passes")


def passphrase(name: str) -> str:
    return f"{name}-long-passphrase"


@pytest.fixture
def server(flagged_store, tmp_path):
    store, run_id = flagged_store
    for name, roles in ACCOUNTS.items():
        review.create_reviewer(store, name, passphrase(name), roles=roles)
    # the server runs in a folder of its own, so uploads land in <tmp>/srv/var/uploads
    with serving(tmp_path, store.url, data_roots=True) as base:
        yield base, store, run_id


def settled(page, images: int = 0) -> None:
    """Wait until the script run is over: the images are in and no element is stale."""
    page.wait_for_function(f"document.querySelectorAll('[data-testid=\"stImage\"] img').length >= {images}")
    page.wait_for_function("document.querySelectorAll('[data-stale=\"true\"]').length === 0 && "
                           "!document.querySelector('[data-testid=\"stStatusWidget\"]')")
    page.wait_for_timeout(500)


def current_sample(page) -> str:
    text = page.locator("h3", has_text="(sample ").first.inner_text()
    return re.search(r"\(sample (\S+)\)", text).group(1)


def sign_in(page, base: str, name: str) -> None:
    page.goto(f"{base}/review")
    page.get_by_text("Sign in (sidebar) to review").wait_for(timeout=60_000)
    page.get_by_label("Name").fill(name)
    page.get_by_label("Passphrase").fill(passphrase(name))
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_text(f"Signed in as {name}").wait_for(timeout=60_000)


def sign_out(page) -> None:
    """Sign out and wait until the sign-in form is back (the session ended); a click that lands while the
    page reruns can be lost: then click again."""
    for attempt in range(3):
        settled(page)
        page.get_by_role("button", name="Sign out").click()
        try:
            page.get_by_label("Passphrase").wait_for(timeout=20_000)
            break
        except Exception:
            if attempt == 2:
                raise
    settled(page)


# How long a reviewer here looks at an item before a call (the page asks for no wait: a call carries its item).
LOOK_MS = 300


def call_until_counted(page, pick, done, attempts: int = 3) -> str:
    """Settle the page, let ``pick(page)`` read the item shown and name its call button (it returns
    ``(item, button)``), press the button and wait for ``done`` (the "you judged N" locator); return the item.
    The page is settled before the item is read (the heading of the item just judged can still be on screen
    while the next one draws), and a click that the page refused or a rerun swallowed (the count did not move
    once the page settled) is made again on the item then shown; the count is what says a call landed, so
    none is made twice."""
    for attempt in range(attempts):
        settled(page)
        item, button = pick(page)
        page.wait_for_timeout(LOOK_MS)   # a look at the item
        page.get_by_role("button", name=button).click()
        try:
            done.wait_for(timeout=20_000)
            return item
        except Exception:
            settled(page)
            if done.count():  # it landed, late
                return item
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def judge_all(page, calls: dict) -> None:
    """Give each item in turn its call from ``calls`` (sample id -> verdict)."""
    def pick(page):
        page.locator("h3", has_text="(sample ").first.wait_for(timeout=60_000)
        sid = current_sample(page)
        return sid, BUTTON[calls[sid]]

    for n in range(len(calls)):
        call_until_counted(page, pick, page.get_by_text(f"you judged {n + 1}"))


def click_until_url(page, link, path: str, attempts: int = 3) -> None:
    """Click ``link`` (a Playwright locator) until the URL is the app page ``path``.  A click that lands while
    the page reruns can be lost (seen once under load: the Runs heading never came): then click again."""
    for attempt in range(attempts):
        settled(page)
        link.click()
        try:
            page.wait_for_url(re.compile(rf"/{path}(\?|$)"), timeout=15_000)
            break
        except Exception:
            if attempt == attempts - 1:
                raise
    page.wait_for_timeout(300)


def upload_until_listed(page, uploader, path: Path, attempts: int = 3) -> None:
    """Give the file uploader ``uploader`` (a Playwright locator) the file ``path`` until the page lists its
    name.  A file set while the page reruns (after the upload before it) can land on an input that is being
    replaced (seen once in a fresh-clone run: the second file never showed): then set it again."""
    for attempt in range(attempts):
        settled(page)
        uploader.locator('input[type="file"]').set_input_files(str(path))
        try:
            page.get_by_text(path.name).first.wait_for(timeout=20_000)
            return
        except Exception:
            if attempt == attempts - 1:
                raise


def nav(page, path: str) -> None:
    """Go to a page through the app's top bar (the session, and its sign-in, carries over)."""
    if not path:
        page.locator("a", has_text=re.compile(r"Overview$")).first.click()
        page.wait_for_timeout(300)
        return
    click_until_url(page, page.locator(f'a[href$="/{path}"]').first, path)


def shoot(page, name: str, max_height: int = 8000) -> Path:
    """A screenshot of the whole page at WIDTH: the viewport grows to the main area's content height (the
    main area scrolls inside the page, so Playwright's full_page alone would cut it)."""
    settled(page)
    height = page.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]')
        || document.querySelector('section.main'); return m ? m.scrollHeight : document.body.scrollHeight; }""")
    page.set_viewport_size({"width": WIDTH, "height": max(1000, min(int(height) + 40, max_height))})
    settled(page)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path))
    page.set_viewport_size({"width": WIDTH, "height": 1000})
    return path


# Images in the uploaded dataset (make_upload).
N_UPLOADED = 48


def make_upload(folder: Path) -> tuple[Path, Path]:
    """A COCO .json and a .zip of tiny generated PNGs: one coloured disc per image on a blue ground, labelled
    with ImageNet classes (so EfficientNet-Lite0 can run on them)."""
    import json

    import numpy as np
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    cats = [{"id": 1, "name": "balloon", "imagenet_index": 417},
            {"id": 2, "name": "tennis ball", "imagenet_index": 852},
            {"id": 3, "name": "orange", "imagenet_index": 950}]
    # 48 images: the run must outlast several of the Runs page's 2 s refreshes, so that the test sees its
    # forward passes rise (4 images were done before the second refresh once the engine got faster)
    colours = [(220, 30, 30), (200, 230, 40), (250, 140, 20), (230, 60, 60)] * 12
    images, anns = [], []
    zpath = folder / "images.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for i, colour in enumerate(colours, 1):
            arr = np.full((96, 96, 3), (30, 90, 160), np.uint8)
            yy, xx = np.mgrid[:96, :96]
            arr[(yy - 48) ** 2 + (xx - 48) ** 2 < 28 ** 2] = colour
            png = folder / f"disc{i}.png"
            Image.fromarray(arr).save(png)
            zf.write(png, f"disc{i}.png")
            images.append({"id": i, "file_name": f"disc{i}.png", "width": 96, "height": 96})
            anns.append({"id": i, "image_id": i, "category_id": (i - 1) % 3 + 1, "bbox": [20, 20, 56, 56]})
    ann = folder / "discs.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    return ann, zpath


def choose(page, label: str, option: str, attempts: int = 3) -> None:
    """Pick ``option`` in the Streamlit selectbox labelled ``label``.  A script rerun that lands between
    opening the list and clicking closes the list again: then wait for the rerun to end and reopen it."""
    box = page.locator('[data-testid="stSelectbox"]', has_text=label).first
    for attempt in range(attempts):
        settled(page)
        box.locator('[role="combobox"], input').first.click()
        item = page.get_by_role("option", name=option, exact=True).first
        try:
            item.wait_for(timeout=10_000)
            item.click(timeout=10_000)
            return
        except Exception:
            if attempt == attempts - 1:
                page.screenshot(path=str(ARTIFACTS / f"choose-{label}-failed.png"))
                raise
            page.keyboard.press("Escape")


def test_two_reviewers_kappa_and_adjudication(server, tmp_path):
    from playwright.sync_api import sync_playwright

    base, store, run_id = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(60_000)

        sign_in(page, base, "alice")
        # the app's own navigation serves the page (not Streamlit's file-name sidebar)
        assert page.locator('a[href$="/agreement"]').first.inner_text().strip().endswith("Agreement")
        page.locator("h3", has_text="(sample ").first.wait_for()
        page.set_viewport_size({"width": 1400, "height": 2100})
        settled(page, images=7)
        page.screenshot(path=str(ARTIFACTS / "review-page.png"))
        page.set_viewport_size({"width": 1400, "height": 1000})
        judge_all(page, ALICE)
        sign_out(page)

        sign_in(page, base, "bob")
        # blind: bob's first item shows no call of alice's
        page.get_by_text("Your call: not yet").wait_for()
        judge_all(page, BOB)

        stored = {(j.reviewer, j.sample_id): j.verdict for j in review.judgments(store, run_id, "MR-2")}
        assert stored == {**{("alice", k): v for k, v in ALICE.items()}, **{("bob", k): v for k, v in BOB.items()}}

        sign_out(page)

        # the adjudicator: neither alice nor bob (a party never decides its own disagreement)
        sign_in(page, base, "carol")
        # from her own list (My work, in the app's navigation, so the session carries over) to the run and
        # relation where her disagreements wait
        click_until_url(page, page.locator('a[href$="/my-work"]').first, "my-work")
        click_until_url(page, page.locator(f".st-key-home_dispute_{run_id}_MR-2 button"), "agreement")
        kappa = page.locator('[data-testid="stMetric"]', has_text="Cohen's kappa")
        kappa.wait_for()
        assert EXPECTED_KAPPA in kappa.inner_text()
        page.get_by_text("fair").first.wait_for()  # Landis-Koch band of 0.25

        # adjudicate the first disagreement as a true positive
        form = page.locator('[data-testid="stForm"]').first
        # the adjudication card shows the item: its thumbnails (source beside its mutants) are inside it
        form.locator("img").first.wait_for()
        assert form.locator("img").count() >= 1
        form.get_by_text(review.VERDICT_LABELS["tp"], exact=True).click()
        form.get_by_role("button", name="Save decision").click()
        def adjudicated():
            return [c for c in review.consensus(store, run_id, "MR-2") if c.source == "adjudicated"]

        deadline = time.time() + 30
        while time.time() < deadline and not adjudicated():
            time.sleep(0.2)
        decided = adjudicated()
        assert len(decided) == 1 and decided[0].verdict == "tp" and decided[0].adjudicator == "carol"
        assert decided[0].sample_id in {"4", "6"}  # the two items alice and bob disagree on
        # the four agreed items count as consensus too
        assert len(review.consensus(store, run_id, "MR-2")) == 5
        page.screenshot(path=str(ARTIFACTS / "agreement-page.png"), full_page=True)
        sign_out(page)

        # a run operator brings her own data and starts a run on it
        ann, zpath = make_upload(tmp_path / "byod")
        runs_before = {r.id for r in store.list_runs()}
        sign_in(page, base, "olga")
        nav(page, "runs")
        page.get_by_role("heading", name="Runs").first.wait_for()
        page.get_by_text("Bring your own data").click()
        page.get_by_label("Name (letters, digits, _ . -)").fill("discs")
        page.get_by_label("Name (letters, digits, _ . -)").press("Tab")
        settled(page)
        uploaders = page.locator('[data-testid="stFileUploader"]')
        upload_until_listed(page, uploaders.filter(has_text="Annotations"), ann)
        upload_until_listed(page, uploaders.filter(has_text="Images"), zpath)
        settled(page)
        page.get_by_role("button", name="Upload dataset").click()
        page.get_by_text(f"Dataset discs stored: {N_UPLOADED} images, {N_UPLOADED} samples").wait_for()
        settled(page)
        page.get_by_text("Dataset discs stored").scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "runs-upload-done.png"))
        page.get_by_role("button", name="Use in the start form").click()
        settled(page)
        page.get_by_text("Start a run").first.click()
        # no typed paths: the upload is chosen in the select boxes, named relative to the uploads folder
        dataset = page.locator('[data-testid="stSelectbox"]', has_text="Dataset").first
        dataset.wait_for()
        shown = lambda box: box.inner_text() + " " + " ".join(  # noqa: E731
            box.locator("input").evaluate_all(
                "els => els.map(e => e.value + ' ' + (e.getAttribute('aria-label') || ''))"))
        assert "uploads/discs/discs.json" in shown(dataset), shown(dataset)    # in this store's uploads folder
        images = page.locator('[data-testid="stSelectbox"]', has_text="Images folder").first
        assert "uploads/discs/images" in shown(images), shown(images)
        choose(page, "Model", "efficientnet-lite0")
        choose(page, "Plan", "palette15")
        page.get_by_text("Test incorrect inferences too").click()
        page.get_by_label("Name (optional)").fill("byod discs")
        page.get_by_role("button", name="Start run").click()
        started = page.get_by_text(re.compile(r"Run \d+ started"))
        started.wait_for(timeout=120_000)
        run_new = int(re.search(r"Run (\d+) started", started.inner_text()).group(1))
        assert run_new not in runs_before
        # the live progress line: poll the page text until the run is over; the forward passes rise
        seen, shot = [], False
        deadline = time.time() + 300
        while time.time() < deadline:
            text = page.locator('[data-testid="stMain"]').inner_text()
            # this run's line (an earlier run's "finished" line may still show above it)
            line = next((t for t in text.splitlines() if "byod discs" in t and PROGRESS.search(t)), "")
            m = PROGRESS.search(line)
            if m:
                passes = int(m.group(3))
                if not seen or seen[-1] != passes:
                    seen.append(passes)
                if passes > 0 and not shot:
                    page.locator('[data-testid="stProgress"]').first.scroll_into_view_if_needed()
                    page.screenshot(path=str(ARTIFACTS / "runs-progress-live.png"))
                    shot = True
            # over: the line stays on the page as "finished: N/N samples, P forward passes" (its last count)
            if store.get_run(run_new).status in ("failed", "cancelled") or (m and "finished:" in line):
                break
            time.sleep(0.25)
        final = store.get_run(run_new)
        assert final.status == "finished", (final.status, seen)
        assert len(seen) >= 2 and seen == sorted(seen) and seen[-1] > seen[0], seen
        assert seen[-1] <= final.passes_done
        assert final.n_total == N_UPLOADED and final.model == "efficientnet-lite0"
        sign_out(page)

        # every page of the top bar, as an admin, at 1,400 px width
        sign_in(page, base, "dave")
        shots = []
        for n, (title, path) in enumerate(PAGES, 1):
            nav(page, path)
            page.locator("h1").first.wait_for()
            shots.append(shoot(page, f"page-{n}-{title.lower()}"))
        browser.close()
    for path in shots:
        assert path.stat().st_size > 10_000, path
    assert (ARTIFACTS / "review-page.png").stat().st_size > 10_000
