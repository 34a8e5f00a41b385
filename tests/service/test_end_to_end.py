"""The service end to end on its production database: `searchsvc serve` on loopback against a
real PostgreSQL, a study submitted with the CLI, polled to completion with the CLI, its report
downloaded with the CLI, and the same study watched and read in the web UI in headless
Chromium (screenshots kept: tests/service/screenshots/ when SEARCHSVC_SCREENSHOTS is set, else
the test's temp dir)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from searchsvc.core import TrialState
from searchsvc.store import SqlStore
from searchsvc.testing.served import SPEC, Service, running_service
from tests.browser import launch, screenshot_dir, watched_page

pytestmark = pytest.mark.slow
TRIALS = 8


@pytest.fixture
def service(tmp_path: Path, postgres_url: str) -> Iterator[Service]:
    with running_service(tmp_path, storage=postgres_url) as s:
        yield s


def test_submit_poll_download_and_watch_in_the_browser_on_postgresql(
        service: Service, postgres_url: str, tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    assert service.url_db.startswith("postgresql")
    spec = tmp_path / "e2e.yaml"
    spec.write_text(SPEC.format(name="e2e", trials=TRIALS))
    env = {**os.environ, "SEARCHSVC_SERVER": f"http://127.0.0.1:{service.port}",
           "SEARCHSVC_TOKEN": service.token}

    def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "searchsvc.cli", *args], env=env,
                              capture_output=True, text=True, timeout=timeout, cwd=tmp_path)

    shots = screenshot_dir(tmp_path)
    with sync_playwright() as p:
        browser = launch(p)
        errors: list[str] = []
        page = watched_page(browser, errors, height=800)

        submitted = cli("submit", str(spec), "--no-preflight")
        assert submitted.returncode == 0 and "e2e: created" in submitted.stdout, submitted

        # Signed out, the UI asks for the token; signed in, it lists the study while it runs.
        page.goto(f"http://127.0.0.1:{service.port}/ui")
        assert "/ui/login" in page.url
        page.fill("#token", service.token)
        page.click("#sign-in")
        row = page.locator('tr[data-study="e2e"]')
        expect(row).to_be_visible()
        assert row.locator(".state").inner_text() in ("created", "running", "completed")
        page.screenshot(path=str(shots / "service-studies-live.png"), full_page=True)

        polled = cli("status", "e2e", "--wait", "--every", "1", timeout=300)
        assert polled.returncode == 0, polled
        assert f"e2e: completed · {TRIALS} completed of {TRIALS}" in polled.stdout

        # The list refreshes itself: the study turns completed without a reload.
        expect(row.locator(".state")).to_have_text("completed", timeout=20_000)
        expect(row.locator(".progress")).to_have_text(f"{TRIALS}/{TRIALS}")
        best = service.call("GET", "/studies/e2e")["best_value"]
        assert row.locator(".best").inner_text() == f"{best:.4g}"
        page.screenshot(path=str(shots / "service-studies.png"), full_page=True)

        row.locator("a").click()
        expect(page.locator("#study-state")).to_have_text("completed")
        expect(page.locator("#trials tbody tr")).to_have_count(TRIALS)
        expect(page.locator("#trials tr.best")).to_have_count(1)
        expect(page.locator("#progress-plot .main-svg").first).to_be_visible()
        page.screenshot(path=str(shots / "service-study.png"), full_page=True)

        page.click("#report-link")
        # The service writes the report when asked: seconds on a busy machine.
        expect(page.locator("section#isolation")).to_be_visible(timeout=60_000)
        page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length > 0")
        page.screenshot(path=str(shots / "service-report.png"))
        browser.close()
    assert errors == []

    downloaded = cli("report", "e2e", "--out", str(tmp_path / "report"))
    assert downloaded.returncode == 0, downloaded.stderr
    assert '<section id="isolation">' in (tmp_path / "report" / "report.html").read_text()
    assert (tmp_path / "report" / "trials.csv").read_text().count("\n") == TRIALS + 1

    # Every trial is in PostgreSQL, every step of it once.
    trials = SqlStore(postgres_url).get_trials("e2e", measurements=True)
    assert sorted(t.number for t in trials) == list(range(TRIALS))
    assert all(t.state == TrialState.COMPLETED for t in trials)
    assert all([m.step for m in t.measurements] == list(range(1, 7)) for t in trials)
