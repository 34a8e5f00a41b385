"""Search quality, Bayesmark-style: searchsvc's searchers against the same algorithms called
directly (Optuna, hyperopt, plain NumPy random), on functions with known optima and on the
digits objective.

Normalised regret = (best found - optimum) / (median of uniform random values - optimum),
over seeds; 0 is perfect, 1 is no better than a typical random point. For digits the "optimum"
is 0 validation error. Each searchsvc searcher is compared with the direct call of the same
algorithm: PASS when it is not worse, i.e. its median regret is no higher, or a one-sided
Mann-Whitney test finds no evidence (p >= 0.05) that its regrets are higher.

    .venv/bin/python benchmarks/quality.py [--seeds 10] [--trials 40] [--problems branin,...]
        [--methods tpe,gp] [--workers 2] [--out FILE.md] [--json FILE.json]
    .venv/bin/python benchmarks/quality.py --multi-objective [--seeds 5] [--trials 60]

``--multi-objective``: ZDT1 (4 dimensions, both objectives minimised, a known front), the
hypervolume against the fixed reference point (1.1, 11) reached by ``bayesian`` (each sampler)
in ``--trials`` trials and by ``random`` in twice as many; PASS when bayesian's median is at
least random's.

The in-process driver (searchsvc.testing.sequential) measures the algorithm alone, without
Ray; the digits objective runs through searchsvc.sdk.run_locally.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from objectives.synthetic import (  # noqa: E402
    BRANIN_OPTIMUM,
    HARTMANN6_OPTIMUM,
    branin_value,
    hartmann6_value,
    zdt1_values,
)
from searchsvc.searchers import create_searcher  # noqa: E402
from searchsvc.spec import parse_spec  # noqa: E402
from searchsvc.testing.sequential import best_so_far, run_sequential  # noqa: E402


@dataclass(frozen=True)
class Dim:
    name: str
    low: float
    high: float
    kind: str = "float"  # float | int
    log: bool = False

    def from_unit(self, u: float) -> float | int:
        lo, hi = (math.log(self.low), math.log(self.high)) if self.log else (self.low, self.high)
        x = lo + u * (hi - lo)
        x = math.exp(x) if self.log else x
        return round(min(max(x, self.low), self.high)) if self.kind == "int" else x


@dataclass(frozen=True)
class Problem:
    dims: tuple[Dim, ...]
    evaluate: Callable[[dict[str, Any]], float]
    optimum: float
    fixed: str = ""  # extra study-file parameter lines (fixed roles)
    max_steps: int | None = None


def rosenbrock_log(c: dict[str, Any]) -> float:
    """4-d Rosenbrock over x_i = log10(p_i) + 2, searched as log-scaled p_i in [1e-5, 10];
    the optimum 0 is at p_i = 0.1."""
    x = [math.log10(c[f"p{i}"]) + 2 for i in range(1, 5)]
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(3))


def digits_error(c: dict[str, Any]) -> float:
    """Best validation error over 3 epochs of the digits MLP (objectives.torch_digits)."""
    from objectives.torch_digits import train
    from searchsvc.sdk import run_locally

    seed = int(c.get("seed", 0))
    reports = run_locally(train, {k: v for k, v in c.items() if k != "seed"},
                          metric="val_error", max_steps=3, seed=seed)
    return min(r["val_error"] for r in reports)


PROBLEMS: dict[str, Problem] = {
    "branin": Problem((Dim("x1", -5.0, 10.0), Dim("x2", 0.0, 15.0)),
                      lambda c: branin_value(c["x1"], c["x2"]), BRANIN_OPTIMUM),
    "hartmann6": Problem(tuple(Dim(f"x{i}", 0.0, 1.0) for i in range(1, 7)),
                         lambda c: hartmann6_value([c[f"x{i}"] for i in range(1, 7)]),
                         HARTMANN6_OPTIMUM),
    "rosenbrock_log": Problem(tuple(Dim(f"p{i}", 1e-5, 10.0, log=True) for i in range(1, 5)),
                              rosenbrock_log, 0.0),
    "digits": Problem((Dim("learning_rate", 1e-4, 0.3, log=True),
                       Dim("weight_decay", 1e-6, 1e-1, log=True),
                       Dim("hidden_units", 8, 256, kind="int", log=True)),
                      digits_error, 0.0),
}


def searchsvc_best(problem: Problem, searcher: str, options: str, trials: int,
                   seed: int) -> float:
    params = "".join(
        f"  {d.name}: {{role: nuisance, type: {d.kind}, low: {d.low}, high: {d.high}"
        f"{', scale: log' if d.log else ''}}}\n" for d in problem.dims)
    text = (f"study: q\nobjective: x:y\nmetric: value\nmode: min\nsearcher: {searcher}\n"
            f"searcher_options: {options}\nbudget: {{trials: {trials}}}\nseed: {seed}\n"
            f"parameters:\n{params}")
    found = best_so_far(run_sequential(create_searcher(parse_spec(text)), problem.evaluate),
                        "min")
    assert found is not None
    return found


def optuna_best(problem: Problem, sampler: str, trials: int, seed: int) -> float:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    impl = (optuna.samplers.GPSampler(seed=seed) if sampler == "gp"
            else optuna.samplers.TPESampler(seed=seed))
    study = optuna.create_study(sampler=impl)

    def suggest(t: Any, d: Dim) -> float | int:
        if d.kind == "int":
            return t.suggest_int(d.name, int(d.low), int(d.high), log=d.log)
        return t.suggest_float(d.name, d.low, d.high, log=d.log)

    study.optimize(lambda t: problem.evaluate({d.name: suggest(t, d) for d in problem.dims}),
                   n_trials=trials)
    return study.best_value


def hyperopt_best(problem: Problem, trials: int, seed: int) -> float:
    import hyperopt
    from hyperopt import hp

    def dimension(d: Dim) -> Any:
        if d.kind == "int":
            return (hp.qloguniform(d.name, math.log(d.low), math.log(d.high), 1) if d.log
                    else hp.quniform(d.name, d.low, d.high, 1))
        return (hp.loguniform(d.name, math.log(d.low), math.log(d.high)) if d.log
                else hp.uniform(d.name, d.low, d.high))

    space = {d.name: dimension(d) for d in problem.dims}
    history = hyperopt.Trials()
    hyperopt.fmin(lambda c: problem.evaluate(
        {d.name: int(c[d.name]) if d.kind == "int" else c[d.name] for d in problem.dims}),
        space, algo=hyperopt.tpe.suggest, max_evals=trials, trials=history,
        rstate=np.random.default_rng(seed), show_progressbar=False)
    return min(history.losses())


def numpy_random_best(problem: Problem, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    return min(problem.evaluate({d.name: d.from_unit(rng.uniform()) for d in problem.dims})
               for _ in range(trials))


def typical_random_value(problem: Problem, samples: int) -> float:
    rng = np.random.default_rng(12345)
    return statistics.median(
        problem.evaluate({d.name: d.from_unit(rng.uniform()) for d in problem.dims})
        for _ in range(samples))


def _searchsvc(searcher: str, options: str = "{}") -> Callable[[Problem, int, int], float]:
    return lambda p, n, s: searchsvc_best(p, searcher, options, n, s)


# method -> (run, the direct call it is compared with)
METHODS: dict[str, tuple[Callable[[Problem, int, int], float], str | None]] = {
    "NumPy random": (numpy_random_best, None),
    "searchsvc random": (_searchsvc("random"), "NumPy random"),
    "searchsvc quasi_random": (_searchsvc("quasi_random"), "NumPy random"),
    "Optuna TPE": (lambda p, n, s: optuna_best(p, "tpe", n, s), None),
    "searchsvc bayesian tpe": (_searchsvc("bayesian", "{sampler: tpe}"), "Optuna TPE"),
    "Optuna GP": (lambda p, n, s: optuna_best(p, "gp", n, s), None),
    "searchsvc bayesian gp": (_searchsvc("bayesian", "{sampler: gp}"), "Optuna GP"),
    "searchsvc bayesian (default)": (_searchsvc("bayesian"), "Optuna TPE"),
    "hyperopt TPE (fmin)": (hyperopt_best, None),
    "searchsvc bayesian hyperopt": (_searchsvc("bayesian", "{sampler: hyperopt}"),
                                    "hyperopt TPE (fmin)"),
    "searchsvc keras_tuner random": (_searchsvc("keras_tuner", "{oracle: random}"),
                                     "NumPy random"),
    # KerasTuner's Bayesian oracle, against its own random oracle (it should do better)
    "searchsvc keras_tuner bayesian": (_searchsvc("keras_tuner", "{oracle: bayesian}"),
                                       "searchsvc keras_tuner random"),
}


def _run_one(task: tuple[str, str, int, int]) -> tuple[str, str, int, float, float]:
    method, problem, trials, seed = task
    warnings.simplefilter("ignore")
    started = time.perf_counter()
    best = METHODS[method][0](PROBLEMS[problem], trials, seed)
    return method, problem, seed, best, time.perf_counter() - started


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)


def not_worse(ours: list[float], theirs: list[float]) -> tuple[bool, float]:
    """(PASS, one-sided Mann-Whitney p-value that ours are higher than theirs)."""
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(ours, theirs, alternative="greater").pvalue)
    return statistics.median(ours) <= statistics.median(theirs) or p >= 0.05, p


ZDT_DIMS = 4
ZDT_REFERENCE = (1.1, 11.0)
ZDT_METHODS = {  # name: (searcher, options, trials multiplier)
    "bayesian (auto: gp)": ("bayesian", "{}", 1),
    "bayesian tpe": ("bayesian", "{sampler: tpe}", 1),
    "bayesian nsga2": ("bayesian", "{sampler: nsga2}", 1),
    "random (2x trials)": ("random", "{}", 2),
}


def zdt_hypervolume(task: tuple[str, int, int]) -> tuple[str, int, float, float]:
    """One run of ZDT_METHODS[name] on ZDT1: (name, seed, hypervolume, seconds)."""
    from searchsvc.analysis.pareto import ObjectivePoint, hypervolume
    from searchsvc.core import Objective

    name, trials, seed = task
    searcher, options, times = ZDT_METHODS[name]
    params = "".join(f"  x{i}: {{low: 0.0, high: 1.0}}\n" for i in range(ZDT_DIMS))
    text = (f"study: zdt\nobjective: x:y\nmetrics: [{{name: f1, mode: min}}, "
            f"{{name: f2, mode: min}}]\nsearcher: {searcher}\nsearcher_options: {options}\n"
            f"budget: {{trials: {trials * times}}}\nseed: {seed}\nparameters:\n{params}")
    started = time.perf_counter()
    found = run_sequential(create_searcher(parse_spec(text)), lambda c: dict(zip(
        ("f1", "f2"), zdt1_values([c[f"x{i}"] for i in range(ZDT_DIMS)]), strict=True)))
    points = [ObjectivePoint(o.number, "", (o.final_metrics["f1"], o.final_metrics["f2"]), (),
                             o.config) for o in found]
    volume = hypervolume((Objective("f1", "min"), Objective("f2", "min")), points,
                         ZDT_REFERENCE)
    return name, seed, volume, time.perf_counter() - started


def multi_objective_main(seeds: int, trials: int, workers: int, out: Path,
                         json_path: Path | None) -> None:
    # The true front f2 = 1 - sqrt(f1), f1 in [0, 1], dominates up to (1.1, 11):
    # integral of (11 - 1 + sqrt(f1)) over [0, 1], plus the strip 1 < f1 < 1.1 (0.1 x 11).
    optimum = 10 + 2 / 3 + 0.1 * 11
    tasks = [(m, trials, s) for m in ZDT_METHODS for s in range(seeds)]
    volumes: dict[str, list[float]] = {}
    seconds: dict[str, float] = {}
    with ProcessPoolExecutor(workers, initializer=_init_worker) as pool:
        for name, _, volume, took in pool.map(zdt_hypervolume, tasks):
            volumes.setdefault(name, []).append(volume)
            seconds[name] = seconds.get(name, 0.0) + took
    random_median = statistics.median(volumes["random (2x trials)"])
    rows = []
    for name, (_, _, times) in ZDT_METHODS.items():
        median = statistics.median(volumes[name])
        verdict = ("" if name.startswith("random") else
                   " PASS" if median >= random_median else " FAIL")
        rows.append(f"| {name} | {trials * times} | {median:.3f} | {median / optimum:.3f} | "
                    f"{min(volumes[name]):.3f}-{max(volumes[name]):.3f} | "
                    f"{seconds[name] / seeds:.1f} |{verdict} |")
    table = (
        f"ZDT1 ({ZDT_DIMS} dimensions), hypervolume against ({ZDT_REFERENCE[0]}, "
        f"{ZDT_REFERENCE[1]}), median of {seeds} seeds (the true front: {optimum:.3f})\n\n"
        "| method | trials | median hypervolume | of the optimum | range | s per run | "
        "vs random |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        f"Command: `.venv/bin/python benchmarks/quality.py --multi-objective --seeds {seeds} "
        f"--trials {trials}`\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table)
    print("\n" + table)
    if json_path:
        json_path.write_text(json.dumps({"seeds": seeds, "trials": trials, "optimum": optimum,
                                         "hypervolumes": volumes}, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--problems", default=",".join(PROBLEMS))
    parser.add_argument("--methods", default="",
                        help="comma-separated substrings; a method runs if it contains one")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "quality.md")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--multi-objective", action="store_true",
                        help="the ZDT1 hypervolume comparison instead (see the docstring)")
    args = parser.parse_args()
    if args.multi_objective:
        multi_objective_main(args.seeds, args.trials, args.workers,
                             args.out.with_name("quality_multi_objective.md"), args.json)
        return
    problems = [p for p in args.problems.split(",") if p]
    wanted = [w for w in args.methods.split(",") if w]
    methods = [m for m in METHODS if not wanted or any(w in m for w in wanted)]
    methods += [METHODS[m][1] for m in methods if METHODS[m][1] and METHODS[m][1] not in methods]
    methods = [m for m in METHODS if m in methods]

    scale = {p: typical_random_value(PROBLEMS[p], 200 if p == "digits" else 2000)
             - PROBLEMS[p].optimum for p in problems}
    tasks = [(m, p, args.trials, s) for p in problems for m in methods for s in range(args.seeds)]
    regrets: dict[tuple[str, str], list[float]] = {}
    seconds: dict[tuple[str, str], float] = {}
    started = time.perf_counter()
    with ProcessPoolExecutor(args.workers, initializer=_init_worker) as pool:
        for i, (m, p, _, best, took) in enumerate(pool.map(_run_one, tasks), 1):
            regrets.setdefault((m, p), []).append((best - PROBLEMS[p].optimum) / scale[p])
            seconds[(m, p)] = seconds.get((m, p), 0.0) + took
            if len(regrets[(m, p)]) == args.seeds:
                print(f"[{i}/{len(tasks)} {time.perf_counter() - started:.0f}s] {m:30s} {p:15s}"
                      f" median regret {statistics.median(regrets[(m, p)]):.4f}", flush=True)

    rows, verdicts = [], []
    for m in methods:
        cells = [f"{statistics.median(regrets[(m, p)]):.4f}" for p in problems]
        rows.append(f"| {m} | " + " | ".join(cells) + " |")
        direct = METHODS[m][1]
        for p in problems:
            if direct:
                ok, pvalue = not_worse(regrets[(m, p)], regrets[(direct, p)])
                verdicts.append({"method": m, "direct": direct, "problem": p, "pass": ok,
                                 "p_value": pvalue})
    header = "| method | " + " | ".join(problems) + " |\n|---|" + "---|" * len(problems)
    lines = [f"| {v['method']} vs {v['direct']} | {v['problem']} | "
             f"{'PASS' if v['pass'] else 'FAIL'} | {v['p_value']:.3f} |" for v in verdicts]
    table = (
        f"Normalised regret, median of {args.seeds} seeds, {args.trials} trials "
        f"(0 = optimum, 1 = a typical random point)\n\n{header}\n" + "\n".join(rows) + "\n\n"
        "Not worse than the direct call (median no higher, or one-sided Mann-Whitney p >= 0.05)"
        "\n\n| comparison | problem | verdict | p (ours worse) |\n|---|---|---|---|\n"
        + "\n".join(lines) + "\n\n"
        f"Command: `.venv/bin/python benchmarks/quality.py --seeds {args.seeds} "
        f"--trials {args.trials} --problems {','.join(problems)}`\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    print("\n" + table)
    if args.json:
        args.json.write_text(json.dumps({
            "seeds": args.seeds, "trials": args.trials,
            "median_regret": {f"{m}|{p}": statistics.median(v) for (m, p), v in regrets.items()},
            "regrets": {f"{m}|{p}": v for (m, p), v in regrets.items()},
            "seconds": {f"{m}|{p}": s for (m, p), s in seconds.items()},
            "verdicts": verdicts}, indent=1))


if __name__ == "__main__":
    main()
