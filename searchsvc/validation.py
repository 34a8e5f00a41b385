"""Everything `searchsvc validate` checks: the file itself, then the rules of the searcher and
backend it names. Every problem comes back as FILE:LINE: field: message (got VALUE)."""

from __future__ import annotations

from pathlib import Path

from searchsvc.backends import check_backend
from searchsvc.errors import SpecError
from searchsvc.searchers import check_spec
from searchsvc.spec import StudySpec, load_spec, parse_spec


def check(spec: StudySpec) -> StudySpec:
    issues = [*check_backend(spec), *check_spec(spec)]
    if issues:
        raise SpecError(issues)
    return spec


def validate_file(path: str | Path) -> StudySpec:
    return check(load_spec(path))


def validate_text(text: str | bytes, file: str = "<spec>") -> StudySpec:
    return check(parse_spec(text, file=file))
