"""PBT against its own initial population, over several seeds.

Does a population that copies its leaders and explores their learning rate end better than the
best configuration it started from? spaces/toy_pbt.yaml (8 trials of 24 steps; the toy's best
learning rate falls during training) runs through searchsvc on one embedded Ray (2 CPUs), once
per seed: the seed changes the quasi-random initial population and PBT's random choices, and
which trial reaches a perturbation first varies with machine load. The toy's score is a
deterministic function of the learning rates a run used, so the score each initial
configuration would have reached keeping its learning rate throughout is computed exactly
(objectives.synthetic.pbt_toy_fixed_score), as is the best score of any constant learning rate
on PBT's ladder (no population can beat that without changing its learning rate).

Per seed: the best initial configuration's fixed score, PBT's best final score, the margin
between them, the best constant ladder rate's score, the exploits and the wall time. Verdict
(PASS/FAIL): PBT's best beats its best initial configuration on the median seed (median margin
> 0); the number of seeds where it did is printed beside it.

    .venv/bin/python benchmarks/pbt.py [--seeds 5] [--variant pbt|pb2] [--asynch]
        [--json FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from objectives.synthetic import pbt_toy_fixed_score  # noqa: E402

SPACE = ROOT / "spaces" / "toy_pbt.yaml"


def study_text(seed: int, variant: str, synch: bool) -> str:
    """toy_pbt.yaml with ``seed``, PBT ``variant`` and ``synch`` (its other options kept)."""
    text = SPACE.read_text()
    text = re.sub(r"(?m)^study: .*$", f"study: toy_{variant}_{seed}", text)
    text = re.sub(r"(?m)^seed: .*$", f"seed: {seed}", text)
    text, replaced = re.subn(r"synch: (true|false)\}",
                             f"synch: {str(synch).lower()}, variant: {variant}}}", text)
    assert replaced == 1, "toy_pbt.yaml's searcher_options no longer end with synch"
    return text


def run_one(seed: int, variant: str, synch: bool) -> dict[str, Any]:
    """One PBT run of the toy: its scores against the fixed-rate baselines of that seed."""
    from searchsvc.core import EventKind
    from searchsvc.driver import RunOptions, create_study, run_study
    from searchsvc.searchers import create_searcher
    from searchsvc.store import SqlStore
    from searchsvc.usecases import validate_text

    spec = validate_text(study_text(seed, variant, synch), file=str(SPACE))
    steps = spec.budget.max_steps
    assert steps is not None
    ladder = create_searcher(spec).schedule().mutations["learning_rate"]  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory(prefix="pbt-") as tmp:
        store = SqlStore(f"sqlite:///{tmp}/store.sqlite")
        run = RunOptions(results_root=Path(tmp) / "results", live_progress=False,
                         progress_stream=io.StringIO(), num_cpus=2)
        started = time.monotonic()
        searcher = create_searcher(spec)
        create_study(spec, store, run, searcher=searcher)
        run_study(spec.name, store, run, searcher=searcher)
        wall_s = time.monotonic() - started
        trials = store.get_trials(spec.name)
        exploits = len(store.get_events(spec.name, kind=EventKind.EXPLOIT))
        store.close()
    # The store keeps each trial's initial config; PBT's changes are in its exploit events.
    initial = max((t.config["learning_rate"] for t in trials),
                  key=lambda lr: pbt_toy_fixed_score(lr, steps))
    return {"seed": seed, "best_initial_lr": initial,
            "best_initial": pbt_toy_fixed_score(initial, steps),
            "pbt_best": max(t.best_value for t in trials if t.best_value is not None),
            "best_constant": max(pbt_toy_fixed_score(lr, steps) for lr in ladder),
            "exploits": exploits, "trials": len(trials), "wall_s": wall_s}


def verdict(rows: list[dict[str, Any]]) -> dict[str, Any]:
    margins = [r["pbt_best"] - r["best_initial"] for r in rows]
    wins = sum(m > 0 for m in margins)
    median = statistics.median(margins)
    return {"target": f"PBT's best beats its best initial config (median margin over "
                      f"{len(rows)} seeds)",
            "measured": f"{median:+.3f} (beat it on {wins} of {len(rows)} seeds)",
            "pass": median > 0}


def print_tables(rows: list[dict[str, Any]], variant: str, synch: bool) -> dict[str, Any]:
    mode = "synchronous" if synch else "asynchronous"
    print(f"{variant} ({mode}) on spaces/toy_pbt.yaml: {rows[0]['trials']} trials x 24 steps; "
          "scores are the toy's (higher is better)\n")
    print("| seed | best initial lr | its score kept fixed | PBT best | margin "
          "| best score of a fixed ladder lr | exploits | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['seed']} | {r['best_initial_lr']:.3g} | {r['best_initial']:.3f} "
              f"| {r['pbt_best']:.3f} | {r['pbt_best'] - r['best_initial']:+.3f} "
              f"| {r['best_constant']:.3f} | {r['exploits']} | {r['wall_s']:.1f} |")
    result = verdict(rows)
    print(f"\n| target | measured | verdict |\n|---|---|---|\n| {result['target']} "
          f"| {result['measured']} | {'PASS' if result['pass'] else 'FAIL'} |")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="runs, with seeds 0..N-1")
    parser.add_argument("--variant", choices=("pbt", "pb2"), default="pbt")
    parser.add_argument("--asynch", action="store_true",
                        help="asynchronous PBT (decisions as each trial reaches a perturbation "
                             "step) instead of toy_pbt.yaml's synchronous one")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    import ray

    # One Ray for every seed: run_study uses a Ray that is already up
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    rows = []
    try:
        for seed in range(args.seeds):
            rows.append(run_one(seed, args.variant, not args.asynch))
            r = rows[-1]
            print(f"seed {seed}: PBT best {r['pbt_best']:.3f}, best initial "
                  f"{r['best_initial']:.3f}, {r['wall_s']:.1f} s", file=sys.stderr, flush=True)
    finally:
        ray.shutdown()
    result = print_tables(rows, args.variant, not args.asynch)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"variant": args.variant, "synch": not args.asynch,
                                         "runs": rows, "verdict": result}, indent=2))


if __name__ == "__main__":
    main()
