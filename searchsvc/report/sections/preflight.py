"""Preflight and the estimated cost: the checks run before the study, their timing, and the
cost estimated from it against the time measured."""

from __future__ import annotations

from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord
from searchsvc.report.sections.base import Section


class Preflight(Section):
    key = "preflight"
    title = "Preflight and the estimated cost"
    json_rank = 150

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        # preflight's checks, timing and cost estimate (null: the study ran without it)
        return {"preflight": study.provenance.get("preflight")}
