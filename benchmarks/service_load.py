"""Service load: many dashboard-like clients reading the REST API while a study runs.

Set-up: a fresh store (SQLite in a temporary folder, or ``--storage URL``) holding a finished
1,000-trial study (10 steps each, written through the Store API as the runner writes them) that
belongs to one user, and a token for that user; then a real ``searchsvc serve --num-cpus 2`` on
a free port of 127.0.0.1, and a study submitted through the API that runs for the whole
measurement (quasi-random search over 9,000 quick trials of objectives.synthetic:playbook, two
at a time: its driver and Ray keep both cores busy and write every result into the same store).

Load model (bounded, closed loop with think time): ``--clients`` clients, each one an HTTP
keep-alive connection that repeatedly picks one of the calls below at random (equal weights),
waits for the whole response, then thinks for a time drawn uniformly from [0.5, 1.5] x
``--think`` seconds, like a dashboard refreshing about once a second. The clients start at
random moments within the first think time. The clients run in ``--load-processes`` separate
processes (asyncio + httpx), so the load generator's GIL never delays the server; latency is
taken on the client with time.perf_counter from sending the request to the last byte.

    GET /studies                      the user's studies
    GET /studies/{big}                the 1,000-trial study
    GET /studies/{big}/trials         its 1,000 trials (no curves)
    GET /studies/{live}               the running study

Any response other than 200, and any failed request, is an error. Targets (PASS/FAIL): the p99
latency of these list/get calls < 100 ms, and no errors. Also printed: each call's latencies,
the achieved request rate, the server's CPU, how busy the machine was, and how late the load
generator's own event loop ran (if it waits for a CPU, its latencies include that wait).
``--no-running-study`` measures the same calls with nothing running (diagnosis only).

    .venv/bin/python benchmarks/service_load.py [--clients 50] [--duration 30] [--think 1.0]
        [--trials 1000] [--steps 10] [--storage URL] [--py-spy FILE.svg] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_P99_MS = 100.0
Sample = tuple[str, float, float, int | str]  # call, sent at, seconds, status or exception
ENDPOINTS = ("GET /studies", "GET /studies/{big}", "GET /studies/{big}/trials",
             "GET /studies/{live}")

BIG_SPEC = """study: {name}
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: random
seed: 0
budget: {{trials: {trials}, max_concurrent: 2, max_steps: {steps}}}
parameters:
  depth: {{role: scientific, values: [1, 2, 3, 4]}}
  learning_rate: {{role: nuisance, low: 1.0e-5, high: 1.0, scale: log}}
  weight_decay: {{role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}}
  dropout: {{role: nuisance, low: 0.0, high: 0.5}}
"""

LIVE_SPEC = """study: {name}
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: quasi_random
budget: {{trials: {trials}, max_concurrent: 2, max_steps: 20}}
parameters:
  depth: {{role: scientific, values: [1, 2]}}
  learning_rate: {{role: nuisance, low: 1.0e-4, high: 1.0e-1, scale: log}}
  weight_decay: {{role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}}
"""


# --- the load generator (one process; --worker) ----------------------------------------------

async def _client(http: Any, paths: dict[str, str], until: float, think: float, seed: int,
                  samples: list[Sample]) -> None:
    rng = random.Random(seed)
    await asyncio.sleep(rng.uniform(0, think))
    while time.perf_counter() < until:
        endpoint = rng.choice(ENDPOINTS)
        sent = time.perf_counter()
        try:
            response = await http.get(paths[endpoint])
            status = response.status_code
        except Exception as exc:  # a failed request is an error, recorded by its exception
            status = type(exc).__name__
        done = time.perf_counter()
        samples.append((endpoint, sent, done - sent, status))
        await asyncio.sleep(think * rng.uniform(0.5, 1.5))


async def _lag(until: float, lags: list[float]) -> None:
    """How late this process's event loop wakes up from a 10 ms sleep: when the load generator
    itself waits for a CPU, the latencies it measures include that wait."""
    while time.perf_counter() < until:
        asleep = time.perf_counter()
        await asyncio.sleep(0.01)
        lags.append(time.perf_counter() - asleep - 0.01)


async def _load(url: str, token: str, paths: dict[str, str], clients: int, start: float,
                duration: float, think: float, seed: int) -> dict[str, Any]:
    import httpx

    samples: list[Sample] = []
    lags: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                 limits=limits, timeout=30.0) as http:
        for endpoint in ENDPOINTS:  # warm-up, not measured: connections, first-call imports
            await http.get(paths[endpoint])
        await asyncio.sleep(max(0.0, start - time.time()))
        until = time.perf_counter() + duration
        cpu = time.process_time()
        await asyncio.gather(_lag(until, lags), *(
            _client(http, paths, until, think, seed * 100_003 + i, samples)
            for i in range(clients)))
    return {"samples": samples, "lags": lags, "cpu_s": time.process_time() - cpu}


def worker(args: argparse.Namespace) -> None:
    """Run ``--clients`` clients in this process and print what they measured as JSON."""
    paths = json.loads(args.paths)
    result = asyncio.run(_load(args.url, args.token, paths, args.clients, args.start,
                               args.duration, args.think, args.seed))
    print("RESULT " + json.dumps(result), flush=True)


# --- set-up ------------------------------------------------------------------------------------

def populate(store: Any, name: str, owner: str, trials: int, steps: int) -> float:
    """A completed study of ``trials`` trials with ``steps`` measurements each, written through
    the Store API as the runner writes it (start, measurements, finish). Returns seconds."""
    from searchsvc.core import TrialState
    from searchsvc.searchers import create_searcher
    from searchsvc.spec import parse_spec

    text = BIG_SPEC.format(name=name, trials=trials, steps=steps)
    spec = parse_spec(text, file=f"{name}.yaml")
    searcher = create_searcher(spec)
    started = time.perf_counter()
    study = store.create_study(name=name, metric=spec.metric, mode=spec.mode,
                               searcher=spec.searcher, spec_text=text, spec_file=f"/{name}.yaml",
                               total_trials=trials, results_dir=None, provenance={"seed": 0},
                               owner=owner)
    store.update_study(name, state="running", started_at=time.time())
    for first in range(0, trials, 100):
        with store.transaction():
            for number in range(first, min(trials, first + 100)):
                proposal = searcher.propose(number)
                config = dict(proposal.config)
                trial = store.start_trial(study.id, number=number, config=config,
                                          arm=proposal.arm.values, seed=proposal.seed,
                                          node="127.0.0.1 node 0f3e9c")
                depth, lr = int(config["depth"]), float(config["learning_rate"])
                best_lr = 10 ** (-1.0 - 0.5 * depth)
                final = 0.3 - 0.03 * depth + 0.08 * math.log10(lr / best_lr) ** 2
                rng = random.Random(number)
                items = []
                for step in range(1, steps + 1):
                    val = 2.3 - (2.3 - final) * (1 - math.exp(-4 * step / steps))
                    val += rng.gauss(0, 0.003)
                    if lr > 30 * best_lr and step > steps // 3:
                        val = float("nan")
                    items.append((step, val, {"train_loss": val * 0.9, "val_loss": val,
                                              "val_error": val / 2.3}))
                store.record_measurements(trial.id, 1, spec.mode, items)
                bad = any(not math.isfinite(v) for _, v, _ in items)
                store.finish_trial(trial.id, TrialState.INFEASIBLE if bad else TrialState.COMPLETED)
    store.update_study(name, state="completed", finished_at=time.time())
    return time.perf_counter() - started


def machine_times() -> tuple[int, int]:
    """(all, idle) clock ticks of every CPU of the machine so far."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(ticks), ticks[3] + ticks[4]  # idle + iowait


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- statistics --------------------------------------------------------------------------------

def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarise(samples: list[Sample], window: float) -> list[dict]:
    rows = []
    for endpoint in (*ENDPOINTS, "all list/get calls"):
        mine = [s for s in samples if endpoint.startswith("all") or s[0] == endpoint]
        ok = sorted(s[2] * 1000 for s in mine if s[3] == 200)
        every = sorted(s[2] * 1000 for s in mine)
        rows.append({
            "endpoint": endpoint, "requests": len(mine), "errors": len(mine) - len(ok),
            "rate_per_s": len(mine) / window,
            # Percentiles over every request, failed ones included: an error is no faster.
            "p50_ms": percentile(every, 50), "p95_ms": percentile(every, 95),
            "p99_ms": percentile(every, 99), "max_ms": every[-1] if every else math.nan})
    return rows


# --- main --------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=30.0, help="measured seconds")
    parser.add_argument("--think", type=float, default=1.0,
                        help="mean think time of a client between calls, seconds (0: none)")
    parser.add_argument("--trials", type=int, default=1000, help="trials of the big study")
    parser.add_argument("--steps", type=int, default=10, help="measurements per trial")
    parser.add_argument("--storage", default=None,
                        help="store URL (default: a fresh SQLite file in a temporary folder); "
                        "with postgresql+psycopg://USER@HOST:PORT/NAME a fresh database "
                        "NAME_load_XXXXXX is made on that server for the run, then dropped")
    parser.add_argument("--no-running-study", action="store_true",
                        help="diagnosis: {live} is a finished 20-trial study, nothing runs")
    parser.add_argument("--load-processes", type=int, default=1,
                        help="processes the clients are spread over")
    parser.add_argument("--py-spy", type=Path, default=None,
                        help="record the server with py-spy (pip install py-spy) during the "
                        "load into this file (a flame graph if it ends with .svg, else "
                        "collapsed stacks)")
    parser.add_argument("--py-spy-idle", action="store_true",
                        help="with --py-spy, sample waiting threads too (wall time, not CPU)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--paths", help=argparse.SUPPRESS)
    parser.add_argument("--start", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    from sqlalchemy.engine import make_url

    from searchsvc.testing.postgres import fresh_database
    from searchsvc.testing.served import running_service

    tmp = Path(tempfile.mkdtemp(prefix="service_load_"))
    suffix = secrets.token_hex(3)
    storage = args.storage or f"sqlite:///{tmp / 'store.sqlite'}"
    big, live, user = f"big-{suffix}", f"live-{suffix}", f"load-{suffix}"
    spy: subprocess.Popen | None = None
    with contextlib.ExitStack() as cleanup:  # undone in reverse: server, database, folder
        cleanup.callback(shutil.rmtree, tmp, ignore_errors=True)
        postgres = storage.startswith("postgresql")
        if postgres:  # its own database: the server would also run
            database = make_url(storage).database or "searchsvc"  # others' queued studies
            storage = cleanup.enter_context(fresh_database(storage, f"{database}_load_{suffix}"))
        # Stopping it kills the server and every study driver it started.
        # The service's default driver niceness, as deployed (the suite's harness runs at 0).
        built: list[float] = []

        def prepare(service: Any) -> None:
            # Written before the service starts: while being written a study is "running" with
            # no driver, and a started service would drive it beside the measured one.
            built.append(populate(service.store, big, user, args.trials, args.steps))
            if args.no_running_study:  # diagnosis only: the same calls, nothing running
                populate(service.store, live, user, 20, args.steps)

        server = cleanup.enter_context(running_service(tmp, storage, user=user,
                                                       before_start=prepare,
                                                       args=("--num-cpus", "2")))
        store, token = server.store, server.token
        print(f"store: {store.engine.url.render_as_string(hide_password=True)}; {big}: "
              f"{args.trials} trials x {args.steps} steps written in {built[0]:.1f}s", flush=True)
        try:
            assert server.process is not None
            if not args.no_running_study:
                server.call("POST", "/studies", LIVE_SPEC.format(name=live, trials=9_000))
            deadline = time.time() + 180
            while not args.no_running_study:  # measure once the study's trials are being written
                study = server.call("GET", f"/studies/{live}")
                if study["state"] == "running" and study["trial_counts"].get("completed", 0) >= 2:
                    break
                if time.time() > deadline:
                    raise RuntimeError(f"{live} did not start running: {study}")
                time.sleep(0.5)
            print(f"server pid {server.process.pid} on {server.url}; {live} "
                  f"{'completed (--no-running-study)' if args.no_running_study else 'running'}",
                  flush=True)

            paths = {"GET /studies": "/studies", "GET /studies/{big}": f"/studies/{big}",
                     "GET /studies/{big}/trials": f"/studies/{big}/trials",
                     "GET /studies/{live}": f"/studies/{live}"}
            start = time.time() + 3.0  # every load process has connected and warmed up then
            shares = [args.clients // args.load_processes
                      + (i < args.clients % args.load_processes)
                      for i in range(args.load_processes)]
            loaders = [subprocess.Popen(
                [sys.executable, __file__, "--worker", "--url", server.url, "--token", token,
                 "--paths", json.dumps(paths), "--clients", str(n), "--start", str(start),
                 "--duration", str(args.duration), "--think", str(args.think), "--seed", str(i)],
                stdout=subprocess.PIPE, text=True) for i, n in enumerate(shares) if n]
            time.sleep(max(0.0, start - time.time()))
            live_before = server.call("GET", f"/studies/{live}")["trial_counts"].get("completed", 0)
            cpu_before, wall_before = cpu_seconds(server.process.pid), time.perf_counter()
            machine_before = machine_times()
            if args.py_spy:
                spy = subprocess.Popen(
                    [str(Path(sys.executable).with_name("py-spy")), "record",
                     "-o", str(args.py_spy),
                     "--pid", str(server.process.pid), "-d", str(int(args.duration)), "-r", "100",
                     "-f", "flamegraph" if args.py_spy.suffix == ".svg" else "raw",
                     "--nonblocking", *(["--idle"] if args.py_spy_idle else [])],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            samples: list[Sample] = []
            lags: list[float] = []
            loader_cpu = 0.0
            for loader in loaders:
                out, _ = loader.communicate(timeout=args.duration + 120)
                line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
                if loader.returncode != 0 or line is None:
                    raise RuntimeError(f"a load process failed (exit {loader.returncode})")
                result = json.loads(line[len("RESULT "):])
                samples += [tuple(s) for s in result["samples"]]
                lags += result["lags"]
                loader_cpu += result["cpu_s"]
            window = time.perf_counter() - wall_before
            server_cpu = (cpu_seconds(server.process.pid) - cpu_before) / window
            machine_after = machine_times()
            machine_busy = 1 - ((machine_after[1] - machine_before[1])
                                / max(1, machine_after[0] - machine_before[0]))
            live_after = server.call("GET", f"/studies/{live}")
            if spy is not None:
                try:
                    spy.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    spy.send_signal(signal.SIGINT)  # py-spy writes what it has on SIGINT
                    spy.wait(timeout=30)
            with contextlib.suppress(urllib.error.URLError, OSError):
                server.call("POST", f"/studies/{live}/cancel")
        finally:
            if spy is not None and spy.poll() is None:
                spy.kill()

    rows = summarise(samples, window)
    overall = rows[-1]
    live_done = live_after["trial_counts"].get("completed", 0) - live_before
    errors = [s for s in samples if s[3] != 200]
    print(f"\nload model: {args.clients} clients in {len(loaders)} process(es), closed loop, "
          f"think time uniform in [{0.5 * args.think:.2f}, {1.5 * args.think:.2f}] s after each "
          f"response, calls chosen at random with equal weights; {args.duration:.0f} s measured")
    print(f"achieved: {overall['requests']} requests in {window:.1f} s = "
          f"{overall['rate_per_s']:.1f} requests/s; server process CPU {100 * server_cpu:.0f}% "
          f"of one core; the running study completed {live_done} trials meanwhile "
          f"({live_after['state']})")
    lags.sort()
    print(f"machine: {100 * machine_busy:.0f}% of {os.cpu_count()} CPUs busy; load generator "
          f"CPU {100 * loader_cpu / window:.0f}% of one core, its event loop late by "
          f"p50 {1000 * percentile(lags, 50):.1f} / p99 {1000 * percentile(lags, 99):.1f} ms "
          "(a measure of how much of the latency is the generator waiting for a CPU)")
    print("\n| call | requests | errors | req/s | p50 ms | p95 ms | p99 ms | max ms |\n"
          "|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['endpoint']} | {r['requests']} | {r['errors']} | {r['rate_per_s']:.1f} | "
              f"{r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.1f} |")
    worst = max(rows[:-1], key=lambda r: r["p99_ms"])
    verdicts = [
        ("p99 of list/get calls", f"{overall['p99_ms']:.1f} ms", f"< {TARGET_P99_MS:.0f} ms",
         overall["p99_ms"] < TARGET_P99_MS),
        ("errors (non-200 or failed requests)", str(len(errors)), "0", not errors),
    ]
    print("\n| measure | value | target | verdict |\n|---|---|---|---|")
    for name, value, target, ok in verdicts:
        print(f"| {name} | {value} | {target} | {'PASS' if ok else 'FAIL'} |")
    print(f"| p99 of the slowest call alone ({worst['endpoint']}) | {worst['p99_ms']:.1f} ms | "
          "| |")
    if errors:
        statuses: dict[str, int] = {}
        for s in errors:
            key = f"{s[0]} -> {s[3]}"
            statuses[key] = statuses.get(key, 0) + 1
        print("errors: " + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items())))
    for name, _, _, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}: {name}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "clients": args.clients, "duration_s": args.duration, "think_s": args.think,
            "trials": args.trials, "steps": args.steps, "load_processes": len(loaders),
            "storage": "postgresql" if postgres else "sqlite",
            "window_s": window, "server_cpu_share": server_cpu, "machine_busy": machine_busy,
            "loader_cpu_share": loader_cpu / window,
            "loader_lag_p50_ms": 1000 * percentile(lags, 50),
            "loader_lag_p99_ms": 1000 * percentile(lags, 99),
            "live_trials_completed": live_done, "rows": rows,
            "pass": all(ok for *_, ok in verdicts)}, indent=1))


if __name__ == "__main__":
    main()
