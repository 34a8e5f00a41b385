"""Every section of a study's report, in ONE list: report.html shows them in this order, and
report.md, report.json and the report's figures are gathered from the same list.

A section (:class:`Section`, its contract in its docstring) owns its plot data, its figures,
its text in report.md and report.html and its keys of report.json, all in its one module
here: its :class:`Section` subclass, its plot dataclasses and the functions computing them,
its Plotly figures and its matplotlib PNGs (``axes.py``: ``AxisPlot``, ``axis_plots``,
``axis_figure``, ``axis_pngs``). Only what several sections share is elsewhere:
``plotdata.py`` (``Series``, ``CurvePlot``, seeded downsampling, ``ReportPlots``),
``figures.py`` (``LAYOUT``, ``curve_figure``) and ``plots.py`` (a bare matplotlib figure),
which import no section. Charts that are no section (the web UI's progress and campaign
charts) are modules of :mod:`searchsvc.report.charts`, made the same way.

Adding a section: a module here with its :class:`Section` subclass (and, for report.html,
its fragment ``templates/section-<key>.html``), and its entry below.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import TrialRecord
from searchsvc.report.plotdata import ReportPlots
from searchsvc.report.sections.axes import Axes
from searchsvc.report.sections.base import FigureView, ReportContext, Section
from searchsvc.report.sections.best import BestTrials
from searchsvc.report.sections.boundaries import Boundaries
from searchsvc.report.sections.comparison import ComparisonSection
from searchsvc.report.sections.curves import Curves
from searchsvc.report.sections.dimensionality import Dimensionality
from searchsvc.report.sections.errors import Errors
from searchsvc.report.sections.findings import Findings
from searchsvc.report.sections.importance import Importance
from searchsvc.report.sections.isolation import IsolationSection
from searchsvc.report.sections.next_study import NextStudySection
from searchsvc.report.sections.noise import Noise
from searchsvc.report.sections.pareto import Pareto
from searchsvc.report.sections.preflight import Preflight
from searchsvc.report.sections.replay import ReplaySection
from searchsvc.report.sections.scheduler import Scheduler
from searchsvc.report.sections.telemetry import Telemetry
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go

SECTIONS: tuple[Section, ...] = (
    Findings(),
    BestTrials(),
    Boundaries(),
    ComparisonSection(),
    Noise(),
    Pareto(),
    IsolationSection(),
    Axes(),
    Curves(),
    Importance(),
    ReplaySection(),
    Scheduler(),
    Dimensionality(),
    Telemetry(),
    Preflight(),
    Errors(),
    NextStudySection(),
)

__all__ = ["SECTIONS", "FigureView", "ReportContext", "Section", "report_figures",
           "report_plots"]


def report_plots(spec: StudySpec, trials: Sequence[TrialRecord],
                 analysis: StudyAnalysis) -> ReportPlots:
    """The data of every plot of the report of ``trials`` analysed as ``analysis``, computed
    by each section."""
    return ReportPlots({s.key: tuple(s.plots(spec, trials, analysis)) for s in SECTIONS})


def report_figures(plots: ReportPlots) -> dict[str, list[tuple[str, go.Figure]]]:
    """(key, figure) pairs for each section, by the section's key: ``pareto``,
    ``isolation``, ``axes``, ``curves``, ``importance`` (importance and parallel
    coordinates), ``replay``, ``scheduler`` (rungs and lineage), ``dimensionality``,
    ``telemetry``. A section with nothing to draw maps to an empty list."""
    return {s.key: s.figures(plots.of(s.key)) for s in SECTIONS}
