"""Each framework example of examples/ runs as a user runs it: its folder copied to a folder of
the user's own, its study file validated and run on a real Ray, every epoch or boosting round
reported through the framework's callback (searchsvc.integrations), and its early-stopping
rule stopping the trial whose learning rate is far too small.

The study files list the learning rates from best to worst and run 2 trials at a time, so the
last trial starts only once two earlier ones have ended, each after recording its value at the
first rung: one of them is a trial with a good learning rate, whose value there is far better
than the last trial's, in every order the trials may finish in."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from searchsvc.core import TrialState
from searchsvc.spec import parse_spec
from searchsvc.store import SqlStore
from tests.driver.studies import run_file

pytestmark = pytest.mark.slow
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Each example: the metric its framework counts steps with (epochs or rounds completed).
COUNTERS = {"lightning": "epoch", "keras_fit": "epoch", "huggingface": "epoch",
            "xgboost": "round", "lightgbm": "round"}


@pytest.mark.parametrize("example", sorted(COUNTERS))
def test_the_example_reports_every_step_and_asha_stops_the_hopeless_trial(
        ray_local, tmp_path: Path, example: str) -> None:
    folder = tmp_path / example
    shutil.copytree(EXAMPLES / example, folder)
    store = SqlStore(f"sqlite:///{folder / 'db.sqlite'}")
    outcome = run_file(folder / "study.yaml", store)
    spec = parse_spec((folder / "study.yaml").read_text())
    assert outcome.study.state == "completed"
    trials = sorted(store.get_trials(spec.name, measurements=True), key=lambda t: t.number)
    assert [t.number for t in trials] == [0, 1, 2, 3]
    max_steps = spec.budget.max_steps
    counter = COUNTERS[example]
    for trial in trials:
        assert trial.state in (TrialState.COMPLETED, TrialState.PRUNED), (trial.number,
                                                                          trial.error)
        steps = [m.step for m in trial.measurements]
        assert steps == list(range(1, len(steps) + 1))  # every epoch or round, once
        assert [m.metrics[counter] for m in trial.measurements] == pytest.approx(steps)
        assert all(spec.metric in m.metrics for m in trial.measurements)
        if trial.state == TrialState.COMPLETED:
            assert steps[-1] == max_steps
    last = trials[-1]
    assert last.state == TrialState.PRUNED and last.last_step < max_steps
    assert any(t.state == TrialState.COMPLETED for t in trials)
