"""Training curves of the best trials, with their diagnoses (still improving, overfitting,
unstable, ...) and their seed repeats' noise band."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import Curve, StudyRecord, TrialRecord
from searchsvc.report.figures import curve_figure
from searchsvc.report.plotdata import CurveLine, CurvePlot
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


class Curves(Section):
    key = "curves"
    title = "Training curves of the best trials"
    md_rank = 50
    json_rank = 40

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        plot = curve_plot(spec, trials, analysis)
        return () if plot is None else (plot,)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, curve_figure(p)) for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"curve_diagnostics": [
            {"trial_id": c.number, "number": c.number, "arm": c.arm, "issues": list(c.issues),
             "best_step": c.best_step, "last_step": c.last_step,
             "best_step_position": c.best_step_position, "details": list(c.details)}
            for c in analysis.curves
        ]}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        curves = context.analysis.curves
        if not curves:
            return []
        return ["", "## Training curves of the best trials", "",
                "| trial | arm | best step | issues |", "|---|---|---|---|",
                *(f"| {c.number} | {c.arm} | {c.best_step}/{c.last_step} "
                  f"({c.best_step_position}) | {', '.join(c.issues) or 'none'} |"
                  for c in curves)]


def curve_plot(spec: StudySpec, trials: Sequence[TrialRecord],
               analysis: StudyAnalysis) -> CurvePlot | None:
    """The training curves of the diagnosed best trials, issues named (None: no curve)."""
    by_number = {t.number: t for t in trials}
    lines = []
    for diag in analysis.curves:
        t = by_number.get(diag.number)
        if t is None:
            continue
        curve = t.curve(spec.metric)
        if not curve:
            continue
        issues = ", ".join(diag.issues) or "no issue"
        arm = f"({diag.arm})" if diag.arm else ""
        # The diagnosed best step may be off this attempt's curve: then no marker, no error.
        best = next(((s, v) for s, v in curve if s == diag.best_step), None)
        repeats = [r.curve(spec.metric) for r in trials if r.repeat_of == t.number]
        lines.append(CurveLine(
            name=f"trial {t.number} {arm}: {issues}",
            steps=tuple(s for s, _ in curve), values=tuple(v for _, v in curve), best=best,
            best_text=f"trial {t.number}: best step {diag.best_step}",
            band=noise_band([r for r in repeats if r])))
    if not lines:
        return None
    return CurvePlot(key="curves", title=f"Training curves of the best trials ({spec.metric})",
                     x_label="step", y_label=spec.metric, lines=tuple(lines))


def noise_band(curves: Sequence[Curve]) -> tuple[tuple[int, ...], tuple[float, ...],
                                                  tuple[float, ...]] | None:
    """Mean -/+ one standard deviation over ``curves`` at every step all of them reached."""
    if len(curves) < 2:
        return None
    steps = sorted(set.intersection(*(set(s for s, _ in c) for c in curves)))
    lows, highs = [], []
    for step in steps:
        values = [c.value_at(step) for c in curves]
        mean = statistics.fmean(v for v in values if v is not None)
        sd = statistics.stdev(v for v in values if v is not None)
        lows.append(mean - sd)
        highs.append(mean + sd)
    return (tuple(steps), tuple(lows), tuple(highs)) if steps else None
