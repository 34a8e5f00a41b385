"""A report with seed repeats and a parent study, in headless Chromium: the seed-noise and
comparison sections are there, the isolation plot draws 95% error bars, the best trials'
curves carry their repeats' noise band, and nothing logs an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.reporting import write_report
from searchsvc.store import SqlStore, Store
from searchsvc.testing.planted import noise_text, planted_study, seed_noise
from tests.browser import launch, screenshot_dir, watched_page

pytestmark = pytest.mark.slow


def store_simulated(store: Store, name: str, seed: int, extra: str = "",
                    owner: str | None = None) -> None:
    """A finished planted-noise study (3-step curves ending at each trial's value)."""
    text = (noise_text(2, 3).replace("study: planted-noise", f"study: {name}")
            + f"seed: {seed}\n" + extra)
    planted_study(text, seed_noise(3.0), store=store, steps=3, repeats=True, owner=owner,
                  file=f"{name}.yaml")


def test_noise_comparison_error_bars_and_bands_render(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store_simulated(store, "first", seed=1)
    store_simulated(store, "second", seed=2, extra="parent: first\n")
    files = write_report(store, "second", tmp_path / "report")
    shots = screenshot_dir(tmp_path)
    with sync_playwright() as p:
        browser = launch(p)
        errors: list[str] = []
        page = watched_page(browser, errors)
        page.route("http*://**", lambda route: route.abort())
        page.goto(files.files["html"].as_uri())
        page.wait_for_load_state("networkidle")
        comparison = page.locator("section#comparison").inner_text()
        assert "first" in comparison and "second" in comparison
        assert any(v in comparison for v in ("improved", "worse", "within_noise"))
        noise = page.locator("section#noise").inner_text()
        assert "Seed noise sigma" in noise
        assert page.locator("section#noise tr").count() == 1 + 4  # 2 arms x top 2 configs
        # Error bars: one per value of the scientific parameter, drawn as SVG paths.
        assert page.locator("#fig-isolation-variant g.errorbar").count() == 2
        assert "mean over seed repeats" in page.locator("#fig-isolation-variant").inner_text()
        assert "seed repeats, mean ± sd" in page.locator("#fig-curves").inner_text()
        page.locator("section#noise").screenshot(path=str(shots / "report_noise.png"))
        page.locator("section#isolation").screenshot(path=str(shots / "report_isolation.png"))
        browser.close()
    assert errors == []


def test_a_parent_missing_from_the_store_gives_no_comparison_section(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store_simulated(store, "alone", seed=3, extra="parent: missing-study\n")
    trials = store.get_trials("alone")
    assert any(t.repeat_of is not None for t in trials)
    html = write_report(store, "alone", tmp_path / "r").files["html"].read_text()
    assert 'id="noise"' in html and 'id="comparison"' not in html  # parent not in this store


def test_another_users_study_named_as_parent_is_not_compared(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    store_simulated(store, "adas", seed=1, owner="ada")
    store_simulated(store, "bobs", seed=2, extra="parent: adas\n", owner="bob")
    store_simulated(store, "adas-next", seed=3, extra="parent: adas\n", owner="ada")
    assert 'id="comparison"' not in write_report(store, "bobs", tmp_path / "b").files[
        "html"].read_text()
    assert 'id="comparison"' in write_report(store, "adas-next", tmp_path / "a").files[
        "html"].read_text()
