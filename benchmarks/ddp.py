"""Data-parallel training throughput: one trial at 1 and 2 workers (more with --workers on a
machine with the cores), run by searchsvc (``resources.workers``) and, side by side in the same
run, the same ``TorchTrainer`` run directly by Ray Train.

The training function (below) trains an MLP on generated data (no download) with DDP over gloo
on CPUs, each worker on its shard (``prepare_data_loader``). Throughput is samples/s of the
whole trial: the samples of one epoch over all workers, divided by the time between rank 0's
consecutive reports, so it includes everything each step costs: the gradient all-reduce, Ray
Train's report and, under searchsvc, the forwarding to Tune, telemetry and the store. The
first epoch (start-up, first-call caches) is left out. Each setting runs ``--repeats`` times;
medians are reported.

- scaling efficiency = throughput at N workers / (N x throughput at 1 worker), per method;
- searchsvc's overhead = 1 - searchsvc's throughput / Ray Train's, at each worker count
  (target: within 10%).

    .venv/bin/python benchmarks/ddp.py [--workers 1,2] [--repeats 3] [--epochs 6] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SAMPLES, FEATURES, HIDDEN, BATCH = 16384, 256, 512, 128


def train_func(config: dict[str, Any]) -> None:
    """One data-parallel training run: ``epochs`` epochs, a report after each with the wall
    time of rank 0 (the same function under searchsvc and under Ray Train alone)."""
    import ray.train
    import ray.train.torch
    import torch
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, FEATURES, generator=generator)
    y = (x[:, :8].sum(1) > 0).long()
    model = ray.train.torch.prepare_model(nn.Sequential(
        nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
        nn.Linear(HIDDEN, 2)))
    loader = ray.train.torch.prepare_data_loader(
        DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True))
    optimizer = torch.optim.SGD(model.parameters(), lr=config.get("lr", 0.05))
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(int(config.get("epochs", 6))):
        if ray.train.get_context().get_world_size() > 1:
            loader.sampler.set_epoch(epoch)
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += float(loss)
        wall = time.time()
        ray.train.report({"loss": total, "epoch": epoch, "wall": wall})
        if ray.train.get_context().get_world_rank() == 0:
            with open(config["log"], "a") as log:  # rank 0's report times, for both methods
                log.write(f"{wall}\n")


def _throughput(walls: list[float]) -> float:
    """Samples/s from rank 0's report times, the first epoch left out."""
    gaps = [b - a for a, b in itertools.pairwise(walls)]
    gaps = gaps[1:] or gaps
    return SAMPLES / statistics.median(gaps)


def run_ray_train(workers: int, epochs: int, folder: Path) -> float:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    log = folder / "walls.txt"
    TorchTrainer(
        train_func, train_loop_config={"epochs": epochs, "log": str(log)},
        scaling_config=ScalingConfig(num_workers=workers, resources_per_worker={"CPU": 1}),
        run_config=RunConfig(name="direct", storage_path=str(folder))).fit()
    return _throughput(_walls(log))


def _walls(log: Path) -> list[float]:
    return sorted(float(line) for line in log.read_text().split())


def run_searchsvc(workers: int, epochs: int, folder: Path) -> float:
    from searchsvc.driver import RunOptions, create_study, run_study
    from searchsvc.searchers import create_searcher
    from searchsvc.store import SqlStore
    from searchsvc.usecases import validate_text

    (folder / "ddp_bench.py").write_text(Path(__file__).read_text())
    text = textwrap.dedent(f"""
        study: ddp-bench
        objective: ddp_bench:train_func
        metric: loss
        mode: min
        searcher: grid
        budget: {{trials: 1, max_steps: {epochs}}}
        noise: off
        resources: {{cpu: 1, workers: {workers}}}
        parameters:
          epochs: {{role: fixed, value: {epochs}}}
          log: {{role: fixed, value: "{folder / 'walls.txt'}"}}
        """)
    spec = validate_text(text, file=str(folder / "ddp.yaml"))
    store = SqlStore(f"sqlite:///{folder / 'db.sqlite'}")
    options = RunOptions(live_progress=False, results_root=folder / "results")
    searcher = create_searcher(spec)
    create_study(spec, store, options, searcher=searcher)
    run_study(spec.name, store, options, searcher=searcher)
    [trial] = store.get_trials(spec.name)
    assert trial.state == "completed", trial.error
    return _throughput(_walls(folder / "walls.txt"))


def one(method: str, workers: int, epochs: int) -> float:
    """One run of ``method`` in this process (a fresh Ray with ``workers`` CPUs)."""
    import ray

    ray.init(address="local", num_cpus=workers, include_dashboard=False,
             logging_level="ERROR", log_to_driver=False)
    with tempfile.TemporaryDirectory() as tmp:
        run = run_searchsvc if method == "searchsvc" else run_ray_train
        return run(workers, epochs, Path(tmp))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--one", nargs=2, metavar=("METHOD", "WORKERS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), args.epochs)))
        return
    started = time.monotonic()
    counts = [int(w) for w in args.workers.split(",")]
    found: dict[str, dict[int, list[float]]] = {"ray_train": {}, "searchsvc": {}}
    for repeat in range(args.repeats):
        for workers in counts:
            for method in found:  # side by side, alternating
                out = subprocess.run(
                    [sys.executable, __file__, "--one", method, str(workers),
                     "--epochs", str(args.epochs)], capture_output=True, text=True,
                    env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
                value = json.loads(out.stdout.strip().splitlines()[-1])
                found[method].setdefault(workers, []).append(value)
                print(f"repeat {repeat}: {method} {workers} worker(s): {value:,.0f} samples/s",
                      flush=True)
    print(table(found, counts))
    print(f"({time.monotonic() - started:.0f} s)")
    if args.json:
        args.json.write_text(json.dumps({"samples_per_s": found, "epochs": args.epochs,
                                         "samples": SAMPLES}, indent=1))


def table(found: dict[str, dict[int, list[float]]], counts: list[int]) -> str:
    rows = ["| workers | Ray Train alone (samples/s) | searchsvc (samples/s) | searchsvc's "
            "overhead | scaling efficiency (Ray Train / searchsvc) |", "|---|---|---|---|---|"]
    base = {m: statistics.median(found[m][counts[0]]) * 1.0 for m in found}
    for workers in counts:
        direct = statistics.median(found["ray_train"][workers])
        ours = statistics.median(found["searchsvc"][workers])
        scale = "/".join(f"{statistics.median(found[m][workers]) / (workers * base[m]):.2f}"
                         for m in ("ray_train", "searchsvc"))
        rows.append(f"| {workers} | {direct:,.0f} | {ours:,.0f} | {1 - ours / direct:+.1%} | "
                    f"{scale} |")
    return "\n".join(rows)


if __name__ == "__main__":
    main()
