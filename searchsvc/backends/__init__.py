"""Backends by name: how a trial turns a config into reported metrics.

``ray`` (default): the objective is a Ray Tune function trainable. ``keras_tuner``: the
objective is a KerasTuner ``build(hp)`` function or ``HyperModel``, built with the values the
searcher chose and trained with a per-epoch report. ``autokeras``: the objective gives the data
of an AutoKeras search, which runs as one job with AutoKeras's own tuner. Each backend
validates its own ``backend_options``. Keras is imported only when a Keras backend runs.
"""

from __future__ import annotations

from typing import cast

from searchsvc.backends.base import Backend
from searchsvc.errors import SpecIssue
from searchsvc.plugins import BACKENDS
from searchsvc.spec import StudySpec
from searchsvc.spec.validate import options_issues


def backend_names() -> list[str]:
    return BACKENDS.names()


def backend_class(name: str) -> type[Backend]:
    """The backend registered as ``name`` (UnknownNameError listing the valid names)."""
    return cast(type[Backend], BACKENDS.get(name))


def check_backend(spec: StudySpec) -> list[SpecIssue]:
    """The problems of ``spec`` that depend on its backend (name, options)."""
    if spec.backend not in BACKENDS:
        return [spec.source.issue(("backend",), f"unknown or unavailable backend (valid: "
                                  f"{', '.join(backend_names())})", spec.backend)]
    cls = backend_class(spec.backend)
    issues = (options_issues(cls.Options, spec.backend_options, spec.source, "backend_options")
              or cls.check(spec))
    if spec.multi_objective and cls.runs_own_search:
        issues = [*issues, spec.source.issue(
            ("metrics",), f"backend '{cls.name}' runs its own search on one metric; a "
            "multi-objective study needs backend 'ray'")]
    if spec.noise is not None and spec.noise.explicit and cls.runs_own_search:
        issues = [*issues, spec.source.issue(
            ("noise",), f"backend '{cls.name}' runs its own search, which cannot rerun a trial "
            "with a new seed; remove `noise` or set `noise: off`")]
    if spec.resources.data_parallel and not cls.data_parallel:
        issues = [*issues, spec.source.issue(
            ("resources", "workers"), f"backend '{cls.name}' trains each trial in its own "
            "process, not on Ray Train workers; `workers` needs backend 'ray'",
            spec.resources.workers)]
    return issues


__all__ = ["BACKENDS", "Backend", "backend_class", "backend_names", "check_backend"]
