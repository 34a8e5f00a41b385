"""Whether the Ray cluster can ever hold one trial: a trial's resources (each worker's, for a
data-parallel trial) must fit on one node, and a data-parallel trial's workers together must
fit in the cluster, so a request that can never be placed is refused at once, naming the
study-file line and the cluster's numbers, instead of leaving every trial pending forever.

A data-parallel trial's launcher takes no CPU of its own (Ray Train places the workers), so Tune
cannot see what a trial holds: :func:`concurrent_trials` caps how many run at once by what the
cluster's workers can hold."""

from __future__ import annotations

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
