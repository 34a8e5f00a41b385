"""Everything `searchsvc validate` checks: the file itself, then the rules of the searcher and
backend it names. Every problem comes back as FILE:LINE: field: message (got VALUE)."""

from __future__ import annotations

from pathlib import Path

from searchsvc.errors import SpecError, SpecIssue
from searchsvc.searchers import check_spec
from searchsvc.spec import StudySpec, load_spec, parse_spec

BACKENDS = ("ray",)  # keras_tuner and autokeras: see README, "Backends"


def backend_issues(spec: StudySpec) -> list[SpecIssue]:
    if spec.backend in BACKENDS:
        return []
    return [spec.source.issue(("backend",), f"unknown or unavailable backend (available: "
                              f"{', '.join(BACKENDS)})", spec.backend)]


def check(spec: StudySpec) -> StudySpec:
    issues = [*backend_issues(spec), *check_spec(spec)]
    if issues:
        raise SpecError(issues)
    return spec


def validate_file(path: str | Path) -> StudySpec:
    return check(load_spec(path))


def validate_text(text: str | bytes, file: str = "<spec>") -> StudySpec:
    return check(parse_spec(text, file=file))
