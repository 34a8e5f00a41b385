"""A study stopped mid-way (Ctrl-C, or the driver killed) resumes with no finished trial lost or
re-run: the real command line, in a subprocess, as a user would do it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from searchsvc.core import TrialState
from searchsvc.store import SqlStore, Store

pytestmark = pytest.mark.slow

TRIALS, STEPS = 12, 5

OBJECTIVE = """
import time
from ray import tune

def train(config):
    for step in range(5):
        time.sleep(0.25)
        tune.report({"loss": config["x"] / (step + 1)})
"""

SPEC = f"""
study: stoppable
objective: slow_objective:train
metric: loss
mode: min
searcher: quasi_random
budget: {{trials: {TRIALS}, max_concurrent: 2, max_steps: {STEPS}}}
parameters:
  x: {{low: 0.0, high: 1.0}}
"""


def searchsvc(*args: str, home: Path, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "SEARCHSVC_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "searchsvc.cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kwargs)


def wait_for_completed(store: Store, at_least: int, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        try:
            trials = store.get_trials("stoppable")
        except Exception:
            trials = []
        if sum(t.state == TrialState.COMPLETED for t in trials) >= at_least:
            return
        time.sleep(0.2)
    raise AssertionError("the study did not progress in time")


# Each way of stopping once, and each kind of searcher once: a searcher's replay on resume does
# not depend on how its driver stopped.
@pytest.mark.parametrize(("how", "searcher"), [
    ("ctrl-c", "quasi_random"),
    ("sigkill", "bayesian"),  # its model is rebuilt from the store on resume
])
def test_stopped_study_resumes_without_losing_or_rerunning_trials(tmp_path: Path, how: str,
                                                                  searcher: str) -> None:
    home = tmp_path / "home"
    (tmp_path / "slow_objective.py").write_text(textwrap.dedent(OBJECTIVE))
    spec = tmp_path / "stoppable.yaml"
    spec.write_text(textwrap.dedent(SPEC).replace("searcher: quasi_random",
                                                  f"searcher: {searcher}"))
    store = SqlStore(f"sqlite:///{home / 'searchsvc.db'}")

    proc = searchsvc("run", str(spec), "--num-cpus", "2", "--no-preflight", home=home,
                     cwd=tmp_path, start_new_session=True)
    wait_for_completed(store, 4, proc, timeout=180)
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
        output, _ = proc.communicate(timeout=120)
        assert proc.returncode == 130, output
        assert "searchsvc resume stoppable" in output
        assert store.get_study("stoppable").state == "interrupted"
    else:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray it started, like a crash
        proc.communicate(timeout=60)
        assert store.get_study("stoppable").state == "running"  # nobody could say otherwise

    before = {t.number: t for t in store.get_trials("stoppable", measurements=True)
              if t.state == TrialState.COMPLETED}
    assert 4 <= len(before) < TRIALS

    resumed = searchsvc("resume", "stoppable", "--num-cpus", "2", home=home, cwd=tmp_path)
    output, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, output
    assert "study stoppable: completed" in output and "report: " in output

    after = {t.number: t for t in store.get_trials("stoppable", measurements=True)}
    assert sorted(after) == list(range(TRIALS))
    assert all(t.state == TrialState.COMPLETED for t in after.values())
    for number, old in before.items():  # untouched: not re-run, nothing lost
        new = after[number]
        assert (new.attempts, new.finished_at, new.best_value) == (1, old.finished_at,
                                                                    old.best_value)
        assert len(new.measurements) == STEPS
    for t in after.values():  # every trial has one complete final attempt
        assert [m.step for m in t.measurements if m.attempt == t.attempts] == list(
            range(1, STEPS + 1))
