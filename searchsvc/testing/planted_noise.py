"""Simulated studies with planted seed noise: a scientific parameter whose values differ by a
known true effect, a nuisance parameter to tune, and per-seed noise of known sigma. The search
is proposed by the real ``random`` searcher and the repeats planned by the real planner; only
the training is simulated, so thousands of studies run in seconds with no Ray and no store.

Used by ``tests/analysis/test_noise_verdicts.py`` (the verdict's error rates) and
``benchmarks/noise_verdicts.py`` (the same rates beside the old proxy's).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from searchsvc.analysis.isolation import VERDICT_DIFFERS, Isolation, isolate
from searchsvc.analysis.noise import estimate_noise
from searchsvc.core import TRIAL_COMPLETED, TrialRecord
from searchsvc.searchers import create_searcher
from searchsvc.searchers.repeats import plan_repeats
from searchsvc.spec import StudySpec, parse_spec

SIGMA = 0.05  # the planted seed noise (sd of one config's value over seeds)
VALUES = ("a", "b", "c", "d")


def planted_spec(values: int, seeds: int, seed: int, trials_per_value: int = 10,
                 top_k: int = 2) -> StudySpec:
    return replace(_parsed(values, seeds, trials_per_value, top_k), seed=seed)


@functools.lru_cache(maxsize=32)
def _parsed(values: int, seeds: int, trials_per_value: int, top_k: int) -> StudySpec:
    return parse_spec(planted_text(values, seeds, trials_per_value, top_k),
                      file="planted-noise.yaml")


def planted_text(values: int, seeds: int, trials_per_value: int = 10, top_k: int = 2) -> str:
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


def true_loss(variant: str, x: float, effect_sigmas: float) -> float:
    """Value ``a`` is better than every other value by ``effect_sigmas`` seed sigmas (once x
    is tuned); the others are equal. 0: a null effect."""
    offset = 0.0 if variant == "a" else effect_sigmas * SIGMA
    return 1.0 + offset + 0.2 * (x - 0.5) ** 2


def _trial(number: int, config: dict, arm: dict, seed: int, effect_sigmas: float,
           repeat_of: int | None = None) -> TrialRecord:
    value = (true_loss(str(config["variant"]), float(config["x"]), effect_sigmas)
             + random.Random(seed).gauss(0, SIGMA))
    return TrialRecord(id=number + 1, study_id=1, number=number, state=TRIAL_COMPLETED,
                       config=config, arm=arm, seed=seed, best_value=value, best_step=1,
                       last_step=1, repeat_of=repeat_of)


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
    """One study: the search, then each arm's top configurations rerun with new seeds."""
    spec = planted_spec(values, seeds, seed)
    searcher = create_searcher(spec)
    search = []
    for number in range(searcher.total_trials):
        p = searcher.propose(number)
        search.append(_trial(number, dict(p.config), dict(p.arm.values), p.seed, effect_sigmas))
    assert spec.noise is not None
    plan = plan_repeats(spec, spec.noise, searcher.arms, search, searcher.total_trials)
    repeats = [_trial(p.number, dict(p.config), dict(p.arm.values), p.seed, effect_sigmas,
                      p.repeat_of) for p in plan]
    return SimulatedStudy(spec, tuple(search + repeats))


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
