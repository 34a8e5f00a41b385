"""A study file runs on Ray Tune and every trial and every reported step lands in the store."""

from __future__ import annotations

import shutil
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from searchsvc.core import TrialState
from searchsvc.driver import RunOptions, run_study
from searchsvc.reporting import write_report
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore
from searchsvc.usecases import validate as validate_file
from tests.driver.studies import run_file

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_every_trial_and_every_step_is_stored(ray_local, tmp_path: Path) -> None:
    path = write(tmp_path, "toy.yaml", """
        study: toy
        objective: objectives.synthetic:playbook
        metric: val_loss
        mode: min
        searcher: quasi_random
        budget: {trials: 12, max_concurrent: 2, max_steps: 7}
        noise: off  # seed repeats: tests/driver/test_noise_repeats.py
        parameters:
          depth: {role: scientific, values: [1, 2, 3]}
          learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0e-2, scale: log}
          weight_decay: {role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}
          batch_size: {role: fixed, value: 32}
        """)
    shutil.copytree(ROOT / "objectives", tmp_path / "objectives")
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    outcome = run_file(path, store)
    assert outcome.study.state == "completed" and outcome.finished == 12
    trials = store.get_trials("toy", measurements=True)
    assert sorted(t.number for t in trials) == list(range(12))
    assert all(t.state == TrialState.COMPLETED for t in trials)
    for t in trials:
        assert [m.step for m in t.measurements] == list(range(1, 8))
        assert {"train_loss", "val_loss", "val_error"} <= set(t.measurements[0].metrics)
        assert t.config["batch_size"] == 32
        assert t.best_value == min(m.value for m in t.measurements)
        assert t.node  # where it ran
    assert Counter(t.config["depth"] for t in trials) == {1: 4, 2: 4, 3: 4}
    study = store.get_study("toy")
    assert study.provenance["versions"]["ray"] and study.provenance["seed"] == 0
    report = write_report(store, "toy")
    assert (report.folder / "trials.csv").read_text().count("\n") == 13
    assert (report.folder / "plots" / "axis_learning_rate.png").stat().st_size > 1000


def test_ray_docs_trainable_runs_unchanged(ray_local, tmp_path: Path) -> None:
    folder = shutil.copytree(ROOT / "examples" / "ray_docs_trainable", tmp_path / "mine")
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    outcome = run_file(folder / "study.yaml", store)
    assert outcome.study.state == "completed"
    trials = store.get_trials("ray-docs-trainable", measurements=True)
    assert len(trials) == 6
    for t in trials:
        a, b = t.config["a"], t.config["b"]
        assert [m.metrics["score"] for m in t.measurements] == pytest.approx(
            [a * x**0.5 + b for x in range(20)])
        assert t.best_value == pytest.approx(a * 19**0.5 + b)


def test_crashing_nan_and_silent_objectives_are_recorded_and_the_study_completes(
        ray_local, tmp_path: Path) -> None:
    write(tmp_path, "faulty.py", """
        from ray import tune

        def train(config):
            kind = config["kind"]
            for step in range(3):
                if kind == "crash" and step == 1:
                    raise RuntimeError("boom at step 1")
                value = float("nan") if kind == "nan" and step == 1 else 1.0 / (step + 1)
                if kind == "silent":
                    tune.report({"other": 1.0})
                else:
                    tune.report({"loss": value})
        """)
    path = write(tmp_path, "faulty.yaml", """
        study: faulty
        objective: faulty:train
        metric: loss
        mode: min
        searcher: grid
        parameters:
          kind: {values: [ok, crash, nan, silent]}
        """)
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    outcome = run_file(path, store)
    assert outcome.study.state == "completed"
    by_kind = {t.config["kind"]: t for t in store.get_trials("faulty", measurements=True)}
    assert by_kind["ok"].state == TrialState.COMPLETED
    assert by_kind["ok"].best_value == pytest.approx(1 / 3)
    crash = by_kind["crash"]
    assert crash.state == TrialState.FAILED and "boom at step 1" in (crash.error or "")
    assert [m.step for m in crash.measurements] == [1]  # reported before the crash: kept
    nan = by_kind["nan"]
    assert nan.state == TrialState.INFEASIBLE and "non-finite at step 2" in (nan.error or "")
    assert nan.last_step == 2  # stopped as soon as it diverged
    silent = by_kind["silent"]
    assert silent.state == TrialState.FAILED
    assert "without reporting the metric 'loss'" in (silent.error or "")


def test_kept_checkpoints_are_recorded_and_loadable(ray_local, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "objectives", tmp_path / "objectives")
    path = write(tmp_path, "ckpt.yaml", """
        study: ckpt
        objective: objectives.torch_digits:train
        metric: val_error
        mode: min
        searcher: random
        budget: {trials: 2, max_concurrent: 1, max_steps: 3}
        parameters:
          learning_rate: {low: 1.0e-3, high: 1.0e-2, scale: log}
          hidden_units: {value: 16}
        checkpoints: {keep_best: 1}
        """)
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    # One at a time: the second trial runs on the first one's worker, and keeps its own.
    assert run_file(path, store).study.state == "completed"
    import torch

    for t in store.get_trials("ckpt"):
        assert t.checkpoints, t
        state = torch.load(Path(t.checkpoints[-1]) / "state.pt", weights_only=False)
        assert 1 <= state["epoch"] <= 3 and "model" in state


def test_the_time_limit_stops_the_study_resumably_with_every_result_kept(ray_local,
                                                                         tmp_path: Path) -> None:
    # Each run lets ALLOWED trials finish; every later one waits until the time limit stops
    # it. What is finished and what is interrupted then depends on neither the machine's
    # speed nor its load, only on the limit being reached.
    gate = tmp_path / "gate"
    gate.mkdir()
    (gate / "ALLOWED").write_text("3")
    write(tmp_path, "gated_steps.py", f"""
        import os
        import time
        from pathlib import Path

        from ray import tune

        GATE = Path({str(gate)!r})


        def _slot():
            allowed = int((GATE / "ALLOWED").read_text())
            for n in range(allowed):
                try:
                    os.close(os.open(GATE / f"slot-{{n}}", os.O_CREAT | os.O_EXCL))
                    return True
                except FileExistsError:
                    continue
            return False


        def train(config):
            if not _slot():
                time.sleep(3600)  # until the time limit stops the study
            for step in range(1, 4):
                tune.report({{"loss": config["x"] / step}})
        """)
    path = write(tmp_path, "limited.yaml", """
        study: limited
        objective: gated_steps:train
        metric: loss
        mode: min
        searcher: random
        budget: {trials: 200, max_concurrent: 1, max_steps: 3, time_limit_s: 30}
        parameters:
          x: {role: nuisance, low: 0.0, high: 1.0}
        """)
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    outcome = run_file(path, store)
    assert outcome.reason == "time limit reached"
    assert outcome.study.state == "interrupted"  # resumable, not failed or completed
    trials = store.get_trials("limited", measurements=True)
    completed = [t for t in trials if t.state == TrialState.COMPLETED]
    assert len(completed) == 3
    assert all(t.state in (TrialState.COMPLETED, TrialState.INTERRUPTED) for t in trials)
    for t in completed:
        assert [m.step for m in t.measurements] == [1, 2, 3]
    # Resuming goes on where it stopped (under a new time limit): finished trials stay as
    # they were and none runs twice.
    (gate / "ALLOWED").write_text("6")  # three more slots for the resumed run
    again = run_study("limited", store, RunOptions(live_progress=False),
                      searcher=create_searcher(validate_file(path)))  # a resume's: fresh
    assert again.reason == "time limit reached"
    after = {t.number: t for t in store.get_trials("limited", measurements=True)}
    assert {t.number for t in completed} < {n for n, t in after.items()
                                           if t.state == TrialState.COMPLETED}
    for t in completed:
        assert after[t.number].measurements == t.measurements
        assert after[t.number].attempts == t.attempts
