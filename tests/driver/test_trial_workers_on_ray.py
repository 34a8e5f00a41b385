"""Ray Tune gives every trial worker a runtime environment of environment variables, and Ray
starts a worker with one through an extra Python process; on the node the driver started, whose
workers inherit those variables already, trials start without it
(raycompat.trainables_inherit_node_environment). On a real Ray: the variables reach the trial
either way, and a variable the node did not start with still gets there through Tune's runtime
environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from searchsvc.core import TrialState
from tests.driver.studies import run_in

pytestmark = pytest.mark.slow

STUDY = textwrap.dedent("""
    study: environment
    objective: probe:train
    metric: loss
    mode: min
    searcher: random
    noise: off
    budget: {trials: 2, max_concurrent: 2, max_steps: 1}
    parameters:
      x: {role: nuisance, low: 0.1, high: 1.0}
    """)

PROBE = """
    import os

    import ray

    from searchsvc import sdk


    def train(config):
        runtime_env = ray.get_runtime_context().runtime_env
        sdk.report({"loss": config["x"],
                    "own_variables": float(len(runtime_env.get("env_vars") or {})),
                    "fork_disabled": float(os.environ.get("PL_DISABLE_FORK") == "1"),
                    "aws_key": float(os.environ.get("AWS_ACCESS_KEY_ID") == "planted")})
    """


def _metrics(tmp_path: Path) -> list[dict[str, float]]:
    outcome, store = run_in(tmp_path, STUDY, probe=PROBE)
    assert outcome.study.state == "completed"
    trials = store.get_trials("environment", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 2
    return [t.measurements[0].metrics for t in trials]


def test_trials_on_the_drivers_own_node_inherit_tunes_variables_without_a_runtime_env(
        ray_local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    for metrics in _metrics(tmp_path):
        assert metrics["fork_disabled"] == 1.0  # Tune's variable, from the node
        assert metrics["own_variables"] == 0.0  # started without a runtime environment


def test_a_variable_tune_passes_on_that_the_node_lacks_reaches_the_trial(
        ray_local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Set in the driver after its node started: only Tune's runtime environment carries it.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "planted")
    for metrics in _metrics(tmp_path):
        assert metrics["aws_key"] == 1.0 and metrics["fork_disabled"] == 1.0
        assert metrics["own_variables"] >= 2.0  # Tune's runtime environment, as before


def test_a_node_started_before_the_driver_loads_tune_still_holds_every_variable_tune_sets(
        tmp_path: Path) -> None:
    # A CLI run starts its node before it imports the Tune side of the driver, which sets
    # variables of its own (RAY_CHDIR_TO_TRIAL_DIR=0): the node must already hold them, or
    # every trial worker gets Tune's runtime environment after all.
    script = textwrap.dedent("""
        import os
        from searchsvc.driver.session import embedded_environment, start_embedded_ray
        start_embedded_ray(num_cpus=1, log_to_driver=False)
        import searchsvc.driver.tune_run
        from ray.tune.execution import class_cache
        wanted = {**class_cache.DEFAULT_ENV_VARS,
                  **{k: os.environ[k] for k in class_cache.ENV_VARS_TO_PROPAGATE
                     if k in os.environ}}
        node = embedded_environment()
        print("MISSING", sorted(k for k, v in wanted.items() if node.get(k) != v))
        """)
    env = {k: v for k, v in os.environ.items()
           if k not in ("AWS_ACCESS_KEY_ID", "RAY_CHDIR_TO_TRIAL_DIR")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)
    assert "MISSING []" in done.stdout, done.stdout + done.stderr[-3000:]


# Two stages: the search's 4 trials, then 4 seed repeats (the best 2 configurations, 2 seeds
# each), asked for only once every trial of the search has ended, so the run passes through a
# moment with no trial running or waiting. The first two trials of each stage wait for each
# other, so each stage has two workers busy at once however slowly workers start; every other
# trial is a fraction of a worker's start.
TWO_STAGES = textwrap.dedent("""
    study: two-stages
    objective: paired:train
    metric: loss
    mode: min
    searcher: random
    noise: {top_k: 2, seeds: 2}
    budget: {trials: 4, max_concurrent: 2, max_steps: 2}
    parameters:
      x: {role: nuisance, low: 0.1, high: 1.0}
      folder: {role: fixed, value: FOLDER}
    """)

PAIRED = """
    import os
    import time
    from pathlib import Path

    from searchsvc import sdk

    PAIRS = {0: 1, 1: 0, 4: 5, 5: 4}  # each stage's first two trials


    def train(config):
        number = sdk.trial_context().number
        folder = Path(config["folder"])
        (folder / f"started-{number}").write_text("")
        partner = PAIRS.get(number)
        deadline = time.monotonic() + 240
        while partner is not None and not (folder / f"started-{partner}").exists():
            assert time.monotonic() < deadline, f"trial {partner} never started"
            time.sleep(0.05)
        for _ in range(2):
            sdk.report({"loss": config["x"], "worker": float(os.getpid())})
    """


def _trainable_actors() -> set[str]:
    """Every trial worker (Tune's function trainable) the shared Ray has created, live or not."""
    from ray._private import state

    return {key for key, actor in state.actors().items()
            if str(actor.get("ActorClassName")).endswith("ImplicitFunc")}


def test_a_study_keeps_its_two_workers_across_a_moment_with_no_trial_waiting(
        ray_local, tmp_path: Path) -> None:
    """Tune alone keeps one ended trial's worker when no trial waits: the second stage would
    start a worker for its second trial (and, were its trials shorter than a start, one for
    each trial after it, ended as it starts). The study's workers are kept instead: the
    whole run creates exactly its two (raycompat.keep_workers_for)."""
    before = _trainable_actors()
    outcome, store = run_in(tmp_path, TWO_STAGES.replace("FOLDER", json.dumps(str(tmp_path))),
                            paired=PAIRED)
    assert outcome.study.state == "completed"
    trials = store.get_trials("two-stages", measurements=True)
    assert [t.repeat_of is not None for t in trials] == [False] * 4 + [True] * 4
    assert all(t.state == TrialState.COMPLETED for t in trials)
    assert len(_trainable_actors() - before) == 2
    assert len({t.measurements[0].metrics["worker"] for t in trials}) == 2
