"""Compared with the parent study: whether this study's best beats the one it was made from,
beyond both studies' seed noise."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.compare import Comparison
from searchsvc.core import StudyRecord
from searchsvc.report.sections.base import Section


class ComparisonSection(Section):
    key = "comparison"
    title = "Compared with the parent study"
    json_rank = 80

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"comparison": comparison_data(analysis.comparison)}


def comparison_data(comparison: Comparison | None) -> dict[str, Any] | None:
    """report.json's ``comparison`` (and ``searchsvc compare --json``): B against A."""
    if comparison is None:
        return None
    return {"baseline": asdict(comparison.baseline), "candidate": asdict(comparison.candidate),
            "metric": comparison.metric, "mode": comparison.mode,
            "verdict": comparison.verdict, "difference": comparison.difference,
            "ci_low": comparison.ci_low, "ci_high": comparison.ci_high,
            "method": comparison.method, "detail": comparison.detail,
            "objectives": [comparison_data(c) for c in comparison.objectives],
            "hypervolumes": (None if comparison.hypervolumes is None
                             else dict(zip(("baseline", "candidate"), comparison.hypervolumes,
                                           strict=True))),
            "reference_point": (None if comparison.reference_point is None
                                else list(comparison.reference_point))}
