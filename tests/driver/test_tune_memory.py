"""Tune keeps every trial of its run to the run's end; the study's scheduler drops each trial
that ended from Tune's controller at its next step (the store holds it), so that a long study's
driver does not grow with its finished trials. On a real Ray: the controller holds no more than
the trials running and waiting, and every trial is still stored whole."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from searchsvc.core import TrialState
from searchsvc.driver import raycompat, schedulers
from tests.driver.studies import run_in

pytestmark = pytest.mark.slow


def test_ended_trials_leave_tunes_controller_and_stay_in_the_store(
        ray_local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ray.util import debug

    held: list[int] = []  # the controller's trials after each drop
    snapshots: list[int] = []  # the trials whose JSON state it keeps for its snapshot
    notes: list[int] = []  # Ray's log-once keys of values its JSON encoder pickled

    def forget(tune_controller: Any, trials: Any) -> int:
        dropped = raycompat.forget_ended_trials(tune_controller, trials)
        controller = tune_controller._tune_controller
        held.append(len(controller._trials))
        snapshots.append(len(set(controller._trial_metadata) | {
            t.trial_id for t in controller._trials_to_cache}))
        notes.append(sum(k.startswith(raycompat.ENCODER_NOTE) for k in debug._logged))
        return dropped

    monkeypatch.setattr(schedulers, "forget_ended_trials", forget)
    outcome, store = run_in(tmp_path, textwrap.dedent("""
        study: forgetful
        objective: steps:train
        metric: loss
        mode: min
        searcher: random
        noise: off
        budget: {trials: 12, max_concurrent: 2, max_steps: 3}
        parameters:
          x: {role: nuisance, low: 0.1, high: 1.0}
        """), steps="""
        from searchsvc import sdk

        def train(config):
            for step in range(1, 4):
                sdk.report({"loss": config["x"] / step})
        """)
    assert outcome.study.state == "completed"
    trials = store.get_trials("forgetful", measurements=True)
    assert sorted(t.number for t in trials) == list(range(12))
    assert all(t.state == TrialState.COMPLETED for t in trials)
    assert all([m.step for m in t.measurements] == [1, 2, 3] for t in trials)
    # Dropped as they ended: at most the running, the waiting and those ending meanwhile.
    assert len(held) >= 5 and max(held) <= 6, held
    # Nor does its snapshot keep the ended trials' state, nor Ray its notes of their values.
    assert max(snapshots) <= 6 and notes == [0] * len(notes), (snapshots, notes)
