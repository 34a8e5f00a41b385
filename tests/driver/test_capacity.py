"""A trial's resources must fit on one node: a request no node of the cluster can meet is
refused at once with the study file's line and the cluster's numbers, instead of every trial
waiting forever; a Ray Client address is refused with what to do instead."""

from __future__ import annotations

import time

import pytest

from searchsvc import usecases
from searchsvc.driver.capacity import capacity_issues, concurrent_trials
from searchsvc.errors import SpecError
from searchsvc.spec import StudySpec, parse_spec

SPEC = """\
study: big
objective: objectives.synthetic:branin
metric: value
mode: min
budget: {{trials: 2}}
resources: {{cpu: {cpu}, gpu: {gpu}{workers}}}
parameters:
  x1: {{low: -5.0, high: 10.0}}
  x2: {{low: 0.0, high: 15.0}}
"""
NODES = [{"Alive": True, "Resources": {"CPU": 8.0, "GPU": 1.0}},
         {"Alive": True, "Resources": {"CPU": 16.0}},
         {"Alive": False, "Resources": {"CPU": 64.0, "GPU": 8.0}}]  # gone: counts for nothing


def spec_of(cpu: float, gpu: float, workers: int | None = None) -> StudySpec:
    given = "" if workers is None else f", workers: {workers}"
    return parse_spec(SPEC.format(cpu=cpu, gpu=gpu, workers=given), file="big.yaml")


def issues(cpu: float, gpu: float, workers: int | None = None) -> list[str]:
    return [i.render() for i in capacity_issues(spec_of(cpu, gpu, workers), NODES)]


def test_what_one_node_can_hold_runs() -> None:
    assert issues(16, 0) == [] and issues(8, 1) == [] and issues(0.25, 0.5) == []


def test_more_than_any_node_has_is_refused_with_the_line_and_the_numbers() -> None:
    [cpu] = issues(32, 0)
    assert cpu.startswith("big.yaml:6: resources.cpu: 32 CPUs per trial, but no node of this "
                          "Ray cluster has that many (largest: 16; 2 node(s), 24 in all)")
    assert cpu.endswith("(got 32.0)") and "--num-cpus" in cpu
    [gpu] = issues(1, 2)  # 2 GPUs in all, never on one node
    assert "resources.gpu: 2 GPUs per trial" in gpu and "(largest: 1;" in gpu


def test_data_parallel_workers_must_each_fit_a_node_and_together_the_cluster() -> None:
    # 3 workers x 8 CPUs = 24: each fits a node, together exactly the cluster.
    assert issues(8, 0, workers=3) == []
    [total] = issues(8, 0, workers=4)
    assert total.startswith("big.yaml:6: resources.workers: 4 workers x 8 CPU is 32 CPUs per "
                            "trial, but this Ray cluster has 24 in all (2 node(s))")
    assert "at most 3 workers" in total and total.endswith("(got 4)")
    [gpus] = issues(1, 1, workers=2)  # one GPU in the cluster
    assert "2 workers x 1 GPU is 2 GPUs per trial" in gpus
    [each] = issues(17, 0, workers=2)  # no node holds one worker: said per worker
    assert "resources.cpu: 17 CPUs per worker, but no node" in each


def test_a_bundle_must_fit_whole_on_one_node() -> None:
    # 9 CPUs exist on the 16-CPU node and a GPU on the other, but no node has both.
    [both] = issues(9, 1)
    assert "9 CPUs and 1 GPUs per trial, but no node of this Ray cluster has both" in both
    # 4 workers x 6 CPUs = 24 fits the cluster's sum, but the nodes hold 1 + 2 such workers.
    assert issues(6, 0, workers=3) == []
    [packed] = issues(6, 0, workers=4)
    assert "the nodes of this Ray cluster hold 3 workers of 6 CPU and 0 GPU at most" in packed


def test_setting_workers_makes_trials_ray_train_runs_even_with_one() -> None:
    assert not spec_of(1, 0).resources.data_parallel  # a plain Tune trial
    one = spec_of(1, 0, workers=1).resources
    assert one.data_parallel and one.worker_count == 1  # a Train run of one worker


def test_data_parallel_trials_run_as_many_at_once_as_the_cluster_holds() -> None:
    assert concurrent_trials(spec_of(4, 0, workers=2), NODES) == 3  # (2 + 4) workers // 2
    assert concurrent_trials(spec_of(6, 0, workers=2), NODES) == 1  # (1 + 2) // 2, not 24 // 12
    assert concurrent_trials(spec_of(1, 0.5, workers=2), NODES) == 1  # 1 GPU // 1
    assert concurrent_trials(spec_of(16, 0, workers=2), NODES) == 1  # never below 1
    assert concurrent_trials(spec_of(1, 0), NODES) is None  # Tune places ordinary trials
    assert concurrent_trials(spec_of(8, 0, workers=1), NODES) == 3  # a Train run of one


@pytest.mark.slow
def test_a_study_asking_for_more_than_the_cluster_fails_at_once(ray_local) -> None:
    spec = spec_of(64, 0)
    started = time.monotonic()
    with pytest.raises(SpecError, match=r"resources\.cpu: 64 CPUs per trial") as refused:
        usecases.preflight(spec)
    assert refused.value.exit_code == 2
    assert time.monotonic() - started < 30  # refused, not left waiting


def test_ray_client_addresses_are_refused_with_what_to_do_instead() -> None:
    from searchsvc.driver import RunOptions
    from searchsvc.errors import RunnerError

    spec = spec_of(1, 0)
    with pytest.raises(RunnerError, match=r"Ray Client \(ray://\) is not supported") as refused:
        usecases.preflight(spec, RunOptions(address="ray://head:10001"))
    assert "--address HOST:PORT or auto" in str(refused.value)
