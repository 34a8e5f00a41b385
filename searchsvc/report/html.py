"""report.html: one self-contained page (Plotly's JavaScript inlined once; opens offline),
rendered from ``templates/report.html`` with Jinja2, as the service's pages are: the study's
head, then each section's own fragment, in the order of ``sections.SECTIONS``.

Escaping: autoescape is on, so every study-provided string (names, descriptions, findings,
configs) is escaped by the templates; the only Markup passed in is Plotly's own JavaScript
bundle and the sections' fragments (rendered, and so escaped, by the same environment).
Figures go in as plain data and are written with ``tojson``, which escapes ``<``, ``>``,
``&`` and ``'``: no value can close the ``<script>`` it is embedded in.
"""

from __future__ import annotations

import json
from typing import Any

from markupsafe import Markup

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.plotdata import ReportPlots
from searchsvc.report.sections import SECTIONS, FigureView, ReportContext
from searchsvc.report.sections.base import PLOTLY_CONFIG, environment, fmt
from searchsvc.spec import StudySpec

__all__ = ["PLOTLY_CONFIG", "FigureView", "fmt", "render_html"]


def render_html(study: StudyRecord, spec: StudySpec, analysis: StudyAnalysis,
                plots: ReportPlots, trials: tuple[TrialRecord, ...] = ()) -> str:
    """The whole page for ``study``; ``plots`` are the same data the PNGs are drawn from."""
    from plotly.offline import get_plotlyjs

    context = ReportContext(study, spec, trials, analysis)
    fragments = [section.html(context, [figure_view(key, fig) for key, fig in
                                        section.figures(plots.of(section.key))])
                 for section in SECTIONS]
    return environment().get_template("report.html").render(
        study=study, spec=spec, summary=analysis.summary, sections=fragments,
        # Plotly's own bundle, trusted code: escaping it would break it.
        plotly_js=Markup(get_plotlyjs()))


def figure_view(key: str, fig: Any) -> FigureView:
    import plotly.io as pio

    # Plotly's encoder turns numpy arrays, dates and NaN into JSON; parsed back to plain data
    # so the template's `tojson`, not Plotly, is what makes it safe inside <script>.
    parsed = json.loads(pio.to_json(fig, validate=False))
    return FigureView(id=f"fig-{key}", height=int(fig.layout.height or 450),
                      data=parsed["data"], layout=parsed["layout"])
