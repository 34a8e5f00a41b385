"""Trial faults on Ray Tune: a crash is retried from the trial's last checkpoint up to
``budget.max_failures``, a hang is stopped by ``budget.trial_timeout_s``, NaN makes a trial
infeasible, and the study completes with every trial accounted for.

The hang runs in a study of its own: a clock that also ran over the quick trials would decide
their fate by the machine's load (a loaded machine can take longer than the timeout to start
a worker and run five trivial steps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.core import EventKind, TrialState
from tests.driver.studies import run_in

pytestmark = pytest.mark.slow

OBJECTIVE = '''
import time
from pathlib import Path

from searchsvc import sdk

MARKS = Path(__file__).parent / "marks"


def train(config):
    kind = config["kind"]
    state = sdk.restore()
    start = 1 if state is None else state["step"] + 1
    MARKS.mkdir(exist_ok=True)
    (MARKS / f"{kind}-start-{start}").touch()  # where each try began
    for step in range(start, 6):
        if kind == "flaky" and step == 4 and not (MARKS / "flaky-crashed").exists():
            (MARKS / "flaky-crashed").touch()
            raise RuntimeError("flaky crash at step 4")
        if kind == "crash" and step == 2:
            raise RuntimeError("crash at step 2, every time")
        if kind == "hang" and step == 2:
            time.sleep(3600)
        value = float("nan") if kind == "nan" and step == 3 else 1.0 / step
        # flaky checkpoints every other step: its retry redoes step 3 from step 2's checkpoint
        keep = kind != "flaky" or step % 2 == 0
        sdk.report({"loss": value}, state=(lambda step=step: {"step": step}) if keep else None)
'''

STUDY = """
study: faults
objective: faulty_ckpt:train
metric: loss
mode: min
searcher: grid
budget: {max_concurrent: 2, max_steps: 5, max_failures: 1}
checkpoints: {keep_best: 5}
parameters:
  kind: {values: [ok, flaky, crash, nan]}
"""

HANG_STUDY = """
study: hang
objective: faulty_ckpt:train
metric: loss
mode: min
searcher: grid
budget: {max_concurrent: 1, max_steps: 5, max_failures: 1, trial_timeout_s: 20}
parameters:
  kind: {values: [hang]}
"""


def test_crash_retry_hang_and_nan_are_recorded_and_the_study_completes(ray_local,
                                                                       tmp_path: Path) -> None:
    (tmp_path / "faults").mkdir()
    outcome, store = run_in(tmp_path / "faults", STUDY, faulty_ckpt=OBJECTIVE)
    (tmp_path / "hang").mkdir()
    hung, hang_store = run_in(tmp_path / "hang", HANG_STUDY, faulty_ckpt=OBJECTIVE)

    assert outcome.study.state == "completed" and outcome.finished == 4
    # Its one trial failed, so that study has no result (core.judging's study outcome).
    assert hung.study.state == "failed" and hung.finished == 1
    trials = {t.config["kind"]: t for t in store.get_trials("faults", measurements=True)}
    retried = {e.number: e for e in store.get_events("faults", kind=EventKind.RETRIED)}
    marks = {p.name for p in (tmp_path / "faults" / "marks").iterdir()}

    assert trials["ok"].state == TrialState.COMPLETED and trials["ok"].number not in retried

    # Retried once, from its checkpoint at step 2: step 3 was redone, and steps 1-5 are
    # recorded once each.
    flaky = trials["flaky"]
    assert flaky.state == TrialState.COMPLETED and flaky.attempts == 1
    assert [m.step for m in flaky.measurements] == [1, 2, 3, 4, 5]
    assert flaky.best_value == pytest.approx(0.2)
    assert {"flaky-start-1", "flaky-start-3"} <= marks and "flaky-start-4" not in marks
    assert "flaky crash at step 4" in retried[flaky.number].data["error"]

    crash = trials["crash"]
    assert crash.state == TrialState.FAILED
    assert "failed after 1 retries" in crash.error and "crash at step 2, every time" in crash.error
    assert [m.step for m in crash.measurements] == [1]

    nan = trials["nan"]
    assert nan.state == TrialState.INFEASIBLE and "non-finite at step 3" in nan.error

    # Stopped by the clock on both tries, keeping the step it reported before hanging.
    [hang] = hang_store.get_trials("hang", measurements=True)
    [hang_retry] = hang_store.get_events("hang", kind=EventKind.RETRIED)
    assert hang.state == TrialState.FAILED
    assert "budget.trial_timeout_s (20 s)" in hang.error
    assert hang_retry.data["timed_out"] is True
    assert [m.step for m in hang.measurements] == [1]


LINGERING = '''
import time

from searchsvc import sdk


def train(config):
    try:
        for step in range(1, 100):
            sdk.report({"loss": config["x"] / step})
    finally:
        # Clean-up after the stop (a final save, a data loader's workers joining) that
        # outlasts the 2 s Ray Tune gives a finished trial's thread before reusing its worker.
        time.sleep(4)
'''

LINGERING_STUDY = """
study: lingering
objective: lingering:train
metric: loss
mode: min
searcher: random
budget: {trials: 3, max_concurrent: 1, max_steps: 2}
parameters:
  x: {type: float, low: 1.0, high: 2.0}
"""


@pytest.mark.timeout(240)
def test_a_trial_whose_worker_is_still_cleaning_up_starts_on_a_new_worker(
        ray_local, tmp_path: Path) -> None:
    """Stopped at max_steps, each trial's objective keeps its thread 4 s in clean-up: Ray Tune
    cannot reset that worker for the next trial. That trial must start on a new worker, not
    be left in an error state nobody is told of (the study then waited for it forever)."""
    outcome, store = run_in(tmp_path, LINGERING_STUDY, lingering=LINGERING)

    assert outcome.study.state == "completed" and outcome.finished == 3
    trials = store.get_trials("lingering", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 3
    assert all([m.step for m in t.measurements] == [1, 2] for t in trials)
