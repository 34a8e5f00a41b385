"""Seed repeats on Ray, through the real command line: after the search, each arm's best
configurations run again with new seeds as linked trials; a driver killed mid-repeat resumes
with nothing lost or run twice, and the report's verdict matches the planted truth
(objectives.synthetic.noisy: variant b is worse by 6 seed sigmas)."""

from __future__ import annotations

import json
import os
import signal
import textwrap
import time
from pathlib import Path

import pytest

from objectives.synthetic import NOISY_SIGMA
from searchsvc.core import TrialState
from searchsvc.store import SqlStore, Store
from tests.driver.test_resume import searchsvc

pytestmark = pytest.mark.slow

SEARCH, TOP_K, SEEDS, ARMS = 8, 2, 3, 2
REPEATS = ARMS * TOP_K * SEEDS

SPEC = f"""
study: noisy
objective: objectives.synthetic:noisy
metric: loss
mode: min
budget: {{trials: {SEARCH}, max_concurrent: 2, max_steps: 3}}
noise: {{top_k: {TOP_K}, seeds: {SEEDS}}}
parameters:
  variant: {{role: scientific, values: [a, b]}}
  x: {{low: 0.0, high: 1.0}}
  sleep_s: {{role: fixed, value: 0.3}}
"""


def completed_repeats(store: Store) -> int:
    try:
        trials = store.get_trials("noisy")
    except Exception:
        return 0
    return sum(t.repeat_of is not None and t.state == TrialState.COMPLETED for t in trials)


def test_repeats_are_linked_survive_a_killed_driver_and_decide_the_verdict(tmp_path: Path
                                                                           ) -> None:
    home = tmp_path / "home"
    spec = tmp_path / "noisy.yaml"
    spec.write_text(textwrap.dedent(SPEC))
    store = SqlStore(f"sqlite:///{home / 'searchsvc.db'}")

    proc = searchsvc("run", str(spec), "--num-cpus", "2", "--no-preflight", home=home,
                     cwd=tmp_path, start_new_session=True)
    deadline = time.monotonic() + 240
    while completed_repeats(store) < 2:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        assert time.monotonic() < deadline, "no repeat finished in time"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the driver and its Ray, mid-repeat
    proc.communicate(timeout=60)
    before = {t.number: t for t in store.get_trials("noisy") if t.finished}
    assert all(n in before for n in range(SEARCH))  # repeats start only after the search
    assert 2 <= sum(t.repeat_of is not None for t in before.values()) < REPEATS
    assert store.get_study("noisy").total_trials == SEARCH + REPEATS  # counted from the start

    resumed = searchsvc("resume", "noisy", "--num-cpus", "2", home=home, cwd=tmp_path)
    output, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, output
    assert "study noisy: completed" in output

    after = {t.number: t for t in store.get_trials("noisy", measurements=True)}
    assert sorted(after) == list(range(SEARCH + REPEATS))  # no slot twice, none missing
    assert all(t.state == TrialState.COMPLETED for t in after.values())
    for number, old in before.items():  # finished before the kill: kept, not re-run
        assert (after[number].attempts, after[number].finished_at) == (1, old.finished_at)
    search = [after[n] for n in range(SEARCH)]
    for arm in ("a", "b"):
        top = sorted((t for t in search if t.arm == {"variant": arm}),
                     key=lambda t: (t.best_value, t.number))[:TOP_K]
        repeats = [t for t in after.values() if t.repeat_of in {o.number for o in top}]
        assert len(repeats) == TOP_K * SEEDS
        for r in repeats:
            original = after[r.repeat_of]  # type: ignore[index]
            assert r.config == original.config and r.arm == original.arm
            assert r.seed != original.seed
            assert [m.step for m in r.measurements if m.attempt == r.attempts] == [1, 2, 3]
    assert len({t.seed for t in after.values()}) == SEARCH + REPEATS

    report = next((home / "results" / "noisy").rglob("report.json")).parent
    data = json.loads((report / "report.json").read_text())
    [verdict] = data["isolation"]
    assert (verdict["verdict"], verdict["best_value"]) == ("differs", "a")
    assert all(p["repeats"] == SEEDS for p in verdict["points"])
    low, high = data["noise"]["sigma_ci"]
    assert low <= NOISY_SIGMA <= high and data["noise"]["dof"] == ARMS * TOP_K * (SEEDS - 1)
    assert len(data["repeats"]) == REPEATS
    csv_header = (report / "trials.csv").read_text().split("\n")[0]
    assert "repeat_of" in csv_header.split(",")


REPEATED_OBJECTIVE = '''
from searchsvc import sdk


def train(config):
    for step in range(1, 3):
        sdk.report({"loss": config["x"] / step + (config["variant"] == "b")})
'''

REPEATED_STUDY = """
study: carried
objective: repeated:train
metric: loss
mode: min
searcher: random
budget: {trials: 4, max_concurrent: 2, max_steps: 2}
noise: {top_k: 1, seeds: 2}
parameters:
  variant: {role: scientific, values: [a, b]}
  x: {low: 0.0, high: 1.0}
"""


def test_repeats_run_in_the_searchs_own_tune_run(ray_local, tmp_path: Path) -> None:
    """With no scheduler, the repeats are the search's next stage, in its own Ray Tune run (one
    run folder), where Tune hands them the workers the search used; a second Tune run would
    start every worker again."""
    from tests.driver.studies import run_in

    outcome, store = run_in(tmp_path, REPEATED_STUDY, repeated=REPEATED_OBJECTIVE)

    assert outcome.study.state == "completed"
    assert (outcome.finished, outcome.repeats_finished) == (4, 4)
    trials = store.get_trials("carried")
    assert len(trials) == 8 and all(t.state == TrialState.COMPLETED for t in trials)
    [run] = (Path(outcome.study.results_dir) / "ray").glob("run-*")
    assert sorted(p.name for p in run.glob("trial_*")) == [f"trial_{n:05d}" for n in range(8)]
