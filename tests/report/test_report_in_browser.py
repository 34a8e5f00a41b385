"""report.html in a real headless Chromium (Debian's, driven by Playwright): it loads with no
console errors, every section and every plot renders, and a screenshot is kept for people to
look at (tests/report/screenshots/ when SEARCHSVC_SCREENSHOTS is set, else the temp dir)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from searchsvc.core import EventKind
from searchsvc.reporting import write_report
from searchsvc.store import SqlStore
from searchsvc.testing.planted import planted_study
from tests.analysis.test_planted_truth import divergence_curve
from tests.browser import launch, screenshot_dir, watched_page

pytestmark = pytest.mark.slow

SPEC = """
    study: browser
    description: Does a wider model help, with the learning rate tuned for each width?
    objective: objectives.synthetic:playbook
    metric: val_loss
    mode: min
    searcher: quasi_random
    seed: 1
    budget: {trials: 36, max_steps: 12}
    parameters:
      width: {role: scientific, values: [64, 256]}
      learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0, scale: log}
      weight_decay: {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
"""


def test_report_html_renders_every_plot_without_console_errors(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    study, _, _ = planted_study(SPEC, divergence_curve, store=store)
    store.record_event(study.id, 4, EventKind.STOPPED_EARLY, step=4, data={"rung": 4})
    store.record_event(study.id, 2, EventKind.EXPLOIT, step=6, data={
        "parent": 7, "parent_step": 6, "old_config": {"learning_rate": 0.01},
        "new_config": {"learning_rate": 0.012}})
    files = write_report(store, "browser", tmp_path / "report")
    html = files.files["html"]
    # Self-contained: no script or stylesheet is loaded from anywhere.
    assert not re.search(r"<(script|link)[^>]*(src|href)=", html.read_text())

    shots = screenshot_dir(tmp_path)
    with sync_playwright() as p:
        browser = launch(p)
        errors: list[str] = []
        page = watched_page(browser, errors)
        page.route("http*://**", lambda route: route.abort())  # offline: any fetch fails
        page.goto(html.as_uri())
        page.wait_for_load_state("networkidle")
        for section in ("findings", "best", "boundaries", "isolation", "axes", "curves",
                        "importance", "scheduler", "next"):
            assert page.locator(f"section#{section}").count() == 1, section
        figures = page.locator("div.plotly-graph-div")
        expected = {"fig-axis-learning_rate", "fig-axis-weight_decay", "fig-isolation-width",
                    "fig-curves", "fig-importance", "fig-parallel", "fig-rungs",
                    "fig-lineage"}
        ids = {figures.nth(i).get_attribute("id") for i in range(figures.count())}
        assert expected <= ids, expected - ids
        for fig_id in ids:  # each plot drew its SVG with data in it
            plot = page.locator(f"#{fig_id}")
            assert plot.locator(".main-svg").count() >= 1, fig_id
        assert page.locator("#fig-axis-learning_rate .scatterlayer .point").count() > 20
        assert "divergence_edge" in page.locator("section#boundaries").inner_text()
        page.screenshot(path=str(shots / "report_top.png"))
        page.locator("section#axes").screenshot(path=str(shots / "report_axes.png"))
        page.screenshot(path=str(shots / "report_full.png"), full_page=True)
        browser.close()
    assert errors == []
    assert (shots / "report_full.png").stat().st_size > 50_000
