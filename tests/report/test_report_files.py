"""The report files of a planted study: report.json with the documented keys and the planted
findings, report.md, trials.csv, and a next_study.yaml that `searchsvc validate` accepts."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from searchsvc.core import EventKind
from searchsvc.reporting import write_report
from searchsvc.store import SqlStore
from searchsvc.testing.planted import planted_study
from searchsvc.usecases import validate as validate_file
from tests.analysis.test_planted_truth import depth_curve

SPEC = """
    study: depth
    objective: objectives.synthetic:playbook
    metric: val_loss
    mode: min
    searcher: quasi_random
    seed: 3
    budget: {trials: 40, max_steps: 10}
    parameters:
      depth: {role: scientific, values: [1, 3]}
      learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0e-2, scale: log}
"""


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("report")
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    study, _, _ = planted_study(SPEC, depth_curve, store=store)
    store.record_event(study.id, 5, EventKind.STOPPED_EARLY, step=3,
                       data={"rung": 3, "cutoff": 0.5, "value": 0.9})
    write_report(store, "depth", tmp_path / "report")
    return tmp_path / "report"


def test_report_json_has_the_documented_keys_and_the_planted_findings(report_dir: Path):
    data = json.loads((report_dir / "report.json").read_text())
    for key in ("study", "metric", "mode", "counts", "best_trials", "boundary_checks",
                "isolation", "curve_diagnostics", "importance", "findings", "next_study"):
        assert key in data, key
    assert set(data["counts"]) >= {"completed", "pruned", "failed", "infeasible"}
    assert data["counts"]["completed"] == 40
    best = data["best_trials"][0]
    assert {"trial_id", "value", "best_step", "config"} <= set(best)
    assert best["config"]["depth"] == 3
    # depth 1's best rate (10^-1.5) lies past the high edge 1e-2: flagged in that arm.
    [lr] = data["boundary_checks"]
    assert lr["parameter"] == "learning_rate" and lr["status"] == "near_high"
    assert lr["arm"] == "depth=1" and lr["suggested_high"] > 10 ** -1.5
    [iso] = data["isolation"]
    assert iso["verdict"] == "differs" and iso["best_value"] == 3
    assert {p["value"] for p in iso["points"]} == {1, 3}
    assert all({"trial_id", "issues"} <= set(c) for c in data["curve_diagnostics"])
    assert data["rungs"] == [{"step": 3, "reached": 40, "stopped": [5]}]
    assert data["findings"] and "learning_rate" in " ".join(data["findings"])


def test_next_study_file_validates_and_widens_the_crowded_range(report_dir: Path):
    path = report_dir / "next_study.yaml"
    spec = validate_file(path)
    assert spec.name == "depth-next"
    assert spec.parameters["learning_rate"].high > 10 ** -1.5  # type: ignore[union-attr]
    assert json.loads((report_dir / "report.json").read_text())["next_study"] == \
        path.read_text()


def test_markdown_and_csv_cover_every_trial_and_section(report_dir: Path):
    md = (report_dir / "report.md").read_text()
    for heading in ("## Findings", "## Best trials", "## Boundary checks", "## Isolation",
                    "## Training curves of the best trials", "## Suggested next study"):
        assert heading in md
    assert (report_dir / "plots" / "axis_learning_rate.png").stat().st_size > 1000
    with (report_dir / "trials.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(int(r["number"]) for r in rows) == list(range(40))
