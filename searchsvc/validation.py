"""Everything `searchsvc validate` checks: the file itself, the limits on the work it asks for,
then the rules of the searcher and backend it names. Every problem comes back as
FILE:LINE: field: message (got VALUE)."""

from __future__ import annotations

from pathlib import Path

from searchsvc.backends import check_backend
from searchsvc.errors import SpecError
from searchsvc.searchers import check_spec
from searchsvc.spec import DEFAULT_LIMITS, SpecLimits, StudySpec, load_spec, parse_spec
from searchsvc.spec.limits import limit_issues


def check(spec: StudySpec, limits: SpecLimits = DEFAULT_LIMITS) -> StudySpec:
    """``spec`` unchanged if its searcher and backend accept it; else :class:`SpecError`.

    The limits come first and alone: a spec over them is refused without running the searcher
    and backend checks, which may enumerate what the limits bound (a grid, the arms)."""
    issues = limit_issues(spec, limits)
    if issues:
        raise SpecError(issues)
    issues = [*check_backend(spec), *check_spec(spec, limits)]
    if issues:
        raise SpecError(issues)
    return spec


def validate_file(path: str | Path, limits: SpecLimits = DEFAULT_LIMITS) -> StudySpec:
    """Read, parse and :func:`check` the study file at ``path``."""
    return check(load_spec(path), limits)


def validate_text(text: str | bytes, file: str = "<spec>",
                  limits: SpecLimits = DEFAULT_LIMITS) -> StudySpec:
    """Parse and :func:`check` study-file text; ``file`` names it in messages."""
    return check(parse_spec(text, file=file), limits)
