"""Planted-truth studies: trials whose curves come from functions with a known answer (the
best learning rate, the better scientific value, the overfitting arm, the divergence limit),
proposed by a real searcher and written to a store (in memory), as a run would."""

from __future__ import annotations

import math
import random
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from searchsvc.core import TRIAL_COMPLETED, TRIAL_INFEASIBLE, StudyRecord, TrialRecord
from searchsvc.searchers import create_searcher
from searchsvc.spec import StudySpec, parse_spec
from searchsvc.store import Store

# config, seed, steps -> per-step metrics (a NaN metric makes the trial infeasible)
Curve = Callable[[Mapping[str, Any], random.Random, int], list[dict[str, float]]]


def planted_study(store: Store, spec_text: str, curve: Curve
                  ) -> tuple[StudyRecord, StudySpec, list[TrialRecord]]:
    text = textwrap.dedent(spec_text)
    spec = parse_spec(text, file=f"{spec_text.split()[1]}.yaml")
    study = store.create_study(name=spec.name, metric=spec.metric, mode=spec.mode,
                               searcher=spec.searcher, spec_text=text, spec_file="planted.yaml",
                               total_trials=spec.budget.trials, results_dir=None, provenance={})
    searcher = create_searcher(spec)
    steps = spec.budget.max_steps or 20
    for number in range(searcher.total_trials):
        proposal = searcher.propose(number)
        trial = store.start_trial(study.id, number=number, config=proposal.config,
                                  arm=proposal.arm.values, seed=proposal.seed)
        rows = curve(proposal.config, random.Random(proposal.seed), steps)
        store.record_measurements(trial.id, 1, spec.mode, [
            (step, row[spec.metric], row) for step, row in enumerate(rows, 1)])
        diverged = any(not math.isfinite(v) for row in rows for v in row.values())
        store.finish_trial(trial.id, TRIAL_INFEASIBLE if diverged else TRIAL_COMPLETED,
                           error="val_loss became nan" if diverged else None)
    store.update_study(spec.name, state="completed")
    return store.get_study(spec.name), spec, store.get_trials(spec.name, measurements=True)


def converging(final: float, rng: random.Random, steps: int, *, start: float = 2.3,
               noise: float = 0.003) -> list[dict[str, float]]:
    """A clean curve: falls towards ``final`` (95% of the way by the last step)."""
    rows = []
    for step in range(1, steps + 1):
        val = start - (start - final) * (1 - math.exp(-3.0 * step / steps)) / (1 - math.exp(-3))
        val += rng.gauss(0, noise)
        rows.append({"val_loss": val, "train_loss": val * 0.9})
    return rows


def lr_miss(config: Mapping[str, Any], best_log10: float) -> float:
    return math.log10(float(config["learning_rate"])) - best_log10
