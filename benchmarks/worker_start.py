"""What a trial worker's runtime environment costs to start: a Ray actor started with the runtime
environment Ray Tune gives every trainable (``{"env_vars": {"PL_DISABLE_FORK": "1"}}``) against
the same actor without one, on an embedded node started as a study's driver starts it (whose
workers inherit ``PL_DISABLE_FORK=1``). Ray starts a worker with a runtime environment through a
Python process that sets it up and then starts the worker's own interpreter.

Measured per actor, alternating the two kinds over ``--rounds`` rounds: seconds from creating the
actor to its first answer, and the CPU seconds its process had used by then (its
``/proc/PID/stat``, which keeps counting across the set-up process's exec). Medians, and the
difference of the medians.

    .venv/bin/python benchmarks/worker_start.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

TUNES_RUNTIME_ENV = {"env_vars": {"PL_DISABLE_FORK": "1"}}


def _cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()  # noqa: SIM115
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()

    import ray

    from searchsvc.driver.session import start_embedded_ray

    start_embedded_ray(num_cpus=2, log_to_driver=False)

    @ray.remote(num_cpus=0)
    class Probe:
        def ready(self) -> tuple[int, str | None]:
            return os.getpid(), os.environ.get("PL_DISABLE_FORK")

    measured: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
    for _ in range(args.rounds):
        for kind, options in (("with", {"runtime_env": TUNES_RUNTIME_ENV}), ("without", {})):
            start = time.perf_counter()
            actor = Probe.options(**options).remote()  # type: ignore[attr-defined]
            pid, fork_disabled = ray.get(actor.ready.remote())
            seconds = time.perf_counter() - start
            assert fork_disabled == "1", kind  # Tune's variable reaches the worker either way
            measured[kind].append((seconds, _cpu_seconds(pid)))
            ray.kill(actor)
            time.sleep(0.5)  # the killed worker's exit, before the next start
    ray.shutdown()
    medians = {kind: (statistics.median(s for s, _ in rows), statistics.median(c for _, c in rows))
               for kind, rows in measured.items()}
    print(f"{args.rounds} rounds, medians per actor")
    print("| runtime environment | seconds to first answer | worker CPU seconds |")
    print("|---|---|---|")
    for kind, (seconds, cpu) in medians.items():
        print(f"| {kind} | {seconds:.2f} | {cpu:.2f} |")
    saved = [medians["with"][i] - medians["without"][i] for i in (0, 1)]
    print(f"| difference | {saved[0]:.2f} | {saved[1]:.2f} |")


if __name__ == "__main__":
    main()
