"""A multi-objective, constrained study end to end on Ray: every trial's final metrics are
stored, trials.csv holds every metric, report.json's front is exactly the undominated feasible
trials of trials.csv (no violated trial ever counts as feasible), and the report's Pareto plot
renders in headless Chromium without console errors."""

from __future__ import annotations

import csv
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from searchsvc.cli import run_summary
from searchsvc.driver import RunOptions, RunOutcome, create_study, run_study
from searchsvc.reporting import write_report
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore
from searchsvc.usecases import validate as validate_file
from tests.browser import launch, screenshot_dir, watched_page

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MEMORY_MAX = 2500.0


def test_a_constrained_two_objective_study_reports_its_front(ray_local, tmp_path: Path
                                                              ) -> None:
    from playwright.sync_api import sync_playwright

    shutil.copytree(ROOT / "objectives", tmp_path / "objectives")
    path = tmp_path / "zdt.yaml"
    path.write_text(textwrap.dedent(f"""
        study: zdt
        objective: objectives.synthetic:zdt1
        metrics:
          - {{name: f1, mode: min}}
          - {{name: f2, mode: min}}
        constraints:
          - {{metric: memory_mb, max: {MEMORY_MAX}}}
        searcher: bayesian
        searcher_options: {{sampler: tpe, warmup: 4}}
        seed: 3
        budget: {{trials: 14, max_concurrent: 2}}
        parameters:
          x0: {{low: 0.0, high: 1.0}}
          x1: {{low: 0.0, high: 1.0}}
          x2: {{low: 0.0, high: 1.0}}
        """))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    spec = validate_file(path)
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)

    trials = store.get_trials("zdt")
    assert len(trials) == 14 and all({"f1", "f2", "memory_mb"} <= set(t.final_metrics)
                                     for t in trials)
    # Over the memory bound: infeasible, naming it; within it: completed.
    for t in trials:
        over = t.final_metrics["memory_mb"] > MEMORY_MAX
        assert t.state == ("infeasible" if over else "completed"), (t.number, t.state)
        assert (f"outside the constraint memory_mb <= {MEMORY_MAX:g}" in (t.error or "")) == over

    files = write_report(store, "zdt", tmp_path / "report")
    with files.files["csv"].open() as handle:
        rows = list(csv.DictReader(handle))
    assert {"final_f1", "final_f2", "final_memory_mb"} <= set(rows[0])
    values = {int(r["number"]): (float(r["final_f1"]), float(r["final_f2"]),
                                 float(r["final_memory_mb"])) for r in rows}
    feasible = {n: v for n, v in values.items() if v[2] <= MEMORY_MAX}
    front = {n for n, (a, b, _) in feasible.items()
             if not any(c <= a and d <= b and (c < a or d < b)
                        for m, (c, d, _) in feasible.items() if m != n)}

    report = json.loads(files.files["json"].read_text())
    pareto = report["pareto_front"]
    assert {t["number"] for t in pareto["trials"]} == front
    for p in pareto["points"]:
        assert p["feasible"] == (values[p["number"]][2] <= MEMORY_MAX)
        assert p["values"] == pytest.approx(list(values[p["number"]][:2]))
    assert set(files.pareto_front or ()) == front
    # What `run` prints: the front the report found, not a best single value.
    [_, said] = run_summary(RunOutcome(store.get_study("zdt"), 1, 1, "all trials finished"),
                            list(files.pareto_front or ()))
    assert said.startswith(f"Pareto front: {len(front)} trials (")
    assert set(map(int, said[said.index("(") + 1:-1].split(", "))) == front
    [memory] = report["constraints"]
    assert (memory["satisfied"], memory["violated"]) == (
        len(feasible), len(values) - len(feasible))
    assert [o["name"] for o in report["objectives"]] == ["f1", "f2"]
    assert all("boundary_checks" in o for o in report["objectives"])
    hv = [h["hypervolume"] for h in pareto["hypervolume"]]
    assert hv == sorted(hv) and hv[-1] > 0

    shots = screenshot_dir(tmp_path)
    with sync_playwright() as p:
        browser = launch(p)
        errors: list[str] = []
        page = watched_page(browser, errors)
        page.route("http*://**", lambda route: route.abort())
        page.goto(files.files["html"].as_uri())
        page.wait_for_load_state("networkidle")
        section = page.locator("section#pareto")
        assert section.count() == 1
        assert section.locator("#fig-pareto .main-svg").count() >= 1
        assert section.locator("#fig-hypervolume .main-svg").count() >= 1
        # Every trial is a point (feasible ones per arm, those over the bound as crosses),
        # plus the front's own markers.
        assert section.locator("#fig-pareto .scatterlayer .point").count() >= 14 + len(front)
        assert f"memory_mb <= {MEMORY_MAX:g}" in section.inner_text()
        section.screenshot(path=str(shots / "report_pareto.png"))
        browser.close()
    assert errors == []
