"""Planted studies: trials whose training curves come from a function with a known answer (the
best learning rate, the better scientific value, an overfitting arm, a divergence limit, a true
effect under seed noise), so a test can check that the analysis finds what was planted.

One core, :func:`plant`: the study's real searcher proposes every trial (and learns from each
as it finishes), a planted :data:`Curve` gives each trial's per-step metrics from its config and
a ``random.Random`` seeded with the trial's seed, and the rows become
:class:`~searchsvc.core.TrialRecord` objects as a run would leave them: measurements, best and
last step, final metrics, ``infeasible`` where a metric went non-finite, and, with
``repeats=True``, the seed repeats the real planner picks (``noise:``). No Ray and no store:
thousands of studies run in seconds.

- :func:`planted_study` parses a study file, plants it and writes it to a
  :class:`~searchsvc.store.Store` as a finished study (or, without a store, returns the records
  only).
- :func:`converging` and :func:`lr_miss` help write curves.
- :func:`stopped_early` applies the study's early stopping (its searcher's rungs, or its
  ``early_stopping:`` block) to planted trials, through the replay that shares the live
  scheduler's deciders: the trials as the study would have stored them had it stopped trials.
- The planted-noise scenario (:func:`simulate`, :func:`differs_rates`): a scientific value
  better by a known effect under seed noise of known sigma, for the verdict's error rates
  (``tests/analysis/test_noise_verdicts.py``, ``benchmarks/noise_verdicts.py``).
"""

from __future__ import annotations

import functools
import math
import random
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from searchsvc.analysis.isolation import VERDICT_DIFFERS, Isolation, isolate
from searchsvc.analysis.noise import estimate_noise
from searchsvc.core import (
    Measurement,
    StudyRecord,
    StudyState,
    TrialRecord,
    TrialState,
    final_metrics,
)
from searchsvc.searchers import create_searcher
from searchsvc.searchers.base import Observation, Proposal, Searcher
from searchsvc.searchers.repeats import plan_repeats
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.store import Store
from searchsvc.store.base import best_point

Rows = list[dict[str, float]]
# config, a Random seeded with the trial's seed, steps -> each step's metrics, in step order
# (a non-finite metric makes the trial infeasible).
Curve = Callable[[Mapping[str, Any], random.Random, int], Rows]

STEPS = 20  # steps per trial when neither the call nor the study's budget.max_steps says


def plant(spec: StudySpec, curve: Curve, *, steps: int | None = None, repeats: bool = False,
          overrides: Mapping[int, Curve] | None = None) -> list[TrialRecord]:
    """Every trial of ``spec`` as proposed by its searcher, trained on ``curve`` for ``steps``
    steps (default: the budget's ``max_steps``, else 20). ``overrides`` plants another curve for
    the trials it numbers. With ``repeats`` (and ``noise`` on in the spec), the seed repeats
    the planner picks from the search's results follow, on the same curve."""
    searcher = create_searcher(spec)
    steps = steps or spec.budget.max_steps or STEPS
    overrides = overrides or {}
    learns = type(searcher).observe is not Searcher.observe  # the others ignore observations
    trials = []
    for number in range(searcher.total_trials):
        trial = planted_trial(spec, searcher.propose(number), overrides.get(number, curve), steps)
        if learns:
            value = trial.best_value if trial.state == TrialState.COMPLETED else None
            searcher.observe(Observation(number, trial.config, value, trial.state,
                                         curve=trial.curve(spec.metric),
                                         final_metrics=trial.final_metrics))
        trials.append(trial)
    if repeats and spec.noise is not None:
        plan = plan_repeats(spec, spec.noise, searcher.arms, trials, searcher.total_trials)
        trials += [planted_trial(spec, p, curve, steps) for p in plan]
    return trials


def planted_trial(spec: StudySpec, proposal: Proposal, curve: Curve, steps: int) -> TrialRecord:
    """One proposal trained on ``curve``: the record a run would store for it."""
    rows = curve(proposal.config, random.Random(proposal.seed), steps)
    measurements = tuple(Measurement(step, _finite(row.get(spec.metric)), row)
                         for step, row in enumerate(rows, 1))
    best = best_point(((m.step, m.value) for m in measurements), spec.mode)
    bad = next((name for row in rows for name, v in row.items() if not math.isfinite(v)), None)
    return TrialRecord(
        id=proposal.number + 1, study_id=1, number=proposal.number,
        state=TrialState.INFEASIBLE if bad else TrialState.COMPLETED, config=dict(proposal.config),
        arm=dict(proposal.arm.values), seed=proposal.seed,
        error=f"{bad} became nan" if bad else None,
        best_value=None if best is None else best[1], best_step=None if best is None else best[0],
        last_step=len(rows) or None, measurements=measurements, repeat_of=proposal.repeat_of,
        final_metrics=final_metrics(rows))


def stopped_early(spec: StudySpec, trials: Sequence[TrialRecord], *, concurrency: int = 1,
                  per_arm: bool = True) -> list[TrialRecord]:
    """``trials`` (full curves, in the order they started) as the study's early stopping would
    have left them, run ``concurrency`` at a time: each trial a rule stops becomes ``pruned``
    at the step it stopped after, its curve cut there. ``per_arm=False`` compares trials across
    scientific arms (the rungs Ray Tune's own Hyperband keeps)."""
    from searchsvc.analysis.replay import replay_curves, replay_rule
    from searchsvc.searchers.schedule import HyperbandSchedule, StoppingSchedule

    schedule = create_searcher(spec).schedule()
    if not isinstance(schedule, HyperbandSchedule | StoppingSchedule):
        return list(trials)
    rule = replace(schedule.rule() if isinstance(schedule, HyperbandSchedule) else schedule.rule,
                   per_arm=per_arm)
    search = [t for t in trials if t.repeat_of is None]
    curves = replay_curves(search, spec.metric, [p.name for p in spec.scientific])
    stops = replay_rule(rule, curves, schedule.max_steps, spec.mode, concurrency,
                        seed=schedule.seed)
    return [_cut(t, stops[t.number], spec.mode) if t.number in stops else t for t in trials]


def _cut(trial: TrialRecord, step: int, mode: str) -> TrialRecord:
    kept = tuple(m for m in trial.measurements if m.step <= step)
    best = best_point(((m.step, m.value) for m in kept), mode)
    return replace(trial, state=TrialState.PRUNED, measurements=kept, last_step=step,
                   best_value=None if best is None else best[1],
                   best_step=None if best is None else best[0],
                   final_metrics=final_metrics([dict(m.metrics) for m in kept]))


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


class PlantedStudy(NamedTuple):
    study: StudyRecord
    spec: StudySpec
    trials: list[TrialRecord]


def planted_study(text: str, curve: Curve, *, store: Store | None = None,
                  steps: int | None = None, repeats: bool = False,
                  overrides: Mapping[int, Curve] | None = None, owner: str | None = None,
                  file: str = "planted.yaml") -> PlantedStudy:
    """The study file ``text`` (dedented) planted by :func:`plant`, as a finished study: written
    to ``store`` and read back from it with its measurements, or, without a store, as records
    built directly (study id 1, trial ids from 1)."""
    text = textwrap.dedent(text)
    spec = parse_spec(text, file=file)
    trials = plant(spec, curve, steps=steps, repeats=repeats, overrides=overrides)
    if store is None:
        study = StudyRecord(id=1, name=spec.name, state=StudyState.COMPLETED, metric=spec.metric,
                            mode=spec.mode, searcher=spec.searcher, spec_text=text,
                            spec_file=file, created_at=0.0, total_trials=len(trials),
                            owner=owner)
        return PlantedStudy(study, spec, trials)
    record = store.create_study(name=spec.name, metric=spec.metric, mode=spec.mode,
                                searcher=spec.searcher, spec_text=text, spec_file=file,
                                total_trials=len(trials), results_dir=None, provenance={},
                                owner=owner)
    for trial in trials:
        started = store.start_trial(record.id, number=trial.number, config=trial.config,
                                    arm=trial.arm, seed=trial.seed, repeat_of=trial.repeat_of)
        store.record_measurements(started.id, 1, spec.mode,
                                  [(m.step, m.value, m.metrics) for m in trial.measurements])
        store.finish_trial(started.id, trial.state, error=trial.error,
                           final_metrics=trial.final_metrics)
    store.update_study(spec.name, state=StudyState.COMPLETED)
    return PlantedStudy(store.get_study(spec.name), spec,
                        store.get_trials(spec.name, measurements=True))


def converging(final: float, rng: random.Random, steps: int, *, start: float = 2.3,
               noise: float = 0.003) -> Rows:
    """A clean curve of ``val_loss`` (and ``train_loss``, 0.9 of it): falls from ``start``
    towards ``final``, reaching it by the last step, with gaussian noise of sd ``noise``."""
    rows = []
    for step in range(1, steps + 1):
        val = start - (start - final) * (1 - math.exp(-3.0 * step / steps)) / (1 - math.exp(-3))
        val += rng.gauss(0, noise)
        rows.append({"val_loss": val, "train_loss": val * 0.9})
    return rows


def lr_miss(config: Mapping[str, Any], best_log10: float) -> float:
    """How far (in decades) the config's ``learning_rate`` is from ``10 ** best_log10``."""
    return math.log10(float(config["learning_rate"])) - best_log10


# The planted-noise scenario: a scientific parameter whose values differ by a known true
# effect, a nuisance parameter to tune, and per-seed noise of known sigma, with seed repeats.

SIGMA = 0.05  # the planted seed noise (sd of one config's value over seeds)
VALUES = ("a", "b", "c", "d")


def noise_text(values: int, seeds: int, trials_per_value: int = 10, top_k: int = 2) -> str:
    """The study file of a planted-noise study (seed 0)."""
    names = ", ".join(VALUES[:values])
    return (f"""
study: planted-noise
objective: objectives.synthetic:noisy
metric: loss
mode: min
searcher: random
budget: {{trials: {trials_per_value * values}}}
noise: {{top_k: {top_k}, seeds: {seeds}}}
parameters:
  variant: {{role: scientific, values: [{names}]}}
  x: {{low: 0.0, high: 1.0}}
""")


def noise_spec(values: int, seeds: int, seed: int, trials_per_value: int = 10,
               top_k: int = 2) -> StudySpec:
    """:func:`noise_text`'s spec with study seed ``seed`` (parsed once per design)."""
    return replace(_parsed_noise_spec(values, seeds, trials_per_value, top_k), seed=seed)


@functools.lru_cache(maxsize=32)
def _parsed_noise_spec(values: int, seeds: int, trials_per_value: int, top_k: int
                       ) -> StudySpec:
    return parse_spec(noise_text(values, seeds, trials_per_value, top_k),
                      file="planted-noise.yaml")


def true_loss(variant: str, x: float, effect_sigmas: float) -> float:
    """Value ``a`` is better than every other value by ``effect_sigmas`` seed sigmas (once x
    is tuned); the others are equal. 0: a null effect."""
    offset = 0.0 if variant == "a" else effect_sigmas * SIGMA
    return 1.0 + offset + 0.2 * (x - 0.5) ** 2


def seed_noise(effect_sigmas: float) -> Curve:
    """The planted-noise curve: the true loss plus one draw of seed noise, reached at the last
    step (each earlier step 0.1 higher)."""
    def curve(config: Mapping[str, Any], rng: random.Random, steps: int) -> Rows:
        value = (true_loss(str(config["variant"]), float(config["x"]), effect_sigmas)
                 + rng.gauss(0, SIGMA))
        return [{"loss": value + 0.1 * (steps - step)} for step in range(1, steps + 1)]
    return curve


@dataclass(frozen=True)
class SimulatedStudy:
    spec: StudySpec
    trials: tuple[TrialRecord, ...]  # the search's, then the repeats

    @property
    def search(self) -> list[TrialRecord]:
        return [t for t in self.trials if t.repeat_of is None]

    def verdict(self) -> Isolation:
        """The isolation verdict with seed repeats (the study as searchsvc runs it)."""
        [found] = isolate(self.spec, self.search, estimate_noise(self.trials))
        return found

    def proxy_verdict(self) -> Isolation:
        """The verdict of the proxy (no repeats: the spread of each value's top trials)."""
        [found] = isolate(self.spec, self.search, None)
        return found


def simulate(effect_sigmas: float, values: int, seeds: int, seed: int) -> SimulatedStudy:
    """One planted-noise study of one step per trial: the search, then each arm's top
    configurations rerun with new seeds."""
    spec = noise_spec(values, seeds, seed)
    return SimulatedStudy(spec, tuple(plant(spec, seed_noise(effect_sigmas), steps=1,
                                            repeats=True)))


def called_differs(verdict: Isolation) -> bool:
    """A "differs" verdict naming the planted winner (a "differs" for the wrong value is a
    miss, not a hit)."""
    return verdict.verdict == VERDICT_DIFFERS and verdict.best_value == "a"


@dataclass(frozen=True)
class Rates:
    effect_sigmas: float
    values: int
    seeds: int
    studies: int
    repeats: float  # rate of "differs" with seed repeats
    proxy: float  # rate of "differs" (for the planted winner) by the proxy


def differs_rates(effect_sigmas: float, values: int, seeds: int, studies: int = 200,
                  first_seed: int = 0) -> Rates:
    """How often each method calls the planted winner ``differs`` over ``studies`` studies
    (study seeds ``first_seed``, ``first_seed + 1``, ...). With ``effect_sigmas = 0`` any
    "differs" is a false alarm: the proxy's rate counts every value it calls best."""
    hits = proxy_hits = 0
    for seed in range(first_seed, first_seed + studies):
        study = simulate(effect_sigmas, values, seeds, seed)
        verdict, proxy = study.verdict(), study.proxy_verdict()
        if effect_sigmas:
            hits += called_differs(verdict)
            proxy_hits += called_differs(proxy)
        else:
            hits += verdict.verdict == VERDICT_DIFFERS
            proxy_hits += proxy.verdict == VERDICT_DIFFERS
    return Rates(effect_sigmas, values, seeds, studies, hits / studies, proxy_hits / studies)


def rates_table(rows: Sequence[Rates]) -> str:
    lines = ["| true effect | values | seeds per config | studies | 'differs' with repeats "
             "| 'differs' by the proxy |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.effect_sigmas:g} sigma | {r.values} | {r.seeds} | {r.studies} | "
                     f"{r.repeats:.1%} | {r.proxy:.1%} |")
    return "\n".join(lines)
