"""What users do with studies — validate, create, run, resume, report — in one place that the
CLI, the service and the Python API all call, so each does it the same way.

A study file is parsed once (here, or once per process for a stored study, see
:func:`searchsvc.spec.spec_of`) and passed on typed; its searcher is made once for creating
and running it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.core import StudyRecord
from searchsvc.spec import DEFAULT_LIMITS, SpecLimits, StudySpec, load_spec, parse_spec, spec_of
from searchsvc.store import Store, StudyReader

if TYPE_CHECKING:
    from searchsvc.analysis.compare import Comparison
    from searchsvc.codebundle import CodeBundle
    from searchsvc.driver.preflight import PreflightResult
    from searchsvc.driver.run import RunOptions, RunOutcome
    from searchsvc.report.writer import ReportFiles
    from searchsvc.searchers import Searcher


@dataclass(frozen=True)
class StudyRun:
    """A run (or resume) that ended: what happened, and the report written after it."""

    outcome: RunOutcome
    report: ReportFiles


def check(spec: StudySpec, limits: SpecLimits = DEFAULT_LIMITS) -> StudySpec:
    """``spec`` unchanged if it is within ``limits`` and its searcher and backend accept it;
    else :class:`~searchsvc.errors.SpecError` listing every problem with its file and line.

    The limits come first and alone: a spec over them is refused without running the searcher
    and backend checks, which may enumerate what the limits bound (a grid, the arms)."""
    from searchsvc.backends import check_backend
    from searchsvc.errors import SpecError
    from searchsvc.searchers import check_spec
    from searchsvc.spec.limits import limit_issues

    issues = limit_issues(spec, limits) or [*check_backend(spec), *check_spec(spec, limits)]
    if issues:
        raise SpecError(issues)
    return spec


def validate(path: str | Path, limits: SpecLimits = DEFAULT_LIMITS) -> StudySpec:
    """The study file at ``path``: the one pipeline every surface uses — the hardened YAML
    load, the file's validation into one immutable :class:`StudySpec`, then :func:`check`."""
    return check(load_spec(path), limits)


def validate_text(text: str | bytes, file: str = "<spec>",
                  limits: SpecLimits = DEFAULT_LIMITS) -> StudySpec:
    """As :func:`validate`, for study-file text (``file`` names it in messages)."""
    return check(parse_spec(text, file=file), limits)


def create(spec: StudySpec, store: Store, options: RunOptions | None = None, *,
           overwrite: bool = False, owner: str | None = None, code: CodeBundle | None = None,
           import_objective: bool = True, preflight: bool = True) -> StudyRecord:
    """Record a new study from a checked ``spec`` (see :func:`searchsvc.driver.create_study`;
    the service passes ``import_objective=False``: its API process runs no user code).
    ``preflight=False`` records that its first run starts without preflight (``searchsvc
    submit --no-preflight``): :func:`resume` then skips it."""
    from searchsvc.driver.run import RunOptions, create_study

    study = create_study(spec, store, options or RunOptions(), overwrite=overwrite,
                         owner=owner, code=code, import_objective=import_objective)
    if preflight:
        return study
    return store.update_study(study.name, provenance={**study.provenance,
                                                      "preflight": PREFLIGHT_SKIPPED})


# What a study's provenance holds when it was created to start without preflight.
PREFLIGHT_SKIPPED: dict[str, Any] = {"skipped": "started without preflight (--no-preflight)",
                                     "checks": []}


def run(spec: StudySpec, store: Store, options: RunOptions | None = None, *,
        overwrite: bool = False, preflight: bool = True,
        on_preflight: Callable[[PreflightResult], None] | None = None) -> StudyRun:
    """Create the study, run all its trials on Ray, and write its report. ``preflight``: first
    run the objective at the centre of the space for a few steps, in the same Ray session
    (:mod:`searchsvc.driver.preflight`); a failed check raises
    :class:`~searchsvc.driver.preflight.PreflightError` before the study is created, and the
    checks and cost estimate go into the study's provenance (``on_preflight`` sees them first)."""
    from searchsvc.driver.preflight import raise_if_failed, ray_session, run_preflight
    from searchsvc.driver.run import RunOptions, create_study
    from searchsvc.searchers import create_searcher

    options = options or RunOptions()
    searcher = create_searcher(spec)
    if not preflight:
        study = create_study(spec, store, options, overwrite=overwrite, searcher=searcher)
        return _run_and_report(study, store, options, spec, searcher)
    with ray_session(spec, options):
        checked = run_preflight(spec, searcher=searcher)
        if on_preflight is not None:
            on_preflight(checked)
        raise_if_failed(checked)
        study = create_study(spec, store, options, overwrite=overwrite, searcher=searcher)
        study = store.update_study(study.name, provenance={**study.provenance,
                                                           "preflight": checked.to_dict()})
        return _run_and_report(study, store, options, spec, searcher)


def preflight(spec: StudySpec, options: RunOptions | None = None) -> PreflightResult:
    """Preflight alone (``searchsvc preflight``): its checks and the study's cost estimate;
    stores nothing and raises nothing for a failed check (see ``result.issues``)."""
    from searchsvc.driver.preflight import ray_session, run_preflight
    from searchsvc.driver.run import RunOptions

    options = options or RunOptions()
    with ray_session(spec, options):
        return run_preflight(spec)


def cluster_nodes(address: str | None, num_cpus: int | None = None,
                  timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """The Ray nodes a study's driver will run on, each with its ``Resources``: the one node
    of an embedded Ray with ``num_cpus`` (None: the machine's), or the alive nodes of the
    cluster at ``address``, asked from a child process (this one never joins the cluster)."""
    import json
    import subprocess
    import sys

    from searchsvc.driver.capacity import embedded_nodes
    from searchsvc.errors import RunnerError

    if not address:
        return embedded_nodes(num_cpus)
    try:
        done = subprocess.run([sys.executable, "-m", "searchsvc.driver.capacity", address],
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RunnerError(f"the Ray cluster at {address} did not answer in {timeout_s:.0f} s"
                          ) from None
    if done.returncode != 0:
        raise RunnerError(f"could not ask the Ray cluster at {address} for its nodes: "
                          f"{done.stderr.strip().splitlines()[-1:] or ['no error output']}")
    nodes: list[dict[str, Any]] = json.loads(done.stdout)
    return nodes


def check_capacity(spec: StudySpec, nodes: list[dict[str, Any]]) -> StudySpec:
    """``spec`` when Ray ``nodes`` can hold one of its trials, else :class:`SpecError` naming
    the request and the capacity (see :mod:`searchsvc.driver.capacity`)."""
    from searchsvc.driver.capacity import capacity_issues
    from searchsvc.errors import SpecError

    issues = capacity_issues(spec, nodes)
    if issues:
        raise SpecError(issues)
    return spec


def resume(name: str, store: Store, options: RunOptions | None = None, *,
           preflight: bool = True,
           on_preflight: Callable[[PreflightResult], None] | None = None) -> StudyRun:
    """Run the trials of study ``name`` that have not finished, then write its report.
    A study that has never started (created, no trial, no preflight yet: how the service's
    driver finds a submitted study) is preflighted first unless ``preflight`` is False; a
    failed preflight marks it failed, keeps the result in its provenance and raises
    :class:`~searchsvc.driver.preflight.PreflightError`."""
    from searchsvc.core import STUDY_CREATED, STUDY_FAILED
    from searchsvc.driver.preflight import ray_session, run_preflight
    from searchsvc.driver.run import RunOptions
    from searchsvc.provenance import code_path

    options = options or RunOptions()
    study = store.get_study(name)
    spec = spec_of(study)
    fresh = (study.state == STUDY_CREATED and "preflight" not in study.provenance
             and not store.get_trials(name))
    if not (preflight and fresh):
        return _run_and_report(study, store, options, spec, None)
    code = code_path(study)
    with ray_session(spec, options, code):
        checked = run_preflight(spec, code=code)
        if on_preflight is not None:
            on_preflight(checked)
        failed = {} if checked.ok else {"state": STUDY_FAILED}
        study = store.update_study(name, provenance={**study.provenance,
                                                     "preflight": checked.to_dict()}, **failed)
        if failed:
            from searchsvc.driver.preflight import raise_if_failed

            raise_if_failed(checked)
        return _run_and_report(study, store, options, spec, None)


def _run_and_report(study: StudyRecord, store: Store, options: RunOptions, spec: StudySpec,
                    searcher: Searcher | None) -> StudyRun:
    """Run the study's unfinished trials and write its report; its experiment trackers (the
    spec's ``tracking:``) follow the run and get the report's files at the end."""
    from searchsvc.driver.run import results_dir_of, run_study
    from searchsvc.tracking import ReportFolder, open_trackers

    trackers = open_trackers(spec, results_dir_of(study))
    try:
        outcome = run_study(study.name, store, options, spec=spec, searcher=searcher,
                            trackers=trackers)
        files = report(study.name, store, spec=spec)
        if trackers:
            plots = files.folder / "plots"
            attached = (*files.files.values(), *([plots] if "md" in files.files else []))
            trackers.study_finished(outcome.study, ReportFolder(files.folder, attached))
    finally:
        trackers.close()
    return StudyRun(outcome, files)


def report(name: str, store: StudyReader, out_dir: str | Path | None = None,
           formats: Iterable[str] | None = None, *, top_fraction: float = 0.2,
           spec: StudySpec | None = None) -> ReportFiles:
    """Write the report of study ``name`` (default formats: html, md, json; trials.csv and
    next_study.yaml always) into ``out_dir`` (default: the study's results folder)."""
    from searchsvc.report.writer import FORMATS
    from searchsvc.reporting import write_report

    return write_report(store, name, out_dir, FORMATS if formats is None else formats,
                        top_fraction=top_fraction, spec=spec)


def compare(baseline: str, candidate: str, store: StudyReader) -> Comparison:
    """Whether study ``candidate``'s best beats ``baseline``'s beyond seed noise."""
    from searchsvc.analysis.compare import compare as compared

    return compared(store.get_study(baseline), store.get_trials(baseline),
                    store.get_study(candidate), store.get_trials(candidate))
