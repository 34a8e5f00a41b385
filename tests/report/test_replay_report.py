"""The early-stopping replay in the report of a study with full curves: report.json, report.md
and report.html show the same replay, and next_study.yaml adopts what it recommends."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from searchsvc.analysis import analyze
from searchsvc.analysis.replay import study_replay
from searchsvc.report.writer import write_files
from searchsvc.spec import parse_spec
from searchsvc.testing.planted import Rows, planted_study

SPEC = """
study: replayed
objective: objectives.synthetic:playbook
metric: loss
mode: min
searcher: quasi_random
budget: {trials: 12, max_steps: 9, max_concurrent: 2}
parameters:
  learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0, scale: log}
  dropout: {role: nuisance, low: 0.0, high: 0.5}
"""


def never_crossing(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
    """Curves whose order never changes: the first step ranks the trials as the last does."""
    level = abs(math.log10(config["learning_rate"]) + 2) + config["dropout"]
    return [{"loss": level + 1.0 / s} for s in range(1, steps + 1)]


def test_a_full_curve_studys_report_holds_the_replay_and_its_next_study_adopts_it(
        tmp_path: Path) -> None:
    study, spec, trials = planted_study(SPEC, never_crossing)
    analysis = analyze(study, spec, trials)
    replay = analysis.replay
    assert replay is not None and replay.concurrency == 2 and replay.trials == 12
    assert replay == study_replay(spec, trials)  # one rule: the report shows the replay's
    best = replay.recommended
    assert best is not None and best.keeps_best and best.rank_correlation == 1.0
    files = write_files(tmp_path, study, spec, trials, analysis)

    data = json.loads(files.files["json"].read_text())["replay"]
    assert data["recommended"] == best.rule.label
    assert [s["rule"] for s in data["settings"]] == [s.rule.label for s in replay.settings]
    assert data["settings"][replay.settings.index(best)]["step_saving"] == best.step_saving

    md = files.files["md"].read_text()
    assert "## Early stopping, replayed" in md and f"| {best.rule.label} |" in md
    assert "![early stopping replayed](plots/replay.png)" in md
    assert (tmp_path / "plots" / "replay.png").stat().st_size > 1000
    html = files.files["html"].read_text()
    assert 'id="replay"' in html and best.rule.label in html

    suggested = files.files["next_study"].read_text()
    parse_spec(suggested)  # a valid study file
    data = yaml.safe_load(suggested)
    assert data["searcher"] == "quasi_random"  # the block runs beside the study's searcher
    assert data["early_stopping"] == best.rule.as_block()
    assert parse_spec(suggested).early_stopping == best.rule
    assert "keeps the study's best within noise (sd " in suggested
    assert f"saves {best.step_saving:.0%} of the steps" in suggested


def test_a_study_that_is_unsafe_to_stop_early_says_so_in_its_next_study() -> None:
    def steady(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
        return [{"loss": 1.0 + config["dropout"]} for _ in range(steps)]

    def late_bloomer(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
        """Worst of all until its last step, then the best."""
        return [{"loss": 5.0 + config["dropout"]} for _ in range(steps - 1)] + [{"loss": 0.1}]

    study, spec, trials = planted_study(SPEC.replace("max_concurrent: 2", "max_concurrent: 1"),
                                        steady, overrides=dict.fromkeys((6, 8, 10), late_bloomer))
    analysis = analyze(study, spec, trials)
    assert analysis.replay is not None and analysis.replay.recommended is None
    assert "early stopping is unsafe for this objective" in analysis.next_study.text
    assert yaml.safe_load(analysis.next_study.text)["searcher"] == "quasi_random"
    assert any("Early stopping replayed" in f for f in analysis.findings)
