"""What a report section is: one unit that owns everything a study's report shows about one
subject, in every format. Its analysis is a field of :class:`StudyAnalysis` (computed once, by
:func:`searchsvc.analysis.analyze`, since findings and the next study draw on several); the
rest is the section's own.

A section is one module (as each of Optuna's ``visualization/_<plot>.py`` is): its plot
data is computed apart from drawing (as Optuna's ``_get_*_info`` functions are), by
:meth:`Section.plots`, as small frozen dataclasses defined in the section's module, and both
renderers draw those same values, Plotly for report.html (:meth:`Section.figures`) and
matplotlib for report.md's PNGs (:meth:`Section.images`), with drawing functions of the same
module. What several sections share (``Series``, ``CurvePlot``, the layouts, a bare
matplotlib figure) is in :mod:`searchsvc.report.plotdata`, :mod:`searchsvc.report.figures` and
:mod:`searchsvc.report.plots`, which import no section.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined, TemplateNotFound, select_autoescape
from markupsafe import Markup

from searchsvc.analysis import StudyAnalysis
from searchsvc.analysis.noise import arm_text
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
LAST = 1000  # the rank of a section that names none: after every ranked one


@dataclass(frozen=True)
class ReportContext:
    """What every section renders from: the study, its spec, its trials and their analysis."""

    study: StudyRecord
    spec: StudySpec
    trials: Sequence[TrialRecord]
    analysis: StudyAnalysis


@dataclass(frozen=True)
class FigureView:
    """One Plotly figure as a page embeds it: its element id, height and JSON parts."""

    id: str
    height: int
    data: list[Any]
    layout: dict[str, Any]


class Section(ABC):
    """One section of a study's report, in every format.

    The contract (every method has a default that shows nothing, so a section implements
    only the formats it appears in):

    - ``key``: the section's id: the ``<section id>`` of report.html, the key of
      :func:`searchsvc.report.sections.report_figures` and of its fragment template
      ``templates/section-<key>.html``; ``title``: its heading.
    - :meth:`plots`: the section's plot data (frozen dataclasses, computed by functions of
      the section's module), from the spec, trials and analysis only; never draws. The same
      values feed both renderers.
    - :meth:`figures`: those plots drawn with Plotly (``(element key, figure)`` pairs);
      :meth:`images`: drawn with matplotlib as PNG files for report.md.
    - :meth:`data`: the section's keys of report.json (plain, JSON-ready data).
    - :meth:`markdown`: its lines of report.md (given its PNGs); :meth:`markdown_parts`
      places them (a section may split its text around another's).
    - :meth:`html`: its fragment of report.html, by default its template (``template``, or
      the file ``templates/section-<key>.html``; none: no fragment) rendered with
      ``study``, ``spec``, ``analysis``, ``summary``, ``figures`` (its own, as
      :class:`FigureView`) and :meth:`html_context`; the macros ``section``, ``figure`` and
      ``table`` come from ``{% import "macros.html" as m %}``. Empty when it renders nothing
      (the section has nothing to show for this study).

    Sections are listed once, in ``searchsvc.report.sections.SECTIONS``, in the order of
    report.html. ``md_rank`` and ``json_rank`` place a section's part in report.md and
    report.json (default: after every ranked section, in list order).
    """

    @property
    @abstractmethod
    def key(self) -> str:
        """The section's id (a class attribute in each section)."""

    @property
    @abstractmethod
    def title(self) -> str:
        """The section's heading (a class attribute in each section)."""

    # The fragment's Jinja2 source, when it is kept here rather than in
    # templates/section-<key>.html.
    template: str | None = None
    md_rank: int = LAST
    json_rank: int = LAST

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        """The plot data this section draws (empty: it draws nothing for this study)."""
        return ()

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        """``plots`` drawn with Plotly, as (element key, figure) pairs."""
        return []

    def images(self, plots: Sequence[Any], folder: Path) -> list[Path]:
        """``plots`` drawn as PNG files into ``folder`` for report.md; their paths."""
        return []

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        """This section's keys of report.json."""
        return {}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        """This section's lines of report.md; ``images``: its PNGs, relative to report.md."""
        return []

    def markdown_parts(self, context: ReportContext, images: Sequence[Path]
                       ) -> list[tuple[int, list[str]]]:
        """This section's report.md text as (rank, lines) parts: one part at ``md_rank``."""
        return [(self.md_rank, self.markdown(context, images))]

    def html_context(self, context: ReportContext) -> dict[str, Any]:
        """Values the section's template needs beyond the common ones."""
        return {}

    def html(self, context: ReportContext, figures: Sequence[FigureView]) -> Markup:
        """This section's fragment of report.html (escaped: autoescape is on)."""
        env = environment()
        try:
            template = (env.from_string(self.template) if self.template is not None
                        else env.get_template(f"section-{self.key}.html"))
        except TemplateNotFound:
            return Markup("")
        analysis = context.analysis
        return Markup(template.render(
            study=context.study, spec=context.spec, analysis=analysis,
            summary=analysis.summary, figures=list(figures), **self.html_context(context)))


@functools.cache
def environment() -> Environment:
    """The Jinja2 environment of report.html and its sections' fragments."""
    env = Environment(loader=PackageLoader("searchsvc.report", "templates"),
                      autoescape=select_autoescape(["html"]), trim_blocks=True,
                      lstrip_blocks=True, undefined=StrictUndefined)
    env.filters["fmt"] = fmt
    env.filters["arm"] = arm_text
    env.filters["format_as"] = format  # value|format_as(".5g") is format(value, ".5g")
    env.globals["plotly_config"] = PLOTLY_CONFIG
    return env


def fmt(value: Any) -> str:
    """A cell's text: floats to 4 significant digits, anything else as str()."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
