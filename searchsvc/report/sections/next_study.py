"""Suggested next study: the spec the analysis suggests running next (next_study.yaml), and
what it changes."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord
from searchsvc.report.sections.base import ReportContext, Section


class NextStudySection(Section):
    key = "next"
    title = "Suggested next study"
    md_rank = 120
    json_rank = 140

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"next_study": analysis.next_study.text,
                "next_study_changes": list(analysis.next_study.changes)}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        return ["", "## Suggested next study", "", "Saved as `next_study.yaml`:", "",
                "```yaml", context.analysis.next_study.text.rstrip(), "```", ""]

    def html_context(self, context: ReportContext) -> dict[str, Any]:
        text = context.analysis.next_study.text
        return {"next_study_link": "data:text/yaml;base64,"
                + base64.b64encode(text.encode()).decode()}
