"""End to end in a real browser: Debian's chromium driven by Playwright against `streamlit run app.py`.

Two reviewers (accounts an admin made, with the reviewer role) sign in one after the other, judge the same
six flagged items with two disagreements; an adjudicator who is neither of them signs in, the Agreement
page shows her the kappa a hand computation gives, and she adjudicates one disagreement.
A screenshot of the Review page is saved under test-artifacts/.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from objrel import review

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
BUTTON = {"tp": "True positive (T)", "fp": "False positive (F)", "uncertain": "Uncertain (U)"}

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian chromium is not installed (.ci/run installs it)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The accounts of the test: made on the server (as `objrel users add` does), never from the browser.
ACCOUNTS = {"alice": (review.REVIEWER,), "bob": (review.REVIEWER,), "carol": (review.ADJUDICATOR,)}


def passphrase(name: str) -> str:
    return f"{name}-long-passphrase"


@pytest.fixture
def server(flagged_store, tmp_path):
    store, run_id = flagged_store
    for name, roles in ACCOUNTS.items():
        review.create_reviewer(store, name, passphrase(name), roles=roles)
    port = free_port()
    env = {**os.environ, "OBJREL_STORE": store.url, "OBJREL_LOG_DIR": str(tmp_path / "logs"),
           "PYTHONPATH": str(ROOT)}
    log = open(tmp_path / "streamlit.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2).status == 200:
                break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("streamlit did not start: " + (tmp_path / "streamlit.log").read_text())
    yield base, store, run_id
    proc.terminate()
    proc.wait(timeout=20)


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


def judge_all(page, calls: dict) -> None:
    for n in range(len(calls)):
        page.locator("h3", has_text="(sample ").first.wait_for(timeout=60_000)
        sid = current_sample(page)
        page.get_by_role("button", name=BUTTON[calls[sid]]).click()
        page.get_by_text(f"you judged {n + 1}").wait_for(timeout=60_000)


def test_two_reviewers_kappa_and_adjudication(server):
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
        page.get_by_role("button", name="Sign out").click()

        sign_in(page, base, "bob")
        # blind: bob's first item shows no call of alice's
        page.get_by_text("Your call: not yet").wait_for()
        judge_all(page, BOB)

        stored = {(j.reviewer, j.sample_id): j.verdict for j in review.judgments(store, run_id, "MR-2")}
        assert stored == {**{("alice", k): v for k, v in ALICE.items()}, **{("bob", k): v for k, v in BOB.items()}}

        page.get_by_role("button", name="Sign out").click()

        # the adjudicator: neither alice nor bob (a party never decides its own disagreement)
        sign_in(page, base, "carol")
        # through the app's navigation, so the session (and carol's sign-in) carries over
        page.locator('a[href$="/agreement"]').first.click()
        kappa = page.locator('[data-testid="stMetric"]', has_text="Cohen's kappa")
        kappa.wait_for()
        assert EXPECTED_KAPPA in kappa.inner_text()
        page.get_by_text("fair").first.wait_for()  # Landis-Koch band of 0.25

        # adjudicate the first disagreement as a true positive
        form = page.locator('[data-testid="stForm"]').first
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
        browser.close()
    assert (ARTIFACTS / "review-page.png").stat().st_size > 10_000
