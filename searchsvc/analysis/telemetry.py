"""What the trials' telemetry (``Measurement.telemetry``, recorded by the trial worker at every
step) says: a summary per trial, the study's GPU-hours, and its diagnoses, with one verdict on
the GPU per study:

- **input-bound** trials: the loop waited for data (``sdk.data_loader``) more than
  :data:`INPUT_BOUND_FRACTION` of its working time (step time less the time it was blocked
  handing its previous report over), over all the trial's steps (core/telemetry.py's rule).
  Such a study is told to fix its input first (more loader workers, more CPUs per trial,
  pinned memory, a cached dataset) and is never told to pack more trials per GPU: packed
  trials share the same CPUs, so the GPU would wait for data all the more;
- **under-used GPUs**, with the packing that would fit, only for a GPU left idle by trials
  that are not input-bound: the trials' mean GPU utilisation is below :data:`UNDERUSED_UTIL`
  percent, and the packing is core/packing.py's rule (memory with headroom, utilisation, and
  at least the CPUs each trial's data loader used), the one ``resources.gpu: auto`` applies;
- **out-of-memory** failures: a trial whose error is torch's out-of-memory is infeasible (the
  driver classifies it with :func:`oom_error`, naming the searched numeric values highest in
  their ranges, the likeliest cause), listed here.

Pure: core records and the spec in, typed results out."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchsvc.core import TrialRecord, TrialState, is_finite_number
from searchsvc.core.failures import OOM_PREFIX, oom_line, recorded_out_of_memory
from searchsvc.core.packing import MEMORY_HEADROOM, PACKINGS, choose_packing, trials_now
from searchsvc.core.telemetry import INPUT_BOUND_FRACTION, is_input_bound, working_time
from searchsvc.spec.model import ChoiceParameter, Parameter, RangeParameter

UNDERUSED_UTIL = 50.0  # percent: mean GPU utilisation below this is under-used
GIB = 1024.0
STRAGGLER_RATIO = 1.5  # a rank whose median step time is this many times the others' median
STRAGGLER_MIN_S = 0.01  # ...and longer by at least this much (timer noise on tiny steps)


@dataclass(frozen=True)
class TrialTelemetry:
    """One trial's telemetry over the steps of its latest attempt (None: not measured)."""

    number: int
    state: str
    steps: int  # steps with telemetry
    duration_s: float | None
    step_time_mean_s: float | None
    samples_per_s_mean: float | None
    data_wait_fraction: float | None  # total wait / total working time (sdk.data_loader used)
    cpu_percent_mean: float | None
    rss_mb_peak: float | None
    gpu_util_mean: float | None
    gpu_mem_peak_mb: float | None
    gpu_mem_total_mb: float | None
    gpu_name: str | None
    gpu_absent: str | None  # why there are no GPU fields ("gpu: none assigned", "nvml: ...")
    gpu_uuid: str | None = None  # the device(s) it ran on (worker/gpus.py resolves the ids)
    time_to_first_batch_s: float | None = None  # its start to sdk.data_loader's first batch
    # A data-parallel trial: each rank's median working time a step (step time less its wait
    # at the report barrier), by rank (side by side in the report)
    rank_step_time_s: tuple[float, ...] | None = None
    loader_workers: int | None = None  # its data loader's worker processes, when known

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # "input_bound", "underused_gpu", "out_of_memory"
    trials: tuple[int, ...]
    detail: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "trials": list(self.trials), "detail": self.detail,
                **dict(self.data)}


@dataclass(frozen=True)
class StudyTelemetry:
    trials: tuple[TrialTelemetry, ...]
    gpu_per_trial: float
    trial_hours: float
    gpu_hours: float
    diagnoses: tuple[Diagnosis, ...]

    @property
    def findings(self) -> list[str]:
        return [d.detail for d in self.diagnoses]

    def as_dict(self) -> dict[str, Any]:
        return {"trials": [t.as_dict() for t in self.trials],
                "gpu_per_trial": self.gpu_per_trial, "trial_hours": self.trial_hours,
                "gpu_hours": self.gpu_hours,
                "diagnoses": [d.as_dict() for d in self.diagnoses],
                "thresholds": {"input_bound_fraction": INPUT_BOUND_FRACTION,
                               "underused_gpu_util_percent": UNDERUSED_UTIL,
                               "packings": list(PACKINGS), "memory_headroom": MEMORY_HEADROOM,
                               "straggler_ratio": STRAGGLER_RATIO}}


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _numbers(rows: Iterable[Mapping[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in rows if is_finite_number(r.get(key))]


def trial_telemetry(trial: TrialRecord) -> TrialTelemetry:
    rows = [m.telemetry for m in trial.measurements
            if m.attempt == trial.attempts and m.telemetry]
    step_times = _numbers(rows, "step_time_s")
    waits = [(float(r["data_wait_s"]), working) for r in rows
             if isinstance(r.get("data_wait_s"), int | float)
             and (working := working_time(r)) is not None]
    total_step = sum(t for _, t in waits)
    wait = (min(sum(w for w, _ in waits) / total_step, 1.0) if waits and total_step > 0
            else _mean(_numbers(rows, "data_wait_fraction")))
    peaks, totals, rss = (_numbers(rows, "gpu_mem_peak_mb"), _numbers(rows, "gpu_mem_total_mb"),
                          _numbers(rows, "rss_mb"))
    names = [r["gpu_name"] for r in rows if isinstance(r.get("gpu_name"), str)]
    uuids = [r["gpu_uuid"] for r in rows if isinstance(r.get("gpu_uuid"), str)]
    absent = next((f"{k}: {r[k]}" for r in rows for k in ("gpu", "nvml")
                   if isinstance(r.get(k), str)), None)
    ranks = rank_step_times(trial)
    duration = trial.duration_s
    return TrialTelemetry(
        number=trial.number, state=str(trial.state), steps=len(rows), duration_s=duration,
        step_time_mean_s=_mean(step_times),
        samples_per_s_mean=_mean(_numbers(rows, "samples_per_s")),
        data_wait_fraction=wait, cpu_percent_mean=_mean(_numbers(rows, "cpu_percent")),
        rss_mb_peak=max(rss) if rss else None,
        gpu_util_mean=_mean(_numbers(rows, "gpu_util_mean")),
        gpu_mem_peak_mb=max(peaks) if peaks else None,
        gpu_mem_total_mb=min(totals) if totals else None,
        gpu_name=names[-1] if names else None, gpu_absent=None if peaks else absent,
        gpu_uuid=uuids[-1] if uuids else None,
        time_to_first_batch_s=next(iter(_numbers(rows, "time_to_first_batch_s")), None),
        rank_step_time_s=tuple(statistics.median(t) for t in ranks) if ranks and all(ranks)
        else None,
        loader_workers=next((int(w) for w in _numbers(rows, "loader_workers")), None))


def study_telemetry(trials: Sequence[TrialRecord], gpu_per_trial: float,
                    workers: int = 1, cpu_per_trial: float | None = None) -> StudyTelemetry:
    """Summaries, GPU-hours and diagnoses. ``gpu_per_trial`` is ``resources.gpu``, each
    process's share (the packing advice is about it); a data-parallel trial holds it on each of
    its ``workers``, so its GPU-hours are its duration x gpu x workers. ``cpu_per_trial``
    (``resources.cpu``): packing advice keeps each trial its data loader's CPUs."""
    summaries = tuple(trial_telemetry(t) for t in trials)
    hours = sum(s.duration_s or 0.0 for s in summaries) / 3600.0
    diagnoses = [*gpu_diagnoses(summaries, gpu_per_trial, cpu_per_trial),
                 *out_of_memory(trials), *stragglers(trials)]
    held = gpu_per_trial * workers
    return StudyTelemetry(summaries, held, hours, hours * held, tuple(diagnoses))


def gpu_diagnoses(summaries: Sequence[TrialTelemetry], gpu_per_trial: float,
                  cpu_per_trial: float | None = None) -> list[Diagnosis]:
    """The study's one verdict on its GPU: input-bound trials (fix the input first, no packing
    advice), else an under-used GPU with the packing that fits, else nothing."""
    bound = input_bound(summaries, cpu_per_trial)
    if bound:
        return bound
    return underused_gpu(summaries, gpu_per_trial, cpu_per_trial)


def auto_packing(decision: Mapping[str, Any]) -> str:
    """What ``resources.gpu: auto`` chose and why, from the decision the driver kept in the
    study's provenance (driver/gpu_auto.py)."""
    first = ", ".join(str(n) for n in decision.get("measured_trials", ()))
    k, gpu, cpu = decision["trials_per_gpu"], decision["gpu"], decision.get("cpu")
    cpus = "" if cpu is None else f", {cpu:g} CPUs each"
    if decision.get("gpu_util_mean") is None:
        line = (f"GPU packing (resources.gpu: auto): trial {first} ran on a whole GPU; "
                f"{decision.get('limit') or 'nothing measured'}, so every trial kept a whole GPU")
    else:
        why = decision.get("limit") or f"{k} per GPU is the most considered"
        line = (f"GPU packing (resources.gpu: auto): trial {first} ran on a whole GPU, "
                f"{decision['gpu_util_mean']:.0f}% busy with a peak of "
                f"{decision['gpu_mem_peak_mb'] / GIB:.1f} GiB of "
                f"{decision['gpu_mem_total_mb'] / GIB:.0f} GiB; the rest ran {k} per GPU "
                f"(gpu: {gpu:g}{cpus}): {why}")
    retried = decision.get("oom_retries")
    if retried:
        line += (f"; trial{'s' if len(retried) > 1 else ''} "
                 f"{', '.join(str(n) for n in retried)} ran out of GPU memory at gpu: {gpu:g} "
                 f"and ran again at gpu: {decision['retry_gpu']:g}")
    return line


def input_bound(summaries: Sequence[TrialTelemetry],
                cpu_per_trial: float | None = None) -> list[Diagnosis]:
    bound = [s for s in summaries if is_input_bound(s.data_wait_fraction)]
    if not bound:
        return []
    waits = ", ".join(f"trial {s.number} {s.data_wait_fraction:.0%}" for s in bound)
    utils = [s.gpu_util_mean for s in bound if s.gpu_util_mean is not None]
    gpu = (f"; the GPU meanwhile averaged {_mean(utils):.0f}% busy, waiting for data" if utils
           else "")
    return [Diagnosis("input_bound", tuple(s.number for s in bound), (
        f"Input-bound: {len(bound)} trial{'s' if len(bound) > 1 else ''} waited for data more "
        f"than {INPUT_BOUND_FRACTION:.0%} of their step time ({waits}){gpu}. Fix the input "
        f"first: {_input_advice(bound, cpu_per_trial)}. Packing more trials per GPU would not "
        "help: they would share the same CPUs and wait longer"),
        {"threshold": INPUT_BOUND_FRACTION})]


def _input_advice(bound: Sequence[TrialTelemetry], cpu_per_trial: float | None) -> str:
    """The remedies, with the loader's worker count and the trial's CPUs where known."""
    workers = [s.loader_workers for s in bound if s.loader_workers is not None]
    more_workers = ("more DataLoader workers" if not workers
                    else f"more DataLoader workers (it used {max(workers)})")
    more_cpus = ("more CPUs per trial" if cpu_per_trial is None
                 else f"more CPUs per trial (resources.cpu is {cpu_per_trial:g})")
    return (f"{more_workers}, {more_cpus}, pinned memory, or a cached/preprocessed dataset "
            "(decoded once, augmented on the GPU)")


def rank_step_times(trial: TrialRecord) -> list[list[float]]:
    """A data-parallel trial's working time per step, by rank (each step's ``ranks``
    telemetry, latest attempt); empty for a trial on one process. A rank's working time is its
    step time less ``report_wait_s``, the time it waited in Ray Train's report (a barrier every
    rank meets at each step): a fast rank waits there for the slow one, so wall-clock step
    times are the same on every rank and only what each rank did apart from waiting tells
    them apart."""
    by_rank: list[list[float]] = []
    for m in trial.measurements:
        ranks = m.telemetry.get("ranks") if m.attempt == trial.attempts else None
        if not isinstance(ranks, list):
            continue
        for rank, row in enumerate(ranks):
            while len(by_rank) <= rank:
                by_rank.append([])
            working = working_time(row) if isinstance(row, dict) else None
            if working is not None:
                by_rank[rank].append(working)
    return by_rank


def straggler(times: Sequence[Sequence[float]], ratio: float = STRAGGLER_RATIO
              ) -> tuple[int, float, float] | None:
    """The slowest rank when its median step time is ``ratio`` times the median of the other
    ranks' medians (and longer by :data:`STRAGGLER_MIN_S`): (rank, its median, the others')."""
    medians = [statistics.median(t) for t in times if t]
    if len(medians) < 2 or len(medians) != len(times):
        return None
    slow = max(range(len(medians)), key=lambda r: medians[r])
    others = statistics.median(m for r, m in enumerate(medians) if r != slow)
    if medians[slow] >= ratio * others and medians[slow] - others >= STRAGGLER_MIN_S:
        return slow, medians[slow], others
    return None


def stragglers(trials: Sequence[TrialRecord]) -> list[Diagnosis]:
    """Data-parallel trials with a rank well slower than the others: every step waits for it
    (DDP synchronises gradients), so the whole trial runs at its pace."""
    found = [(t.number, *hit) for t in trials
             if (hit := straggler(rank_step_times(t))) is not None]
    if not found:
        return []
    named = ", ".join(f"trial {n} rank {r} ({slow:.3g} s a step against {fast:.3g} s)"
                      for n, r, slow, fast in found)
    return [Diagnosis("straggler", tuple(n for n, *_ in found), (
        f"Straggler: {named}. Every step waits for the slowest rank, so the trial trains at its "
        "pace: look at that worker's node (a slower or shared GPU, a busy CPU, a slow disk)"),
        {"ranks": {str(n): r for n, r, *_ in found}, "ratio": STRAGGLER_RATIO})]


def underused_gpu(summaries: Sequence[TrialTelemetry], gpu_per_trial: float,
                  cpu_per_trial: float | None = None) -> list[Diagnosis]:
    """Under-used GPUs and the packing that fits (core/packing.py), judged on trials that are
    not input-bound (:func:`gpu_diagnoses` asks only when none is)."""
    measured = [s for s in summaries if s.gpu_util_mean is not None
                and s.gpu_mem_peak_mb is not None and s.gpu_mem_total_mb
                and not is_input_bound(s.data_wait_fraction)]
    if not measured or gpu_per_trial > 1:
        return []
    util = _mean([s.gpu_util_mean for s in measured if s.gpu_util_mean is not None]) or 0.0
    peak = max(s.gpu_mem_peak_mb or 0.0 for s in measured)
    total = min(s.gpu_mem_total_mb or 0.0 for s in measured)
    if util >= UNDERUSED_UTIL:
        return []
    now = trials_now(gpu_per_trial)
    workers = [s.loader_workers for s in measured if s.loader_workers is not None]
    fit = choose_packing(util_percent=util, peak_mb=peak, total_mb=total,
                         gpu_per_trial=gpu_per_trial,
                         cpus_per_gpu=None if cpu_per_trial is None else cpu_per_trial * now,
                         loader_workers=max(workers) if workers else None)
    k = fit.trials_per_gpu if fit.trials_per_gpu > now else None
    where = (f"mean GPU utilisation {util:.0f}% (under {UNDERUSED_UTIL:.0f}%), peak "
             f"{peak / GIB:.1f} GiB of {total / GIB:.0f} GiB")
    if k is None:
        advice = f"no tighter packing fits ({fit.limit})"
    else:
        cpus = "" if fit.cpu is None else f" and resources.cpu: {fit.cpu:g}"
        advice = (f"resources.gpu: {fit.gpu:g}{cpus} would fit {k} trials per GPU (k x peak x "
                  f"{MEMORY_HEADROOM:g} <= GPU memory, k/now x utilisation <= 100%, each "
                  "keeping its data loader's CPUs)")
    return [Diagnosis("underused_gpu", tuple(s.number for s in measured),
                      f"Under-used GPUs: {where}: {advice}",
                      {"gpu_util_mean": util, "gpu_mem_peak_mb": peak,
                       "gpu_mem_total_mb": total, "trials_per_gpu": k,
                       "suggested_gpu": None if k is None else fit.gpu,
                       "suggested_cpu": None if k is None else fit.cpu})]


def out_of_memory(trials: Sequence[TrialRecord]) -> list[Diagnosis]:
    oom = [t for t in trials if t.state == TrialState.INFEASIBLE
           and recorded_out_of_memory(t.error)]
    if not oom:
        return []
    details = "; ".join(f"trial {t.number}: {_cause(t.error or '')}" for t in oom)
    return [Diagnosis("out_of_memory", tuple(t.number for t in oom), (
        f"Out of memory: {len(oom)} trial{'s' if len(oom) > 1 else ''} ran out of GPU memory "
        f"and count as infeasible ({details})"))]


def _cause(error: str) -> str:
    parts = error.split(". ")
    return parts[1][0].lower() + parts[1][1:] if len(parts) > 1 and parts[1] else error


# -- classifying a failed trial (used by the driver) ---------------------------------------

def oom_culprits(config: Mapping[str, Any], parameters: Iterable[Parameter]
                 ) -> list[tuple[str, Any, float]]:
    """The trial's values of the searched numeric parameters with their position in their
    range (0 low end, 1 high end, on the parameter's scale), highest first."""
    out = []
    for p in parameters:
        value = config.get(p.name)
        if not p.searched or not isinstance(value, int | float) or isinstance(value, bool):
            continue
        if isinstance(p, RangeParameter) and p.high > p.low:
            position = p.to_unit(value)
        elif isinstance(p, ChoiceParameter):
            numbers = [v for v in p.values if isinstance(v, int | float)
                       and not isinstance(v, bool)]
            if len(numbers) < 2 or max(numbers) == min(numbers):
                continue
            position = (value - min(numbers)) / (max(numbers) - min(numbers))
        else:
            continue
        out.append((p.name, value, min(max(position, 0.0), 1.0)))
    return sorted(out, key=lambda c: -c[2])


def oom_error(error: str, config: Mapping[str, Any], parameters: Iterable[Parameter]) -> str:
    """The error an out-of-memory trial is recorded with: the values likeliest responsible
    (searched numeric values in the upper half of their range, at most three; else the
    highest), then torch's own message."""
    culprits = oom_culprits(config, parameters)
    named = [c for c in culprits if c[2] >= 0.5][:3] or culprits[:1]
    line = oom_line(error)
    cause = (", ".join(f"{n}={v} ({pos:.0%} of its range)" for n, v, pos in named)
             if named else "no searched numeric parameter")
    return f"{OOM_PREFIX}. Most likely from {cause}. {line}"
