"""What Python's cyclic garbage collector costs a searchsvc process while it starts, and what
``searchsvc.startup.collect_rarely`` (the youngest generation's threshold at 100,000 instead of
700) saves.

Each measurement is a fresh interpreter importing what one kind of process imports as it starts,
with CPython's thresholds or collecting rarely, alternating, ``--rounds`` rounds; the CPU seconds
of the imports alone (``time.process_time``), medians per kind and setting:

- trial worker: after ``import ray`` (a Ray worker has it before its setup hook runs), Ray
  Tune, searchsvc's trial code and torch, as a trial of a torch objective imports them;
- driver: what ``searchsvc run`` imports to run a study and write its report (Ray Tune, the
  store, the searchers, Plotly and Matplotlib).

    .venv/bin/python benchmarks/startup_gc.py [--rounds 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

KINDS = {
    "trial worker": ("import ray", "import ray.tune, searchsvc.worker.trainable, torch"),
    "driver": ("", "import searchsvc.usecases, searchsvc.driver.run, searchsvc.report.writer, "
                   "plotly.graph_objects, matplotlib.pyplot"),
}

PROBE = """
import time
{before}
if {rarely}:
    from searchsvc import startup
    startup.collect_rarely()
t = time.process_time()
{imports}
print(time.process_time() - t)
"""


def cpu_seconds(kind: str, rarely: bool) -> float:
    before, imports = KINDS[kind]
    code = PROBE.format(before=before, rarely=rarely, imports=imports)
    return float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", help="write the measurements here too")
    args = parser.parse_args()
    runs: dict[str, dict[str, list[float]]] = {k: {"usual": [], "rarely": []} for k in KINDS}
    for _ in range(args.rounds):
        for kind in KINDS:
            for setting in ("usual", "rarely"):
                runs[kind][setting].append(cpu_seconds(kind, setting == "rarely"))
    print(f"{args.rounds} rounds, median CPU seconds of the imports\n")
    print("| process | CPython's thresholds | collecting rarely | saved |")
    print("|---|---|---|---|")
    for kind, settings in runs.items():
        usual, rarely = (statistics.median(settings[s]) for s in ("usual", "rarely"))
        print(f"| {kind} | {usual:.3f} | {rarely:.3f} | {1 - rarely / usual:.0%} |")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(runs, out, indent=1)


if __name__ == "__main__":
    main()
