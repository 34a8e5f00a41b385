"""Searchers by name (the registry :data:`searchsvc.plugins.SEARCHERS`), and the study-file
rules each one adds.

Adding a searcher is local: subclass :class:`Searcher`, give it a ``name``, a ``summary`` (and
an ``Options`` pydantic model if it takes ``searcher_options``, and its capabilities, e.g.
``multi_fidelity``), and register it as ``"module:ClassName"`` in :mod:`searchsvc.plugins`
(or, from a plug-in, ``SEARCHERS.register(name, "module:ClassName")``).
"""

from __future__ import annotations

from typing import cast

from pydantic import BaseModel

from searchsvc.errors import SpecError, SpecIssue
from searchsvc.plugins import SEARCHERS
from searchsvc.searchers.base import NoOptions, Observation, Proposal, Searcher
from searchsvc.searchers.schedule import (
    HyperbandSchedule,
    PopulationSchedule,
    Schedule,
    StoppingSchedule,
)
from searchsvc.searchers.space import Arm, scientific_arms
from searchsvc.spec import DEFAULT_LIMITS, SpecLimits, StudySpec
from searchsvc.spec.limits import limit_issues
from searchsvc.spec.validate import options_issues


def searcher_names() -> list[str]:
    return SEARCHERS.names()


def searcher_class(name: str) -> type[Searcher]:
    """The searcher registered as ``name`` (UnknownNameError listing the valid names)."""
    return cast(type[Searcher], SEARCHERS.get(name))


def check_spec(spec: StudySpec, limits: SpecLimits = DEFAULT_LIMITS) -> list[SpecIssue]:
    """The problems of ``spec`` that depend on its searcher (name, options, budget rules).

    A spec over ``limits`` gets only those issues: the searcher's own checks may enumerate
    its grid or arms, which only the limits keep small."""
    over = limit_issues(spec, limits)
    if over:
        return over
    if spec.searcher not in SEARCHERS:
        return [spec.source.issue(("searcher",), f"unknown searcher (valid: "
                                  f"{', '.join(searcher_names())})", spec.searcher)]
    cls = searcher_class(spec.searcher)
    issues = (options_issues(cls.Options, spec.searcher_options, spec.source,
                             "searcher_options") or cls.check(spec))
    if spec.multi_objective and not cls.multi_objective:
        multi = SEARCHERS.having("multi_objective")
        issues = [*issues, spec.source.issue(
            ("metrics",), f"searcher '{cls.name}' cannot search several objectives: "
            f"{cls.single_objective_because}. Use one of {', '.join(multi)}, or a single "
            "`metric`")]
    if spec.noise is not None and spec.noise.explicit and not cls.repeats_supported:
        issues = [*issues, spec.source.issue(
            ("noise",), f"{cls.no_repeats_because}: seed repeats are not possible with "
            f"searcher '{cls.name}'; remove `noise` or set `noise: off`")]
    return issues


def create_searcher(spec: StudySpec, limits: SpecLimits = DEFAULT_LIMITS) -> Searcher:
    """The searcher a valid spec names, with its options parsed. Raises :class:`SpecError`
    for a spec its searcher refuses or that is over ``limits``."""
    issues = check_spec(spec, limits)
    if issues:
        raise SpecError(issues)
    cls = searcher_class(spec.searcher)
    options: BaseModel = cls.Options.model_validate(dict(spec.searcher_options))
    return cls(spec, options)


__all__ = [
    "SEARCHERS",
    "Arm",
    "HyperbandSchedule",
    "NoOptions",
    "Observation",
    "PopulationSchedule",
    "Proposal",
    "Schedule",
    "Searcher",
    "StoppingSchedule",
    "check_spec",
    "create_searcher",
    "scientific_arms",
    "searcher_class",
    "searcher_names",
]
