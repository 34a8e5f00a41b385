"""Whether the Ray cluster can ever hold one trial: a trial's resources (each worker's, for a
data-parallel trial) must fit on one node, and a data-parallel trial's workers together must
fit in the cluster, so a request that can never be placed is refused at once, naming the
study-file line and the cluster's numbers, instead of leaving every trial pending forever.

A data-parallel trial's launcher takes no CPU of its own (Ray Train places the workers), so Tune
cannot see what a trial holds: :func:`concurrent_trials` caps how many run at once by what the
cluster's workers can hold.

The service checks a submitted study against the nodes its drivers will run on before it
accepts it: :func:`embedded_nodes` (each study's own embedded Ray) or the nodes of the cluster at
``--address``, which ``python -m searchsvc.driver.capacity ADDRESS`` prints as JSON (a child
process, so the API's process never joins the cluster as a Ray driver)."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from searchsvc.errors import SpecError, SpecIssue
from searchsvc.spec import StudySpec


def capacity_issues(spec: StudySpec, nodes: Sequence[Mapping[str, Any]]) -> list[SpecIssue]:
    """The resources of ``spec`` that no alive node of ``nodes`` (``ray.nodes()``) offers:
    one trial's (one worker's) on any node, then a data-parallel trial's in the cluster."""
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive", True)]
    issues = _per_node(spec, alive)
    return issues or _per_cluster(spec, alive)


def _per_node(spec: StudySpec, alive: list[Mapping[str, Any]]) -> list[SpecIssue]:
    issues = []
    each = "per worker" if spec.resources.worker_count > 1 else "per trial"
    for key, field, asked in (("CPU", "cpu", spec.resources.cpu),
                              ("GPU", "gpu", spec.resources.gpu)):
        if not asked:
            continue
        offered = [float(r.get(key, 0.0)) for r in alive]
        if any(have >= asked for have in offered):
            continue
        largest = max(offered, default=0.0)
        names = f"{key}s" if asked != 1 else key
        issues.append(spec.source.issue(
            ("resources", field),
            f"{asked:g} {names} {each}, but no node of this Ray cluster has that many "
            f"(largest: {largest:g}; {len(alive)} node(s), {sum(offered):g} in all), so no "
            f"trial could ever start. Ask for at most {largest:g} per trial, or run on a "
            "cluster with a bigger node" + (" (--num-cpus sets the embedded Ray's CPUs)"
                                            if key == "CPU" else ""), asked))
    if not issues and not any(_bundles(r, spec) for r in alive):
        issues.append(spec.source.issue(
            ("resources",), f"{spec.resources.cpu:g} CPUs and {spec.resources.gpu:g} GPUs "
            f"{each}, but no node of this Ray cluster has both, so no trial could ever start"))
    return issues


def _bundles(resources: Mapping[str, Any], spec: StudySpec) -> int:
    """How many of one trial's (one worker's) bundles a node with ``resources`` holds."""
    fits = [int(float(resources.get(key, 0.0)) // asked + 1e-9)
            for key, asked in (("CPU", spec.resources.cpu), ("GPU", spec.resources.gpu))
            if asked]
    return min(fits, default=0)


def _per_cluster(spec: StudySpec, alive: list[Mapping[str, Any]]) -> list[SpecIssue]:
    workers = spec.resources.worker_count
    if workers == 1:
        return []
    issues = []
    for key, each in (("CPU", spec.resources.cpu), ("GPU", spec.resources.gpu)):
        total = sum(float(r.get(key, 0.0)) for r in alive)
        if not each or workers * each <= total:
            continue
        issues.append(spec.source.issue(
            ("resources", "workers"),
            f"{workers} workers x {each:g} {key} is {workers * each:g} {key}s per trial, but "
            f"this Ray cluster has {total:g} in all ({len(alive)} node(s)), so no trial could "
            f"ever start. Ask for at most {int(total // each)} workers, fewer {key}s each, or "
            "a bigger cluster", workers))
    held = sum(_bundles(r, spec) for r in alive)
    if not issues and held < workers:  # enough in all, but not in whole workers per node
        issues.append(spec.source.issue(
            ("resources", "workers"),
            f"{workers} workers per trial, but the nodes of this Ray cluster hold {held} "
            f"workers of {spec.resources.cpu:g} CPU and {spec.resources.gpu:g} GPU at most "
            "(each worker on one node), so no trial could ever start", workers))
    return issues


def concurrent_trials(spec: StudySpec, nodes: Sequence[Mapping[str, Any]]) -> int | None:
    """How many data-parallel trials of ``spec`` the cluster can hold at once (at least 1),
    within the study's ``budget.max_concurrent``; the study's own setting for any other."""
    limit = spec.budget.max_concurrent
    if not spec.resources.data_parallel:
        return limit
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive", True)]
    held = max(1, sum(_bundles(r, spec) for r in alive) // spec.resources.worker_count)
    return held if limit is None else min(limit, held)


def check_capacity(spec: StudySpec) -> None:
    """Raise :class:`SpecError` when the Ray cluster this process uses can never run one
    trial of ``spec``."""
    import ray

    issues = capacity_issues(spec, ray.nodes())
    if issues:
        raise SpecError(issues)


def embedded_nodes(num_cpus: int | None = None, num_gpus: int | None = None
                   ) -> list[dict[str, Any]]:
    """The one node of the embedded Ray a study's driver starts with ``--num-cpus`` and
    ``--num-gpus``; unset, the machine's CPUs and NVIDIA GPUs (no NVML: none), which is at
    least what Ray finds itself."""
    cpus = num_cpus if num_cpus is not None else os.cpu_count() or 1
    gpus = num_gpus if num_gpus is not None else _nvidia_gpus()
    return [{"Alive": True, "Resources": {"CPU": float(cpus), "GPU": float(gpus)}}]


def _nvidia_gpus() -> int:
    try:
        import pynvml  # type: ignore[import-untyped]

        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetCount())
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no library or no driver: no GPU Ray could use either
        return 0


def cluster_nodes(address: str) -> list[dict[str, Any]]:
    """The alive nodes of the Ray cluster at ``address`` with their resources (joins it as a
    driver for a moment: run it in a process of its own)."""
    import ray

    ray.init(address=address, logging_level=logging.ERROR, log_to_driver=False)
    try:
        return [{"Alive": True, "Resources": dict(n.get("Resources", {}))}
                for n in ray.nodes() if n.get("Alive", True)]
    finally:
        ray.shutdown()


if __name__ == "__main__":
    json.dump(cluster_nodes(sys.argv[1]), sys.stdout)
