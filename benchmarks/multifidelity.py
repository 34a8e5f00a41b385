"""Time to a target: how soon asha, hyperband and bohb reach a validation error on the digits
objective, against full-budget random and quasi-random search at equal concurrency.

Every searcher runs spaces/digits_asha.yaml (9 epochs a trial, 2 trials at a time) through
searchsvc on embedded Ray, once per seed, each in its own subprocess; --model cnn (the default)
trains the digits CNN, whose epochs cost more than starting a trial (the MLP's do not, so no
searcher can save it time).

Budget (--equal): ``time`` (default) gives every searcher the same wall-clock time. Random and
quasi-random run 24 full trials (216 epochs); the multi-fidelity searchers then get as many
trials as they can start within the time random search took on the same seed (their point:
more configurations for the same compute), and their results after that time are ignored.
``trials`` gives every searcher the same 24 trials instead.

Time to target = seconds from the first trial's start to the first reported val_error <=
target (the store's timestamps; "never" if no trial got there within the budget), for each of
--targets. Also printed: epochs trained, configurations tried, wall time and the best
val_error within the budget. Verdict (PASS/FAIL): asha's median time to target at least 2x
shorter than full-budget random search's, at --target (default: full-budget random search's
median best, i.e. what random search finds with its whole budget).

Steps for a result within noise (--equal trials only; a claim about the digits MLP, so with
--model mlp): per multi-fidelity searcher, its median
epochs against full-budget random search's, and on how many seeds its best val_error was within
noise (two standard errors of an error rate on the 360 validation images) of random search's
best on the same seed. PASS: at most half random search's median epochs, and within noise on at
least half the seeds.

    .venv/bin/python benchmarks/multifidelity.py [--target random-best|0.02]
        [--targets 0.03,0.025,...] [--seeds 5] [--model cnn|mlp] [--equal time|trials]
        [--searchers random,quasi_random,asha,hyperband,bohb] [--proposer random]
        [--json FILE]
    .venv/bin/python benchmarks/multifidelity.py --model mlp --equal trials \
        --searchers random,asha,hyperband,bohb

``asha_stop_collapsed`` is asha with ``dimensionality: {stop_collapsed: true}``; with
``--watch`` every trial (plain asha's too) watches its layers, so the two differ only in the
stopping:

    .venv/bin/python benchmarks/multifidelity.py --model mlp --equal trials --watch \
        --searchers asha,asha_stop_collapsed --target 0.03

``--proposer random`` makes asha and hyperband propose random configurations like the random
baseline (their default is quasi-random), which separates what early stopping gains from what
the proposer does.
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
# asha_stop_collapsed: asha with dimensionality.stop_collapsed (run it with --watch, so that
# plain asha's trials measure the same)
SEARCHERS = ("random", "quasi_random", "asha", "hyperband", "bohb", "asha_stop_collapsed")
FULL_BUDGET = ("random", "quasi_random")
FULL_TRIALS = 24
# Under --equal time the multi-fidelity searchers stop at the time limit, never at this count
MANY_TRIALS = 500
# Seconds the time limit allows beyond the budget: it counts from the Tuner's start, the
# budget from the first trial's start, and results after the budget are ignored anyway
START_ALLOWANCE_S = 15.0
VAL_EXAMPLES = 360  # the digits validation split: 20% of 1797 images


# --model cnn: two 64-channel convolutions, so an epoch costs more than starting a trial
CNN = """  model: {role: fixed, value: cnn}
  conv_layers: {role: fixed, value: 2}
  channels_0: {role: fixed, value: 64}
  channels_1: {role: fixed, value: 64}
"""


def run_one(searcher: str, seed: int, model: str = "cnn", trials: int = FULL_TRIALS,
            time_limit_s: float | None = None, proposer: str | None = None,
            watch: bool = False) -> dict[str, Any]:
    from searchsvc.driver import RunOptions, create_study, run_study
    from searchsvc.searchers import create_searcher
    from searchsvc.store import SqlStore
    from searchsvc.usecases import validate_text

    text = SPACE.read_text()
    options = "{}"
    if searcher not in FULL_BUDGET:
        chosen = f", proposer: {proposer}" if proposer and searcher != "bohb" else ""
        options = f"{{grace_period: 1, reduction_factor: 3{chosen}}}"
    base = "asha" if searcher == "asha_stop_collapsed" else searcher
    text = re.sub(r"(?m)^searcher: .*$", f"searcher: {base}", text)
    text = re.sub(r"(?m)^searcher_options: .*$", f"searcher_options: {options}", text)
    text = re.sub(r"(?m)^seed: .*$", f"seed: {seed}", text)
    limit = f", time_limit_s: {time_limit_s:.1f}" if time_limit_s else ""
    text = re.sub(r"(?m)^budget: \{trials: \d+,", f"budget: {{trials: {trials}{limit},", text)
    if model == "cnn":
        text = text.rstrip("\n") + "\n" + CNN
    if watch:
        text = text.rstrip("\n") + "\n  watch: {role: fixed, value: true}\n"
    if searcher == "asha_stop_collapsed":
        text = text.rstrip("\n") + "\ndimensionality: {stop_collapsed: true}\n"
    with tempfile.TemporaryDirectory(prefix="multifidelity-") as tmp:
        store = SqlStore(f"sqlite:///{tmp}/store.sqlite")
        spec = validate_text(text, file=str(SPACE))
        run = RunOptions(results_root=Path(tmp) / "results", live_progress=False,
                         progress_stream=io.StringIO(), num_cpus=2)
        searcher = create_searcher(spec)
        create_study(spec, store, run, searcher=searcher)
        run_study(spec.name, store, run, searcher=searcher)
        trials = store.get_trials(spec.name, measurements=True)
        # From the first trial's start: starting the embedded Ray (seconds) is not the searcher's
        start = min(t.started_at for t in trials if t.started_at is not None)
        # (seconds, val_error, trial number) of every reported epoch, in time order
        results = sorted((m.recorded_at - start, m.value, t.number) for t in trials
                         for m in t.measurements if m.value is not None)
        collapsed = sum(e.data.get("reason") == "collapsed" for e in store.get_events(spec.name))
        return {"searcher": searcher, "seed": seed, "results": results,
                "collapse_stops": collapsed}


def within(run: dict[str, Any], budget_s: float = math.inf) -> dict[str, Any]:
    """The run's figures counting only results reported within ``budget_s`` seconds: its
    improvements (seconds, best so far), epochs, configurations tried, wall time and best."""
    if "results" not in run:  # recorded before --equal existed: no truncation possible
        return run
    results = [r for r in run["results"] if r[0] <= budget_s]
    best, improvements = math.inf, []
    for at, value, _ in results:
        if value < best:
            best = value
            improvements.append((at, value))
    return {"improvements": improvements, "epochs": len(results),
            "configs": len({number for _, _, number in results}),
            "wall_s": results[-1][0] if results else 0.0, "best": best}


def measure(searcher: str, seed: int, model: str, trials: int = FULL_TRIALS,
            time_limit_s: float | None = None, proposer: str | None = None,
            watch: bool = False) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, __file__, "--one", searcher, "--seed", str(seed), "--model",
               model, "--trials", str(trials)]
    if time_limit_s:
        command += ["--time-limit", f"{time_limit_s:.1f}"]
    if proposer:
        command += ["--proposer", proposer]
    if watch:
        command.append("--watch")
    proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1800)
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


def budgets(runs: dict[str, list[dict[str, Any]]], equal: str) -> list[float]:
    """Per seed, the seconds the multi-fidelity searchers' results count for: under
    ``equal == "time"`` the wall time of full-budget random search (quasi-random if random did
    not run). Full-budget searchers always count to their end."""
    seeds = len(next(iter(runs.values())))
    base = next((runs[s] for s in FULL_BUDGET if s in runs), None)
    if equal != "time" or base is None:
        return [math.inf] * seeds
    return [within(r)["wall_s"] for r in base]


def summarise(runs: dict[str, list[dict[str, Any]]], equal: str
              ) -> dict[str, list[dict[str, Any]]]:
    limits = budgets(runs, equal)
    return {searcher: [within(r, math.inf if searcher in FULL_BUDGET else limit)
                       for r, limit in zip(rs, limits, strict=True)]
            for searcher, rs in runs.items()}


def noise(error: float) -> float:
    """Two standard errors of a validation error rate measured on VAL_EXAMPLES images (at
    least those of one error in VAL_EXAMPLES, so a perfect score still has some)."""
    return 2 * math.sqrt(max(error * (1 - error), 1 / VAL_EXAMPLES) / VAL_EXAMPLES)


def steps_verdicts(counted: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per multi-fidelity searcher, against full-budget random search on the same seeds: the
    ratio of median epochs, and the seeds where its best was within noise of random search's
    best. PASS: at most half the epochs, within noise on at least half the seeds."""
    base = counted["random"]
    verdicts = []
    for searcher, runs in counted.items():
        if searcher in FULL_BUDGET:
            continue
        ratio = (statistics.median(r["epochs"] for r in runs)
                 / statistics.median(r["epochs"] for r in base))
        close = sum(r["best"] <= b["best"] + noise(b["best"])
                    for r, b in zip(runs, base, strict=True))
        verdicts.append({"searcher": searcher, "epochs_ratio": ratio, "within_noise": close,
                         "seeds": len(runs), "pass": ratio <= 0.5 and 2 * close >= len(runs)})
    return verdicts


def print_steps_table(counted: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    verdicts = steps_verdicts(counted)
    print("\nEpochs for a result within noise of full-budget random search's (same trials, "
          "same seeds; noise: two standard errors on 360 validation images)\n")
    print("| searcher | epochs | epochs / random's | best within noise of random's | best "
          "| verdict |\n|---|---|---|---|---|---|")
    for v in verdicts:
        runs = counted[v["searcher"]]
        print(f"| {v['searcher']} | {statistics.median(r['epochs'] for r in runs):.0f} "
              f"| {v['epochs_ratio']:.2f} | {v['within_noise']} of {v['seeds']} seeds "
              f"| {statistics.median(r['best'] for r in runs):.4f} "
              f"| {'PASS' if v['pass'] else 'FAIL'} |")
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="random-best",
                        help="val_error of the verdict, or random-best: full-budget random "
                             "search's median best")
    parser.add_argument("--targets", default="0.03,0.025,0.02,0.015")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--model", choices=("mlp", "cnn"), default="cnn",
                        help="mlp: epochs cheaper than starting a trial")
    parser.add_argument("--equal", choices=("time", "trials"), default="time",
                        help="time: the multi-fidelity searchers get random search's wall time "
                             f"(per seed); trials: every searcher gets {FULL_TRIALS} trials")
    parser.add_argument("--searchers", default=",".join(SEARCHERS))
    parser.add_argument("--proposer", choices=("random", "quasi_random"), default=None,
                        help="configs of asha and hyperband (default: their own, quasi_random)")
    parser.add_argument("--watch", action="store_true",
                        help="every trial watches its layers' dimensionality (sdk.watch); with "
                             "asha_stop_collapsed, the fair baseline is asha --watch")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--tables-from", type=Path, default=None,
                        help="print the tables from this --json output instead of running")
    parser.add_argument("--one", choices=SEARCHERS, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--trials", type=int, default=FULL_TRIALS, help=argparse.SUPPRESS)
    parser.add_argument("--time-limit", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args.one, args.seed, args.model, args.trials,
                                             args.time_limit, args.proposer, args.watch)),
              flush=True)
        return
    searchers = args.searchers.split(",")
    # Full-budget searchers first, in FULL_BUDGET's order: the first one's wall time is the
    # others' budget on the same seed, as budgets() reads it back from the results
    searchers.sort(key=lambda s: FULL_BUDGET.index(s) if s in FULL_BUDGET else len(FULL_BUDGET))
    runs: dict[str, list[dict[str, Any]]] = {}
    if args.tables_from:  # the tables again, for other targets, from an earlier run's JSON
        earlier = json.loads(args.tables_from.read_text())
        runs, args.model = earlier["runs"], earlier.get("model", args.model)
        args.equal = earlier.get("equal", "trials")
        args.proposer = earlier.get("proposer")
        args.seeds = len(next(iter(runs.values())))
    for seed in range(0 if args.tables_from else args.seeds):
        budget_s = None
        for searcher in searchers:
            trials, limit = FULL_TRIALS, None
            if args.equal == "time" and searcher not in FULL_BUDGET and budget_s:
                trials, limit = MANY_TRIALS, budget_s + START_ALLOWANCE_S
            r = measure(searcher, seed, args.model, trials, limit, args.proposer, args.watch)
            runs.setdefault(searcher, []).append(r)
            figures = within(r, math.inf if searcher in FULL_BUDGET else budget_s or math.inf)
            if searcher in FULL_BUDGET and budget_s is None and args.equal == "time":
                budget_s = figures["wall_s"]
            stops = (f", {r['collapse_stops']} stopped for a collapsed layer"
                     if r.get("collapse_stops") else "")
            print(f"seed {seed} {searcher:12s} {figures['epochs']} epochs, "
                  f"{figures['wall_s']:.1f} s, best {figures['best']:.4f}{stops}",
                  file=sys.stderr, flush=True)
    counted = summarise(runs, args.equal)
    target = (statistics.median(r["best"] for r in counted["random"])
              if args.target == "random-best" and "random" in counted
              else float(args.target) if args.target != "random-best" else None)
    listed = [float(t) for t in args.targets.split(",")]
    if target is not None:  # a float32 error of the store beside a typed 0.025 is one column
        listed = [t for t in listed if not math.isclose(t, target, rel_tol=1e-6)] + [target]
    targets = sorted(set(listed), reverse=True)
    budget = ("equal wall time: the multi-fidelity searchers' results count until random "
              "search's wall time on the same seed" if args.equal == "time"
              else f"{FULL_TRIALS} trials each")
    proposing = f"; asha/hyperband propose {args.proposer}" if args.proposer else ""
    print(f"Seconds to reach val_error <= target on digits, {args.model.upper()} (9 epochs a "
          f"trial, 2 at a time; {budget}{proposing}; median of {args.seeds} seeds; never = "
          "not reached)"
          "\n")
    print("| searcher | " + " | ".join(f"<= {t:.4g}" for t in targets)
          + " | epochs | configs | wall s | best |")
    print("|---" * (len(targets) + 5) + "|")
    for searcher, rs in counted.items():
        print(f"| {searcher} | "
              + " | ".join(_seconds(median_time(rs, t)) for t in targets)
              + f" | {statistics.median(r['epochs'] for r in rs):.0f}"
              f" | {statistics.median(r.get('configs', FULL_TRIALS) for r in rs):.0f}"
              f" | {statistics.median(r['wall_s'] for r in rs):.1f}"
              f" | {statistics.median(r['best'] for r in rs):.4f} |")
    verdict = None
    if "asha" in counted and "random" in counted and target is not None:
        ratio = median_time(counted["random"], target) / median_time(counted["asha"], target)
        named = " (random search's median best)" if args.target == "random-best" else ""
        verdict = {"target": f"asha reaches val_error <= {target:.4g}{named} >= 2x sooner "
                             "than full-budget random", "measured": f"{ratio:.2f}x",
                   "pass": ratio >= 2}
        print(f"\n| target | measured | verdict |\n|---|---|---|\n| {verdict['target']} | "
              f"{verdict['measured']} | {'PASS' if verdict['pass'] else 'FAIL'} |")
    steps = None
    if args.equal == "trials" and "random" in counted and len(counted) > 1:
        steps = print_steps_table(counted)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"model": args.model, "equal": args.equal,
                                         "proposer": args.proposer,
                                         "targets": targets, "runs": runs,
                                         "verdict": verdict, "steps_verdicts": steps},
                                        indent=2))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
