"""searchsvc attached to a real multi-node Ray cluster on loopback with `--address`: trials run
on the worker nodes (recorded per trial), fractional GPUs pack as declared, token
authentication stays on, a worker node lost mid-study costs no trial, and a data-parallel
trial's workers span both nodes, its straggler rank is named and ASHA stops it with every
worker."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from searchsvc.core import EventKind, TrialState
from searchsvc.reporting import write_report
from searchsvc.store import SqlStore
from searchsvc.testing.loopback import LoopbackCluster

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]

PROBE = '''
import os
import time

import ray
from ray import tune


def train(config):
    """Reports where it runs and which GPUs Ray gave it, and when it held them."""
    ctx = ray.get_runtime_context()
    node = ctx.get_node_id()
    on_head = any(n["NodeID"] == node and "node:__internal_head__" in n["Resources"]
                  for n in ray.nodes())
    barrier = config.get("barrier")
    if barrier:  # wait (a while at most) until this many trials have started, anywhere
        folder, count = barrier.rsplit(":", 1)
        open(os.path.join(folder, node + str(os.getpid())), "w").close()
        deadline = time.time() + 120
        while len(os.listdir(folder)) < int(count) and time.time() < deadline:
            time.sleep(0.1)
    start = time.time()
    for step in range(1, config.get("steps", 3) + 1):
        time.sleep(config.get("sleep", 0.5))
        tune.report({"loss": config["x"] / step, "node": node, "on_head": int(on_head),
                     "gpus": ",".join(str(g) for g in ray.get_gpu_ids()),
                     "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", ""),
                     "start": start, "now": time.time()})
'''


# A data-parallel objective as Ray Train's docs write one (ray.train.report, get_context),
# with a planted straggler: rank 1 works 0.3 s longer each step after the ranks' all-reduce
# (a slow evaluation on its node), so rank 0 waits for it at the report. Trial 1 is the
# worse configuration at every step.
DDP_PROBE = '''
import os
import time

import ray
import ray.train
import torch
import torch.distributed as dist

from searchsvc import sdk


def train(config):
    rank = ray.train.get_context().get_world_rank()
    worse = 1 + 10 * sdk.trial_context().number
    for step in range(1, 4):
        total = torch.ones(1)
        dist.all_reduce(total)
        time.sleep(0.02 + (0.3 if rank == 1 else 0.0))
        ray.train.report({"loss": worse / step, "world": total.item(),
                          "node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()})
'''


def study_file(folder: Path, name: str, body: str) -> Path:
    (folder / "probe.py").write_text(textwrap.dedent(PROBE))
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        study: {name}
        objective: probe:train
        metric: loss
        mode: min
        searcher: random
        seed: 0
        """) + textwrap.dedent(body))
    return path


def searchsvc(cluster: LoopbackCluster, *args: str, token: bool = True,
              timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(cluster.env, PYTHONPATH=str(ROOT))
    if not token:
        env = {k: v for k, v in env.items() if not k.startswith("RAY_AUTH")}
    # Preflight is tested on its own (tests/driver/test_preflight_on_ray.py).
    return subprocess.run([sys.executable, "-m", "searchsvc.cli", *args, "--no-preflight"],
                          env=env,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackCluster]:
    """A head that runs nothing and two worker nodes with 2 CPUs and 1 logical GPU each."""
    c = LoopbackCluster(tmp_path_factory.mktemp("ray-home")).start()
    try:
        c.add_worker(cpus=2, gpus=1)
        c.add_worker(cpus=2, gpus=1)
        yield c
    finally:
        c.stop()


def test_trials_run_on_the_worker_nodes_of_a_cluster_attached_with_address(
        cluster: LoopbackCluster, tmp_path: Path) -> None:
    # The first two trials wait for each other, so two run at once whatever the load: with 2
    # CPUs a trial, one on each worker node.
    started = tmp_path / "started"
    started.mkdir()
    path = study_file(tmp_path, "attached", f"""\
        budget: {{trials: 4, max_concurrent: 2, max_steps: 3}}
        resources: {{cpu: 2}}
        parameters:
          x: {{low: 0.1, high: 1.0}}
          barrier: {{value: "{started}:2"}}
        """)
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    done = searchsvc(cluster, "run", str(path), "--address", cluster.address, "--storage", db)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = SqlStore(db).get_trials("attached", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 4
    nodes = set()
    for t in trials:
        reported = t.measurements[-1].metrics
        assert reported["on_head"] == 0
        assert t.node and t.node.endswith(f"node {reported['node']}")  # recorded per trial
        nodes.add(reported["node"])
    assert len(nodes) == 2  # 2 CPUs a trial: one trial per worker node at a time


def test_a_cluster_with_token_authentication_refuses_a_driver_without_the_token(
        cluster: LoopbackCluster, tmp_path: Path) -> None:
    path = study_file(tmp_path, "no_token", """\
        budget: {trials: 1, max_steps: 1}
        parameters:
          x: {low: 0.1, high: 1.0}
        """)
    done = searchsvc(cluster, "run", str(path), "--address", cluster.address, "--storage",
                     f"sqlite:///{tmp_path / 'db.sqlite'}", token=False)
    assert done.returncode == 6, done.stdout + done.stderr
    assert f"could not start Ray at {cluster.address}" in done.stderr
    assert "the cluster refused this process's token" in done.stderr
    assert "RAY_AUTH_TOKEN" in done.stderr
    # Given up at the first refusal (a request that timed out on a busy machine is asked
    # again), not refused 20 times, a second apart, as ray.init would.
    refusals = [line for line in done.stderr.splitlines()
                if "Failed to get cluster ID" in line and "Unauthenticated" in line]
    assert len(refusals) == 1, done.stderr


def test_half_gpu_trials_pack_two_to_a_gpu_and_never_more(cluster: LoopbackCluster,
                                                          tmp_path: Path) -> None:
    # The 4 trials wait for each other before their steps, so all 4 hold their half GPUs at
    # once whatever the load (without it, on a busy machine a trial could end before the
    # last one was placed, and that one take its GPU: three on one GPU, one after another).
    # The CPUs would take 8 such trials: the GPUs alone hold them to 4.
    started = tmp_path / "started"
    started.mkdir()
    path = study_file(tmp_path, "packed", f"""\
        budget: {{trials: 4, max_concurrent: 4, max_steps: 3}}
        resources: {{cpu: 0.5, gpu: 0.5}}
        parameters:
          x: {{low: 0.1, high: 1.0}}
          sleep: {{value: 0.5}}
          barrier: {{value: "{started}:4"}}
        """)
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    done = searchsvc(cluster, "run", str(path), "--address", cluster.address, "--storage", db)
    assert done.returncode == 0, done.stdout + done.stderr
    trials = SqlStore(db).get_trials("packed", measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 4
    spans = []
    for t in trials:
        last = t.measurements[-1].metrics
        gpu = last["gpus"]
        assert gpu.isdigit(), f"trial {t.number} got GPUs {gpu!r}; one expected"
        assert last["cuda_visible_devices"] == gpu  # what CUDA code in the trial sees
        spans.append(((last["node"], gpu), last["start"], last["now"]))
    # 2 logical GPUs x 2 halves: all 4 trials shared 2 GPUs, two at a time on each.
    assert sorted(Counter(key for key, _, _ in spans).values()) == [2, 2]
    for key, start, end in spans:
        together = [s for k, s, e in spans if k == key and s < end and start < e]
        assert len(together) <= 2


def _train_workers(cluster: LoopbackCluster) -> list[str]:
    """The Ray Train worker processes still alive on the cluster's nodes."""
    alive = []
    for node in cluster.nodes:
        try:
            children = psutil.Process(node.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for process in children:
            with contextlib.suppress(psutil.Error):
                if "RayTrainWorker" in " ".join(process.cmdline()):
                    alive.append(f"{process.pid}: {' '.join(process.cmdline())[:80]}")
    return alive


def test_a_data_parallel_trial_spans_both_nodes_names_its_straggler_and_stops_whole(
        cluster: LoopbackCluster, tmp_path: Path) -> None:
    (tmp_path / "ddp_probe.py").write_text(textwrap.dedent(DDP_PROBE))
    path = tmp_path / "ddp.yaml"
    # A worker of 2 CPUs fills a node: the trial's two workers must run on both.
    path.write_text(textwrap.dedent("""\
        study: ddp_nodes
        objective: ddp_probe:train
        metric: loss
        mode: min
        searcher: asha
        searcher_options: {grace_period: 1, reduction_factor: 2}
        budget: {trials: 2, max_steps: 3}
        resources: {cpu: 2, workers: 2}
        seed: 0
        parameters:
          x: {role: nuisance, low: 0.1, high: 1.0}
        """))
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    done = searchsvc(cluster, "run", str(path), "--address", cluster.address, "--storage", db)
    assert done.returncode == 0, done.stdout + done.stderr
    store = SqlStore(db)
    first, second = store.get_trials("ddp_nodes", measurements=True)
    # Trial 1 is worse than trial 0 at ASHA's first rung: stopped there, all its workers too.
    assert first.state == TrialState.COMPLETED and [m.step for m in first.measurements] == [1, 2, 3]
    assert second.state == TrialState.PRUNED and [m.step for m in second.measurements] == [1]
    [stop] = store.get_events("ddp_nodes", kind=EventKind.STOPPED_EARLY)
    assert stop.number == 1
    deadline = time.monotonic() + 60  # an aborted run's workers take a moment to exit
    while (left := _train_workers(cluster)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, left
    # Where each worker ran, recorded per worker: one on each worker node (the head has no CPU).
    for m in first.measurements:
        ranks = m.telemetry["ranks"]
        assert [r["rank"] for r in ranks] == [0, 1] and m.metrics["world"] == 2.0
        assert len({r["node"] for r in ranks}) == 2
        assert ranks[0]["node"] == m.metrics["node"]
    # The planted straggler: rank 1 works longest; rank 0 waits for it at the report.
    files = write_report(store, "ddp_nodes", tmp_path / "report")
    report = json.loads(files.files["json"].read_text())
    [straggler] = [d for d in report["telemetry"]["diagnoses"] if d["kind"] == "straggler"]
    assert straggler["ranks"]["0"] == 1 and 0 in straggler["trials"]
    assert "trial 0 rank 1" in straggler["detail"]


# Last in this file: it kills one of the module cluster's worker nodes.
def test_a_worker_node_lost_mid_study_costs_no_trial(cluster: LoopbackCluster,
                                                     tmp_path: Path) -> None:
    doomed = cluster.nodes[1]  # the first worker node (the head is the first node)
    path = study_file(tmp_path, "node_loss", """\
        budget: {trials: 4, max_concurrent: 2, max_steps: 4, max_failures: 2}
        resources: {cpu: 2}
        parameters:
          x: {low: 0.1, high: 1.0}
          steps: {value: 4}
          sleep: {value: 1.5}
        """)
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    env = dict(cluster.env, PYTHONPATH=str(ROOT))
    driver = subprocess.Popen(
        [sys.executable, "-m", "searchsvc.cli", "run", str(path), "--address",
         cluster.address, "--storage", db, "--no-preflight"], env=env, cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    store = SqlStore(db)
    # Kill a node while two trials run, one on it (the head runs none). Each trial takes 6 s
    # or more, so the moment cannot pass between two looks even on a busy machine.
    deadline, running = time.time() + 240, []
    while time.time() < deadline and driver.poll() is None:
        try:
            running = [t for t in store.get_trials("node_loss") if t.state == "running"]
        except Exception:  # the study is not created yet
            running = []
        if len(running) == 2 and all(t.node for t in running):
            break
        time.sleep(0.2)
    assert len(running) == 2, "the study never ran two trials at once"
    cluster.kill(doomed)
    output, _ = driver.communicate(timeout=300)
    assert driver.returncode == 0, output
    trials = store.get_trials("node_loss", measurements=True)
    assert sorted(t.number for t in trials) == list(range(4))
    assert [t.state for t in trials] == [TrialState.COMPLETED] * 4
    assert all(t.attempts == 1 for t in trials)  # retried inside the run, never run twice
    assert all([m.step for m in t.measurements] == [1, 2, 3, 4] for t in trials)
    retried = store.get_events("node_loss", kind=EventKind.RETRIED)
    assert retried, "a trial on the lost node should have been retried"
    survivors = {t.measurements[-1].metrics["node"] for t in trials
                 if t.number in {e.number for e in retried}}
    assert len(survivors) == 1  # they finished on the node that was left
    for t in trials:  # the store names the node each trial finished on, retried ones included
        assert t.node.endswith(f"node {t.measurements[-1].metrics['node']}"), t
