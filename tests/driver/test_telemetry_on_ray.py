"""Per-trial telemetry on a real Ray study (CPU only): every step of every trial carries the
worker's telemetry beside (not inside) its metrics, the absent GPU is stated as absent (never
zeros), a planted slow data loader is diagnosed input-bound and a fast one is not, and a planted
torch out-of-memory error makes its trial infeasible with the culprit named."""

from __future__ import annotations

import csv
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from searchsvc.analysis.telemetry import INPUT_BOUND_FRACTION
from searchsvc.core import TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.reporting import write_report
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore
from searchsvc.usecases import validate as validate_file
from tests.driver.studies import run_file

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
GPU_FIELDS = ("gpu_util_mean", "gpu_mem_peak_mb", "gpu_mem_total_mb", "gpu_name")

STUDY = """
    study: telemetry
    objective: telemetry_objectives:train
    metric: loss
    mode: min
    searcher: grid
    budget: {trials: 6, max_concurrent: 1, max_steps: 3}
    noise: off
    parameters:
      loader: {role: scientific, values: [slow, fast]}
      batch_size: {role: nuisance, values: [16, 64, 1024]}
    """


def test_telemetry_of_every_step_and_its_diagnoses(ray_local, tmp_path: Path) -> None:
    shutil.copy(HERE / "telemetry_objectives.py", tmp_path / "telemetry_objectives.py")
    path = tmp_path / "telemetry.yaml"
    path.write_text(textwrap.dedent(STUDY))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    outcome = run_file(path, store)
    assert outcome.study.state == "completed"
    trials = store.get_trials("telemetry", measurements=True)
    assert len(trials) == 6
    oom = [t for t in trials if t.config["batch_size"] == 1024]
    ran = [t for t in trials if t.config["batch_size"] != 1024]
    assert all(t.state == TrialState.COMPLETED for t in ran)

    # Telemetry for every step of every trial that ran, kept out of the metrics.
    for t in ran:
        assert [m.step for m in t.measurements] == [1, 2, 3]
        for m in t.measurements:
            tel = m.telemetry
            assert tel["step_time_s"] > 0 and tel["rss_mb"] > 10
            assert isinstance(tel["cpu_percent"], float)
            assert tel["samples"] == 4 * t.config["batch_size"] and tel["samples_per_s"] > 0
            assert 0 <= tel["data_wait_fraction"] <= 1
            # No GPU here: stated as absent with the reason, not zero-filled.
            assert tel["gpu"] == "none assigned"
            assert not any(f in tel for f in GPU_FIELDS)
            assert "searchsvc_telemetry" not in m.metrics and "step_time_s" not in m.metrics
            assert set(m.metrics) == {"loss", "time_s"}
        waits = [m.telemetry["data_wait_fraction"] for m in t.measurements]
        if t.config["loader"] == "slow":  # 100 ms of loading per 5 ms of compute
            # Past the input-bound threshold at every step, on a loaded machine too: the time
            # a step waits for the driver to take its previous report is not the loop's.
            assert min(waits) > INPUT_BOUND_FRACTION, waits
        else:
            assert max(waits) < 0.3, waits

    # The planted out-of-memory: infeasible, not failed, with the culprit named.
    assert len(oom) == 2
    for t in oom:
        assert t.state == TrialState.INFEASIBLE, t.error
        assert t.error and t.error.startswith("out of memory")
        assert "batch_size=1024 (100% of its range)" in t.error
        assert "CUDA out of memory. Tried to allocate 2.00 GiB" in t.error

    report = write_report(store, "telemetry", tmp_path / "report")
    data = json.loads((report.folder / "report.json").read_text())
    telemetry = data["telemetry"]
    assert telemetry["gpu_per_trial"] == 0 and telemetry["gpu_hours"] == 0
    assert telemetry["trial_hours"] > 0
    by_kind = {d["kind"]: d for d in telemetry["diagnoses"]}
    slow = sorted(t.number for t in ran if t.config["loader"] == "slow")
    assert by_kind["input_bound"]["trials"] == slow  # fires for the slow loader only
    assert sorted(by_kind["out_of_memory"]["trials"]) == sorted(t.number for t in oom)
    assert "underused_gpu" not in by_kind  # nothing measured on a GPU
    summaries = {s["number"]: s for s in telemetry["trials"]}
    for t in ran:
        assert summaries[t.number]["gpu_absent"] == "gpu: none assigned"
        assert summaries[t.number]["gpu_util_mean"] is None
    assert any("Input-bound" in f for f in data["findings"])
    assert any("Out of memory" in f and "batch_size=1024" in f for f in data["findings"])
    with (report.folder / "trials.csv").open() as handle:
        rows = {int(r["number"]): r for r in csv.DictReader(handle)}
    for t in ran:
        assert float(rows[t.number]["step_time_mean_s"]) > 0
        assert rows[t.number]["gpu_util_mean"] == ""  # absent, not 0
        assert rows[t.number]["gpu_absent"] == "gpu: none assigned"
    assert "Telemetry" in (report.folder / "report.html").read_text()


RAY_DOCS_OBJECTIVE = '''
from ray import tune
from ray.tune import report as bound_at_import


def train(config):
    for step in range(3):
        loss = 1.0 / (step + 1) + config["x"]
        if config["style"] == "attribute":
            tune.report({"loss": loss})  # as Ray's documentation writes it
        else:
            bound_at_import({"loss": loss})
'''


def test_an_objective_calling_tune_report_gets_the_same_telemetry(ray_local,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "ray_docs_objective.py").write_text(RAY_DOCS_OBJECTIVE)
    path = tmp_path / "ray_docs.yaml"
    path.write_text(textwrap.dedent("""
        study: ray_docs
        objective: ray_docs_objective:train
        metric: loss
        mode: min
        searcher: grid
        budget: {max_concurrent: 1, max_steps: 3}
        noise: off
        parameters:
          style: {role: scientific, values: [attribute, bound]}
          x: {role: nuisance, values: [0.1, 0.2]}
        """))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    spec = validate_file(path)
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)
    trials = store.get_trials("ray_docs", measurements=True)
    assert len(trials) == 4 and all(t.state == TrialState.COMPLETED for t in trials)
    for t in trials:
        assert [m.step for m in t.measurements] == [1, 2, 3]
        for m in t.measurements:  # CPU, RSS and the absent GPU, as for sdk.report
            assert m.telemetry["rss_mb"] > 10 and isinstance(m.telemetry["cpu_percent"], float)
            assert m.telemetry["gpu"] == "none assigned" and "searchsvc_telemetry" not in m.metrics
