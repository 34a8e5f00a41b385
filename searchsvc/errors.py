"""One exception hierarchy for searchsvc, each class mapped to a CLI exit code and an HTTP status.

Every error a user can cause is a :class:`SearchsvcError`; the command line prints its message
(never a traceback) and exits with :attr:`SearchsvcError.exit_code`; the service answers with
:attr:`SearchsvcError.http_status`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class SearchsvcError(Exception):
    """Base class of every error searchsvc reports to a user."""

    exit_code: int = 1
    http_status: int = 500


def format_value(value: Any, max_chars: int = 80) -> str:
    """A bad value as shown in messages: Python's repr, cut to ``max_chars``."""
    text = repr(value)
    return text if len(text) <= max_chars else text[: max_chars - 3] + "..."


@dataclass(frozen=True)
class SpecIssue:
    """One problem in a study file: where it is, which field, what is wrong, the bad value."""

    path: tuple[str | int, ...]
    message: str
    value: Any = None
    has_value: bool = False
    line: int | None = None
    file: str = "<spec>"

    @property
    def field(self) -> str:
        return ".".join(str(p) for p in self.path) if self.path else "(file)"

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        text = f"{where}: {self.field}: {self.message}"
        if self.has_value:
            text += f" (got {format_value(self.value)})"
        return text


class SpecError(SearchsvcError):
    """A study file is malformed. Carries every problem found, each with file and line."""

    exit_code = 2
    http_status = 422

    def __init__(self, issues: list[SpecIssue]):
        self.issues = sorted(issues, key=lambda i: (i.file, i.line or 0, i.field))
        super().__init__("\n".join(i.render() for i in self.issues))


class UsageError(SearchsvcError):
    """A command-line option or API argument out of its range; the message names it, its
    range and the value given."""

    exit_code = 2
    http_status = 400


class NotFoundError(SearchsvcError):
    """A named study, trial or report does not exist."""

    exit_code = 3
    http_status = 404


class ConflictError(SearchsvcError):
    """The request clashes with existing state (duplicate study name, study already running)."""

    exit_code = 4
    http_status = 409


class ObjectiveError(SearchsvcError):
    """The objective named by a study cannot be imported or called."""

    exit_code = 5
    http_status = 422


class RunnerError(SearchsvcError):
    """Ray could not be started or attached, or a study could not be driven to its end."""

    exit_code = 6
    http_status = 503


class StoreError(SearchsvcError):
    """The results database cannot be opened or written."""

    exit_code = 7
    http_status = 503


class ServiceError(SearchsvcError):
    """A searchsvc server refused a request or could not be reached."""

    exit_code = 8
    http_status = 502


class CodeBundleError(SearchsvcError):
    """A code bundle cannot be packed, or the service refuses the archive it was sent."""

    exit_code = 9
    http_status = 422


class PermissionDeniedError(SearchsvcError):
    """The request's token may not do this (e.g. upload code without ``--allow-code``)."""

    exit_code = 10
    http_status = 403


class LimitExceededError(SearchsvcError):
    """The request asks for more than the service allows (e.g. studies queued per user)."""

    exit_code = 11
    http_status = 429
