"""Trials with errors: the end of each failed trial's error (core.failures.error_tail: the
exception, or a command's last lines of stderr) in report.md; report.html's table and
trials.csv carry its last line."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from searchsvc.core.failures import error_tail
from searchsvc.report.sections.base import ReportContext, Section

MAX_SHOWN = 20  # failed trials listed in report.md


class Errors(Section):
    key = "errors"
    title = "Trials with errors"
    md_rank = 110

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        failed = [t for t in context.trials if t.error]
        if not failed:
            return []
        lines = ["", "## Trials with errors", ""]
        for trial in failed[:MAX_SHOWN]:
            tail = error_tail(trial.error)
            lines += [f"- trial {trial.number} ({trial.state}):", "", "  ```",
                      *(f"  {line}" for line in tail), "  ```"]
        return lines
