"""The spec of a study already in the store: its file's text, parsed once per process.

A stored study's text never changes, and a :class:`StudySpec` is immutable, so the driver, the
report and the service share one parse instead of each parsing the text again.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

from searchsvc.spec.model import StudySpec
from searchsvc.spec.validate import parse_spec


class HasStudyFile(Protocol):
    @property
    def spec_text(self) -> str: ...

    @property
    def spec_file(self) -> str: ...


def spec_of(study: HasStudyFile) -> StudySpec:
    """The parsed study file of ``study`` (a :class:`~searchsvc.core.StudyRecord`)."""
    return _parsed(study.spec_text, study.spec_file)


@lru_cache(maxsize=64)
def _parsed(text: str, file: str) -> StudySpec:
    return parse_spec(text, file=file)
