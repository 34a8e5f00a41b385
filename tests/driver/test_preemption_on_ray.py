"""A study on a shared cluster gives slots back to a study of higher priority at checkpoints:
told by its allowance to run 1 trial instead of 2, with ``preempt``, it pauses one running
trial at its next report that carries a checkpoint (never at one that does not), runs the
other to its end, and only then resumes the paused one from that checkpoint: every step
stored once.
The objective (preempt_objectives.py) holds both trials until the allowance has changed, so
the order in which their reports arrive decides only which one pauses."""

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
  store: {{value: "{store}"}}
"""


def test_a_trial_pauses_at_its_next_checkpoint_and_resumes_from_it(
        ray_local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    allowance = tmp_path / "allowances" / "low.json"
    write_allowance(allowance, 2)
    monkeypatch.setenv(ALLOWANCE_ENV, str(allowance))
    folder = tmp_path / "barrier"
    folder.mkdir()
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    spec = validate_text(STUDY.format(folder=folder, allowance=allowance, store=url))
    store = SqlStore(url)
    options = RunOptions(live_progress=False)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)

    trials = store.get_trials("low", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 2
    for t in trials:  # no step lost, none run twice
        assert [m.step for m in t.measurements] == [1, 2, 3, 4, 5, 6], t.number
    [pause] = store.get_events("low", kind=EventKind.PAUSED)
    # Step 3's reports came first under the new allowance, without a checkpoint: no pause
    # there, but at the first step 4 reported, which carried one.
    assert pause.step == 4
    assert pause.data["allowance"] == 1 and pause.data["running"] == 2
    checkpoints = {e.step for e in store.get_events("low", kind=EventKind.CHECKPOINT)
                   if e.number == pause.number}
    assert pause.step in checkpoints
    paused = trials[pause.number]
    # it went on from the checkpoint of the step it paused at, and only then
    assert [m.metrics["resumed_from"] for m in paused.measurements] == (
        [0.0] * pause.step + [float(pause.step)] * (6 - pause.step))
    # and only once the other had ended: the study ran no more than its allowance of 1
    assert [m.metrics["other_done"] for m in paused.measurements[pause.step:]] == (
        [1.0] * (6 - pause.step))
    other = trials[1 - pause.number]
    assert {m.metrics["resumed_from"] for m in other.measurements} == {0.0}
