"""Where a resumed study's interrupted trials start again (driver/restore.py), from records in
a store: the last checkpoint of the attempt that was interrupted, if its folder is still there."""

from __future__ import annotations

from pathlib import Path

from searchsvc.core import EventKind, TrialState
from searchsvc.driver.restore import restore_points
from searchsvc.store import InMemoryStore


def test_each_interrupted_trial_restarts_from_its_attempts_last_checkpoint(
        tmp_path: Path) -> None:
    store = InMemoryStore()
    study = store.create_study(name="s", metric="loss", mode="min", searcher="random",
                               spec_text="", spec_file="s.yaml", total_trials=4,
                               results_dir=None, provenance={})
    folders = {}
    for name in ("a1", "a2", "b1", "gone", "c1"):
        folders[name] = tmp_path / name
        if name != "gone":
            folders[name].mkdir()

    def checkpoint(number: int, step: int, attempt: int, folder: str) -> None:
        store.record_event(study.id, number, EventKind.CHECKPOINT, step=step,
                           data={"path": str(folders[folder]), "attempt": attempt})

    for number in range(4):
        store.start_trial(study.id, number=number, config={}, arm={}, seed=number)
    store.start_trial(study.id, number=1, config={}, arm={}, seed=1)  # trial 1: attempt 2
    checkpoint(0, 2, 1, "a1")
    checkpoint(0, 4, 1, "a2")  # trial 0's latest
    checkpoint(1, 3, 1, "b1")  # an earlier attempt's: trial 1 is on attempt 2
    checkpoint(2, 5, 1, "gone")  # its folder was deleted
    checkpoint(3, 1, 1, "c1")
    trial_3 = next(t for t in store.get_trials("s") if t.number == 3)
    store.finish_trial(trial_3.id, TrialState.COMPLETED)  # finished: never runs again
    store.interrupt_running_trials(study.id)

    assert restore_points(store, "s", store.get_trials("s")) == {0: (str(folders["a2"]), 4)}
