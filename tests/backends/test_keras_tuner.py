"""backend: keras_tuner: a KerasTuner hypermodel written as KerasTuner's docs write one runs as
a study on Ray Tune (quasi-random and ASHA), lands in the store with every epoch, gets the same
report as a PyTorch study, and values outside the hypermodel's space fail only their trial."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from searchsvc.core import TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.reporting import write_report
from searchsvc.searchers import create_searcher
from searchsvc.spec import parse_spec
from searchsvc.store import SqlStore, Store
from searchsvc.usecases import validate_text

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SPACE = ROOT / "spaces" / "keras_digits.yaml"
SECTIONS = ("findings", "best", "boundaries", "isolation", "axes", "curves", "next")


def run(text: str, store: Store) -> None:
    spec = validate_text(text, file=str(SPACE))
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)


def test_a_keras_tuner_hypermodel_runs_as_a_quasi_random_study_with_the_full_report(
        ray_local, tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    # The study file as it is, in 4 trials (2 per activation) on one TensorFlow worker: the
    # report's sections and the verdict's method need each arm's best config repeated, not a
    # long search.
    text = SPACE.read_text()
    budget = "budget: {trials: 8, max_concurrent: 2, max_steps: 4}"
    assert budget in text
    run(text.replace(budget, "budget: {trials: 4, max_concurrent: 1, max_steps: 4}"), store)
    trials = store.get_trials("keras_digits", measurements=True)
    # search, then 2 arms x top 1 x 2 seed repeats
    assert [t.state for t in trials] == [TrialState.COMPLETED] * (4 + 4)
    assert [t.repeat_of is not None for t in trials] == [False] * 4 + [True] * 4
    for t in trials:
        assert [m.step for m in t.measurements] == [1, 2, 3, 4]  # every epoch reported
        assert {"accuracy", "loss", "val_accuracy", "val_loss"} <= set(t.measurements[0].metrics)
        assert sorted(k for k in t.config if k.startswith("units_")) == [
            f"units_{i}" for i in range(t.config["num_layers"])]
    assert max(t.best_value for t in trials) > 0.9  # it learns digits
    files = write_report(store, "keras_digits", tmp_path / "report")
    html = files.files["html"].read_text()
    for section in SECTIONS:
        assert f'<section id="{section}">' in html
    data = json.loads(files.files["json"].read_text())
    assert [i["parameter"] for i in data["isolation"]] == ["activation"]
    assert {p["value"] for p in data["isolation"][0]["points"]} == {"relu", "tanh"}
    # Judged on the seed repeats (each value's best config, 2 seeds), not the proxy.
    assert data["isolation"][0]["method"] == "tukey_kramer_pooled_seed_noise" or data[
        "isolation"][0]["method"] == "welch_bonferroni_per_arm_noise"
    assert all(p["repeats"] == 2 for p in data["isolation"][0]["points"])


def test_asha_stops_keras_trials_between_epochs(ray_local, tmp_path: Path) -> None:
    text = SPACE.read_text().replace("searcher: quasi_random", "searcher: asha\nsearcher_options:"
                                     " {grace_period: 1, reduction_factor: 2}")
    text = text.replace("study: keras_digits", "study: keras_asha")
    # Stopping is the point here, not the verdict: no seed repeats after the search. One
    # trial at a time: each rung decision is the same in every run, on one TensorFlow worker.
    text = text.replace("noise: {top_k: 1, seeds: 2}", "noise: off").replace(
        "max_concurrent: 2", "max_concurrent: 1")
    assert "noise: off" in text and "max_concurrent: 1" in text
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    run(text, store)
    trials = store.get_trials("keras_asha", measurements=True)
    assert {t.state for t in trials} <= {TrialState.COMPLETED, TrialState.PRUNED}
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    assert pruned and all(t.last_step < 4 for t in pruned)
    assert all(len(t.measurements) == t.last_step for t in trials)


GRID = """
study: {name}
objective: objectives.keras_digits:build
backend: keras_tuner
backend_options: {{data: "objectives.keras_digits:load_data", batch_size: 64}}
metric: val_accuracy
mode: max
searcher: grid
budget: {{max_concurrent: 1, max_steps: 1}}  # one worker imports TensorFlow once
parameters:
  num_layers: {{values: [1]}}
  units_0: {{values: [32]}}
  activation: {{values: [relu]}}
  dropout: {{value: false}}
{extra}"""


def test_values_outside_the_hypermodels_space_fail_their_trial_with_the_parameter_named(
        ray_local, tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    # the hypermodel declares lr in [1e-4, 0.1]
    run(GRID.format(name="keras_bad", extra="  lr: {values: [0.01, 0.5]}\n"), store)
    assert store.get_study("keras_bad").state == "completed"
    ok, bad = sorted(store.get_trials("keras_bad"), key=lambda t: t.config["lr"])
    assert ok.state == TrialState.COMPLETED
    assert bad.state == TrialState.FAILED
    assert "hyperparameter 'lr' = 0.5 is outside the hypermodel's range [0.0001, 0.1]" in (
        bad.error)

    run(GRID.format(name="keras_unknown", extra="  lr: {values: [0.01]}\n"
                    "  momentum: {value: 0.9}\n"), store)
    [unknown] = store.get_trials("keras_unknown")
    assert unknown.state == TrialState.FAILED
    assert "hyperparameter 'momentum' = 0.9: the hypermodel declares no such" in unknown.error


def test_a_study_that_never_uses_keras_does_not_import_tensorflow(tmp_path: Path) -> None:
    # The quickstart, shortened: every phase a run goes through (preflight, search, seed
    # repeats, report) in a few trials, on one worker.
    study = tmp_path / "quickstart.yaml"
    text = (ROOT / "spaces" / "quickstart.yaml").read_text()
    budget = "budget: {trials: 16, max_concurrent: 2, max_steps: 8}"
    assert budget in text
    study.write_text(text.replace(budget, "budget: {trials: 4, max_concurrent: 1, max_steps: 2}\n"
                                          "noise: {top_k: 1, seeds: 2}"))
    script = f"""
import sys
from searchsvc.cli import main
code = main(["run", {str(study)!r}, "--storage",
             "sqlite:///{tmp_path / 'db.sqlite'}", "--num-cpus", "2"])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras",
                                                               "keras_tuner", "autokeras"))
print("EXIT", code, "LOADED", loaded)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env={**__import__("os").environ,
                                                      "SEARCHSVC_HOME": str(tmp_path)})
    assert "EXIT 0 LOADED []" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


def test_spaces_infer_writes_a_valid_starter_study_and_says_what_it_cannot_see(
        tmp_path: Path) -> None:
    out = tmp_path / "starter.yaml"
    done = subprocess.run([sys.executable, "-m", "searchsvc.cli", "spaces", "infer",
                           "objectives.keras_digits:build", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    spec = parse_spec(text, file=str(out))
    # num_layers defaults to 1 on the discovery path: units_1 and units_2 are not seen
    assert set(spec.parameters) == {"num_layers", "units_0", "activation", "dropout", "lr"}
    assert spec.parameters["lr"].scale == "log" and spec.parameters["units_0"].step == 16
    assert re.search(r"created under other values \(a loop", text)
