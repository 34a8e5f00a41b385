"""Data-parallel trials (``resources.workers``) on a real Ray (CPU, gloo): a training function
written as Ray Train's documentation writes one runs unchanged on 2 workers, each on half the
data, with every rank's telemetry, rank 0's metrics and its checkpoints; an sdk objective gets
the trial's seed and budget on every rank, and a worker that dies mid-trial is recovered from
the last checkpoint with each step stored once; nothing is left running after the study."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import textwrap
import threading
import time
from pathlib import Path

import pytest

from searchsvc import usecases
from searchsvc.core import EventKind, TrialState
from searchsvc.driver import RunOptions, create_study, run_study
from searchsvc.reporting import write_report
from searchsvc.searchers import create_searcher
from searchsvc.store import SqlStore
from searchsvc.usecases import validate_text

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TRAIN_EXAMPLES = 1437  # the digits training split of examples/ray_train_ddp/ray_train_ddp.py


def run(tmp_path: Path, text: str, file: str, preflight: bool = False
        ) -> tuple[SqlStore, str]:
    spec = validate_text(textwrap.dedent(text), file=str(tmp_path / file))
    store = SqlStore(f"sqlite:///{tmp_path / 'db.sqlite'}")
    options = RunOptions(live_progress=False)
    if preflight:  # then the study, in the same Ray session, as `searchsvc run` does
        outcome = usecases.run(spec, store, options, preflight=True).outcome
    else:
        searcher = create_searcher(spec)
        create_study(spec, store, options, searcher=searcher)
        outcome = run_study(spec.name, store, options, searcher=searcher)
    assert outcome.study.state == "completed", outcome
    return store, spec.name


def assert_nothing_left(ray) -> None:
    """Every placement group given back: no Train worker holds resources after its trial."""
    groups = ray.util.placement_group_table().values()
    assert all(g["state"] == "REMOVED" for g in groups), [g["state"] for g in groups]


def test_a_ray_train_docs_function_runs_unchanged_on_two_workers(ray_local,
                                                                 tmp_path: Path) -> None:
    shutil.copy(ROOT / "examples" / "ray_train_ddp" / "ray_train_ddp.py", tmp_path)
    store, name = run(tmp_path, """
        study: ddp-docs
        objective: ray_train_ddp:train_func
        metric: val_error
        mode: min
        searcher: random
        budget: {trials: 1, max_steps: 2}
        checkpoints: {keep_best: 1}
        resources: {cpu: 1, workers: 2}
        parameters:
          lr: {role: nuisance, type: float, low: 0.05, high: 0.2, scale: log}
          hidden: {role: fixed, value: 16}
          epochs: {role: fixed, value: 2}
        """, "ddp.yaml", preflight=True)
    # Preflight ran the function on its 2 workers (each on its half of the data) for a few
    # steps, aborted that run, and costed each trial at 2 workers x 1 CPU: one at a time here.
    checked = store.get_study(name).provenance["preflight"]
    assert checked["ok"] and checked["steps"] >= 1, checked
    assert {c["name"]: c["ok"] for c in checked["checks"]}["metric"] is True
    assert checked["estimate"]["cpu"] == 2 and checked["estimate"]["concurrency"] == 1
    assert "each trial runs on 2 workers: 2 CPUs and 0 GPUs a trial" in checked["estimate"][
        "notes"]
    assert checked["timing"]["setup_s"] > checked["timing"]["step_s"]  # starting the workers
    trials = store.get_trials(name, measurements=True)
    assert [t.state for t in trials] == [TrialState.COMPLETED]
    for t in trials:
        assert [m.step for m in t.measurements] == [1, 2]
        for m in t.measurements:
            # Rank 0's metrics: it trained on its half of the data (DistributedSampler).
            assert m.metrics["train_samples"] == (TRAIN_EXAMPLES + 1) // 2
            # Every rank's telemetry, rank 0's first.
            ranks = m.telemetry["ranks"]
            assert len(ranks) == 2 and all(r["rss_mb"] > 10 for r in ranks)
            # Where each worker ran, recorded per worker.
            assert [r["rank"] for r in ranks] == [0, 1]
            assert all(r["node"] == ray_local.get_runtime_context().get_node_id()
                       for r in ranks)
            assert m.telemetry["rss_mb"] == ranks[0]["rss_mb"]
        assert t.checkpoints, "the checkpoint itself reached the Tune trial"
        assert t.final_metrics["val_error"] == t.measurements[-1].metrics["val_error"]
    files = write_report(store, name, tmp_path / "report")
    with files.files["csv"].open() as handle:
        rows = {int(r["number"]): r for r in csv.DictReader(handle)}
    assert {n: float(r["final_val_error"]) for n, r in rows.items()} == {
        t.number: t.final_metrics["val_error"] for t in trials}
    html = files.files["html"].read_text()  # the ranks side by side
    assert "median working time" in html
    assert "<th>rank 0</th><th>rank 1</th>" in html.replace("\n", "")
    assert_nothing_left(ray_local)


def kill_rank_1_after_step_2(store_url: str, folder: Path, study: str) -> threading.Thread:
    """Once the store holds step 2 (so Tune holds its checkpoint) and rank 1 waits at step 3,
    mark the kill and kill rank 1's process."""
    def kill() -> None:
        store = SqlStore(store_url)
        pid_file = folder / "rank1.pid"
        for _ in range(6000):  # at most 10 minutes: the test's timeout ends it sooner
            stored = _steps(store, study)
            if 2 in stored and pid_file.exists():
                (folder / "killed").write_text("killed at step 3")
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
                return
            time.sleep(0.1)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def _steps(store: SqlStore, study: str) -> set[int]:
    try:
        return {m.step for t in store.get_trials(study, measurements=True)
                for m in t.measurements}
    except Exception:  # the study is not created yet
        return set()


def test_an_sdk_objective_gets_its_trial_on_every_rank_and_survives_a_dead_worker(
        ray_local, tmp_path: Path) -> None:
    shutil.copy(HERE / "ddp_objectives.py", tmp_path / "ddp_objectives.py")
    killer = kill_rank_1_after_step_2(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path, "ddp-sdk")
    store, name = run(tmp_path, f"""
        study: ddp-sdk
        objective: ddp_objectives:train
        metric: loss
        mode: min
        searcher: grid
        budget: {{trials: 1, max_steps: 4, max_failures: 1}}
        checkpoints: {{keep_best: 4}}
        resources: {{cpu: 1, workers: 2}}
        parameters:
          folder: {{role: fixed, value: "{tmp_path}"}}
        """, "sdk.yaml")
    killer.join(timeout=5)
    assert (tmp_path / "killed").exists(), "rank 1 was to be killed at step 3"
    [trial] = store.get_trials(name, measurements=True)
    assert trial.state == TrialState.COMPLETED, trial.error
    # Steps 1-4 once each: the retry resumed every rank from step 2's checkpoint.
    assert [m.step for m in trial.measurements] == [1, 2, 3, 4]
    assert [m.metrics["restored_from"] for m in trial.measurements] == [0.0, 0.0, 2.0, 2.0]
    assert all(m.metrics["ranks_agree"] == 1.0 and m.metrics["world"] == 2.0
               and m.metrics["ranks_in_folder"] == 1.0 for m in trial.measurements)
    # No preemption watcher on the driver's own node: it is never drained.
    assert all(m.metrics["preemption_watcher"] == 0.0 for m in trial.measurements)
    # Both ranks restored the same weight: the all-reduced sum is twice rank 0's.
    assert [m.metrics["reduced"] for m in trial.measurements] == [2.0, 4.0, 6.0, 8.0]
    assert [e.kind for e in store.get_events(name) if e.kind != EventKind.CHECKPOINT] == [
        "retried"]
    # Where each step's checkpoint is kept, for a resume (step 3's first try saved none).
    assert [(e.step, e.data["attempt"]) for e in store.get_events(
        name, kind=EventKind.CHECKPOINT)] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    assert_nothing_left(ray_local)
