"""Boundary checks: whether the best trials crowd an edge of a searched range."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord
from searchsvc.report.sections.base import ReportContext, Section, fmt


class Boundaries(Section):
    key = "boundaries"
    title = "Boundary checks"
    md_rank = 30
    json_rank = 20

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"boundary_checks": [
            {"parameter": c.parameter, "status": c.status, "scale": c.scale, "low": c.low,
             "high": c.high, "suggested_low": c.suggested_low,
             "suggested_high": c.suggested_high, "arm": c.arm, "detail": c.detail,
             "top_positions": list(c.top_positions)}
            for c in analysis.boundaries
        ]}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        checks = context.analysis.boundaries
        if not checks:
            return []
        return ["", "## Boundary checks", "", "| parameter | range | status | suggested |",
                "|---|---|---|---|",
                *(f"| {c.parameter} | [{fmt(c.low)}, {fmt(c.high)}] {c.scale} | **{c.status}** "
                  f"| [{fmt(c.suggested_low)}, {fmt(c.suggested_high)}] |" for c in checks)]
