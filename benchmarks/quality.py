"""Search quality, Bayesmark-style: searchsvc's searchers against the same algorithms called
directly (Optuna, hyperopt, plain NumPy random), on functions with known optima.

Normalised regret = (best found - optimum) / (median of uniform random values - optimum),
median over seeds; 0 is perfect, 1 is no better than a typical random point. Writes a markdown
table (default benchmarks/results/quality.md) and prints it.

    .venv/bin/python benchmarks/quality.py [--seeds 10] [--trials 40] [--out FILE]

Not yet covered: the digits objective (issue #3).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from objectives.synthetic import (  # noqa: E402
    BRANIN_OPTIMUM,
    HARTMANN6_OPTIMUM,
    branin_value,
    hartmann6_value,
)
from searchsvc.searchers import create_searcher  # noqa: E402
from searchsvc.searchers.sequential import best_so_far, run_sequential  # noqa: E402
from searchsvc.spec import parse_spec  # noqa: E402

Bounds = dict[str, tuple[float, float]]
PROBLEMS: dict[str, tuple[Bounds, Callable[[dict], float], float]] = {
    "branin": ({"x1": (-5.0, 10.0), "x2": (0.0, 15.0)},
               lambda c: branin_value(c["x1"], c["x2"]), BRANIN_OPTIMUM),
    "hartmann6": ({f"x{i}": (0.0, 1.0) for i in range(1, 7)},
                  lambda c: hartmann6_value([c[f"x{i}"] for i in range(1, 7)]),
                  HARTMANN6_OPTIMUM),
}


def searchsvc_best(bounds: Bounds, f: Callable, searcher: str, options: str, trials: int,
                   seed: int) -> float:
    params = "".join(f"  {k}: {{role: nuisance, low: {lo}, high: {hi}}}\n"
                     for k, (lo, hi) in bounds.items())
    text = (f"study: q\nobjective: x:y\nmetric: value\nmode: min\nsearcher: {searcher}\n"
            f"searcher_options: {options}\nbudget: {{trials: {trials}}}\nseed: {seed}\n"
            f"parameters:\n{params}")
    return best_so_far(run_sequential(create_searcher(parse_spec(text)), f), "min")


def optuna_best(bounds: Bounds, f: Callable, sampler: str, trials: int, seed: int) -> float:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    impl = (optuna.samplers.GPSampler(seed=seed) if sampler == "gp"
            else optuna.samplers.TPESampler(seed=seed))
    study = optuna.create_study(sampler=impl)
    study.optimize(lambda t: f({k: t.suggest_float(k, lo, hi) for k, (lo, hi) in bounds.items()}),
                   n_trials=trials)
    return study.best_value


def hyperopt_best(bounds: Bounds, f: Callable, trials: int, seed: int) -> float:
    import hyperopt

    space = {k: hyperopt.hp.uniform(k, lo, hi) for k, (lo, hi) in bounds.items()}
    history = hyperopt.Trials()
    hyperopt.fmin(f, space, algo=hyperopt.tpe.suggest, max_evals=trials, trials=history,
                  rstate=np.random.default_rng(seed), show_progressbar=False)
    return min(history.losses())


def numpy_random_best(bounds: Bounds, f: Callable, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return min(f({k: rng.uniform(lo, hi) for k, (lo, hi) in bounds.items()})
               for _ in range(trials))


def typical_random_value(bounds: Bounds, f: Callable) -> float:
    rng = np.random.default_rng(12345)
    return statistics.median(f({k: rng.uniform(lo, hi) for k, (lo, hi) in bounds.items()})
                             for _ in range(2000))


METHODS: dict[str, Callable[[Bounds, Callable, int, int], float]] = {
    "searchsvc random": lambda b, f, n, s: searchsvc_best(b, f, "random", "{}", n, s),
    "NumPy random": numpy_random_best,
    "searchsvc quasi_random": lambda b, f, n, s: searchsvc_best(b, f, "quasi_random", "{}", n, s),
    "searchsvc bayesian tpe": lambda b, f, n, s: searchsvc_best(b, f, "bayesian",
                                                                "{sampler: tpe}", n, s),
    "Optuna TPE": lambda b, f, n, s: optuna_best(b, f, "tpe", n, s),
    "searchsvc bayesian gp": lambda b, f, n, s: searchsvc_best(b, f, "bayesian",
                                                               "{sampler: gp}", n, s),
    "Optuna GP": lambda b, f, n, s: optuna_best(b, f, "gp", n, s),
    "searchsvc bayesian hyperopt": lambda b, f, n, s: searchsvc_best(
        b, f, "bayesian", "{sampler: hyperopt}", n, s),
    "hyperopt TPE (fmin)": hyperopt_best,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "quality.md")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for method, run in METHODS.items():
        cells = []
        for problem, (bounds, f, optimum) in PROBLEMS.items():
            scale = typical_random_value(bounds, f) - optimum
            started = time.perf_counter()
            regrets = [(run(bounds, f, args.trials, seed) - optimum) / scale
                       for seed in range(args.seeds)]
            cells.append(f"{statistics.median(regrets):.4f}")
            print(f"{method:30s} {problem:10s} median regret {cells[-1]} "
                  f"({time.perf_counter() - started:.1f}s)", flush=True)
        rows.append(f"| {method} | " + " | ".join(cells) + " |")
    header = ("| method | " + " | ".join(PROBLEMS) + " |\n|---|" + "---|" * len(PROBLEMS))
    table = (f"Normalised regret, median of {args.seeds} seeds, {args.trials} trials "
             f"(0 = optimum, 1 = a typical random point)\n\n{header}\n" + "\n".join(rows) + "\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    print("\n" + table)
    assert all(math.isfinite(float(c)) for r in rows for c in r.split("|")[2:-1] if c.strip())


if __name__ == "__main__":
    main()
