"""A Lightning trial that early stopping stops ends cleanly: Lightning's teardown runs in it
(the module's ``teardown`` hook and the dataloader workers it started are gone), and Ray reuses
its worker process for the next trial.

One trial at a time, in grid order: trial 0 learns, trial 1 (a hopeless learning rate) is
stopped at the first rung, where trial 0 recorded a far better value, and trial 2 runs after
it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import psutil
import pytest

from searchsvc.core import TrialState
from tests.driver.studies import run_in

pytestmark = pytest.mark.slow

STUDY = """
study: lightning-stop
objective: train:train
metric: val_loss
mode: min
searcher: grid
budget: {{max_concurrent: 1, max_steps: 4}}
early_stopping: {{rule: asha, grace_period: 1, reduction_factor: 2}}
noise: off
parameters:
  lr: {{role: nuisance, values: [0.1, 0.0000001, 0.05]}}
  folder: {{role: fixed, value: "{folder}"}}
"""

OBJECTIVE = """
import json
import os
from pathlib import Path

import psutil

from searchsvc import sdk
from tests.integrations.linear import Linear, loaders, trainer


class Model(Linear):
    def on_validation_epoch_end(self):
        # the training loader's persistent worker processes, alive during validation
        workers = [c.pid for c in psutil.Process().children()]
        (Path(self.folder) / f"{sdk.trial_context().number}.json").write_text(json.dumps(
            {"pid": os.getpid(), "loader_workers": workers}))

    def teardown(self, stage):
        (Path(self.folder) / f"teardown-{sdk.trial_context().number}").write_text(stage)


def train(config):
    model = Model(config["lr"])
    model.folder = config["folder"]
    trainer().fit(model, *loaders(num_workers=1, persistent_workers=True))
"""


def test_a_stopped_lightning_trial_tears_down_and_its_worker_runs_the_next(
        ray_local, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    outcome, store = run_in(tmp_path, STUDY.format(folder=marks),
                            train=textwrap.dedent(OBJECTIVE))
    assert outcome.study.state == "completed"
    trials = {t.number: t for t in store.get_trials("lightning-stop", measurements=True)}
    assert [trials[n].state for n in (0, 1)] == [TrialState.COMPLETED, TrialState.PRUNED]
    assert trials[2].last_step  # it ran after (whether a rung stops it too is its own value's)
    assert trials[1].last_step == 1
    assert (marks / "teardown-1").read_text() == "fit"  # Lightning's teardown ran
    stopped = json.loads((marks / "1.json").read_text())
    assert stopped["loader_workers"]  # it had started a dataloader worker process...
    for pid in stopped["loader_workers"]:  # ...which the stop ended
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
    after = json.loads((marks / "2.json").read_text())
    assert after["pid"] == stopped["pid"]  # the next trial ran in the same worker process
