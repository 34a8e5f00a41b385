"""Representation dimensionality: what ``sdk.watch`` measured, each watched layer's
participation ratio over training, the collapses and what the early values predict; one plot
per layer, of its best search trials and its collapsed ones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.trials import search_trials
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.core.judging import by_value
from searchsvc.report.figures import curve_figure
from searchsvc.report.plotdata import CurveLine, CurvePlot
from searchsvc.report.sections.base import Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go

DIMENSIONALITY_BEST = 5  # the best trials drawn in each layer's dimensionality plot


class Dimensionality(Section):
    key = "dimensionality"
    title = "Representation dimensionality"
    json_rank = 120

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        return dimensionality_plots(spec, search_trials(trials), analysis)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, curve_figure(p)) for p in plots]

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        # what sdk.watch measured (analysis/dimensionality.py; null: nothing was)
        dims = analysis.dimensionality
        return {"dimensionality": dims.as_dict() if dims else None}


def dimensionality_plots(spec: StudySpec, search: Sequence[TrialRecord],
                         analysis: StudyAnalysis) -> tuple[CurvePlot, ...]:
    """Each watched layer's participation ratio over the steps of the best search trials and
    of every collapsed trial (named so), one plot per layer."""
    dims = analysis.dimensionality
    if dims is None:
        return ()
    collapsed = dims.collapsed_numbers()
    best = [t.number for t in by_value(search, spec.mode)[:DIMENSIONALITY_BEST]]
    shown = list(dict.fromkeys([*best, *sorted(collapsed)]))
    layers = list(dict.fromkeys(name for t in dims.trials for name in t.layers))
    plots = []
    for index, layer in enumerate(layers):
        lines = []
        for number in shown:
            points = dims.curves(number).get(layer)
            if not points:
                continue
            what = "collapsed" if number in collapsed else f"best #{best.index(number) + 1}"
            lines.append(CurveLine(name=f"trial {number} ({what})",
                                   steps=tuple(s for s, _ in points),
                                   values=tuple(v for _, v in points), best=None, best_text=""))
        if lines:
            plots.append(CurvePlot(
                key=f"dimensionality-{index}",
                title=f"Layer {layer!r}: participation ratio of its activations",
                x_label="step", y_label="participation ratio", lines=tuple(lines)))
    return tuple(plots)
