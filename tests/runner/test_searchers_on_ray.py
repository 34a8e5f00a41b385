"""Each scheduler-based searcher does its job on Ray Tune, end to end through the store."""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path

import pytest

from objectives.synthetic import pbt_toy_fixed_score
from searchsvc.runner import RunOptions, create_study, run_study
from searchsvc.store import (
    EVENT_EXPLOIT,
    EVENT_STOPPED_EARLY,
    TRIAL_COMPLETED,
    TRIAL_PRUNED,
    Store,
)
from searchsvc.validation import validate_text

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SPACES = ROOT / "spaces"
VAL_EXAMPLES = 360  # digits validation split: 20% of 1797


def run_text(text: str, store: Store, file: Path) -> None:
    spec = validate_text(text, file=str(file))
    options = RunOptions(live_progress=False)
    create_study(spec, store, options)
    run_study(spec.name, store, options)


def with_searcher(text: str, study: str, searcher: str, options: str) -> str:
    text = re.sub(r"(?m)^study: .*$", f"study: {study}", text)
    text = re.sub(r"(?m)^searcher: .*$", f"searcher: {searcher}", text)
    return re.sub(r"(?m)^searcher_options: .*$", f"searcher_options: {options}", text)


def steps_spent(store: Store, study: str) -> int:
    return sum(t.last_step or 0 for t in store.get_trials(study))


def best(store: Store, study: str) -> float:
    return min(t.best_value for t in store.get_trials(study) if t.best_value is not None)


@pytest.fixture(scope="module")
def digits_store(ray_local, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The digits study run by full-budget random search and by each multi-fidelity searcher."""
    store = Store(f"sqlite:///{tmp_path_factory.mktemp('mf') / 'db.sqlite'}")
    path = SPACES / "digits_asha.yaml"
    text = path.read_text()
    run_text(with_searcher(text, "full", "random", "{}"), store, path)
    for name in ("asha", "hyperband", "bohb"):
        options = "{grace_period: 1, reduction_factor: 3}"
        run_text(with_searcher(text, name, name, options), store, path)
    return store


def within_noise_of_full_budget(store: Store, study: str) -> bool:
    """Noise: two standard errors of a validation error rate measured on 360 examples."""
    p = best(store, "full")
    noise = 2 * math.sqrt(max(p * (1 - p), 1 / VAL_EXAMPLES) / VAL_EXAMPLES)
    return best(store, study) <= p + noise


@pytest.mark.parametrize("searcher", ["asha", "hyperband", "bohb"])
def test_multi_fidelity_spends_at_most_half_the_steps_for_a_result_within_noise(
        digits_store: Store, searcher: str) -> None:
    full_steps, steps = steps_spent(digits_store, "full"), steps_spent(digits_store, searcher)
    assert full_steps == 24 * 9
    assert steps <= 0.5 * full_steps
    assert within_noise_of_full_budget(digits_store, searcher)


@pytest.mark.parametrize("searcher", ["asha", "hyperband", "bohb"])
def test_pruned_trials_are_recorded_with_their_step_and_reason(digits_store: Store,
                                                               searcher: str) -> None:
    trials = digits_store.get_trials(searcher, measurements=True)
    pruned = [t for t in trials if t.state == TRIAL_PRUNED]
    assert pruned and any(t.state == TRIAL_COMPLETED and t.last_step == 9 for t in trials)
    events = {e.trial_number: e for e in digits_store.get_events(searcher,
                                                                 kind=EVENT_STOPPED_EARLY)}
    for t in pruned:
        assert t.last_step < 9 and t.measurements[-1].step == t.last_step
        assert f"stopped early by {searcher} at step {t.last_step}" in t.error
        event = events[t.number]
        assert event.step == t.last_step and event.data["rung"] <= t.last_step
        # It was stopped because it was worse than the rung's cutoff (min mode), or (bohb's
        # promotion quota) because the rung had let its share go on already.
        if event.data["reason"] == "below_cutoff":
            assert event.data["value"] > event.data["cutoff"]
        else:
            assert event.data["reason"] == "rung_quota_full" and searcher == "bohb"
            assert "quota" in t.error
    assert set(events) == {t.number for t in pruned}


def test_pbt_beats_its_best_initial_config_and_records_lineage(ray_local, tmp_path: Path
                                                               ) -> None:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    path = SPACES / "toy_pbt.yaml"
    run_text(path.read_text(), store, path)
    trials = store.get_trials("toy_pbt")
    assert [t.state for t in trials] == [TRIAL_COMPLETED] * 8
    best_initial = max(pbt_toy_fixed_score(t.config["learning_rate"], 24) for t in trials)
    assert max(t.best_value for t in trials) > best_initial
    exploits = store.get_events("toy_pbt", kind=EVENT_EXPLOIT)
    assert exploits
    numbers = {t.number for t in trials}
    for event in exploits:
        assert event.trial_number in numbers and event.data["parent"] in numbers
        assert event.data["parent"] != event.trial_number
        assert set(event.data["new_config"]) == {"learning_rate"}
        assert event.step >= 2  # not before the first perturbation interval


# pbt_toy, also reporting the worker process that ran each step
PBT_TOY_WITH_PID = """
import os

from objectives.synthetic import pbt_toy_gain
from searchsvc import sdk


def train(config):
    steps = sdk.max_steps(20)
    state = sdk.restore() or {"score": 0.0, "step": 0}
    score = float(state["score"])
    for step in range(int(state["step"]) + 1, steps + 1):
        score += pbt_toy_gain(float(config["learning_rate"]), step, steps)
        sdk.report({"score": score, "worker_pid": os.getpid()},
                   state=lambda score=score, step=step: {"score": score, "step": step})
"""


def test_pb2_explores_within_the_nuisance_bounds_and_records_lineage(ray_local, tmp_path: Path
                                                                    ) -> None:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    (tmp_path / "pbt_toy_pid.py").write_text(PBT_TOY_WITH_PID)
    text = with_searcher((SPACES / "toy_pbt.yaml").read_text(), "toy_pb2", "pbt",
                         "{variant: pb2, perturbation_interval: 2, quantile_fraction: 0.25, "
                         "synch: true}")
    text = re.sub(r"(?m)^objective: .*$", "objective: pbt_toy_pid:train", text)
    run_text(text, store, tmp_path / "toy_pb2.yaml")
    trials = store.get_trials("toy_pb2", measurements=True)
    assert [t.state for t in trials] == [TRIAL_COMPLETED] * 8
    exploits = store.get_events("toy_pb2", kind=EVENT_EXPLOIT)
    assert exploits
    for event in exploits:
        assert event.data["parent"] != event.trial_number
        assert 1.0e-4 <= event.data["new_config"]["learning_rate"] <= 1.0
    # Paused trials resume on the workers Tune keeps: one worker process per concurrent trial
    # (8 in two runs). Before StudySearch kept the search open to the end, 12 processes
    # reported steps: resumed trials started new ones.
    workers = {m.metrics["worker_pid"] for t in trials for m in t.measurements}
    assert len(workers) <= 8, len(workers)
    # Not asserted: that PB2 beats the best initial config. It did in a quiet run and tied it
    # in one run on a loaded machine; with 8 trials its GP has too little data to promise it.


def test_nas_finds_an_architecture_better_than_the_median_random_one(ray_local, tmp_path: Path
                                                                     ) -> None:
    store = Store(f"sqlite:///{tmp_path / 'db.sqlite'}")
    path = SPACES / "digits_nas.yaml"
    text = path.read_text()
    run_text(text, store, path)
    run_text(with_searcher(text, "nas_random", "random", "{}").replace(
        "trials: 20", "trials: 10"), store, path)
    nas = store.get_trials("digits_nas")
    assert all(t.state == TRIAL_COMPLETED for t in nas)
    for t in nas:
        c = t.config
        assert sorted(k for k in c if k.startswith("units_")) == [
            f"units_{i}" for i in range(c["num_layers"])]
        channels = sorted(k for k in c if k.startswith("channels_"))
        assert channels == ([f"channels_{i}" for i in range(c["conv_layers"])]
                            if c["model"] == "cnn" else [])
    random_median = statistics.median(t.best_value for t in store.get_trials("nas_random"))
    assert best(store, "digits_nas") < random_median
