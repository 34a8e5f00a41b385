"""Early stopping that saves compute without deciding the science, on a real Ray: every rule
judges a trial only against its own scientific arm, so a study whose arms learn at different
speeds keeps the verdicts its full curves give; the study file's ``early_stopping:`` block runs
beside any searcher (TPE with the median rule); what the replay predicts for its recommended
block is what a live run of it stops; and each arm's rungs survive a kill.

The planted study (objectives/planted_arms.py): depth 2 and width 2 start far worse; at the
full budget the depths tie and width 2 wins. Trials run two at a time, so the order results
arrive in changes with machine load: every assertion here is about decisions and verdicts that
hold in any such order (the planted gaps are far wider than what an order can move; the seeds
were checked in simulation at 1, 2 and 3 at a time), never about clocks.
"""

from __future__ import annotations

import os
import signal
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from objectives.planted_arms import RULES
from searchsvc.analysis.isolation import VERDICT_DIFFERS, VERDICT_WITHIN_NOISE, isolate
from searchsvc.analysis.replay import study_replay
from searchsvc.core import EventKind, TrialState
from searchsvc.spec import parse_spec
from searchsvc.store import SqlStore, Store
from searchsvc.usecases import suggested_next
from tests.driver.studies import run_file
from tests.killed import searchsvc

pytestmark = pytest.mark.slow

ARMS = """\
study: {name}
objective: objectives.planted_arms:slow_arms
metric: loss
mode: min
searcher: {searcher}
{options}
budget: {{trials: 16, max_steps: 9, max_concurrent: {concurrency}}}
resources: {{cpu: 1}}
noise: off
seed: 0
parameters:
  depth: {{role: scientific, values: [1, 2]}}
  width: {{role: scientific, values: [1, 2]}}
  learning_rate: {{role: nuisance, low: 1.0e-3, high: 1.0e-1, scale: log}}
"""
# Optuna users' most common setup, TPE with a median pruner: one arm, a wide learning rate.
TPE_MEDIAN = """\
study: tpe-median
objective: objectives.planted_arms:slow_arms
metric: loss
mode: min
searcher: bayesian
searcher_options: {sampler: tpe}
early_stopping: {rule: median, grace_period: 2}
budget: {trials: 12, max_steps: 9, max_concurrent: 2}
resources: {cpu: 1}
parameters:
  learning_rate: {role: nuisance, low: 1.0e-4, high: 1.0, scale: log}
"""
RIGHT = {"depth": VERDICT_WITHIN_NOISE, "width": VERDICT_DIFFERS}


def run_study_text(folder: Path, store: Store, text: str, name: str) -> None:
    path = folder / f"{name}.yaml"
    path.write_text(text)
    run_file(path, store)


@pytest.fixture(scope="module")
def arm_studies(ray_local, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The full-curve reference (one trial at a time, so the replay of its curves predicts a
    one-at-a-time live run exactly) and each rule's study, two at a time."""
    folder = tmp_path_factory.mktemp("arms")
    store = SqlStore(f"sqlite:///{folder / 'db.sqlite'}")
    run_study_text(folder, store, ARMS.format(name="full", searcher="quasi_random", options="",
                                              concurrency=1), "full")
    for name, (searcher, options) in RULES.items():
        run_study_text(folder, store, ARMS.format(name=name, searcher=searcher,
                                                  options=options, concurrency=2), name)
    run_study_text(folder, store, TPE_MEDIAN, "tpe-median")
    return store


def verdicts(store: Store, name: str) -> dict[str, str]:
    spec = parse_spec(store.get_study(name).spec_text)
    found = isolate(spec, store.get_trials(name))
    width = next(i for i in found if i.parameter == "width")
    assert width.verdict != VERDICT_DIFFERS or "width=2 is best" in width.detail, width.detail
    return {i.parameter: i.verdict for i in found}


@pytest.mark.parametrize("name", ["asha", "hyperband", "bohb", "median", "percentile"])
def test_a_rule_stopping_slow_arms_keeps_the_verdicts_of_full_curves(arm_studies: Store,
                                                                     name: str) -> None:
    assert verdicts(arm_studies, "full") == RIGHT  # the tie and the late winner, seen whole
    trials = arm_studies.get_trials(name)
    assert any(t.state == TrialState.PRUNED for t in trials), "the rule stopped nothing"
    assert verdicts(arm_studies, name) == RIGHT
    # Each stop names the arm it was judged in: the trial's own.
    by_number = {t.number: t for t in trials}
    for event in arm_studies.get_events(name, kind=EventKind.STOPPED_EARLY):
        assert event.data["arm"] == dict(by_number[event.number].arm)


def test_tpe_with_the_median_rule_stops_trials_and_records_each_stop(arm_studies: Store) -> None:
    trials = arm_studies.get_trials("tpe-median")
    pruned = {t.number: t for t in trials if t.state == TrialState.PRUNED}
    assert pruned and len(trials) == 12
    events = arm_studies.get_events("tpe-median", kind=EventKind.STOPPED_EARLY)
    assert sorted(e.number for e in events) == sorted(pruned)  # one event per stop
    for e in events:
        assert (e.data["scheduler"], e.data["rule"], e.data["reason"]) == (
            "median", "median", "below_median")
        assert 2 <= e.step < 9 and e.step == pruned[e.number].last_step
        assert e.data["value"] > e.data["cutoff"]  # worse than its arm's median (a loss)


def test_the_replays_recommended_block_stops_live_what_it_predicted(arm_studies: Store,
                                                                    tmp_path: Path) -> None:
    """The reference's curves replayed one trial at a time recommend a block; the same study
    run live with that block, one trial at a time, stops exactly the trials the replay said,
    after the same steps. The suggested next study carries the block as it is."""
    reference = arm_studies.get_study("full")
    spec = parse_spec(reference.spec_text)
    replay = study_replay(spec, arm_studies.get_trials("full", measurements=True))
    assert replay is not None and replay.recommended is not None, replay
    best = replay.recommended
    assert best.stopped  # the prediction is not trivially "nothing"
    assert parse_spec(suggested_next("full", arm_studies)).early_stopping == best.rule

    data = yaml.safe_load(reference.spec_text)
    data.update(study="live", early_stopping=best.rule.as_block())
    run_study_text(tmp_path, arm_studies, yaml.safe_dump(data, sort_keys=False), "live")
    live = {e.number: e.step for e in arm_studies.get_events("live",
                                                             kind=EventKind.STOPPED_EARLY)}
    assert live == dict(best.stopped)


# --- Each arm's rungs survive a kill -----------------------------------------------------------

# Trials alternate arms (depth 1: A, depth 2: B) and run one at a time; the loss is the same at
# every step, set by the trial's number. Trial 2's first attempt waits, so the driver is killed
# with trials 0 and 1 finished and trial 2 running; its second attempt, after the resume, meets
# arm A's rung as trial 0 filled it.
KILLED_OBJECTIVE = """
import time
from pathlib import Path
from searchsvc import sdk

LOSS = {0: 0.1, 1: 5.0, 2: 0.2, 3: 4.0, 4: 0.15, 5: 4.5}

def train(config):
    number = sdk.trial_context().number
    marker = Path("trial-2-started")
    if number == 2 and not marker.exists():
        marker.write_text("")
        time.sleep(120)  # killed here
    for _ in range(3):
        sdk.report({"loss": LOSS[number]})
"""
KILLED_STUDY = """\
study: killed-arms
objective: arms_objective:train
metric: loss
mode: min
searcher: quasi_random
early_stopping: {rule: asha, grace_period: 1, reduction_factor: 3}
budget: {trials: 6, max_steps: 3, max_concurrent: 1}
noise: off
parameters:
  depth: {role: scientific, values: [1, 2]}
  x: {role: nuisance, low: 0.0, high: 1.0}
"""


def test_a_resumed_arm_is_judged_by_the_rungs_its_own_earlier_trials_set(tmp_path: Path) -> None:
    (tmp_path / "arms_objective.py").write_text(textwrap.dedent(KILLED_OBJECTIVE))
    (tmp_path / "study.yaml").write_text(KILLED_STUDY)
    home = tmp_path / "home"
    store = SqlStore(f"sqlite:///{home / 'searchsvc.db'}")
    proc = searchsvc("run", "study.yaml", "--num-cpus", "2", "--no-preflight", home=home,
                     cwd=tmp_path, start_new_session=True)
    deadline = time.monotonic() + 180
    while not (tmp_path / "trial-2-started").exists():
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "trial 2 did not start in time"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its Ray, like a crash
    proc.communicate(timeout=60)
    before = {t.number: t.state for t in store.get_trials("killed-arms")}
    assert before[0] == before[1] == TrialState.COMPLETED and 4 not in before

    resumed = searchsvc("resume", "killed-arms", "--num-cpus", "2", home=home, cwd=tmp_path)
    output, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, output
    trials = {t.number: t for t in store.get_trials("killed-arms")}
    stops = {e.number: e for e in store.get_events("killed-arms", kind=EventKind.STOPPED_EARLY)}
    assert trials[2].attempts == 2 and sorted(stops) == [2, 4, 5]
    # Trial 2 (A) meets A's rung as trial 0 left it, before the kill: cutoff 0.1. Had the rung
    # not been refilled it would have been the first there and gone on; had it been shared
    # with arm B (trial 1's 5.0) the cutoff would be far above its 0.2.
    assert (stops[2].step, stops[2].data["cutoff"]) == (1, pytest.approx(0.1))
    a, b = [0.1, 0.2], [5.0, 4.0]  # each arm's rung values before trials 4 and 5
    assert stops[4].data["cutoff"] == pytest.approx(top_third(a))
    assert stops[5].data["cutoff"] == pytest.approx(top_third(b))
    assert trials[3].state == TrialState.COMPLETED  # B's 4.0 beats B's only earlier value


def top_third(losses: list[float]) -> float:
    """ASHA's cutoff (reduction factor 3) over ``losses``, as numpy interpolates it."""
    ordered = sorted(losses)
    position = (len(ordered) - 1) / 3
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
