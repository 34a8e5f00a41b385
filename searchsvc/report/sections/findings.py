"""Findings: every finding of the analysis, one line each, first in every format."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord
from searchsvc.report.sections.base import ReportContext, Section


class Findings(Section):
    key = "findings"
    title = "Findings"
    md_rank = 10
    json_rank = 100

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"findings": list(analysis.findings)}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        return ["## Findings", "", *(f"- {f}" for f in context.analysis.findings), ""]
