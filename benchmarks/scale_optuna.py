"""Optuna run directly, for comparison with ``scale_run.py``: the same trivial objective (one
parameter, ``--steps`` reports of ``x / step``), one trial at a time in one process, with an
RDB store in SQLite as Optuna users run it, and a random or TPE sampler. Measured: the
throughput of each block of trials (from the completion times Optuna recorded) and the whole
run's wall time.

    .venv/bin/python benchmarks/scale_optuna.py [--trials 2000] [--sampler random|tpe]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import optuna


def objective(steps: int):
    def run(trial: optuna.Trial) -> float:
        x = trial.suggest_float("x", 0.1, 1.0)
        for step in range(1, steps + 1):
            trial.report(x / step, step)
        return x / steps
    return run


def block_rates(study: optuna.Study, block: int, started: float) -> list[float]:
    ends = sorted(t.datetime_complete.timestamp() for t in study.trials
                  if t.datetime_complete is not None)
    rates, previous = [], started
    for i in range(block - 1, len(ends), block):
        rates.append(block / (ends[i] - previous))
        previous = ends[i]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2_000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--block", type=int, default=500)
    parser.add_argument("--sampler", choices=["random", "tpe"], default="random")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = (optuna.samplers.TPESampler(seed=0) if args.sampler == "tpe"
               else optuna.samplers.RandomSampler(seed=0))
    with tempfile.TemporaryDirectory() as tmp:
        study = optuna.create_study(storage=f"sqlite:///{tmp}/optuna.db", sampler=sampler)
        started = time.time()
        study.optimize(objective(args.steps), n_trials=args.trials)
        wall = time.time() - started
        rates = block_rates(study, args.block, started)
    print(f"optuna {args.sampler}, SQLite: {args.trials} trials x {args.steps} steps in "
          f"{wall:.0f} s; per {args.block} trials: " + " ".join(f"{r:.1f}" for r in rates)
          + f" trials/s; last block / first {rates[-1] / rates[0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"sampler": args.sampler, "trials": args.trials,
                                         "wall_s": wall, "block_rates": rates}, indent=1))


if __name__ == "__main__":
    main()
