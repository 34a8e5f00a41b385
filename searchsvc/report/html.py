"""report.html: one self-contained page (Plotly's JavaScript inlined once; opens offline),
rendered from ``templates/report.html`` with Jinja2, as the service's pages are.

Escaping: autoescape is on, so every study-provided string (names, descriptions, findings,
configs) is escaped by the template; the only Markup passed in is Plotly's own JavaScript
bundle. Figures go in as plain data and are written with ``tojson``, which escapes ``<``,
``>``, ``&`` and ``'``: no value can close the ``<script>`` it is embedded in.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from searchsvc.analysis import StudyAnalysis, TrialSummary
from searchsvc.analysis.noise import arm_text
from searchsvc.core import StudyRecord
from searchsvc.report.figures import report_figures, telemetry_figure
from searchsvc.report.plotdata import ReportPlots
from searchsvc.spec import StudySpec

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


@dataclass(frozen=True)
class FigureView:
    """One Plotly figure as the template embeds it: its element id, height and JSON parts."""

    id: str
    height: int
    data: list[Any]
    layout: dict[str, Any]


def render_html(study: StudyRecord, spec: StudySpec, analysis: StudyAnalysis,
                plots: ReportPlots) -> str:
    """The whole page for ``study``; ``plots`` are the same data the PNGs are drawn from."""
    from plotly.offline import get_plotlyjs

    figures = {section: [_figure_view(key, fig) for key, fig in items]
               for section, items in report_figures(plots).items()}
    drawn = telemetry_figure(analysis.telemetry) if analysis.telemetry else None
    figures["telemetry"] = [] if drawn is None else [_figure_view("telemetry", drawn)]
    text = analysis.next_study.text
    return _environment().get_template("report.html").render(
        study=study, spec=spec, analysis=analysis, summary=analysis.summary, figures=figures,
        best_params=_best_params(spec, analysis.summary.best_trials),
        next_study_link="data:text/yaml;base64," + base64.b64encode(text.encode()).decode(),
        # Plotly's own bundle, trusted code: escaping it would break it.
        plotly_js=Markup(get_plotlyjs()), plotly_config=PLOTLY_CONFIG)


@functools.cache
def _environment() -> Environment:
    env = Environment(loader=PackageLoader("searchsvc.report", "templates"),
                      autoescape=select_autoescape(["html"]), trim_blocks=True,
                      lstrip_blocks=True, undefined=StrictUndefined)
    env.filters["fmt"] = fmt
    env.filters["arm"] = arm_text
    env.filters["format_as"] = format  # value|format_as(".5g") is format(value, ".5g")
    return env


def _figure_view(key: str, fig: Any) -> FigureView:
    import plotly.io as pio

    # Plotly's encoder turns numpy arrays, dates and NaN into JSON; parsed back to plain data
    # so the template's `tojson`, not Plotly, is what makes it safe inside <script>.
    parsed = json.loads(pio.to_json(fig, validate=False))
    return FigureView(id=f"fig-{key}", height=int(fig.layout.height or 450),
                      data=parsed["data"], layout=parsed["layout"])


def _best_params(spec: StudySpec, best: Sequence[TrialSummary]) -> list[str]:
    """The searched parameters, in the study's order, that some best trial has."""
    return [p for p in spec.parameter_order
            if spec.parameters[p].searched and any(p in t.config for t in best)]


def fmt(value: Any) -> str:
    """A cell's text: floats to 4 significant digits, anything else as str()."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
