"""Writes a study's report files (trials.csv, report.json, report.md, report.html,
next_study.yaml and plots/) from its records and their analysis; reading them from a store is
:mod:`searchsvc.reporting`'s."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from searchsvc.analysis import StudyAnalysis
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.errors import SearchsvcError
from searchsvc.report.data import report_data
from searchsvc.report.html import render_html
from searchsvc.report.markdown import render_markdown
from searchsvc.report.sections import SECTIONS, report_plots
from searchsvc.report.tables import write_trials_csv
from searchsvc.spec import StudySpec

FORMATS = ("html", "md", "json")


@dataclass(frozen=True)
class ReportFiles:
    folder: Path
    files: dict[str, Path]
    # Several objectives: the numbers of the trials on the Pareto front (None: one objective)
    pareto_front: tuple[int, ...] | None = None

    @property
    def main(self) -> Path:
        for fmt in FORMATS:
            if fmt in self.files:
                return self.files[fmt]
        return self.files["csv"]


def check_report_request(formats: Iterable[str], top_fraction: float) -> list[str]:
    """The formats asked for, checked (SearchsvcError naming a bad one or a bad fraction)."""
    formats = list(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise SearchsvcError(f"unknown report format {unknown[0]!r} (valid: {', '.join(FORMATS)})")
    if not 0 < top_fraction <= 1:
        raise SearchsvcError(f"top fraction must be in (0, 1] (got {top_fraction})")
    return formats


def write_files(folder: Path, study: StudyRecord, spec: StudySpec, trials: list[TrialRecord],
                analysis: StudyAnalysis, formats: Iterable[str] = FORMATS) -> ReportFiles:
    """Write the report of ``study`` (its ``trials`` and their ``analysis``) into ``folder``.
    trials.csv and next_study.yaml are always written."""
    formats = list(formats)
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {"csv": folder / "trials.csv",
                              "next_study": folder / "next_study.yaml"}
    write_trials_csv(trials, files["csv"])
    files["next_study"].write_text(analysis.next_study.text)
    if "json" in formats:
        files["json"] = folder / "report.json"
        files["json"].write_text(json.dumps(report_data(study, analysis), indent=2,
                                            default=str))
    # Computed once and drawn by both renderers, so the PNGs and the HTML show the same data.
    plots = report_plots(spec, trials, analysis)
    if "md" in formats:
        images = {s.key: s.images(plots.of(s.key), folder / "plots") for s in SECTIONS}
        files["md"] = folder / "report.md"
        files["md"].write_text(render_markdown(study, spec, trials, analysis, images, folder))
    if "html" in formats:
        files["html"] = folder / "report.html"
        files["html"].write_text(render_html(study, spec, analysis, plots, tuple(trials)))
    pareto = analysis.objectives
    front = pareto.front if pareto is not None and len(pareto.objectives) > 1 else None
    return ReportFiles(folder, files, front)
