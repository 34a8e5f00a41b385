"""Writes a study's report files: trials.csv, report.json, report.md, report.html,
next_study.yaml and plots/."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from searchsvc.analysis import StudyAnalysis, analyze
from searchsvc.analysis.curves import curve_candidates
from searchsvc.analysis.trials import search_trials
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.errors import NotFoundError, SearchsvcError
from searchsvc.report.data import report_data
from searchsvc.report.html import render_html
from searchsvc.report.markdown import render_markdown
from searchsvc.report.plotdata import report_plots
from searchsvc.report.plots import axis_plots
from searchsvc.report.tables import write_trials_csv
from searchsvc.spec import StudySpec, spec_of
from searchsvc.store import StudyReader, searchsvc_home

FORMATS = ("html", "md", "json")


@dataclass(frozen=True)
class ReportFiles:
    folder: Path
    files: dict[str, Path]

    @property
    def main(self) -> Path:
        for fmt in FORMATS:
            if fmt in self.files:
                return self.files[fmt]
        return self.files["csv"]


def write_report(store: StudyReader, study_name: str, out_dir: str | Path | None = None,
                 formats: Iterable[str] = FORMATS, *, top_fraction: float = 0.2,
                 spec: StudySpec | None = None) -> ReportFiles:
    """Write the report of ``study_name`` into ``out_dir`` (default: the study's results
    folder). trials.csv and next_study.yaml are always written. ``store``: a store, or a
    server's studies (:class:`searchsvc.client.RemoteStudies`)."""
    formats = list(formats)
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise SearchsvcError(f"unknown report format {unknown[0]!r} (valid: {', '.join(FORMATS)})")
    if not 0 < top_fraction <= 1:
        raise SearchsvcError(f"top fraction must be in (0, 1] (got {top_fraction})")
    study = store.get_study(study_name)
    spec = spec or spec_of(study)
    trials, analysis = analyze_stored(store, study, spec, top_fraction)
    folder = Path(out_dir or study.results_dir or searchsvc_home() / "results" / study.name)
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
        pngs = axis_plots(plots.axes, folder / "plots")
        files["md"] = folder / "report.md"
        files["md"].write_text(render_markdown(study, spec, trials, analysis, pngs, folder))
    if "html" in formats:
        files["html"] = folder / "report.html"
        files["html"].write_text(render_html(study, spec, analysis, plots))
    return ReportFiles(folder, files)


TELEMETRY_STEPS_LIMIT = 100_000  # steps read for the report's telemetry summaries


def analyze_stored(store: StudyReader, study: StudyRecord, spec: StudySpec,
                   top_fraction: float = 0.2) -> tuple[list[TrialRecord], StudyAnalysis]:
    """The trials a report needs (measurements only for the curves it diagnoses and draws)
    and their analysis, with the parent study's comparison: what every report and the Python
    API's ``Study.report()`` show."""
    # Only the curves of each arm's best trials are analysed and drawn: loading every
    # measurement of a 10,000-trial study would take most of the report's time.
    trials = store.get_trials(study.name)
    wanted = {t.number for t in curve_candidates(search_trials(trials), study.mode)}
    wanted |= {t.number for t in trials if t.repeat_of in wanted}  # their noise bands
    # The per-trial telemetry summaries need every trial's steps: read them all unless that
    # is a very large study (then only the curve candidates' telemetry is summarised).
    steps = sum(t.last_step or 0 for t in trials)
    trials = store.get_trials(study.name, measurements=(
        True if steps <= TELEMETRY_STEPS_LIMIT else wanted))
    analysis = analyze(study, spec, trials, store.get_events(study.name),
                       top_fraction=top_fraction, parent=_parent(store, spec, study.owner))
    return trials, analysis


def _parent(store: StudyReader, spec: StudySpec, owner: str | None
            ) -> tuple[StudyRecord, list[TrialRecord]] | None:
    """The study ``spec`` was made from and its trials, when it is in ``store`` and belongs to
    the same ``owner`` (the service's user; None from the command line)."""
    if not spec.parent or spec.parent == spec.name:
        return None
    try:
        parent = store.get_study(spec.parent)
    except NotFoundError:
        return None  # deleted, or made in another store: nothing to compare with
    if parent.owner != owner:
        return None  # another user's study is not this user's to see
    return parent, store.get_trials(spec.parent)
