"""What users do with studies — validate, create, run, resume, report — in one place that the
CLI, the service and the Python API all call, so each does it the same way.

It is the front doors' only way in: they pass plain options (:class:`RunOptions`, the driver's own)
and get what they need of the driver, worker, backends, analysis and report through the
functions and types below, which import those packages only when called (so ``searchsvc
--help`` and the service's app stay light).

A study file is parsed once (here, or once per process for a stored study, see
:func:`searchsvc.spec.spec_of`) and passed on typed; its searcher is made here, once per use
case (with :func:`searchsvc.searchers.create_searcher`; a resume makes it from the stored
spec), and handed to the driver's preflight, creation and run, which never make one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.options import RunOptions
from searchsvc.spec import DEFAULT_LIMITS, SpecLimits, StudySpec, load_spec, parse_spec, spec_of
from searchsvc.store import Store, StudyReader

if TYPE_CHECKING:  # the types the front doors read, named here for them
    from pydantic import BaseModel

    from searchsvc.analysis.campaign import Campaign
    from searchsvc.analysis.compare import Comparison
    from searchsvc.analysis.replay import Replay
    from searchsvc.analysis.study import StudyAnalysis
    from searchsvc.codebundle import CodeBundle
    from searchsvc.driver.preflight import PreflightResult
    from searchsvc.driver.run import RunOutcome
    from searchsvc.report.writer import ReportFiles
    from searchsvc.searchers import Searcher
    from searchsvc.tracking import Tracker


@dataclass(frozen=True)
class StudyRun:
    """A run (or resume) that ended: what happened, and the report written after it."""

    outcome: RunOutcome
    report: ReportFiles

    @property
    def stopped_by_ctrl_c(self) -> bool:
        """Whether the run stopped because its user pressed Ctrl-C (it is interrupted)."""
        from searchsvc.driver.interrupts import STOPPED_BY_CTRL_C

        return self.outcome.reason == STOPPED_BY_CTRL_C


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
    from searchsvc.driver.study import create_study
    from searchsvc.searchers import create_searcher

    study = create_study(spec, store, options or RunOptions(), searcher=create_searcher(spec),
                         overwrite=overwrite, owner=owner, code=code,
                         import_objective=import_objective)
    if preflight:
        return study
    return store.update_study(study.name, provenance={**study.provenance,
                                                      "preflight": PREFLIGHT_SKIPPED})


# What a study's provenance holds when it was created to start without preflight.
PREFLIGHT_SKIPPED: dict[str, Any] = {"skipped": "started without preflight (--no-preflight)",
                                     "checks": []}


def run(spec: StudySpec, store: Store, options: RunOptions | None = None, *,
        overwrite: bool = False, preflight: bool = True,
        on_preflight: Callable[[PreflightResult], None] | None = None,
        provenance: Mapping[str, Any] | None = None, owner: str | None = None) -> StudyRun:
    """Create the study, run all its trials on Ray, and write its report. ``preflight``: first
    run the objective at the centre of the space for a few steps, in the same Ray session
    (:mod:`searchsvc.driver.preflight`); a failed check raises
    :class:`~searchsvc.driver.preflight.PreflightError` before the study is created, and the
    checks and cost estimate go into the study's provenance (``on_preflight`` sees them first;
    ``provenance``: more to record there, e.g. the study's place in a campaign; ``owner``:
    the service user it belongs to)."""
    from searchsvc.driver.preflight import raise_if_failed, run_preflight
    from searchsvc.driver.session import ray_session
    from searchsvc.driver.study import create_study
    from searchsvc.provenance import objective_paths
    from searchsvc.searchers import create_searcher

    options = options or RunOptions()
    searcher = create_searcher(spec)
    paths = objective_paths(spec.source.file)
    # Ray first: a cluster that cannot be reached (or a refused address) fails the run before
    # an existing study of the name is replaced
    with ray_session(spec, options, search_paths=paths):
        checked = run_preflight(spec, searcher=searcher, search_paths=paths) if preflight else None
        if checked is not None:
            if on_preflight is not None:
                on_preflight(checked)
            raise_if_failed(checked)
        # the objective is checked once: preflight imported it in a worker (torch and the
        # like cost the driver seconds and memory it never uses)
        study = create_study(spec, store, options, overwrite=overwrite, searcher=searcher,
                             extra_provenance=provenance, owner=owner, search_paths=paths,
                             import_objective=checked is None or not checked.imported)
        if checked is not None:
            study = store.update_study(study.name, provenance={
                **study.provenance, "preflight": checked.to_dict()})
        ran = _run_trials(study, store, options, spec, searcher)
    return _report_run(ran, store, spec)


def preflight(spec: StudySpec, options: RunOptions | None = None) -> PreflightResult:
    """Preflight alone (``searchsvc preflight``): its checks and the study's cost estimate;
    stores nothing and raises nothing for a failed check (see ``result.issues``)."""
    from searchsvc.driver.preflight import run_preflight
    from searchsvc.driver.session import ray_session
    from searchsvc.provenance import objective_paths
    from searchsvc.searchers import create_searcher

    searcher = create_searcher(spec)
    paths = objective_paths(spec.source.file)
    with ray_session(spec, options or RunOptions(), search_paths=paths):
        return run_preflight(spec, searcher=searcher, search_paths=paths)


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
    from searchsvc.core import StudyState
    from searchsvc.driver.preflight import run_preflight
    from searchsvc.driver.session import ray_session
    from searchsvc.provenance import code_path, launch_of, objective_paths_of
    from searchsvc.searchers import create_searcher

    options = options or RunOptions()
    study = store.get_study(name)
    spec = spec_of(study)
    searcher = create_searcher(spec)  # from the stored spec: a resume has no other
    fresh = (study.state == StudyState.CREATED and "preflight" not in study.provenance
             and not store.get_trials(name))
    if not (preflight and fresh):
        return _report_run(_run_trials(study, store, options, spec, searcher), store, spec)
    code, paths = code_path(study), objective_paths_of(study)
    with ray_session(spec, options, code=code, search_paths=paths):
        checked = run_preflight(spec, searcher=searcher, search_paths=paths, code=code,
                                launch=launch_of(study))
        if on_preflight is not None:
            on_preflight(checked)
        failed = {} if checked.ok else {"state": StudyState.FAILED}
        study = store.update_study(name, provenance={**study.provenance,
                                                     "preflight": checked.to_dict()}, **failed)
        if failed:
            from searchsvc.driver.preflight import raise_if_failed

            raise_if_failed(checked)
        ran = _run_trials(study, store, options, spec, searcher)
    return _report_run(ran, store, spec)


@dataclass(frozen=True)
class _Ran:
    """The trials' run ended, its report not yet written: the experiment trackers that
    followed it are still open, to get the report's files."""

    outcome: RunOutcome
    trackers: Tracker


def _run_trials(study: StudyRecord, store: Store, options: RunOptions,
                spec: StudySpec, searcher: Searcher) -> _Ran:
    """Run the study's unfinished trials with ``searcher`` (fresh, made from ``spec``); its
    experiment trackers (the spec's ``tracking:``) follow the run. The caller ends the Ray
    session it opened before :func:`_report_run`: the report needs no Ray, and the node's
    processes and the driver's share of Ray's memory are gone by then."""
    from searchsvc.driver.run import run_study
    from searchsvc.driver.study import results_dir_of
    from searchsvc.tracking import open_trackers

    trackers = open_trackers(spec, results_dir_of(study))
    try:
        outcome = run_study(study.name, store, options, spec=spec, searcher=searcher,
                            trackers=trackers)
    except BaseException:
        trackers.close()
        raise
    return _Ran(outcome, trackers)


def _report_run(ran: _Ran, store: Store, spec: StudySpec) -> StudyRun:
    """Write the report of the run ``ran`` and hand its files to the run's trackers, which
    end here."""
    from searchsvc.tracking import ReportFolder

    try:
        files = report(ran.outcome.study.name, store, spec=spec)
        if ran.trackers:
            plots = files.folder / "plots"
            attached = (*files.files.values(), *([plots] if "md" in files.files else []))
            ran.trackers.study_finished(ran.outcome.study, ReportFolder(files.folder, attached))
    finally:
        ran.trackers.close()
    return StudyRun(ran.outcome, files)


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


def replay(name: str, store: StudyReader, kinds: Iterable[str] | None = None, *,
           concurrency: int | None = None, top_k: int | None = None) -> Replay:
    """Study ``name``'s full curves replayed under each early-stopping rule of ``kinds``
    (default: all; see :mod:`searchsvc.analysis.replay`), ``concurrency`` trials at a time
    (default: its ``budget.max_concurrent``), each setting listing the fate of its ``top_k``
    best trials (default 3);
    :class:`~searchsvc.errors.ConflictError` saying why when it has no full curves."""
    from searchsvc.analysis.replay import RULE_KINDS, TOP_K, not_replayable, study_replay
    from searchsvc.errors import ConflictError, UsageError

    chosen = tuple(kinds or RULE_KINDS)
    unknown = sorted(set(chosen) - set(RULE_KINDS))
    if unknown:
        raise UsageError(f"unknown early-stopping rule {', '.join(unknown)}: expected one of "
                         f"{', '.join(RULE_KINDS)}")
    if (concurrency is not None and concurrency < 1) or (top_k is not None and top_k < 1):
        raise UsageError("concurrency and top_k must be at least 1")
    study = store.get_study(name)
    spec = spec_of(study)
    trials = store.get_trials(name, measurements=True)
    why = not_replayable(spec, trials)
    found = None if why else study_replay(spec, trials, kinds=chosen, concurrency=concurrency,
                                          top_k=top_k or TOP_K)
    if found is None:
        raise ConflictError(f"study {name!r} cannot be replayed: {why}")
    return found


def suggested_next(name: str, store: StudyReader) -> str:
    """The study file ``searchsvc next`` would run after study ``name``: its report's
    suggested next study, warm-started from it."""
    from searchsvc.reporting import analyze_stored
    from searchsvc.spec.edits import warm_started

    study = store.get_study(name)
    _, analysis = analyze_stored(store, study, spec_of(study))
    return warm_started(analysis.next_study.text, name)


def next_round(name: str, store: Store, options: RunOptions | None = None, *,
               text: str | None = None, preflight: bool = True,
               on_preflight: Callable[[PreflightResult], None] | None = None) -> StudyRun:
    """Run the next round of study ``name``'s campaign: its suggested next study (or ``text``,
    the user's edit of it), warm-started from it, with the decisions that made it and their
    evidence recorded in its provenance, and its study file stored in its results folder.
    Study ``name`` becomes round 1 of a campaign named after it if it was in none."""
    from searchsvc.analysis.campaign import CAMPAIGN_KEY, decisions, first_round, membership
    from searchsvc.analysis.campaign import next_round as round_record
    from searchsvc.reporting import analyze_stored
    from searchsvc.spec.edits import warm_started

    parent = store.get_study(name)
    parent_spec = spec_of(parent)
    _, analysis = analyze_stored(store, parent, parent_spec)
    suggested = warm_started(analysis.next_study.text, name)
    chosen = suggested if text is None else text
    folder = (Path(parent.spec_file).parent if not parent.spec_file.startswith("<")
              else Path.cwd())  # where its objective is looked for, as for the parent
    spec = validate_text(chosen, file=str(folder / f"{_next_name_of(chosen, name)}.yaml"))
    if membership(parent) is None:
        parent = store.update_study(name, provenance={
            **parent.provenance, CAMPAIGN_KEY: first_round(parent, parent_spec)})
    record = round_record(parent, decisions(analysis, edited=chosen != suggested))
    done = run(spec, store, options, preflight=preflight, on_preflight=on_preflight,
               provenance={CAMPAIGN_KEY: record}, owner=parent.owner)
    _store_file(done, chosen)
    return done


def _next_name_of(text: str, fallback: str) -> str:
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return fallback
    return str(data.get("study", fallback)) if isinstance(data, dict) else fallback


def _store_file(done: StudyRun, text: str) -> None:
    """Keep the round's study file beside its report (``study.yaml``)."""
    done.report.folder.mkdir(parents=True, exist_ok=True)
    (done.report.folder / "study.yaml").write_text(text)


def campaign(name: str, store: Store, owner: str | None = None) -> Campaign:
    """Campaign ``name``'s timeline: every round (of ``owner``'s studies; None: the command
    line's), its search space, best with its seed noise, verdicts, decisions with evidence and
    compute spent, each round analysed as its report is. A study in no campaign is the one
    round of its own. :class:`~searchsvc.errors.NotFoundError` when there is none."""
    from searchsvc.analysis.campaign import campaign_name, campaign_rounds, membership, round_of
    from searchsvc.errors import NotFoundError
    from searchsvc.reporting import analyze_stored

    studies = [s for s in store.list_studies(owner=owner)
               if (membership(s) is not None and campaign_name(s) == name)
               or (membership(s) is None and s.name == name)]
    if not studies:
        raise NotFoundError(f"no campaign named {name!r} in this store")
    rounds = []
    for study in studies:
        spec = spec_of(study)
        trials, analysis = analyze_stored(store, study, spec)
        rounds.append(round_of(study, spec, trials, analysis))
    return campaign_rounds(name, rounds)


# --- What the front doors (CLI, Python API, client, service) show of the layers below --------


def raise_if_failed(found: PreflightResult) -> None:
    """:class:`~searchsvc.driver.preflight.PreflightError` (exit code 2, FILE:LINE messages)
    when a check of preflight ``found`` failed; nothing when it passed."""
    from searchsvc.driver.preflight import raise_if_failed as raised

    raised(found)


def is_advisory(check: str) -> bool:
    """Whether preflight check ``check`` only warns: it never fails a study."""
    from searchsvc.analysis.preflight import ADVISORY_CHECKS

    return check in ADVISORY_CHECKS




def findings(reader: StudyReader, study: StudyRecord, spec: StudySpec,
             top_fraction: float = 0.2) -> tuple[list[TrialRecord], StudyAnalysis]:
    """A stored study's trials and their analysis: the findings its report shows."""
    from searchsvc.reporting import analyze_stored

    return analyze_stored(reader, study, spec, top_fraction)


def trial_table(name: str, reader: StudyReader) -> tuple[list[str], list[list[Any]]]:
    """Study ``name``'s table of trials (header, rows) as trials.csv holds it: one row per
    trial, its config flattened, with its steps' telemetry summary while its study is small
    enough for the report to read every step."""
    from searchsvc.report.tables import trial_table as table
    from searchsvc.reporting import TELEMETRY_STEPS_LIMIT

    trials = reader.get_trials(name)
    if sum(t.last_step or 0 for t in trials) <= TELEMETRY_STEPS_LIMIT:
        trials = reader.get_trials(name, measurements=True)
    return table(trials)


def figures(reader: StudyReader, study: StudyRecord, spec: StudySpec) -> dict[str, list[Any]]:
    """The report's interactive (Plotly) figures of a stored study, by section."""
    from searchsvc.report.sections import report_figures, report_plots

    trials, analysis = findings(reader, study, spec)
    drawn = report_figures(report_plots(spec, trials, analysis))
    return {section: [figure for _, figure in found] for section, found in drawn.items()}














def in_campaign(study: StudyRecord) -> str | None:
    """The campaign ``study`` is a round of; None when it is in none."""
    from searchsvc.analysis.campaign import campaign_name, membership

    return campaign_name(study) if membership(study) else None








def keras_starter_study(objective: str) -> str:
    """A starter study file from the hyperparameters the KerasTuner hypermodel ``objective``
    ("module:build") registers when built once with default values (``spaces infer``)."""
    from searchsvc.backends.keras import starter_study
    from searchsvc.provenance import objective_paths
    from searchsvc.worker.objective import resolve_objective

    return starter_study(objective, resolve_objective(objective, objective_paths(None)))




def backend_options(name: str) -> type[BaseModel]:
    """The model of backend ``name``'s ``backend_options``."""
    from searchsvc.backends import backend_class

    options: type[BaseModel] = backend_class(name).Options
    return options


def import_sweep(sweep: Path, out: Path) -> tuple[StudySpec, list[str]]:
    """Write the study file of W&B sweep file ``sweep`` to ``out`` (see
    :mod:`searchsvc.importing`) and validate it there; (the study, what could not be mapped).
    :class:`~searchsvc.errors.UsageError` for a file that is not a sweep, SpecError for a
    study file that does not validate (it is written all the same, to be edited)."""
    import yaml

    from searchsvc.errors import UsageError
    from searchsvc.importing import sweep_study

    try:
        loaded = yaml.safe_load(sweep.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise UsageError(f"{sweep}: cannot read a sweep file: {exc}") from None
    if not isinstance(loaded, dict):
        raise UsageError(f"{sweep}: a W&B sweep file is a mapping (program, method, metric, "
                         "parameters, ...)")
    imported = sweep_study(loaded, sweep.stem)
    out.write_text(yaml.safe_dump(imported.study, sort_keys=False, default_flow_style=None))
    return validate(out), imported.unmapped


def runs_command(spec: StudySpec) -> bool:
    """Whether ``spec``'s objective is a script its backend runs as it is (``objective:
    {command: ...}``) rather than a function a worker imports."""
    from searchsvc.backends import backend_class

    return bool(backend_class(spec.backend).runs_commands)


def warm_up() -> None:
    """Import now what running, submitting and reporting studies import on first use (a
    long-lived server does this once at start, rather than on its event loop)."""
    import searchsvc.backends
    import searchsvc.driver
    import searchsvc.report
    import searchsvc.searchers  # noqa: F401


# The use cases that are one lower function as it is, exported under the use case's name
# rather than wrapped: each is imported when first asked for (``__getattr__`` below), so the
# front doors stay as light as the wrappers kept them. "module:attribute[.attribute]".
_EXPORTED = {
    "summary": "searchsvc.analysis.summary:summarize",  # a study's counts and best trials
    "comparison_json": "searchsvc.report.data:comparison_data",  # report.json's comparison
    "progress_plot": "searchsvc.report.charts.progress:progress_plot",  # None before any value
    "progress_figure": "searchsvc.report.charts.progress:progress_figure",  # its Plotly figure
    "campaign_plot": "searchsvc.report.charts.campaign:campaign_plot",  # the best per round
    "campaign_figure": "searchsvc.report.charts.campaign:campaign_figure",  # its Plotly figure
    "trial_telemetry": "searchsvc.analysis.telemetry:trial_telemetry",  # a trial's steps'
    "campaign_name": "searchsvc.analysis.campaign:campaign_name",  # its own name in none
    "campaign_from_json": "searchsvc.analysis.campaign:Campaign.from_dict",  # as_dict's
    "objective_ref": "searchsvc.worker.objective:objective_ref",  # module:qualname
    "give_objective": "searchsvc.worker.objective:give_objective",  # in this process
    "backend_names": "searchsvc.backends:backend_names",  # the registered backends
    "own_ray_head": "searchsvc.driver.head:own_head",  # the service's one Ray, or a new one
    "stop_ray_head": "searchsvc.driver.head:stop_head",  # and what ends it
}

if TYPE_CHECKING:
    from searchsvc.analysis.campaign import Campaign as _Campaign
    from searchsvc.analysis.campaign import campaign_name as campaign_name
    from searchsvc.analysis.summary import summarize as summary  # noqa: F401
    from searchsvc.analysis.telemetry import trial_telemetry as trial_telemetry
    from searchsvc.backends import backend_names as backend_names
    from searchsvc.driver.head import own_head as own_ray_head  # noqa: F401
    from searchsvc.driver.head import stop_head as stop_ray_head  # noqa: F401
    from searchsvc.report.charts.campaign import campaign_figure as campaign_figure
    from searchsvc.report.charts.campaign import campaign_plot as campaign_plot
    from searchsvc.report.charts.progress import progress_figure as progress_figure
    from searchsvc.report.charts.progress import progress_plot as progress_plot
    from searchsvc.report.data import comparison_data as comparison_json  # noqa: F401
    from searchsvc.worker.objective import give_objective as give_objective
    from searchsvc.worker.objective import objective_ref as objective_ref

    campaign_from_json = _Campaign.from_dict


def __getattr__(name: str) -> Any:
    target = _EXPORTED.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, _, path = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in path.split("."):
        found = getattr(found, part)
    return found
