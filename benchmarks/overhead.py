"""Orchestration cost: the same workload run by searchsvc, by stock Ray Tune (defaults, and
with ``reuse_actors=True``) and by Optuna in-process, side by side in one run.

Workloads (benchmarks/workloads.py): ``trivial`` (200 trials that return at once after 5
reports) and ``digits`` (64 trials of the digits MLP, 2 epochs, one thread each). Every method
runs random search with ``--workers`` trials at a time, in its own subprocess, after its Ray is
up: Ray's start-up is not timed (it is paid once per study, not per trial). searchsvc is timed
from creating the study to the end of its run, every result written to SQLite; its report is
not timed.

Efficiency = (seconds spent computing inside objectives, summed over trials) / (workers x wall
seconds); 1.0 is the physical limit. Targets (PASS/FAIL): trivial trials at least 5x the
throughput of stock Ray Tune and at least that of Ray Tune with reuse_actors; digits
efficiency >= 0.85.

    .venv/bin/python benchmarks/overhead.py [--workloads trivial,digits] [--trivial-trials 200]
        [--digits-trials 64] [--workers 2] [--repeats 3] [--methods ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

METHODS = ("searchsvc", "ray_tune", "ray_tune_reuse", "optuna_memory", "optuna_sqlite")
LABELS = {
    "searchsvc": "searchsvc run (SQLite store)",
    "ray_tune": "stock Ray Tune (defaults)",
    "ray_tune_reuse": "Ray Tune, reuse_actors=True",
    "optuna_memory": "Optuna in-process (in memory)",
    "optuna_sqlite": "Optuna in-process (SQLite)",
}
METRIC = {"trivial": "score", "digits": "val_error"}
PARAMETER = {
    "trivial": ("x", 0.0, 1.0, False),
    "digits": ("learning_rate", 1.0e-3, 0.3, True),
}


# --- one method, in a subprocess ---------------------------------------------------------------

def _start_ray(workers: int) -> None:
    import ray

    ray.init(address="local", num_cpus=workers, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)


def run_searchsvc(workload: str, trials: int, workers: int, folder: Path) -> dict[str, Any]:
    from workloads import DIGITS_EPOCHS, TRIVIAL_STEPS

    from searchsvc.driver import RunOptions, create_study, run_study
    from searchsvc.searchers import create_searcher
    from searchsvc.store import SqlStore
    from searchsvc.usecases import validate_text

    name, low, high, log = PARAMETER[workload]
    steps = TRIVIAL_STEPS if workload == "trivial" else DIGITS_EPOCHS
    text = (f"study: overhead-{workload}\nobjective: workloads:{workload}\n"
            f"metric: {METRIC[workload]}\nmode: min\nsearcher: random\n"
            f"budget: {{trials: {trials}, max_concurrent: {workers}, max_steps: {steps}}}\n"
            f"resources: {{cpu: 1}}\nseed: 0\nparameters:\n"
            f"  {name}: {{role: nuisance, low: {low}, high: {high}"
            f"{', scale: log' if log else ''}}}\n")
    store = SqlStore(f"sqlite:///{folder / 'store.sqlite'}")
    spec = validate_text(text, file=str(BENCH / f"overhead_{workload}.yaml"))
    options = RunOptions(results_root=folder / "results", live_progress=False,
                         progress_stream=io.StringIO())
    _start_ray(workers)
    import ray.tune  # noqa: F401  (imported before the clock starts, as for stock Ray Tune)

    started, started_at = time.perf_counter(), time.time()
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)
    wall = time.perf_counter() - started
    records = store.get_trials(spec.name, measurements=True)
    first = min(t.started_at for t in records if t.started_at is not None)
    return {"wall_s": wall, "trials": sum(t.state == "completed" for t in records),
            "compute_s": sum(t.measurements[-1].metrics["compute_s"] for t in records
                             if t.measurements),
            # Fixed cost before any trial runs: building the Tuner, starting the workers
            # (their Python, imports); what remains beyond compute is per-trial cost.
            "startup_s": first - started_at}


def run_ray_tune(workload: str, trials: int, workers: int, folder: Path, reuse: bool
                 ) -> dict[str, Any]:
    import workloads
    from ray import tune

    name, low, high, log = PARAMETER[workload]
    space = {name: tune.loguniform(low, high) if log else tune.uniform(low, high)}
    _start_ray(workers)
    started = time.perf_counter()
    tuner = tune.Tuner(
        getattr(workloads, workload), param_space=space,
        tune_config=tune.TuneConfig(num_samples=trials, metric=METRIC[workload], mode="min",
                                    reuse_actors=reuse),
        run_config=tune.RunConfig(storage_path=str(folder / "ray_results"), name="stock"),
    )
    results = tuner.fit()
    wall = time.perf_counter() - started
    return {"wall_s": wall, "trials": sum(r.error is None for r in results),
            "compute_s": sum(r.metrics.get("compute_s", 0.0) for r in results)}


def run_optuna(workload: str, trials: int, workers: int, folder: Path, sqlite: bool
               ) -> dict[str, Any]:
    import optuna
    import workloads

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    name, low, high, log = PARAMETER[workload]
    steps = getattr(workloads, f"{workload}_steps")
    computed: list[float] = []

    def objective(trial: optuna.Trial) -> float:
        config = {name: trial.suggest_float(name, low, high, log=log)}
        last: dict[str, Any] = {}

        def report(metrics: dict[str, Any]) -> None:
            last.update(metrics)
            trial.report(metrics[METRIC[workload]], len(computed))

        steps(config, report)
        computed.append(last["compute_s"])
        return float(last[METRIC[workload]])

    storage = f"sqlite:///{folder / 'optuna.sqlite'}" if sqlite else None
    started = time.perf_counter()
    study = optuna.create_study(storage=storage, sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(objective, n_trials=trials, n_jobs=workers)
    wall = time.perf_counter() - started
    return {"wall_s": wall, "trials": len(study.trials), "compute_s": sum(computed)}


def run_one(method: str, workload: str, trials: int, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="overhead-") as tmp:
        folder = Path(tmp)
        if method == "searchsvc":
            return run_searchsvc(workload, trials, workers, folder)
        if method.startswith("ray_tune"):
            return run_ray_tune(workload, trials, workers, folder, method == "ray_tune_reuse")
        return run_optuna(workload, trials, workers, folder, method == "optuna_sqlite")


# --- the comparison ----------------------------------------------------------------------------

def measure(method: str, workload: str, trials: int, workers: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(BENCH)])}
    proc = subprocess.run(
        [sys.executable, __file__, "--one", method, "--workloads", workload,
         "--trials", str(trials), "--workers", str(workers)],
        env=env, capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{method} on {workload} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len("RESULT "):])
    result.update(method=method, workload=workload, workers=workers,
                  trials_per_s=result["trials"] / result["wall_s"],
                  efficiency=result["compute_s"] / (workers * result["wall_s"]))
    return result


def verdicts(rows: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    by = {(r["workload"], r["method"]): r for r in rows}
    out = []
    ours, stock, reuse = (by.get(("trivial", m)) for m in
                          ("searchsvc", "ray_tune", "ray_tune_reuse"))
    if ours and stock:
        ratio = ours["trials_per_s"] / stock["trials_per_s"]
        out.append(("trivial: searchsvc >= 5x stock Ray Tune throughput", f"{ratio:.1f}x",
                    ratio >= 5))
    if ours and reuse:
        ratio = ours["trials_per_s"] / reuse["trials_per_s"]
        out.append(("trivial: searchsvc >= Ray Tune with reuse_actors", f"{ratio:.2f}x",
                    ratio >= 1))
    digits = by.get(("digits", "searchsvc"))
    if digits:
        out.append(("digits: searchsvc efficiency >= 0.85", f"{digits['efficiency']:.2f}",
                    digits["efficiency"] >= 0.85))
    return out


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| workload | method | trials | wall s | trials/s | compute s | efficiency |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['workload']} | {LABELS[r['method']]} | {r['trials']} | "
                     f"{r['wall_s']:.1f} | {r['trials_per_s']:.2f} | {r['compute_s']:.1f} | "
                     f"{r['efficiency']:.2f} |")
    return "\n".join(lines)


def wall_breakdown(rows: list[dict[str, Any]]) -> str:
    """Where searchsvc's wall time went: start-up before the first trial, computing (per
    worker), and the rest, which is the cost of starting, feeding and ending trials."""
    lines = ["| workload | wall s | start-up s | compute s / workers | per-trial cost ms "
             "(worker time) |", "|---|---|---|---|---|"]
    for r in rows:
        if r["method"] != "searchsvc" or "startup_s" not in r:
            continue
        busy = r["compute_s"] / r["workers"]
        rest = r["wall_s"] - r["startup_s"] - busy
        lines.append(f"| {r['workload']} | {r['wall_s']:.1f} | {r['startup_s']:.1f} | "
                     f"{busy:.1f} | {1000 * rest * r['workers'] / max(r['trials'], 1):.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="trivial,digits")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--trivial-trials", type=int, default=200)
    parser.add_argument("--digits-trials", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs per method (interleaved); the table shows the median run")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--one", choices=METHODS, help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = run_one(args.one, args.workloads, args.trials, args.workers)
        print("RESULT " + json.dumps(result), flush=True)
        return
    rows = []
    for workload in args.workloads.split(","):
        trials = args.trivial_trials if workload == "trivial" else args.digits_trials
        runs: dict[str, list[dict[str, Any]]] = {}
        for _ in range(args.repeats):  # interleaved, so drifts in machine load hit all alike
            for method in args.methods.split(","):
                r = measure(method, workload, trials, args.workers)
                runs.setdefault(method, []).append(r)
                print(f"{workload:8s} {LABELS[method]:32s} {r['wall_s']:7.1f} s "
                      f"{r['trials_per_s']:8.2f} trials/s  efficiency {r['efficiency']:.2f}",
                      file=sys.stderr, flush=True)
        for rs in runs.values():
            median = sorted(rs, key=lambda r: r["wall_s"])[len(rs) // 2]
            rows.append({**median, "repeats": len(rs), "walls_s": [r["wall_s"] for r in rs]})
    print(table(rows))
    if any(r["method"] == "searchsvc" for r in rows):
        print("\nWhere searchsvc's wall time went:\n\n" + wall_breakdown(rows))
    checks = verdicts(rows)
    if checks:
        print("\n| target | measured | verdict |\n|---|---|---|")
        for target, value, ok in checks:
            print(f"| {target} | {value} | {'PASS' if ok else 'FAIL'} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"workers": args.workers, "rows": rows,
                                         "targets": [{"target": t, "measured": v, "pass": ok}
                                                     for t, v, ok in checks]}, indent=2))


if __name__ == "__main__":
    sys.path[:0] = [str(ROOT), str(BENCH)]
    main()
