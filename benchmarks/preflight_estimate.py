"""Preflight's cost estimate against the study's real duration, on the machine that runs this.

Runs digits studies with ``searchsvc run`` (preflight on, as users run them), each in a fresh
SEARCHSVC_HOME, and prints the estimate preflight stored in the study's provenance next to the
study's measured duration (the store's ``started_at`` to ``finished_at``: every trial, both
Tuner runs, Ray Tune's overheads; not Ray's own start, which preflight shares).

    .venv/bin/python benchmarks/preflight_estimate.py [--runs 2] [--num-cpus 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# A shortened digits_depth (3 depths, 12 trials, 10 epochs, seed repeats on) and digits_asha
# (ASHA: the multi-fidelity savings).
STUDIES = {
    "digits-depth-short": (ROOT / "spaces" / "digits_depth.yaml",
                           {"trials: 60": "trials: 12", "max_steps: 30": "max_steps: 10",
                            "study: digits-depth": "study: digits-depth-short"}),
    "digits_asha": (ROOT / "spaces" / "digits_asha.yaml", {}),
}


def run_once(name: str, num_cpus: int) -> tuple[float, float]:
    source, edits = STUDIES[name]
    text = source.read_text()
    for old, new in edits.items():
        text = text.replace(old, new)
    with tempfile.TemporaryDirectory() as tmp:
        study = Path(tmp) / f"{name}.yaml"
        study.write_text(text)
        env = {**os.environ, "SEARCHSVC_HOME": str(Path(tmp) / "home"),
               "PYTHONPATH": str(ROOT)}
        subprocess.run([sys.executable, "-m", "searchsvc.cli", "run", str(study),
                        "--num-cpus", str(num_cpus)], check=True, cwd=ROOT, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        from searchsvc.store import open_store

        store = open_store(f"sqlite:///{Path(tmp) / 'home' / 'searchsvc.db'}")
        record = store.get_study(yaml.safe_load(text)["study"])
        estimate = record.provenance["preflight"]["estimate"]["wall_s"]
        assert record.started_at is not None and record.finished_at is not None
        return estimate, record.finished_at - record.started_at


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument("--study", choices=sorted(STUDIES), action="append")
    args = parser.parse_args()
    print(f"{'study':20} {'run':>3} {'estimate s':>10} {'actual s':>9} {'error':>7}")
    for name in args.study or sorted(STUDIES):
        for run in range(args.runs):
            estimate, actual = run_once(name, args.num_cpus)
            print(f"{name:20} {run:>3} {estimate:>10.1f} {actual:>9.1f} "
                  f"{(estimate - actual) / actual:>+7.0%}", flush=True)


if __name__ == "__main__":
    main()
