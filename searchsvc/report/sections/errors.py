"""Trials with errors: the last line of each failed trial's error (report.md; report.html's
table and trials.csv carry them too)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

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
            last = (trial.error or "").strip().splitlines()[-1:]
            lines.append(f"- trial {trial.number} ({trial.state}): {last[0] if last else ''}")
        return lines
