"""Time to a target: how soon asha, hyperband and bohb reach a validation error on the digits
MLP, against full-budget random and quasi-random search at equal concurrency.

Every searcher runs spaces/digits_asha.yaml (24 trials x 9 epochs, 2 at a time) through
searchsvc on embedded Ray, once per seed, each in its own subprocess. Time to target = seconds
from the study's start to the first reported val_error <= --target (read from the store's
timestamps; "never" if no trial got there). Also printed: total epochs trained and the best
val_error. Target (PASS/FAIL): asha's median time to target at least 2x shorter than
full-budget random search's.

    .venv/bin/python benchmarks/multifidelity.py [--target 0.035] [--seeds 3]
        [--searchers random,quasi_random,asha,hyperband,bohb] [--json FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SPACE = ROOT / "spaces" / "digits_asha.yaml"
SEARCHERS = ("random", "quasi_random", "asha", "hyperband", "bohb")


def run_one(searcher: str, seed: int, target: float) -> dict[str, Any]:
    from searchsvc.runner import RunOptions, create_study, run_study
    from searchsvc.store import Store
    from searchsvc.validation import validate_text

    text = SPACE.read_text()
    options = ("{grace_period: 1, reduction_factor: 3}"
               if searcher in ("asha", "hyperband", "bohb") else "{}")
    text = re.sub(r"(?m)^searcher: .*$", f"searcher: {searcher}", text)
    text = re.sub(r"(?m)^searcher_options: .*$", f"searcher_options: {options}", text)
    text = re.sub(r"(?m)^seed: .*$", f"seed: {seed}", text)
    with tempfile.TemporaryDirectory(prefix="multifidelity-") as tmp:
        store = Store(f"sqlite:///{tmp}/store.sqlite")
        spec = validate_text(text, file=str(SPACE))
        run = RunOptions(results_root=Path(tmp) / "results", live_progress=False,
                         progress_stream=io.StringIO(), num_cpus=2)
        create_study(spec, store, run)
        outcome = run_study(spec.name, store, run)
        trials = store.get_trials(spec.name, measurements=True)
        start = outcome.study.started_at or 0.0
        reached = [m.recorded_at for t in trials for m in t.measurements
                   if m.value is not None and m.value <= target]
        end = max(m.recorded_at for t in trials for m in t.measurements)
        return {
            "searcher": searcher, "seed": seed,
            "time_to_target_s": min(reached) - start if reached else None,
            "wall_s": end - start,
            "epochs": sum(t.last_step or 0 for t in trials),
            "best": min(t.best_value for t in trials if t.best_value is not None),
        }


def measure(searcher: str, seed: int, target: float) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, __file__, "--one", searcher, "--seed", str(seed),
                           "--target", str(target)], env=env, capture_output=True, text=True,
                          timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{searcher} seed {seed} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def median_time(runs: list[dict[str, Any]]) -> float:
    """Median time to target over seeds; a run that never got there counts as infinite."""
    return statistics.median(math.inf if r["time_to_target_s"] is None
                             else r["time_to_target_s"] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.035)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--searchers", default=",".join(SEARCHERS))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--one", choices=SEARCHERS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args.one, args.seed, args.target)), flush=True)
        return
    runs: dict[str, list[dict[str, Any]]] = {}
    for seed in range(args.seeds):
        for searcher in args.searchers.split(","):
            r = measure(searcher, seed, args.target)
            runs.setdefault(searcher, []).append(r)
            print(f"seed {seed} {searcher:12s} to target {r['time_to_target_s']} s, "
                  f"{r['epochs']} epochs, best {r['best']:.4f}", file=sys.stderr, flush=True)
    print(f"Time to val_error <= {args.target} on the digits MLP (24 trials x 9 epochs, "
          f"2 at a time; median of {args.seeds} seeds)\n")
    print("| searcher | time to target s | runs that reached it | epochs | wall s | best |")
    print("|---|---|---|---|---|---|")
    for searcher, rs in runs.items():
        t = median_time(rs)
        print(f"| {searcher} | {'never' if math.isinf(t) else f'{t:.1f}'} | "
              f"{sum(r['time_to_target_s'] is not None for r in rs)}/{len(rs)} | "
              f"{statistics.median(r['epochs'] for r in rs):.0f} | "
              f"{statistics.median(r['wall_s'] for r in rs):.1f} | "
              f"{statistics.median(r['best'] for r in rs):.4f} |")
    verdict = None
    if "asha" in runs and "random" in runs:
        ratio = median_time(runs["random"]) / median_time(runs["asha"])
        verdict = {"target": "asha reaches the target >= 2x sooner than full-budget random",
                   "measured": f"{ratio:.2f}x", "pass": ratio >= 2}
        print(f"\n| target | measured | verdict |\n|---|---|---|\n| {verdict['target']} | "
              f"{verdict['measured']} | {'PASS' if verdict['pass'] else 'FAIL'} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"target": args.target, "runs": runs,
                                         "verdict": verdict}, indent=2))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
