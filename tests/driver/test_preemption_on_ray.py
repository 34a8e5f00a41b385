"""A study on a shared cluster gives slots back to a study of higher priority at checkpoints:
told by its allowance to run 1 trial instead of 2, with ``preempt``, it pauses one running
trial at its next report that carries a checkpoint (never at one that does not), runs the
other to its end, then resumes the paused one from that checkpoint: every step stored once."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.allocation.allowance import ALLOWANCE_ENV, write_allowance
from searchsvc.core import EventKind, TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore
from searchsvc.usecases import validate_text

pytestmark = pytest.mark.slow

STUDY = """
study: low
objective: tests.driver.preempt_objectives:train
metric: loss
mode: min
searcher: grid
budget: {{max_concurrent: 2, max_steps: 6}}
checkpoints: {{keep_best: 2}}
noise: off
parameters:
  lr: {{values: [0.1, 0.2]}}
  folder: {{value: "{folder}"}}
  allowance_file: {{value: "{allowance}"}}
"""


def test_a_trial_pauses_at_its_next_checkpoint_and_resumes_from_it(
        ray_local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    allowance = tmp_path / "allowances" / "low.json"
    write_allowance(allowance, 2)
    monkeypatch.setenv(ALLOWANCE_ENV, str(allowance))
    folder = tmp_path / "barrier"
    folder.mkdir()
    spec = validate_text(STUDY.format(folder=folder, allowance=allowance))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)

    trials = store.get_trials("low", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 2
    for t in trials:  # no step lost, none run twice
        assert [m.step for m in t.measurements] == [1, 2, 3, 4, 5, 6], t.number
    [pause] = store.get_events("low", kind=EventKind.PAUSED)
    assert pause.step in (2, 4)  # a step whose report carried a checkpoint
    assert pause.data["allowance"] == 1 and pause.data["running"] == 2
    checkpoints = {e.step for e in store.get_events("low", kind=EventKind.CHECKPOINT)
                   if e.number == pause.number}
    assert pause.step in checkpoints
    paused = trials[pause.number]
    # it went on from the checkpoint of the step it paused at, and only then
    assert [m.metrics["resumed_from"] for m in paused.measurements] == (
        [0.0] * pause.step + [float(pause.step)] * (6 - pause.step))
    other = trials[1 - pause.number]
    assert {m.metrics["resumed_from"] for m in other.measurements} == {0.0}
