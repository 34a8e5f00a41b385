"""Best trials: the best search trials, their values, configs and checkpoints."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchsvc.analysis import StudyAnalysis, TrialSummary
from searchsvc.core import StudyRecord
from searchsvc.report.sections.base import ReportContext, Section, fmt
from searchsvc.spec import StudySpec


class BestTrials(Section):
    key = "best"
    title = "Best trials"
    md_rank = 20
    json_rank = 10

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"best_trials": [
            {"trial_id": t.number, "number": t.number, "value": t.value,
             "best_step": t.best_step, "last_step": t.last_step, "arm": dict(t.arm),
             "config": dict(t.config),
             "checkpoints": list(t.checkpoints)}
            for t in analysis.summary.best_trials
        ]}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        lines = ["## Best trials", "",
                 "Best value over each trial's training (retrospective: the best step, not the "
                 "last).", ""]
        best = context.analysis.summary.best_trials
        params = [p for p in context.spec.parameter_order
                  if any(p in t.config for t in best)]
        lines.append(f"| trial | {context.study.metric} | best step | " + " | ".join(params)
                     + " |")
        lines.append("|---" * (3 + len(params)) + "|")
        for t in best:
            cells = [str(t.number), f"{t.value:.6g}", f"{t.best_step}/{t.last_step}",
                     *(fmt(t.config.get(p, "")) for p in params)]
            lines.append("| " + " | ".join(cells) + " |")
        if not best:
            lines.append("| (no trial produced a finite value yet) |")
        return lines

    def html_context(self, context: ReportContext) -> dict[str, Any]:
        return {"best_params": best_params(context.spec, context.analysis.summary.best_trials)}


def best_params(spec: StudySpec, best: Sequence[TrialSummary]) -> list[str]:
    """The searched parameters, in the study's order, that some best trial has."""
    return [p for p in spec.parameter_order
            if spec.parameters[p].searched and any(p in t.config for t in best)]
