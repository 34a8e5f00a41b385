"""A W&B sweep file as a study file (searchsvc/importing.py): what maps, to what, and every key
that does not map listed; the study file it writes validates."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from searchsvc.cli import main
from searchsvc.importing import sweep_study

# The sweep of W&B's "Define a sweep configuration" page.
DOCS_SWEEP = {
    "program": "train.py", "name": "sweepdemo", "method": "bayes",
    "metric": {"goal": "minimize", "name": "validation_loss"},
    "parameters": {"learning_rate": {"min": 0.0001, "max": 0.1},
                   "batch_size": {"values": [16, 32, 64]},
                   "epochs": {"values": [5, 10, 15]},
                   "optimizer": {"values": ["adam", "sgd"]}}}


def test_the_docs_sweep_becomes_a_bayesian_study_of_nuisance_parameters() -> None:
    found = sweep_study(DOCS_SWEEP, "sweep")
    assert found.study == {
        "study": "sweepdemo",
        "objective": {"command": "python train.py", "metrics": "wandb"},
        "metric": "validation_loss", "mode": "min",
        "searcher": "bayesian", "searcher_options": {"sampler": "gp"},
        "noise": "off", "budget": {"trials": 20},
        "parameters": {
            "learning_rate": {"role": "nuisance", "low": 0.0001, "high": 0.1},
            "batch_size": {"role": "nuisance", "values": [16, 32, 64]},
            "epochs": {"role": "nuisance", "values": [5, 10, 15]},
            "optimizer": {"role": "nuisance", "values": ["adam", "sgd"]}}}
    assert found.unmapped == ["run_cap: none given; budget.trials set to 20 (a sweep without "
                              "it runs until stopped)"]


def test_distributions_commands_and_hyperband_map_and_the_rest_is_listed() -> None:
    found = sweep_study({
        "program": "app.py", "method": "random", "run_cap": 8, "project": "p", "colour": 1,
        "metric": {"name": "acc", "goal": "maximize", "target": 0.99},
        "command": ["${env}", "${interpreter}", "${program}", "--fast", "${args_no_hyphens}",
                    "${args_json}"],
        "early_terminate": {"type": "hyperband", "min_iter": 3, "max_iter": 27, "eta": 3},
        "parameters": {
            "lr": {"distribution": "log_uniform", "min": -9.2, "max": -2.3},
            "layers": {"distribution": "int_uniform", "min": 1, "max": 4},
            "wd": {"distribution": "log_uniform_values", "min": 1e-6, "max": 1e-2},
            "noise": {"distribution": "normal", "mu": 0, "sigma": 1},
            "model": {"parameters": {"width": {"values": [1, 2]}}},
            "seed": {"value": 7}}}, "x")
    study = found.study
    assert study["objective"] == {"command": "python app.py --fast", "metrics": "wandb",
                                  "args": "hydra"}
    assert (study["mode"], study["searcher"], study["budget"]) == (
        "max", "random", {"trials": 8, "max_steps": 27})
    assert study["early_stopping"] == {"rule": "hyperband", "grace_period": 3,
                                       "reduction_factor": 3.0}
    lr = study["parameters"]["lr"]
    assert lr["scale"] == "log" and lr["low"] == pytest.approx(math.exp(-9.2))
    assert study["parameters"]["layers"]["type"] == "int"
    assert study["parameters"]["wd"]["scale"] == "log"
    assert study["parameters"]["seed"] == {"role": "fixed", "value": 7}
    assert "noise" not in study["parameters"] and "model" not in study["parameters"]
    said = "\n".join(found.unmapped)
    for key in ("colour:", "project:", "metric.target:", "${args_json}", "parameters.noise:",
                "parameters.model:"):
        assert key in said, key


def test_searchsvc_import_writes_a_study_file_that_validates(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({**DOCS_SWEEP, "run_cap": 4}))
    (tmp_path / "train.py").write_text("import wandb\n")
    assert main(["import", str(sweep)]) == 0
    said = capsys.readouterr().out
    assert "sweep-study.yaml: study 'sweepdemo', searcher bayesian, 4 parameters" in said
    assert yaml.safe_load((tmp_path / "sweep-study.yaml").read_text())["budget"] == {
        "trials": 4}
    assert main(["import", str(sweep)]) == 2  # it exists: --out or --force
    assert main(["validate", str(tmp_path / "sweep-study.yaml")]) == 0
