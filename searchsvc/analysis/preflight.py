"""Preflight's pure part: the centre of a study's space, the checks of what the objective
reported there, and the study's estimated cost (docs/DESIGN.md, "Preflight").

The Ray part (one task with the study's per-trial resources) is :mod:`searchsvc.driver.preflight`;
everything here reads plain values, so it is unit-tested without Ray.

Rules (stated here once, quoted by the messages):
- **metric**: every objective of the study (``metric`` or each ``metrics[].name``) must be
  reported at least once; a missing one is listed with what was reported and the closest name
  (:func:`difflib.get_close_matches`).
- **finite**: every numeric value reported must be finite (the first NaN/inf, with its step).
- **overfit one batch**: the objective's ``overfit_step`` runs :data:`OVERFIT_STEPS` times on a
  fixed batch; the last loss must be below :data:`OVERFIT_RATIO` x the first.
- **initial loss**: for a classifier that declares ``num_classes``, the first of those losses
  must be within :data:`INITIAL_LOSS_TOLERANCE` (relative) of ln(num_classes), the
  cross-entropy of a uniform prediction.
- **input pipeline** (a warning, never a failure): the batches drawn through
  ``sdk.data_loader``, each timed as the loop's wait for it and the step's compute on it; the
  study is input-bound when the median batch's wait is over core's ``INPUT_BOUND_FRACTION`` of
  its time (the rule the report applies to the trials' telemetry), both rates shown.
- **estimate**: a trial costs ``trial_overhead_s + steps x step_s``; a multi-fidelity searcher
  runs the expected fraction of its trials' full budget (:func:`budget_fraction`), seed repeats
  run their whole budget; the compute is spread over ``concurrency`` trials at once.
"""

from __future__ import annotations

import difflib
import itertools
import math
import numbers
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from searchsvc.core.durations import format_duration
from searchsvc.core.telemetry import INPUT_BOUND_FRACTION, is_input_bound
from searchsvc.errors import SpecIssue
from searchsvc.searchers.schedule import HyperbandSchedule, Schedule, StoppingSchedule
from searchsvc.searchers.space import config_from_unit, nuisance_dimensions, scientific_arms
from searchsvc.searchers.stopping import rung_schedule
from searchsvc.spec import StudySpec

PREFLIGHT_STEPS = 3  # steps preflight lets the objective run (fewer when max_steps is smaller)
OVERFIT_STEPS = 30  # overfit_step calls
OVERFIT_RATIO = 0.5  # the last loss must be below this share of the first
INITIAL_LOSS_TOLERANCE = 0.3  # |first loss - ln(num_classes)| <= 30% of ln(num_classes)


def centre_config(spec: StudySpec) -> dict[str, Any]:
    """The config at the centre of the space: the first arm's scientific values, every nuisance
    range's midpoint on its own scale (a log range's geometric mean; the middle of a discrete
    grid), a choice's middle value, fixed values; conditional parameters as the centre implies."""
    arm = scientific_arms(spec)[0]
    return config_from_unit(spec, arm, [0.5] * len(nuisance_dimensions(spec)))


def preflight_steps(spec: StudySpec) -> int:
    """How many steps preflight lets the objective run."""
    max_steps = spec.budget.max_steps
    return PREFLIGHT_STEPS if max_steps is None else max(1, min(max_steps, PREFLIGHT_STEPS))


@dataclass(frozen=True)
class HookResult:
    """What ``sdk.preflight_checks`` measured in the worker."""

    overfit_losses: tuple[float, ...] = ()
    num_classes: int | None = None
    error: str | None = None  # overfit_step raised: the exception and the objective's line


@dataclass(frozen=True)
class Probe:
    """What the preflight task saw: each report (with the seconds since the task started), the
    objective's crash if any, and the preflight hook's results."""

    reports: tuple[Mapping[str, Any], ...] = ()
    times_s: tuple[float, ...] = ()  # since the task started, one per report
    crash: str | None = None  # "ExcType: message (at FILE:LINE)"
    crashed_at_import: bool = False
    returned: bool = False  # the objective ended by itself (else stopped after the steps)
    hook: HookResult | None = None
    hook_s: float = 0.0  # seconds spent inside the hook (not counted as a step)
    start_s: float = 0.0  # from submitting the task to its first line (Ray's scheduling)
    import_s: float = 0.0  # importing the objective in the fresh worker
    warm_first_s: float | None = None  # a second, warm run's time to its first report
    # sdk.data_loader under preflight: its worker processes (worker/preflight.py) and, per
    # batch, (seconds waited for it, seconds worked on it, samples in it)
    loader: Mapping[str, Any] | None = None
    batches: tuple[tuple[float, float, int | None], ...] = ()


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool | None  # None: not run (why in ``detail``)
    detail: str


def check_probe(spec: StudySpec, probe: Probe) -> tuple[list[Check], list[SpecIssue]]:
    """Every check's outcome, and the failures as study-file issues (FILE:LINE: field: ...)."""
    checks: list[Check] = []
    issues: list[SpecIssue] = []
    source = spec.source
    if probe.crash is not None and probe.crashed_at_import:
        message = f"the objective crashed when imported: {probe.crash}"
        issues.append(source.issue(("objective",), message))
        checks.append(Check("imports", False, message))
        return checks, issues
    command = spec.backend_options.get("command")  # a script run as it is: nothing imported
    checks.append(Check("imports", True, f"command {command!r} started" if command
                        else f"{spec.objective} imported"))
    if probe.crash is not None and not probe.reports:
        message = f"the objective crashed before its first report: {probe.crash}"
        issues.append(source.issue(("objective",), message))
        checks.append(Check("runs", False, message))
        return checks, issues
    if probe.crash is not None:
        message = (f"the objective crashed after {len(probe.reports)} report(s): "
                   f"{probe.crash}")
        issues.append(source.issue(("objective",), message))
        checks.append(Check("runs", False, message))
    reported = list(dict.fromkeys(k for r in probe.reports for k in r))
    for i, objective in enumerate(spec.objectives):
        path: tuple[str | int, ...] = (("metrics", i, "name") if source.has(("metrics",))
                                       else ("metric",))
        if any(objective.name in r for r in probe.reports):
            checks.append(Check("metric", True, f"reports {objective.name!r}"))
            continue
        close = difflib.get_close_matches(objective.name, reported, n=1)
        message = (f"the objective never reported {objective.name!r} (it reported: "
                   f"{', '.join(reported) or 'nothing'})"
                   + (f"; did you mean {close[0]!r}?" if close else ""))
        issues.append(source.issue(path, message))
        checks.append(Check("metric", False, message))
    bad = _first_non_finite(probe.reports)
    if bad is None:
        checks.append(Check("finite", True, f"{len(probe.reports)} report(s), all finite"))
    else:
        step, key, value = bad
        message = f"the objective reported {key}={value} at step {step} (not finite)"
        where = ("metric",) if key in {o.name for o in spec.objectives} else ("objective",)
        issues.append(source.issue(where, message))
        checks.append(Check("finite", False, message))
    checks.append(input_check(probe))
    hook_checks = hook_outcomes(probe.hook)
    for check in hook_checks:
        checks.append(check)
        if check.ok is False:
            issues.append(source.issue(("objective",), check.detail))
    return checks, issues


# Checks that warn and never stop a study (their failure is not a study-file issue).
ADVISORY_CHECKS = frozenset({"input_pipeline"})


def input_check(probe: Probe) -> Check:
    """Whether the data pipeline will keep up, from the batches the objective drew through
    ``sdk.data_loader`` (whatever it wraps: a DataLoader, a generator, a Ray Train prepared
    loader): per batch, the time the loop waited for it and the time it then computed. The
    median batch gives the rate the loader delivered (samples over wait + compute) and the
    rate the step alone consumes (samples over compute); the study is input-bound when the
    loop waited more than core's :data:`INPUT_BOUND_FRACTION` of its time, the rule the
    report applies to the trials' telemetry. Medians: the first batch's warm-up and a step's
    last batch (which also evaluates and reports) do not sway them."""
    name = "input_pipeline"
    if probe.loader is None:
        return Check(name, None, "the objective does not iterate sdk.data_loader(...)")
    # The first batch pays for warm-up (workers starting): left out when there are others.
    batches = probe.batches[1:] if len(probe.batches) > 2 else probe.batches
    timed = [(wait, work, n) for wait, work, n in batches if n and wait + work > 0]
    if len(timed) < 2:
        return Check(name, None, "too few batches in preflight to time the loader against "
                     "the training step")
    fraction = statistics.median(wait / (wait + work) for wait, work, _ in timed)
    delivered = statistics.median(n / (wait + work) for wait, work, n in timed)
    consumed = statistics.median(n / work if work > 0 else math.inf for _, work, n in timed)
    workers = int(probe.loader.get("workers") or 0)
    rates = (f"the loader delivered {delivered:,.0f} samples/s ({workers} worker "
             f"process{'es' if workers != 1 else ''}), the training step alone consumes "
             f"{_rate(consumed)} samples/s; the loop waited {fraction:.0%} of its time for "
             f"data ({len(timed)} batches timed)")
    if not is_input_bound(fraction):
        return Check(name, True, f"keeps up: {rates}")
    return Check(name, False, f"input-bound: {rates}, over {INPUT_BOUND_FRACTION:.0%}, so the "
                 "GPU or CPU will wait for data. More DataLoader workers (with the CPUs per "
                 "trial to run them), pinned memory, or a cached/preprocessed dataset "
                 "(decoded once, augmented on the GPU) would help")


def _rate(per_s: float) -> str:
    return "unlimited" if math.isinf(per_s) else f"{per_s:,.0f}"


def hook_outcomes(hook: HookResult | None) -> list[Check]:
    """The overfit-one-batch and initial-loss checks from the hook's measurements."""
    if hook is None:
        why = "the objective does not call sdk.preflight_checks"
        return [Check("overfit_one_batch", None, why), Check("initial_loss", None, why)]
    if hook.error is not None:
        return [Check("overfit_one_batch", False, f"overfit_step raised {hook.error}")]
    losses = hook.overfit_losses
    out: list[Check] = []
    if not losses:
        out.append(Check("overfit_one_batch", None, "no overfit_step given"))
    elif not all(math.isfinite(v) for v in losses):
        step = next(i for i, v in enumerate(losses, 1) if not math.isfinite(v))
        out.append(Check("overfit_one_batch", False, f"overfit_step returned a non-finite "
                         f"loss ({losses[step - 1]}) at call {step}"))
    elif losses[-1] < OVERFIT_RATIO * losses[0]:
        out.append(Check("overfit_one_batch", True, f"loss on one batch fell from "
                         f"{losses[0]:.4g} to {losses[-1]:.4g} in {len(losses)} steps"))
    else:
        out.append(Check("overfit_one_batch", False, f"the loss on one fixed batch did not fall "
                         f"below {OVERFIT_RATIO:g}x its start in {len(losses)} steps "
                         f"({losses[0]:.4g} -> {losses[-1]:.4g}): the model cannot fit even "
                         "one batch (learning rate, gradients, or the loss's wiring)"))
    if hook.num_classes is None:
        out.append(Check("initial_loss", None, "the objective declares no num_classes"))
    elif not losses:
        out.append(Check("initial_loss", None, "num_classes needs overfit_step to measure "
                         "the initial loss"))
    else:
        expected = math.log(hook.num_classes)
        first = losses[0]
        ok = math.isfinite(first) and abs(first - expected) <= INITIAL_LOSS_TOLERANCE * expected
        detail = (f"first loss {first:.4g}, ln({hook.num_classes}) = {expected:.4g}")
        out.append(Check("initial_loss", ok, detail if ok else (
            f"the first loss {first:.4g} is not near ln({hook.num_classes}) = {expected:.4g} "
            f"(within {INITIAL_LOSS_TOLERANCE:.0%}), the loss of a uniform guess over "
            f"{hook.num_classes} classes: check the output layer's size, the initialisation "
            "and that the loss gets logits")))
    return out


def _first_non_finite(reports: Sequence[Mapping[str, Any]]) -> tuple[int, str, Any] | None:
    for step, report in enumerate(reports, 1):
        for key, value in report.items():
            if (isinstance(value, numbers.Real) and not isinstance(value, bool)
                    and not math.isfinite(float(value))):
                return step, key, value
    return None


# Ray Tune's own cost per trial beyond the objective (starting it on a reused actor, the
# driver's callbacks and store writes), and per Tuner run (the search, then the seed repeats):
# measured on a 2-CPU machine running 2 digits trials at once (benchmarks/preflight_estimate.py).
TUNE_TRIAL_OVERHEAD_S = 0.15
TUNE_FIT_OVERHEAD_S = 6.0
# A study that keeps checkpoints saves one every step (torch.save, then Ray Tune persists it):
# measured about 0.07 s per step for the digits MLP; preflight's own steps save none.
CHECKPOINT_STEP_S = 0.07
# Workers starting together on a cluster with no CPU to spare (every slot's CPUs taken) start
# this much slower than preflight's lone worker (measured: 10.5 s against 6.7 s, 2 on 2 CPUs).
WORKER_START_CONTENTION = 1.5


@dataclass(frozen=True)
class Timing:
    """What preflight measured: seconds per step, the objective's setup before its first step
    (per trial), and a fresh worker's start (scheduling the process and importing the objective:
    paid once per concurrent slot per Tuner run, since Tune reuses its actors)."""

    step_s: float
    setup_s: float
    worker_start_s: float
    steps_measured: int

    @property
    def trial_overhead_s(self) -> float:
        return TUNE_TRIAL_OVERHEAD_S + self.setup_s


def timing_of(probe: Probe) -> Timing | None:
    """Time per step: the median gap between consecutive reports (the first step alone when
    there is one); setup: a warm second run's time to its first report less a step (else the
    first run's, less the import and the hook); a worker's start: Ray starting the task, the
    import and the first run's extra setup (first-call caches such as a loaded data set)."""
    times = list(probe.times_s)
    if not times:
        return None
    gaps = sorted(b - a for a, b in itertools.pairwise(times))
    step = gaps[len(gaps) // 2] if gaps else max(times[0] - probe.import_s - probe.hook_s, 1e-6)
    cold_setup = max(times[0] - probe.import_s - probe.hook_s - step, 0.0)
    setup = cold_setup if probe.warm_first_s is None else max(probe.warm_first_s - step, 0.0)
    return Timing(step, setup, probe.start_s + probe.import_s + cold_setup - setup,
                  len(times))


def budget_fraction(schedule: Schedule | None) -> float:
    """The expected share of a trial's full budget a searcher's early stopping lets it run:
    1 without a schedule and for PBT (every member trains to the end); for Hyperband/ASHA/BOHB
    a trial reaches rung ``i`` of its bracket with probability ``reduction_factor**-i`` and
    runs to the rung where it stops, averaged over the brackets as trials are drawn into them.
    A study file's ``early_stopping:`` rule counts the same for its rung rules (asha,
    hyperband); the median and percentile rules are counted as a full budget (an upper
    bound: how many they stop depends on the curves)."""
    if isinstance(schedule, StoppingSchedule) and schedule.rule.uses_rungs:
        schedule = rung_schedule(schedule.rule, schedule.max_steps, schedule.seed)
    if not isinstance(schedule, HyperbandSchedule):
        return 1.0
    sizes = [len(schedule.milestones(b)) for b in range(schedule.brackets)]
    weights = [math.exp(s - max(sizes)) for s in sizes]
    total = sum(weights)
    fraction = 0.0
    for bracket, weight in enumerate(weights):
        rungs = [min(r, schedule.max_steps) for r in schedule.milestones(bracket)]
        rungs = [r for r in rungs if r < schedule.max_steps]
        eta = schedule.reduction_factor
        steps = 0.0
        for i, rung in enumerate(rungs):
            steps += (eta ** -i - eta ** -(i + 1)) * rung
        steps += eta ** -len(rungs) * schedule.max_steps
        fraction += weight / total * steps / schedule.max_steps
    return fraction


@dataclass(frozen=True)
class CostEstimate:
    """The study's estimated cost from preflight's timing (see the module's rules)."""

    trials: int  # search trials
    repeats: int  # planned seed repeats (full budget each)
    steps: int  # a trial's full budget, in steps
    budget_fraction: float  # expected share of the full budget a search trial runs
    step_s: float
    trial_overhead_s: float
    worker_start_s: float
    concurrency: int
    gpu: float  # per trial
    cpu: float  # per trial
    trial_s: float  # a full-budget trial
    compute_s: float  # every trial's seconds summed (what the trials hold their resources)
    wall_s: float
    gpu_hours: float
    cpu_hours: float
    concurrency_from: str = ""  # how the concurrency was chosen
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = list(self.notes)
        return data


def concurrency_of(max_concurrent: int | None, cpu: float, gpu: float,
                   cluster_cpus: float | None, cluster_gpus: float | None,
                   trials: int) -> tuple[int, str]:
    """How many trials run at once: the study's ``max_concurrent``, capped by how many trials'
    resources fit on the cluster (CPUs / cpu per trial, GPUs / gpu per trial), and by the trials."""
    limits: list[tuple[int, str]] = []
    if max_concurrent:
        limits.append((max_concurrent, f"budget.max_concurrent = {max_concurrent}"))
    if cluster_cpus is not None and cpu > 0:
        fit = int(cluster_cpus // cpu + 1e-9)
        limits.append((fit, f"{cluster_cpus:g} CPUs / {cpu:g} per trial"))
    if cluster_gpus is not None and gpu > 0:
        fit = int(cluster_gpus // gpu + 1e-9)
        limits.append((fit, f"{cluster_gpus:g} GPUs / {gpu:g} per trial"))
    limits.append((max(trials, 1), f"{trials} trials"))
    count, why = min(limits, key=lambda x: x[0])
    return max(count, 1), why


def estimate_cost(*, trials: int, repeats: int, steps: int, fraction: float, timing: Timing,
                  concurrency: int, cpu: float, gpu: float, concurrency_from: str = "",
                  cluster_cpus: float | None = None, driver_start_s: float = 0.0,
                  checkpoints: bool = False, notes: Sequence[str] = ()) -> CostEstimate:
    """``driver_start_s`` (the driver's first import of Ray Tune, once), then per Tuner run (the
    search; then the repeats, if any): its fixed overhead, a worker's start (slower by
    WORKER_START_CONTENTION when the slots take every CPU of ``cluster_cpus``), then its trials
    spread over ``concurrency`` slots. A search trial costs ``trial_overhead_s + fraction x
    steps x step_s``, a repeat its full budget; ``checkpoints``: each step also saves one
    (CHECKPOINT_STEP_S)."""
    step_s = timing.step_s + (CHECKPOINT_STEP_S if checkpoints else 0.0)
    full = timing.trial_overhead_s + steps * step_s
    searched = timing.trial_overhead_s + fraction * steps * step_s
    wall, compute = driver_start_s, 0.0
    for count, each in ((trials, searched), (repeats, full)):
        if count <= 0:
            continue
        slots = max(min(concurrency, count), 1)
        full_cluster = cluster_cpus is not None and slots * cpu >= cluster_cpus
        start = timing.worker_start_s * (WORKER_START_CONTENTION if full_cluster else 1.0)
        wall += TUNE_FIT_OVERHEAD_S + start + count * each / slots
        compute += count * each + slots * start
    return CostEstimate(
        trials=trials, repeats=repeats, steps=steps, budget_fraction=fraction,
        step_s=timing.step_s, trial_overhead_s=timing.trial_overhead_s,
        worker_start_s=timing.worker_start_s, concurrency=concurrency,
        gpu=gpu, cpu=cpu, trial_s=full, compute_s=compute, wall_s=wall,
        gpu_hours=compute * gpu / 3600, cpu_hours=compute * cpu / 3600,
        concurrency_from=concurrency_from, notes=tuple(notes))


def summary_lines(result: Mapping[str, Any]) -> list[str]:
    """Plain-language lines for a stored preflight result (provenance["preflight"])."""
    if result.get("skipped"):
        return [f"Preflight: not run, {result['skipped']}."]
    lines: list[str] = []
    timing = result.get("timing") or {}
    estimate = result.get("estimate") or {}
    if timing:
        lines.append(f"Preflight at the centre of the space: {timing['step_s']:.3g} s per "
                     f"step ({timing['steps_measured']} steps measured), "
                     f"{timing['setup_s']:.3g} s of setup per trial, "
                     f"{timing['worker_start_s']:.3g} s to start a worker.")
    if estimate:
        saving = ("" if estimate["budget_fraction"] >= 0.999 else
                  f", early stopping expected to run {estimate['budget_fraction']:.0%} of the "
                  "search trials' full budget")
        repeats = f" + {estimate['repeats']} seed repeats" if estimate["repeats"] else ""
        lines.append(
            f"Estimated cost: {estimate['trials']} trials{repeats} x {estimate['steps']} steps"
            f"{saving}, {estimate['concurrency']} at once: about "
            f"{format_duration(estimate['wall_s'])} wall time, "
            f"{estimate['gpu_hours']:.3g} GPU-hours, {estimate['cpu_hours']:.3g} CPU-hours.")
    failed = [c for c in result.get("checks", ())
              if c.get("ok") is False and c.get("name") not in ADVISORY_CHECKS]
    if failed:
        lines.append("Preflight failed: " + "; ".join(c["detail"] for c in failed))
    lines += [f"Preflight warning: {c['detail']}." for c in result.get("checks", ())
              if c.get("ok") is False and c.get("name") in ADVISORY_CHECKS]
    return lines
