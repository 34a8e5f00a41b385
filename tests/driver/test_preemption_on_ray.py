"""A study on a shared cluster gives slots back to a study of higher priority at checkpoints:
told by its allowance to run 1 trial instead of 2, with ``preempt``, it pauses one running
trial at its next report that carries a checkpoint (never at one that does not), runs the
other to its end, and only then resumes the paused one from that checkpoint: every step
stored once.
The objective (preempt_objectives.py) holds both trials until the allowance has changed, so
the order in which their reports arrive decides only which one pauses.
A driver killed while one trial is paused (the other held short of its end) resumes both from
their last checkpoints with `searchsvc resume`: every step stored once."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.allocation.allowance import ALLOWANCE_ENV, write_allowance
from searchsvc.core import EventKind, TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore
from searchsvc.usecases import validate_text
from tests.killed import kill_and_resume

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


def test_a_killed_drivers_paused_trial_resumes_from_its_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    allowance = tmp_path / "allowances" / "low.json"
    write_allowance(allowance, 2)
    monkeypatch.setenv(ALLOWANCE_ENV, str(allowance))  # the CLI's driver reads it
    folder = tmp_path / "barrier"
    folder.mkdir()
    url = f"sqlite:///{tmp_path / 'home' / 'searchsvc.db'}"
    # Both trials hold at step 5 until the kill: one paused at step 4, the other running.
    (tmp_path / "study.yaml").write_text(
        STUDY.format(folder=folder, allowance=allowance, store=url)
        + "  hold_at: {value: 5}\n")

    def one_paused_the_other_checkpointed(store: SqlStore) -> bool:
        events = store.get_events("low")
        return (any(e.kind == EventKind.PAUSED for e in events)
                and {e.number for e in events if e.kind == EventKind.CHECKPOINT
                     and e.step == 4} == {0, 1})

    store, _ = kill_and_resume(  # resumed as the allocator would once the other study ends
        tmp_path, "low", until=one_paused_the_other_checkpointed,
        between=lambda: write_allowance(allowance, 2))
    trials = store.get_trials("low", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 2
    [pause] = store.get_events("low", kind=EventKind.PAUSED)
    assert pause.step == 4
    for t in trials:  # both went on from step 4's checkpoint, every step stored once
        final = [m for m in t.measurements if m.attempt == t.attempts]
        assert t.attempts == 2 and [m.step for m in final] == [1, 2, 3, 4, 5, 6], t.number
        assert [m.metrics["resumed_from"] for m in final] == [0.0] * 4 + [4.0] * 2
