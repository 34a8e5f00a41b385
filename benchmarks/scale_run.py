"""Scale, end to end: a study of many short trials run through ``searchsvc run``, as a user
runs one, on this machine's embedded Ray.

The study: random search over one parameter, a trivial objective reporting ``--steps`` steps,
``--concurrency`` trials at a time, no seed repeats. Measured: the throughput of each block of
1,000 trials (from the finish times the store recorded), the last block's against the first's,
the whole run's wall time, the driver's peak RSS (sampled), and ``searchsvc replay`` of the
finished study. ``--code DIR`` runs another checkout's searchsvc (for a side-by-side run of an
older commit on the same machine).

    .venv/bin/python benchmarks/scale_run.py [--trials 10000] [--steps 20] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import psutil

OBJECTIVE = """
from searchsvc import sdk


def train(config):
    for step in range(1, {steps} + 1):
        sdk.report({{"loss": config["x"] / step}})
"""

STUDY = """
study: scale
objective: trivial:train
metric: loss
mode: min
searcher: {searcher}
searcher_options: {options}
seed: 0
noise: off
budget: {{trials: {trials}, max_steps: {steps}, max_concurrent: {concurrency}}}
parameters:
  x: {{low: 0.1, high: 1.0}}
"""


def run_study(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """``searchsvc run`` of the study in ``folder``: (wall seconds, the driver's peak RSS in
    MB, sampled every 0.2 s)."""
    command = [sys.executable, "-m", "searchsvc.cli", "run", "study.yaml", "--storage",
               f"sqlite:///{folder / 'db.sqlite'}", "--results", str(folder / "results")]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    driver, peak = psutil.Process(process.pid), 0
    while process.poll() is None:
        try:
            peak = max(peak, driver.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.2)
    if process.wait() != 0:
        raise SystemExit(f"searchsvc run failed with exit code {process.returncode}")
    return time.perf_counter() - started, peak / 1e6


def block_rates(db: Path, block: int) -> list[float]:
    """Trials per second of each block of ``block`` trials, in the order they finished."""
    with sqlite3.connect(db) as con:
        ends = [r[0] for r in con.execute(
            "SELECT finished_at FROM trials ORDER BY finished_at")]
        began = con.execute("SELECT MIN(started_at) FROM trials").fetchone()[0]
    rates, previous = [], began
    for i in range(block - 1, len(ends), block):
        rates.append(block / (ends[i] - previous))
        previous = ends[i]
    return rates


def replay_seconds(folder: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "searchsvc.cli", "replay", "scale", "--storage",
                    f"sqlite:///{folder / 'db.sqlite'}"], cwd=folder, env=env, check=True,
                   capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--block", type=int, default=1_000)
    parser.add_argument("--searcher", default="random",
                        help="the study's searcher (bayesian, to see the suggestion cost)")
    parser.add_argument("--searcher-options", default="{}",
                        help="its options, as YAML (e.g. '{sampler: tpe}')")
    parser.add_argument("--code", type=Path, default=None,
                        help="the checkout whose searchsvc runs (default: this one)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    env = {**os.environ, "SEARCHSVC_HOME": ""}
    if args.code is not None:
        env["PYTHONPATH"] = str(args.code.resolve())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env["SEARCHSVC_HOME"] = str(folder / "home")
        (folder / "trivial.py").write_text(textwrap.dedent(OBJECTIVE.format(steps=args.steps)))
        (folder / "study.yaml").write_text(STUDY.format(
            trials=args.trials, steps=args.steps, concurrency=args.concurrency,
            searcher=args.searcher, options=args.searcher_options))
        wall, peak_mb = run_study(folder, env)
        rates = block_rates(folder / "db.sqlite", args.block)
        replay_s = replay_seconds(folder, env)
    ratio = rates[-1] / rates[0]
    print(f"{args.searcher}: {args.trials} trials x {args.steps} steps, {args.concurrency} at "
          f"a time: {wall:.0f} s; per {args.block} trials: " + " ".join(f"{r:.1f}" for r in rates)
          + " trials/s")
    print("\n| measure | value | target | verdict |\n|---|---|---|---|")
    for name, value, target, ok in [
        (f"last {args.block} trials' throughput / first's", f"{ratio:.2f}", ">= 0.8",
         ratio >= 0.8),
        ("whole run", f"{wall:.0f} s", "", None),
        ("driver peak RSS", f"{peak_mb:.0f} MB", "<= 500 MB", peak_mb <= 500),
        ("searchsvc replay of the study", f"{replay_s:.1f} s", "<= 10 s", replay_s <= 10),
    ]:
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        print(f"| {name} | {value} | {target} | {verdict} |")
    if args.json:
        args.json.write_text(json.dumps({
            "searcher": args.searcher, "trials": args.trials, "steps": args.steps,
            "concurrency": args.concurrency,
            "wall_s": wall, "block_rates": rates, "ratio": ratio, "peak_rss_mb": peak_mb,
            "replay_s": replay_s}, indent=1))


if __name__ == "__main__":
    main()
