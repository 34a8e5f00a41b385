"""Parameter importance: Optuna's fANOVA (a random-forest functional ANOVA) over the finished
trials that reached the full budget (:func:`searchsvc.core.judging.full_budget_trials`: a
trial early stopping stopped has a value from fewer steps, which would credit the parameters
that make a trial learn fast rather than well), each searched parameter's share of the
metric's variance."""

from __future__ import annotations

import logging
import math
import random
import warnings
from collections.abc import Sequence

from searchsvc.core import TrialRecord
from searchsvc.core.direction import direction
from searchsvc.core.judging import by_value, full_budget_trials
from searchsvc.spec import StudySpec

MIN_TRIALS = 8  # fewer finished trials give an importance that is mostly noise
# Optuna's defaults (64 trees, depth 64) take minutes on a few thousand trials; this forest
# gives the same shares within a few points in seconds (measured on benchmarks/scale.py's study).
N_TREES, MAX_DEPTH = 32, 8
MAX_TRIALS = 500  # larger studies are subsampled: fANOVA's cost grows fast with tree size


def parameter_importance(spec: StudySpec, trials: Sequence[TrialRecord],
                         seed: int = 0) -> dict[str, float]:
    """{parameter: share of variance} over searched parameters present in every usable trial
    that reached the full budget (conditional parameters are left out), summing to 1; empty
    with too few trials."""
    usable = full_budget_trials(by_value(trials, spec.mode), spec.budget.max_steps)
    if len(usable) > MAX_TRIALS:  # a uniform sample keeps the whole space represented
        usable = random.Random(seed).sample(usable, MAX_TRIALS)
    names = [n for n in spec.parameter_order if spec.parameters[n].searched
             and all(n in t.config for t in usable)]
    if len(usable) < MIN_TRIALS or not names:
        return {}
    # Only now: Optuna's importance pulls in scikit-learn's ensembles (about half a CPU-second
    # of a fresh `searchsvc report`), which a small study's report never uses.
    import optuna
    from optuna.importance import FanovaImportanceEvaluator, get_param_importances

    from searchsvc.searchers.models import optuna_distribution

    dists = {n: optuna_distribution(spec.parameters[n]) for n in names}
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(direction=direction(spec.mode).optuna)
    for t in usable:
        try:
            study.add_trial(optuna.trial.create_trial(
                params={n: t.config[n] for n in names}, distributions=dists,
                value=float(t.best_value)))  # type: ignore[arg-type]
        except ValueError:  # a value outside today's space (the study file was edited)
            continue
    if len(study.trials) < MIN_TRIALS:
        return {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            shares = get_param_importances(
                study, evaluator=FanovaImportanceEvaluator(n_trees=N_TREES, max_depth=MAX_DEPTH,
                                                           seed=seed), normalize=True)
    except (RuntimeError, ValueError) as exc:  # e.g. every value identical
        logging.getLogger(__name__).info("importance not computed: %s", exc)
        return {}
    return {k: float(v) for k, v in shares.items() if math.isfinite(v)}

