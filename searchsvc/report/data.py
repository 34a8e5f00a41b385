"""report.json: the analysis as plain data, for other tools (documented keys, stable names).

Trials are named by their study-local number under ``number``; ``trial_id`` holds the same
number, the name report.json has always used, kept so users' scripts do not break.
"""

from __future__ import annotations

from typing import Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialState
from searchsvc.report.sections import SECTIONS
from searchsvc.report.sections.comparison import comparison_data
from searchsvc.report.sections.noise import noise_data
from searchsvc.report.sections.pareto import constraints_data, objectives_data, pareto_data

__all__ = ["JSON_COUNT_STATES", "comparison_data", "constraints_data", "noise_data",
           "objectives_data", "pareto_data", "report_data"]

JSON_COUNT_STATES = tuple(str(s) for s in (TrialState.COMPLETED, TrialState.PRUNED,
                                           TrialState.FAILED, TrialState.INFEASIBLE))


def report_data(study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
    """report.json: the study's head, each section's keys (in the order of the sections'
    ``json_rank``), and the study's provenance."""
    summary = analysis.summary
    counts = {s: summary.counts.get(s, 0) for s in JSON_COUNT_STATES}
    counts.update({s: n for s, n in summary.counts.items() if n and s not in counts})
    data: dict[str, Any] = {
        "study": study.name,
        "metric": study.metric,
        "mode": study.mode,
        "searcher": study.searcher,
        "state": study.state,
        "total_trials": study.total_trials,
        "counts": counts,  # search trials by state (core.judging)
        "repeat_counts": dict(summary.repeat_counts),  # seed repeats by state, apart
    }
    for section in sorted(SECTIONS, key=lambda s: s.json_rank):  # stable: SECTIONS order
        data.update(section.data(study, analysis))
    data["provenance"] = dict(study.provenance)
    return data
