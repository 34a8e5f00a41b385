"""Preflight (``searchsvc preflight``, and ``run`` before a study unless ``--no-preflight``):
the objective at the centre of the space, for a few steps, as ONE Ray task holding the study's
per-trial resources, through the study's own backend. It checks what a study would otherwise
find out after spending its budget (the objective imports, reports the study's metrics, finite
values, the sdk hook's overfit-one-batch and initial-loss checks), and estimates the study's
cost from the measured time per step. The checks and the estimate are pure
(:mod:`searchsvc.analysis.preflight`); this module only runs the task in the Ray session the
caller opened.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from searchsvc.analysis.preflight import (
    Check,
    CostEstimate,
    HookResult,
    Probe,
    Timing,
    budget_fraction,
    centre_config,
    check_probe,
    concurrency_of,
    estimate_cost,
    preflight_steps,
    summary_lines,
    timing_of,
)
from searchsvc.backends import backend_class
from searchsvc.errors import SearchsvcError, SpecIssue
from searchsvc.searchers import PopulationSchedule, Searcher
from searchsvc.searchers.repeats import planned_repeats, repeat_settings
from searchsvc.searchers.space import trial_seed
from searchsvc.spec import StudySpec
from searchsvc.worker.context import META_KEY

PREFLIGHT_TIMEOUT_S = 600.0


class PreflightError(SearchsvcError):
    """Preflight found the objective would fail the study; every problem as FILE:LINE."""

    exit_code = 2  # input that cannot work, as a study file's errors
    http_status = 422

    def __init__(self, issues: list[SpecIssue], result: PreflightResult | None = None):
        self.issues = issues
        self.result = result
        super().__init__("preflight failed:\n" + "\n".join(i.render() for i in issues))


@dataclass(frozen=True)
class PreflightResult:
    config: dict[str, Any]
    steps: int
    checks: tuple[Check, ...]
    issues: tuple[SpecIssue, ...]
    timing: Timing | None
    estimate: CostEstimate | None
    seconds: float  # preflight's own wall time
    probe: Probe = field(repr=False, default_factory=Probe)

    @property
    def ok(self) -> bool:
        return not self.issues

    @property
    def imported(self) -> bool:
        """Whether the objective was imported, in a worker of the study's Ray session, with
        the study's search paths: the driver need not import it again to check it."""
        return any(c.name == "imports" and c.ok for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """What the study's provenance and report.json keep (``preflight``)."""
        return {
            "ok": self.ok, "config": self.config, "steps": self.steps,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
            "issues": [i.render() for i in self.issues],
            "timing": None if self.timing is None else {
                "step_s": self.timing.step_s, "setup_s": self.timing.setup_s,
                "worker_start_s": self.timing.worker_start_s,
                "trial_overhead_s": self.timing.trial_overhead_s,
                "steps_measured": self.timing.steps_measured},
            "estimate": None if self.estimate is None else self.estimate.to_dict(),
            "seconds": self.seconds,
        }

    def lines(self) -> list[str]:
        return summary_lines(self.to_dict())


def _not_run_because(spec: StudySpec, backend: Any) -> str | None:
    """Why preflight has no single process to try the objective in (None: it has)."""
    if backend.runs_own_search:  # one search job with its own tuner: no trial to try
        return (f"backend '{spec.backend}' runs its own search as one job; preflight has no "
                "single trial to run")
    return None


def run_preflight(spec: StudySpec, *, searcher: Searcher, search_paths: Sequence[str],
                  code: str | None = None, launch: str | None = None,
                  timeout_s: float = PREFLIGHT_TIMEOUT_S) -> PreflightResult:
    """Run preflight in the Ray session this process has (the caller opens it, e.g. with the
    run's own session so Ray starts once), as the study's trials will run: ``searcher``, the
    study's (made by the use case; preflight only reads its trial count and schedule for the
    estimate); ``search_paths``, where its objective is imported from
    (provenance.objective_paths, as the use case computed them); ``code``, its uploaded code
    bundle; ``launch``, the folder it is launched from
    (default: this process's, unless it has ``code``: see provenance.launch_folder). Raises
    nothing for a failed check: the result's ``issues`` say what failed
    (:func:`raise_if_failed`)."""
    from searchsvc.driver.settings import trial_settings
    from searchsvc.provenance import launch_folder

    started = time.monotonic()
    backend = backend_class(spec.backend)
    steps = preflight_steps(spec)
    config = centre_config(spec)
    why = _not_run_because(spec, backend)
    if why is not None:
        return PreflightResult(config, 0, (Check("runs", None, why),), (), None, None,
                               time.monotonic() - started)
    launch = launch_folder(code, launch)
    settings = trial_settings(spec, search_paths=search_paths, launch=launch)
    meta = {"number": 0, "seed": trial_seed(spec.seed, 0), "preflight": True}
    probe = _probe_workers if spec.resources.data_parallel else _probe_process
    found = probe(spec, {**config, META_KEY: meta}, settings, steps, timeout_s)
    checks, issues = check_probe(spec, found)
    timing = timing_of(found)
    estimate = None
    if timing is not None and not issues:
        estimate = _estimate(spec, searcher, backend.runs_own_search, timing, found)
    return PreflightResult(config, steps, tuple(checks), tuple(issues), timing, estimate,
                           time.monotonic() - started, found)


def _probe_process(spec: StudySpec, config: dict[str, Any], settings: Any, steps: int,
                   timeout_s: float) -> Probe:
    """The objective in one Ray task holding one trial's resources."""
    import ray

    from searchsvc.worker.preflight import probe

    task = ray.remote(max_calls=1, max_retries=0)(probe).options(
        num_cpus=spec.resources.cpu, num_gpus=spec.resources.gpu)
    ref = task.remote(config, settings, steps, time.time())
    try:
        raw = ray.get(ref, timeout=timeout_s)
    except ray.exceptions.GetTimeoutError:
        ray.cancel(ref, force=True)
        raise _timed_out(spec, steps, timeout_s) from None
    hook = raw["hook"]
    return Probe(
        reports=tuple(raw["reports"]), times_s=tuple(raw["times_s"]), crash=raw["crash"],
        crashed_at_import=raw["crashed_at_import"], returned=raw["returned"],
        hook=None if hook is None else HookResult(tuple(hook["overfit_losses"]),
                                                  hook["num_classes"], hook["error"]),
        hook_s=raw["hook_s"], start_s=raw["start_s"], import_s=raw["import_s"],
        warm_first_s=raw["warm_first_s"], loader=raw.get("loader"),
        batches=tuple(tuple(b) for b in raw.get("batches") or ()))


def _probe_workers(spec: StudySpec, config: dict[str, Any], settings: Any, steps: int,
                   timeout_s: float) -> Probe:
    """The objective on a data-parallel trial's Ray Train workers. Its first report's time
    holds placing and starting the workers, which every such trial pays: preflight counts it
    as the trial's setup."""
    from searchsvc.worker.data_parallel import Workers, probe_data_parallel

    resources = spec.resources
    workers = Workers(resources.worker_count, resources.cpu, resources.gpu, "")
    raw = probe_data_parallel(config, settings, workers, steps, timeout_s)
    if raw["timed_out"]:
        raise _timed_out(spec, steps, timeout_s)
    return Probe(reports=tuple(raw["reports"]), times_s=tuple(raw["times_s"]),
                 crash=raw["crash"], returned=raw["returned"])


def _timed_out(spec: StudySpec, steps: int, timeout_s: float) -> PreflightError:
    return PreflightError([spec.source.issue(
        ("objective",), f"preflight's {steps} step(s) did not finish in {timeout_s:.0f} s")])


def _estimate(spec: StudySpec, searcher: Searcher, own_search: bool, timing: Timing,
              probe: Probe) -> CostEstimate:
    import ray

    notes = []
    repeats = planned_repeats(repeat_settings(spec, searcher, own_search), len(searcher.arms))
    steps = spec.budget.max_steps
    if steps is None:
        steps = len(probe.reports)
        if not probe.returned:
            notes.append(f"budget.max_steps is not set and the objective went on past "
                         f"{steps} steps: the estimate counts {steps} steps per trial")
    started = time.perf_counter()
    fresh = "ray.tune" not in sys.modules
    from ray import tune  # noqa: F401 - the run imports it next: its time is the run's too

    from searchsvc.driver import callbacks, schedulers, tune_search  # noqa: F401
    driver_start_s = time.perf_counter() - started if fresh else 0.0
    cluster = ray.cluster_resources()
    # A data-parallel trial holds its resources on each of its workers.
    workers = spec.resources.worker_count
    cpu, gpu = spec.resources.cpu * workers, spec.resources.gpu * workers
    concurrency, why = _concurrency(spec, cluster, searcher.total_trials + repeats)
    if spec.resources.data_parallel:
        notes.append(f"each trial runs on {workers} workers: {cpu:g} CPUs and {gpu:g} GPUs "
                     "a trial")
    if spec.resources.gpu_auto:
        notes.append("resources.gpu: auto: estimated with a whole GPU per trial, as the first "
                     "trial runs; the rest may be packed several to a GPU, and finish sooner")
    notes.append("time per step measured at the centre of the space; larger models or "
                 "batches in the space cost more")
    return estimate_cost(
        trials=searcher.total_trials, repeats=repeats, steps=steps,
        fraction=budget_fraction(searcher.schedule()), timing=timing,
        concurrency=concurrency, cpu=cpu, gpu=gpu,
        concurrency_from=why, cluster_cpus=cluster.get("CPU"), driver_start_s=driver_start_s,
        checkpoints=spec.checkpoints.keep_best is not None
        or isinstance(searcher.schedule(), PopulationSchedule), notes=notes)


def _concurrency(spec: StudySpec, cluster: dict[str, float], trials: int) -> tuple[int, str]:
    """How many trials run at once, and why: a trial's CPUs and GPUs (every worker's) against
    the cluster's, and a data-parallel trial's whole workers against what its nodes hold."""
    import ray

    workers = spec.resources.worker_count
    count, why = concurrency_of(spec.budget.max_concurrent, spec.resources.cpu * workers,
                                spec.resources.gpu * workers, cluster.get("CPU"),
                                cluster.get("GPU"), trials)
    if spec.resources.data_parallel:
        from searchsvc.driver.capacity import concurrent_trials

        held = concurrent_trials(spec, ray.nodes()) or count
        if held < count:
            return held, f"{workers} whole workers a trial, as the nodes hold them"
    return count, why


def raise_if_failed(result: PreflightResult) -> PreflightResult:
    if result.issues:
        raise PreflightError(list(result.issues), result)
    return result
