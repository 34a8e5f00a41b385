"""Time to a target: how soon asha, hyperband and bohb reach a validation error on the digits
MLP, against full-budget random and quasi-random search at equal concurrency.

Every searcher runs spaces/digits_asha.yaml (24 trials x 9 epochs, 2 at a time) through
searchsvc on embedded Ray, once per seed, each in its own subprocess. Time to target = seconds
from the study's start to the first reported val_error <= target (read from the store's
timestamps, counted from the first trial's start; "never" if no trial got there), for each of
--targets. Also printed: total epochs
trained, wall time and the best val_error. Verdict (PASS/FAIL) at --target: asha's median time
to target at least 2x shorter than full-budget random search's.

    .venv/bin/python benchmarks/multifidelity.py [--target 0.03] [--targets 0.04,0.035,...]
        [--seeds 3] [--model mlp|cnn] [--searchers random,quasi_random,asha,hyperband,bohb]
        [--json FILE]
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


# --model cnn: two 64-channel convolutions, so an epoch costs more than starting a trial
CNN = """  model: {role: fixed, value: cnn}
  conv_layers: {role: fixed, value: 2}
  channels_0: {role: fixed, value: 64}
  channels_1: {role: fixed, value: 64}
"""


def run_one(searcher: str, seed: int, model: str = "mlp") -> dict[str, Any]:
    from searchsvc.runner import RunOptions, create_study, run_study
    from searchsvc.store import Store
    from searchsvc.validation import validate_text

    text = SPACE.read_text()
    options = ("{grace_period: 1, reduction_factor: 3}"
               if searcher in ("asha", "hyperband", "bohb") else "{}")
    text = re.sub(r"(?m)^searcher: .*$", f"searcher: {searcher}", text)
    text = re.sub(r"(?m)^searcher_options: .*$", f"searcher_options: {options}", text)
    text = re.sub(r"(?m)^seed: .*$", f"seed: {seed}", text)
    if model == "cnn":
        text = text.rstrip("\n") + "\n" + CNN
    with tempfile.TemporaryDirectory(prefix="multifidelity-") as tmp:
        store = Store(f"sqlite:///{tmp}/store.sqlite")
        spec = validate_text(text, file=str(SPACE))
        run = RunOptions(results_root=Path(tmp) / "results", live_progress=False,
                         progress_stream=io.StringIO(), num_cpus=2)
        create_study(spec, store, run)
        run_study(spec.name, store, run)
        trials = store.get_trials(spec.name, measurements=True)
        # From the first trial's start: starting the embedded Ray (seconds) is not the searcher's
        start = min(t.started_at for t in trials if t.started_at is not None)
        results = sorted((m.recorded_at - start, m.value) for t in trials
                         for m in t.measurements if m.value is not None)
        best, improvements = math.inf, []
        for at, value in results:
            if value < best:
                best = value
                improvements.append((at, value))
        return {
            "searcher": searcher, "seed": seed, "improvements": improvements,
            "wall_s": results[-1][0],
            "epochs": sum(t.last_step or 0 for t in trials),
            "best": min(t.best_value for t in trials if t.best_value is not None),
        }


def measure(searcher: str, seed: int, model: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, __file__, "--one", searcher, "--seed", str(seed),
                           "--model", model], env=env, capture_output=True, text=True,
                          timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"{searcher} seed {seed} failed (exit {proc.returncode}):\n"
                         f"{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def time_to(run: dict[str, Any], target: float) -> float:
    """Seconds until the run first reported a value <= target (infinite: never)."""
    return next((at for at, value in run["improvements"] if value <= target), math.inf)


def median_time(runs: list[dict[str, Any]], target: float) -> float:
    return statistics.median(time_to(r, target) for r in runs)


def _seconds(value: float) -> str:
    return "never" if math.isinf(value) else f"{value:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.03)
    parser.add_argument("--targets", default="0.04,0.035,0.03,0.025")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp",
                        help="cnn: epochs that cost more than starting a trial")
    parser.add_argument("--searchers", default=",".join(SEARCHERS))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--tables-from", type=Path, default=None,
                        help="print the tables from this --json output instead of running")
    parser.add_argument("--one", choices=SEARCHERS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args.one, args.seed, args.model)), flush=True)
        return
    targets = sorted({args.target, *(float(t) for t in args.targets.split(","))}, reverse=True)
    runs: dict[str, list[dict[str, Any]]] = {}
    if args.tables_from:  # the tables again, for other targets, from an earlier run's JSON
        earlier = json.loads(args.tables_from.read_text())
        runs, args.model = earlier["runs"], earlier.get("model", args.model)
        args.seeds = len(next(iter(runs.values())))
    for seed in range(0 if args.tables_from else args.seeds):
        for searcher in args.searchers.split(","):
            r = measure(searcher, seed, args.model)
            runs.setdefault(searcher, []).append(r)
            print(f"seed {seed} {searcher:12s} {r['epochs']} epochs, {r['wall_s']:.1f} s, "
                  f"best {r['best']:.4f}, to {args.target}: {_seconds(time_to(r, args.target))}",
                  file=sys.stderr, flush=True)
    print(f"Seconds to reach val_error <= target on digits, {args.model.upper()} (24 trials x 9 "
          f"epochs, 2 at a time; median of {args.seeds} seeds; never = not reached)\n")
    print("| searcher | " + " | ".join(f"<= {t}" for t in targets)
          + " | epochs | wall s | best |")
    print("|---" * (len(targets) + 4) + "|")
    for searcher, rs in runs.items():
        print(f"| {searcher} | "
              + " | ".join(_seconds(median_time(rs, t)) for t in targets)
              + f" | {statistics.median(r['epochs'] for r in rs):.0f}"
              f" | {statistics.median(r['wall_s'] for r in rs):.1f}"
              f" | {statistics.median(r['best'] for r in rs):.4f} |")
    verdict = None
    if "asha" in runs and "random" in runs:
        ratio = median_time(runs["random"], args.target) / median_time(runs["asha"], args.target)
        verdict = {"target": f"asha reaches val_error <= {args.target} >= 2x sooner than "
                             "full-budget random", "measured": f"{ratio:.2f}x",
                   "pass": ratio >= 2}
        print(f"\n| target | measured | verdict |\n|---|---|---|\n| {verdict['target']} | "
              f"{verdict['measured']} | {'PASS' if verdict['pass'] else 'FAIL'} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": args.model, "targets": targets, "runs": runs,
                                         "verdict": verdict}, indent=2))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
