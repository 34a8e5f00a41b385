"""Whether the Ray cluster can ever hold one trial: a trial's resources must fit on one node
(Ray Tune places each trial on a single node), so a request no node can meet is refused at
once, naming the study-file line, instead of leaving every trial pending forever."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from searchsvc.errors import SpecError, SpecIssue
from searchsvc.spec import StudySpec


def capacity_issues(spec: StudySpec, nodes: Sequence[Mapping[str, Any]]) -> list[SpecIssue]:
    """The resources of ``spec`` that no alive node of ``nodes`` (``ray.nodes()``) offers."""
    alive = [n.get("Resources", {}) for n in nodes if n.get("Alive", True)]
    issues = []
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
            f"{asked:g} {names} per trial, but no node of this Ray cluster has that many "
            f"(largest: {largest:g}; {len(alive)} node(s), {sum(offered):g} in all), so no "
            f"trial could ever start. Ask for at most {largest:g} per trial, or run on a "
            "cluster with a bigger node" + (" (--num-cpus sets the embedded Ray's CPUs)"
                                            if key == "CPU" else ""), asked))
    return issues


def check_capacity(spec: StudySpec) -> None:
    """Raise :class:`SpecError` when the Ray cluster this process uses can never run one
    trial of ``spec``."""
    import ray

    issues = capacity_issues(spec, ray.nodes())
    if issues:
        raise SpecError(issues)
