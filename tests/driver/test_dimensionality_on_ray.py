"""Representation dimensionality on real Ray, against planted ground truth
(objectives/planted_dimensionality.py):

- a bottleneck study (sdk.report, a fixed probe): the one-unit bottleneck is flagged ``low`` and
  the wide ones are not; narrower bottlenecks learn worse, so early dimensionality predicts the
  result and the report says so;
- a Ray-native study (``ray.tune.report``, the training batch) whose driver is killed mid-study
  and resumed from the command line: every trial keeps its measurements, the networks whose
  ReLUs are killed at step 3 are flagged ``fell`` at step 3 while their training loss still
  falls, and a metric drawn from the seed alone is "not shown" to be predicted.

The planted metric of the second study is a fixed draw per trial seed: a null sample, so the
verdict is the same on every run.
"""

from __future__ import annotations

import csv
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from searchsvc import usecases
from searchsvc.core import TrialState
from searchsvc.driver import RunOptions
from searchsvc.store import open_store
from tests.killed import kill_and_resume

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

BOTTLENECK = """
study: bottleneck
objective: objectives.planted_dimensionality:bottleneck
metric: val_error
mode: min
searcher: grid
budget: {max_concurrent: 1, max_steps: 6}  # one worker, importing torch once, runs all 8
noise: off
parameters:
  width: {role: scientific, values: [1, 2, 3, 4, 6, 8, 12, 16]}
"""

COLLAPSING = """
study: collapsing
objective: objectives.planted_dimensionality:collapsing
metric: score
mode: max
searcher: grid
budget: {max_concurrent: 2, max_steps: 6}
noise: off
dimensionality: {every: auto}
parameters:
  width: {role: scientific, values: [32, 64, 96]}
  kill_at: {role: nuisance, values: [0, 3]}
  sleep: {role: fixed, value: 0.3}
"""


@pytest.fixture(scope="module")
def bottleneck(tmp_path_factory: pytest.TempPathFactory, ray_local) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("bottleneck")
    (folder / "study.yaml").write_text(textwrap.dedent(BOTTLENECK))
    store = open_store(f"sqlite:///{folder / 'db.sqlite'}")
    options = RunOptions(results_root=folder / "results", live_progress=False)
    usecases.run(usecases.validate(folder / "study.yaml"), store, options, preflight=False)
    results = folder / "results" / "bottleneck"
    with (results / "trials.csv").open() as f:
        rows = list(csv.DictReader(f))
    return {"report": json.loads((results / "report.json").read_text()), "csv": rows,
            "html": (results / "report.html").read_text(),
            "trials": store.get_trials("bottleneck", measurements=True)}


@pytest.fixture(scope="module")
def collapsing(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Run from the command line, killed (driver and Ray) once two trials have completed and
    another has reported, then resumed to the end."""
    folder = tmp_path_factory.mktemp("collapsing")
    (folder / "study.yaml").write_text(textwrap.dedent(COLLAPSING))
    store, output = kill_and_resume(folder, "collapsing", start_timeout_s=240,
                                    resume_timeout_s=400)
    study = store.get_study("collapsing")
    results = Path(study.results_dir or "")
    return {"report": json.loads((results / "report.json").read_text()), "output": output,
            "trials": store.get_trials("collapsing", measurements=True)}


STOPPING = """
study: stopping
objective: objectives.planted_dimensionality:collapsing
metric: score
mode: max
searcher: asha
searcher_options: {grace_period: 4, reduction_factor: 2}
budget: {trials: 4, max_concurrent: 1, max_steps: 6}  # one worker, importing torch once
noise: off
dimensionality: {stop_collapsed: true}
parameters:
  kill_at: {role: scientific, values: [0, 3]}
  width: {role: fixed, value: 64}
"""


def test_stop_collapsed_stops_a_trial_once_a_layer_collapses(tmp_path: Path, ray_local) -> None:
    (tmp_path / "study.yaml").write_text(textwrap.dedent(STOPPING))
    store = open_store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    options = RunOptions(results_root=tmp_path / "results", live_progress=False)
    usecases.run(usecases.validate(tmp_path / "study.yaml"), store, options, preflight=False)
    trials = {t.number: t for t in store.get_trials("stopping")}
    collapsed = {e.number: e for e in store.get_events("stopping")
                 if e.data.get("reason") == "collapsed"}
    killed = {n for n, t in trials.items() if t.config["kill_at"] == 3}
    assert set(collapsed) == killed and len(killed) == 2
    for number in killed:
        event, trial = collapsed[number], trials[number]
        assert event.step == 3 and event.data["layer"] in {"fc2", "head"}
        assert event.data["participation_ratio"] < 2 and event.data["rule"] == "low"
        assert trial.state == "pruned" and trial.last_step == 3
        assert "collapsed (low: participation ratio" in (trial.error or "")
    report = json.loads((tmp_path / "results" / "stopping" / "report.json").read_text())
    assert not {n for r in report["rungs"] for n in r["stopped"]} & killed


def layer_flags(report: dict[str, Any], reason: str) -> set[tuple[int, str]]:
    return {(c["number"], c["layer"]) for c in report["dimensionality"]["collapsed"]
            if c["reason"] == reason}


def test_the_report_section_has_exactly_the_documented_keys(bottleneck) -> None:
    section = bottleneck["report"]["dimensionality"]
    assert set(section) == {"measure", "trials", "collapsed", "early_signal", "transitions"}
    assert section["measure"] == "participation_ratio"
    assert len(section["trials"]) == 8
    for trial in section["trials"]:
        assert trial["source"] == "probe"
        assert set(trial["layers"]) == {"enc", "hidden", "head"}
        for summary in trial["layers"].values():
            assert set(summary) == {"early", "last", "min", "max"}
            assert summary["min"] <= summary["early"] <= summary["max"]


def test_a_one_unit_bottleneck_is_flagged_low_and_wide_ones_are_not(bottleneck) -> None:
    width = {t.number: t.config["width"] for t in bottleneck["trials"]}
    low = layer_flags(bottleneck["report"], "low")
    one = next(n for n, w in width.items() if w == 1)
    assert {(one, "enc"), (one, "hidden")} <= low
    wide = {n for n, w in width.items() if w >= 6}
    assert not {n for n, _ in low} & wide, (sorted(low), bottleneck["report"]["dimensionality"])
    last = {t["number"]: t["layers"]["enc"]["last"]
            for t in bottleneck["report"]["dimensionality"]["trials"]}
    assert last[one] == pytest.approx(1.0, abs=1e-6)
    assert all(last[n] > 2 for n in wide)


def test_early_dimensionality_predicts_the_planted_result(bottleneck) -> None:
    signal_ = bottleneck["report"]["dimensionality"]["early_signal"]
    assert signal_["n"] == 8 and signal_["predicts"] is True
    assert signal_["ci"][1] < 0  # wider early representations, lower error
    assert {p["layer"] for p in signal_["per_layer"]} == {"enc", "hidden", "head"}
    finding = next(f for f in bottleneck["report"]["findings"] if "predicts the result" in f)
    assert f"'{signal_['layer']}'" in finding


def test_trials_csv_and_the_html_show_each_trials_dimensionality(bottleneck) -> None:
    report = bottleneck["report"]["dimensionality"]
    by_number = {t["number"]: t for t in report["trials"]}
    for row in bottleneck["csv"]:
        layers = by_number[int(row["number"])]["layers"]
        assert float(row["dim_early.enc"]) == pytest.approx(layers["enc"]["early"])
        assert float(row["dim_last.head"]) == pytest.approx(layers["head"]["last"])
    assert "Representation dimensionality" in bottleneck["html"]


def test_a_ray_native_study_killed_and_resumed_keeps_every_measurement(collapsing) -> None:
    trials = collapsing["trials"]
    assert len(trials) == 6 and all(t.state == TrialState.COMPLETED for t in trials)
    assert any(t.attempts == 2 for t in trials)  # the one the kill interrupted
    for t in trials:
        latest = [m for m in t.measurements if m.attempt == t.attempts]
        measured = [m for m in latest if m.dimensionality]
        assert measured and measured[0].step == 1, t.number  # the first pass is always measured
        assert all(m.dimensionality["source"] == "train" for m in measured)
        assert all(set(m.dimensionality["layers"]) == {"fc1", "fc2", "head"} for m in measured)
        assert all("layers" not in m.metrics for m in latest)
    report = collapsing["report"]["dimensionality"]
    assert {t["number"] for t in report["trials"]} == {t.number for t in trials}


def test_killed_relus_are_flagged_fell_at_their_step(collapsing) -> None:
    killed = {t.number for t in collapsing["trials"] if t.config["kill_at"] == 3}
    fell = [c for c in collapsing["report"]["dimensionality"]["collapsed"]
            if c["reason"] == "fell"]
    assert {(c["number"], c["layer"]) for c in fell if c["layer"] == "fc2"} == {
        (n, "fc2") for n in killed}
    assert all(c["step"] == 3 for c in fell if c["layer"] == "fc2")
    assert not {c["number"] for c in collapsing["report"]["dimensionality"]["collapsed"]} - killed


def test_a_metric_independent_of_the_network_is_not_shown_to_be_predicted(collapsing) -> None:
    signal_ = collapsing["report"]["dimensionality"]["early_signal"]
    assert signal_["n"] == 6 and signal_["predicts"] is False
    assert any("not shown to predict here" in f for f in collapsing["report"]["findings"])
