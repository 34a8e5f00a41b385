"""The report's sections, listed once in SECTIONS: each owns its own report.json keys and
figure keys, and a section added to the list shows in report.html, report.md and
report.json with no other change."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from jinja2 import ChoiceLoader, FileSystemLoader

from searchsvc.analysis import StudyAnalysis, analyze
from searchsvc.core import StudyRecord
from searchsvc.report import data, html, markdown, writer
from searchsvc.report import sections as sections_module
from searchsvc.report.sections import SECTIONS, ReportContext, Section, report_plots
from searchsvc.report.sections.base import environment
from searchsvc.report.writer import write_files
from tests.report.studies import make_trials, study


def test_keys_are_unique_and_no_two_sections_write_the_same_json_key():
    assert len({s.key for s in SECTIONS}) == len(SECTIONS)
    record, spec = study("min")
    trials = make_trials(20, infeasible={3})
    analysis = analyze(record, spec, trials)
    owners: dict[str, str] = {}
    for section in SECTIONS:
        for key in section.data(record, analysis):
            assert key not in owners, (key, owners.get(key), section.key)
            owners[key] = section.key
    assert set(owners) <= set(data.report_data(record, analysis))


def test_each_figure_is_drawn_from_its_own_sections_plot_data():
    record, spec = study("max")
    trials = make_trials(30)
    analysis = analyze(record, spec, trials)
    plots = report_plots(spec, trials, analysis)
    for section in SECTIONS:
        drawn = [key for key, _ in section.figures(plots.of(section.key))]
        assert drawn == [p.key for p in plots.of(section.key)], section.key


class Trials(Section):
    """A section as a new one would be written: its module and its entry in SECTIONS."""

    key = "trialcount"
    title = "How many trials"
    template = ('{% import "macros.html" as m %}\n'
                '{% call m.section("trialcount", "How many trials") %}\n'
                "<p>{{ count }} trials</p>\n{% endcall %}")

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"trial_count": sum(analysis.summary.counts.values())}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        return ["", "## How many trials", "", f"{len(context.trials)} trials"]

    def html_context(self, context: ReportContext) -> dict[str, Any]:
        return {"count": len(context.trials)}


def test_a_new_section_in_the_list_shows_in_every_format(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch):
    extended = (*SECTIONS, Trials())
    for module in (sections_module, data, html, markdown, writer):
        monkeypatch.setattr(module, "SECTIONS", extended)
    record, spec = study("min")
    trials = make_trials(12)
    files = write_files(tmp_path, record, spec, trials, analyze(record, spec, trials))
    page = files.files["html"].read_text()
    assert '<section id="trialcount"><h2>How many trials</h2>\n<p>12 trials</p>' in page
    assert page.index('id="trialcount"') > page.index('id="next"')
    assert "## How many trials\n\n12 trials" in files.files["md"].read_text()
    assert '"trial_count": 12' in files.files["json"].read_text()


# A new section with a figure, written as every section is: one module holding its plot data,
# its Plotly figure, its PNG and its text, drawing on the shared helpers only.
STATES_MODULE = '''
"""Trials by state: how many trials ended in each state, as bars."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.report.figures import LAYOUT
from searchsvc.report.plots import new_figure, save_png
from searchsvc.report.sections.base import ReportContext, Section
from searchsvc.spec import StudySpec

if TYPE_CHECKING:
    import plotly.graph_objects as go


@dataclass(frozen=True)
class StatePlot:
    key: str
    title: str
    states: tuple[str, ...]
    counts: tuple[int, ...]


def state_plot(trials: Sequence[TrialRecord]) -> StatePlot | None:
    counts = Counter(str(t.state) for t in trials)
    if not counts:
        return None
    return StatePlot("trial-states", "Trials by their state", tuple(counts),
                     tuple(counts.values()))


def state_figure(plot: StatePlot) -> go.Figure:
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=list(plot.states), y=list(plot.counts), name="trials per state"))
    fig.update_layout(title=plot.title, **LAYOUT)
    return fig


class TrialStates(Section):
    key = "trialstates"
    title = "Trials by state"

    def plots(self, spec: StudySpec, trials: Sequence[TrialRecord],
              analysis: StudyAnalysis) -> tuple[Any, ...]:
        plot = state_plot(trials)
        return () if plot is None else (plot,)

    def figures(self, plots: Sequence[Any]) -> list[tuple[str, go.Figure]]:
        return [(p.key, state_figure(p)) for p in plots]

    def images(self, plots: Sequence[Any], folder: Path) -> list[Path]:
        paths = []
        for p in plots:
            fig, ax = new_figure(4, 3)
            ax.bar(p.states, p.counts)
            paths.append(save_png(fig, folder / "trial_states.png"))
        return paths

    def data(self, study: StudyRecord, analysis: StudyAnalysis) -> dict[str, Any]:
        return {"trial_states": {s: n for s, n in analysis.summary.counts.items() if n}}

    def markdown(self, context: ReportContext, images: Sequence[Path]) -> list[str]:
        counts = context.analysis.summary.counts
        return ["", "## Trials by state", "", *(f"- {s}: {n}" for s, n in counts.items() if n),
                *(f"![trial states]({p})" for p in images)]
'''
STATES_FRAGMENT = """{% import "macros.html" as m %}
{% call m.section("trialstates", "Trials by state") %}
<p>{{ summary.counts.values()|sum }} trials by their state</p>
{% for f in figures %}{{ m.figure(f) }}{% endfor %}
{% endcall %}
"""


@pytest.fixture
def states_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Section:
    """The section of STATES_MODULE, imported from its own file, and its fragment served from
    a folder of its own: nothing is written into the package, and both are gone afterwards."""
    code, templates = tmp_path / "code", tmp_path / "templates"
    code.mkdir()
    templates.mkdir()
    (code / "trial_states_section.py").write_text(STATES_MODULE)
    (templates / "section-trialstates.html").write_text(STATES_FRAGMENT)
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.delitem(sys.modules, "trial_states_section", raising=False)  # dropped after
    env = environment()
    monkeypatch.setattr(env, "loader", ChoiceLoader([FileSystemLoader(templates), env.loader]))
    section: Section = importlib.import_module("trial_states_section").TrialStates()
    return section


def test_a_new_section_module_with_a_figure_shows_in_every_format(
        states_section: Section, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    extended = (*SECTIONS, states_section)
    for module in (sections_module, data, html, markdown, writer):
        monkeypatch.setattr(module, "SECTIONS", extended)
    record, spec = study("min")
    trials = make_trials(12, infeasible={4})
    files = write_files(tmp_path / "report", record, spec, trials,
                        analyze(record, spec, trials))
    page = files.files["html"].read_text()
    assert '<section id="trialstates"><h2>Trials by state</h2>\n<p>12 trials by their state' \
        in page
    figure = page[page.index('id="trialstates"'):]
    assert '<div id="fig-trial-states" class="plotly-graph-div"' in figure
    assert 'Plotly.newPlot("fig-trial-states", [{' in figure
    assert '"name": "trials per state"' in figure and '"Trials by their state"' in figure
    report_md = files.files["md"].read_text()
    assert "## Trials by state\n\n- completed: 11\n- infeasible: 1\n" in report_md
    assert "![trial states](plots/trial_states.png)" in report_md
    assert (tmp_path / "report" / "plots" / "trial_states.png").read_bytes()[:4] == b"\x89PNG"
    report_json = json.loads(files.files["json"].read_text())
    assert report_json["trial_states"] == {"completed": 11, "infeasible": 1}
    package_templates = Path(html.__file__).parent / "templates"
    assert not (package_templates / "section-trialstates.html").exists()
