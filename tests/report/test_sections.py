"""The report's sections, listed once in SECTIONS: each owns its own report.json keys and
figure keys, and a section added to the list shows in report.html, report.md and
report.json with no other change."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from searchsvc.analysis import StudyAnalysis, analyze
from searchsvc.core import StudyRecord
from searchsvc.report import data, html, markdown, writer
from searchsvc.report import sections as sections_module
from searchsvc.report.sections import SECTIONS, ReportContext, Section, report_plots
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
