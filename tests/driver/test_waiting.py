"""Trials that wait for resources say so in the live progress, once each, after a minute: the
pure rule, the words, and on a real Ray a trial Tune holds pending because the first trial has
every CPU."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from searchsvc.driver import RunOptions, create_study, run_study, waiting
from searchsvc.driver.waiting import Waits, resource_request, wait_message
from searchsvc.searchers import create_searcher
from searchsvc.spec import parse_spec
from searchsvc.store import SqlStore
from searchsvc.usecases import validate_text


def test_a_trial_is_told_once_after_waiting_long_enough_and_forgotten_once_placed() -> None:
    waits = Waits(after_s=60)
    assert waits.overdue({1, 2}, now=0.0) == {}
    assert waits.overdue({1, 2}, now=59.0) == {}
    assert waits.overdue({1, 2}, now=61.0) == {1: 61.0, 2: 61.0}
    assert waits.overdue({1, 2}, now=90.0) == {}  # told once
    assert waits.overdue({2, 3}, now=100.0) == {} and waits.waiting == 2  # 1 was placed
    assert waits.overdue({3}, now=161.0) == {3: 61.0}


def test_the_words_name_the_request_and_what_is_free() -> None:
    plain = parse_spec(textwrap.dedent("""\
        study: s
        objective: objectives.synthetic:branin
        metric: value
        mode: min
        resources: {cpu: 2, gpu: 0.5}
        parameters:
          x1: {low: 0.0, high: 1.0}
        """))
    assert resource_request(plain.resources) == "2 CPU, 0.5 GPU"
    parallel = parse_spec(plain.source.text.replace("gpu: 0.5", "workers: 4"))
    assert resource_request(parallel.resources) == "4 workers x 2 CPU"
    pending = wait_message(3, 72.4, pending=True, request="2 CPU", free={"CPU": 1.0})
    assert pending == ("trial 3 has waited 1m 12s for resources (2 CPU; 1 CPU, 0 GPU free now): "
                       "the cluster is busy, or waits for an autoscaler to add a node")
    unplaced = wait_message(0, 65, pending=False, request="4 workers x 2 CPU",
                            free={"CPU": 0.0})
    assert unplaced.startswith("trial 0 has reported no step in 1m 05s: its workers "
                               "(4 workers x 2 CPU) wait to be placed")


@pytest.mark.slow
def test_a_trial_waiting_for_cpus_is_named_in_the_progress(
        ray_local, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waiting, "WAIT_WARN_S", 1.5)
    (tmp_path / "slow_steps.py").write_text(textwrap.dedent("""\
        import time

        from searchsvc import sdk


        def train(config):
            for step in range(1, 5):
                time.sleep(1.0)
                sdk.report({"loss": config["x"] / step})
        """))
    # Both trials are created at once; each needs every CPU, so the second waits for the first.
    cpus = free_cpus_of_the_shared_ray()
    spec = validate_text(textwrap.dedent(f"""\
        study: waits
        objective: slow_steps:train
        metric: loss
        mode: min
        searcher: random
        seed: 0
        budget: {{trials: 2, max_concurrent: 2, max_steps: 4}}
        resources: {{cpu: {cpus:g}}}
        parameters:
          x: {{role: nuisance, low: 0.1, high: 1.0}}
        """), file=str(tmp_path / "waits.yaml"))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    shown = io.StringIO()
    options = RunOptions(live_progress=False, progress_stream=shown)
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    assert run_study(spec.name, store, options, searcher=searcher).study.state == "completed"
    told = [line for line in shown.getvalue().splitlines() if "waited" in line]
    # The trial that started second waited for the first one's CPUs (its 4 steps, well past
    # the threshold): it is named, once. On a busy machine the first one may wait to be
    # placed too, and then is named as well.
    later = max(store.get_trials("waits"), key=lambda t: t.started_at or 0.0)
    named = [line for line in told if line.startswith(f"warning: trial {later.number} has ")]
    assert len(named) == 1, shown.getvalue()
    assert f"for resources ({cpus:g} CPU; 0 CPU, 0 GPU free now)" in named[0]
    assert len(told) == len(set(told)) <= 2


def free_cpus_of_the_shared_ray(settle_s: float = 30.0) -> float:
    """The CPUs of the shared Ray that are free once the workers earlier tests left behind
    have stopped (all of them, unless one of Ray's own leaks still holds a share: a study asking
    for all would then wait forever)."""
    import time

    import ray

    total = ray.cluster_resources()["CPU"]
    deadline = time.monotonic() + settle_s
    while (free := ray.available_resources().get("CPU", 0.0)) < total and (
            time.monotonic() < deadline):
        time.sleep(0.5)
    return float(free)
