"""``resources.gpu: auto``: the first trial(s) run on a whole GPU each; what their telemetry
measured (peak GPU memory, utilisation, the data loader's workers) decides, by core/packing.py's
rule, how many of the remaining trials share each GPU and the CPUs each gets; a packed trial
that runs out of GPU memory is retried once at twice its share, as the same trial (a new
attempt, the searcher told only of its outcome). The decision is kept in the study's
provenance (``gpu_auto``): a resumed study packs as decided, and the report says what was
chosen and why.

The Ray Tune runs themselves are the driver's (driver/tune_run.py's ``fit``, given by
driver/run.py); this module decides and plans them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from searchsvc.analysis.telemetry import TrialTelemetry, trial_telemetry
from searchsvc.core import StudyRecord, TrialRecord
from searchsvc.core.packing import Packing, choose_packing
from searchsvc.searchers import Searcher
from searchsvc.searchers.base import Observation, Proposal
from searchsvc.searchers.repeats import PlannedSearcher
from searchsvc.searchers.space import Arm
from searchsvc.spec import StudySpec
from searchsvc.store import Store

PROVENANCE_KEY = "gpu_auto"

# fit(spec, trial numbers, searcher, oom_retries) -> the run's callback: one Ray Tune run of
# those trials with spec's resources; with a list for oom_retries, a trial out of GPU memory
# is ended as interrupted and its number appended there instead of ending infeasible.
Fit = Callable[[StudySpec, list[int], Searcher, list[int] | None], Any]


def decide(spec: StudySpec, measured: Sequence[TrialRecord]) -> dict[str, Any]:
    """The packing for the rest of the study from the trials that ran on a whole GPU (plain
    data for the provenance): their mean GPU utilisation, their highest peak memory, the
    smallest GPU, the most loader workers; the GPU's CPUs are those a whole-GPU trial held
    (``resources.cpu``). Without GPU telemetry the trials keep a whole GPU each."""
    summaries = [trial_telemetry(t) for t in measured]
    gpu = [s for s in summaries if s.gpu_util_mean is not None
           and s.gpu_mem_peak_mb is not None and s.gpu_mem_total_mb]
    base = {"measured_trials": [t.number for t in measured], "cpus_per_gpu": spec.resources.cpu}
    if not gpu:
        why = next((s.gpu_absent for s in summaries if s.gpu_absent), None)
        limit = "no GPU telemetry from the first trial(s)" + (f" ({why})" if why else "")
        return {**base, **Packing(1, 1.0, spec.resources.cpu, limit).as_dict()}
    util = sum(s.gpu_util_mean or 0.0 for s in gpu) / len(gpu)
    peak = max(s.gpu_mem_peak_mb or 0.0 for s in gpu)
    total = min(s.gpu_mem_total_mb or 0.0 for s in gpu)
    workers = _loader_workers(summaries)
    fit = choose_packing(util_percent=util, peak_mb=peak, total_mb=total, gpu_per_trial=1.0,
                         cpus_per_gpu=spec.resources.cpu, loader_workers=workers)
    return {**base, "gpu_util_mean": util, "gpu_mem_peak_mb": peak, "gpu_mem_total_mb": total,
            "loader_workers": workers, **fit.as_dict()}


def _loader_workers(summaries: Sequence[TrialTelemetry]) -> int | None:
    known = [s.loader_workers for s in summaries if s.loader_workers is not None]
    return max(known) if known else None


def packed_spec(spec: StudySpec, gpu: float, cpus_per_gpu: float) -> StudySpec:
    """``spec`` with each trial holding ``gpu`` of a GPU and its share of the GPU's CPUs."""
    resources = dataclasses.replace(spec.resources, gpu=gpu, cpu=cpus_per_gpu * gpu)
    return dataclasses.replace(spec, resources=resources)


def larger_share(gpu: float) -> float:
    """The share an out-of-memory trial is retried at: twice its own, at most a whole GPU."""
    return min(1.0, 2 * gpu)


class _Retry(PlannedSearcher):
    """Proposes trials again as they were (config, arm, seed) and tells the study's searcher
    how they end: a retry is the same trial, counted once."""

    name = "retry"
    summary = "trials run again as they were"

    def __init__(self, searcher: Searcher, plan: Sequence[Proposal]):
        super().__init__(searcher.spec, plan)
        self.study_searcher = searcher

    def observe(self, observation: Observation) -> None:
        self.study_searcher.observe(observation)


def retry_searcher(searcher: Searcher, trials: Sequence[TrialRecord]) -> Searcher:
    """A searcher that reruns ``trials`` as they were stored."""
    arms = {tuple(sorted(a.values.items())): a for a in searcher.arms}
    plan = [Proposal(t.number, dict(t.config),
                     arms.get(tuple(sorted(dict(t.arm).items())), Arm(0, dict(t.arm))), t.seed)
            for t in trials]
    return _Retry(searcher, plan)


def run_auto(spec: StudySpec, study: StudyRecord, store: Store, searcher: Searcher,
             pending: list[int], fit: Fit, gpus: float) -> tuple[Any, StudySpec]:
    """Run ``pending`` trials of a ``gpu: auto`` study: unless the study already decided (a
    resumed study), the first ``gpus`` (one a GPU) on whole GPUs, then the rest packed, then
    the packed trials that ran out of GPU memory once more at a larger share. Returns the last
    run's callback and the packed spec (the seed repeats run with it)."""
    callback = None
    decision = study.provenance.get(PROVENANCE_KEY)
    if decision is None:
        first = pending[:max(1, int(gpus))]
        pending = pending[len(first):]
        callback = fit(spec, first, searcher, None)
        measured = store.get_trials(study.name, measurements=first)
        decision = decide(spec, [t for t in measured if t.number in first])
        _record(store, study.name, decision)
    packed = packed_spec(spec, float(decision["gpu"]), float(decision["cpus_per_gpu"]))
    if not pending:
        return callback, packed
    retries: list[int] = []
    callback = fit(packed, pending, searcher, retries if packed.resources.gpu < 1 else None)
    if retries:
        share = larger_share(packed.resources.gpu)
        _record(store, study.name, {**decision, "oom_retries": sorted(retries),
                                    "retry_gpu": share})
        again = [t for t in store.get_trials(study.name) if t.number in retries]
        callback = fit(packed_spec(spec, share, float(decision["cpus_per_gpu"])), retries,
                       retry_searcher(searcher, again), None)
    return callback, packed


def _record(store: Store, name: str, decision: Mapping[str, Any]) -> None:
    study = store.get_study(name)
    store.update_study(name, provenance={**study.provenance, PROVENANCE_KEY: dict(decision)})
