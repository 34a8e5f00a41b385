"""A stored study's report: its records read from a store (or a server's studies), analysed
(with the parent study it was made from), and written by :mod:`searchsvc.report`. What
``searchsvc report``, ``run``'s last step and the Python API's ``Study.report()`` call."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from searchsvc.analysis import StudyAnalysis, analyze
from searchsvc.analysis.curves import curve_candidates
from searchsvc.analysis.trials import search_trials
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.errors import NotFoundError
from searchsvc.report.writer import FORMATS, ReportFiles, check_report_request, write_files
from searchsvc.spec import StudySpec, spec_of
from searchsvc.store import StudyReader, searchsvc_home


def write_report(store: StudyReader, study_name: str, out_dir: str | Path | None = None,
                 formats: Iterable[str] = FORMATS, *, top_fraction: float = 0.2,
                 spec: StudySpec | None = None) -> ReportFiles:
    """Write the report of ``study_name`` into ``out_dir`` (default: the study's results
    folder). trials.csv and next_study.yaml are always written. ``store``: a store, or a
    server's studies (:class:`searchsvc.client.RemoteStudies`)."""
    formats = check_report_request(formats, top_fraction)
    study = store.get_study(study_name)
    spec = spec or spec_of(study)
    trials, analysis = analyze_stored(store, study, spec, top_fraction)
    folder = Path(out_dir or study.results_dir or searchsvc_home() / "results" / study.name)
    return write_files(folder, study, spec, trials, analysis, formats)


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
