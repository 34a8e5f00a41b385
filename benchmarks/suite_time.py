"""The test suite's time, with the machine's speed beside it: `make test` (or any command) run
once, its pytest time read from pytest's own summary lines, the whole machine's CPU seconds over
the run (``/proc/stat``: every process, Ray's workers included, which leave the process tree),
and a calibration before and after: the best of three runs of a 10-million-iteration empty loop
in a fresh ``python3``.

The suite is CPU-bound on a 2-core machine, so its time scales with the calibration: two
commits with nearly the same tests took 858.7 s of pytest where the loop took 0.21 s and
1,844.9 s where it took 0.41 to 0.48 s (ratios 2.15 and about 2.1). The script prints the
pytest time scaled to a machine whose loop takes ``--reference-loop-s`` (default 0.21 s), so
that runs on machines of different speeds compare; the loop itself can move by tens of percent
within one run on a shared machine, so the scaled figure is a guide, not a measurement.

    python3 benchmarks/suite_time.py [--json FILE] [-- make test]

Run it on an otherwise idle machine: whatever else runs is counted in the CPU seconds and
slows the suite.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

LOOP = "import time; t = time.perf_counter()\nfor _ in range(10_000_000): pass\n" \
       "print(time.perf_counter() - t)"
# pytest's last line: "... 1340 passed, 2317 warnings, 13 subtests passed in 1841.42s (0:30:41)"
SUMMARY = re.compile(r"^=*\s*(?P<counts>.*?) in (?P<seconds>[0-9.]+)s\b", re.MULTILINE)


def calibrate() -> float:
    """Seconds of the empty loop: the best of three fresh interpreters."""
    runs = [float(subprocess.run([sys.executable, "-c", LOOP], check=True,
                                 capture_output=True, text=True).stdout) for _ in range(3)]
    return min(runs)


def machine_cpu_s() -> float:
    """CPU seconds every process on the machine has used since boot (user, nice, system,
    interrupts; not idle or waiting for I/O)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def pytest_runs(output: str) -> list[dict[str, object]]:
    """Every pytest summary line in ``output``: its counts and its seconds."""
    return [{"counts": m["counts"].strip("= "), "seconds": float(m["seconds"])}
            for m in SUMMARY.finditer(output) if "passed" in m["counts"]
            or "failed" in m["counts"] or "error" in m["counts"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-loop-s", type=float, default=0.21)
    parser.add_argument("--json", type=Path)
    parser.add_argument("command", nargs="*", default=["make", "test"])
    args = parser.parse_args()

    before = calibrate()
    cpu0, wall0 = machine_cpu_s(), time.perf_counter()
    # The command's output passes through as it runs (a long suite shows its progress).
    process = subprocess.Popen(args.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        sys.stdout.write(line)
        lines.append(line)
    code = process.wait()
    wall, cpu = time.perf_counter() - wall0, machine_cpu_s() - cpu0
    after = calibrate()
    runs = pytest_runs("".join(lines))
    pytest_s = sum(float(r["seconds"]) for r in runs)  # type: ignore[arg-type]
    loop_s = (before + after) / 2
    result = {"command": " ".join(args.command), "exit_code": code, "wall_s": round(wall, 1),
              "machine_cpu_s": round(cpu, 1), "pytest_runs": runs, "pytest_s": pytest_s,
              "loop_s_before": round(before, 3), "loop_s_after": round(after, 3),
              "reference_loop_s": args.reference_loop_s,
              "pytest_s_at_reference": round(pytest_s * args.reference_loop_s / loop_s, 1)}
    print("\n| command | exit | wall s | machine CPU s | pytest s | loop s (before/after) "
          f"| pytest s at a {args.reference_loop_s} s loop |\n|---|---|---|---|---|---|---|\n"
          f"| `{result['command']}` | {code} | {wall:,.1f} | {cpu:,.1f} | {pytest_s:,.1f} | "
          f"{before:.3f} / {after:.3f} | {result['pytest_s_at_reference']:,.1f} |")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    sys.exit(code)


if __name__ == "__main__":
    main()
