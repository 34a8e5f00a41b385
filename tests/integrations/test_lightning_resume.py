"""A Lightning study killed in the middle (driver and Ray, SIGKILL) and resumed from the command
line loses no finished epoch: every epoch reported before the kill is kept with its value,
Lightning continues each interrupted trial from its last checkpoint (the epoch after it, from
its weights), and every epoch is stored once."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import pytest

from searchsvc.core import TrialState
from searchsvc.store import SqlStore
from tests.killed import kill_and_resume

pytestmark = pytest.mark.slow

STUDY = """
study: lightning-killed
objective: train:train
metric: val_loss
mode: min
searcher: grid
budget: {max_concurrent: 2, max_steps: 6}
checkpoints: {keep_best: 1}
noise: off
parameters:
  lr: {role: nuisance, values: [0.05, 0.02]}
"""

OBJECTIVE = """
import time

from searchsvc.integrations.lightning import resume_checkpoint
from tests.integrations.linear import Linear, loaders, trainer


class Model(Linear):
    def on_train_epoch_start(self):
        self.start = self.fingerprint()
        time.sleep(0.5)  # an epoch long enough to be killed in the middle of a study

    def on_validation_epoch_end(self):
        self.log("w_start", self.start)
        self.log("w_end", self.fingerprint())


def train(config):
    trainer().fit(Model(config["lr"], momentum=0.9), *loaders(), ckpt_path=resume_checkpoint())
"""


def test_a_killed_lightning_study_resumes_every_trial_from_its_last_epoch(
        tmp_path: Path) -> None:
    (tmp_path / "study.yaml").write_text(STUDY)
    (tmp_path / "train.py").write_text(textwrap.dedent(OBJECTIVE))
    before: dict[int, dict[int, float]] = {}

    def two_epochs_in(store: SqlStore) -> bool:
        trials = store.get_trials("lightning-killed")
        return any((t.last_step or 0) >= 2 for t in trials) and any(
            t.state == TrialState.RUNNING for t in trials)

    def remember() -> None:
        for t in store_of(tmp_path).get_trials("lightning-killed", measurements=True):
            before[t.number] = {m.step: m.value for m in t.measurements}

    store, _ = kill_and_resume(tmp_path, "lightning-killed", until=two_epochs_in,
                               between=remember)
    trials = store.get_trials("lightning-killed", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 2
    assert any(t.attempts == 2 for t in trials)  # one was interrupted at least
    for t in trials:
        final = [m for m in t.measurements if m.attempt == t.attempts]
        assert [m.step for m in final] == [1, 2, 3, 4, 5, 6], t.number
        assert [m.metrics["epoch"] for m in final] == [1, 2, 3, 4, 5, 6]
        for m in final:  # every epoch reported before the kill kept, with its value
            if m.step in before.get(t.number, {}):
                assert m.value == before[t.number][m.step], (t.number, m.step)
        for earlier, later in itertools.pairwise(final):  # weights carried on
            assert later.metrics["w_start"] == pytest.approx(earlier.metrics["w_end"],
                                                             rel=1e-6, abs=1e-6)
    assert sum(len(steps) for steps in before.values()) >= 2


def store_of(folder: Path) -> SqlStore:
    return SqlStore(f"sqlite:///{folder / 'home' / 'searchsvc.db'}")
