"""The tracker contract (searchsvc.testing.tracker_contract) against the real libraries:
MLflow on a SQLite store, TensorBoard's event files read by TensorBoard itself, and W&B in
offline mode, its run files read back."""

from __future__ import annotations

import time
from pathlib import Path

from searchsvc.testing.tracker_contract import METRIC, Logged, TrackerContract
from searchsvc.tracking import MlflowTracker, TensorBoardTracker, Tracker, WandbTracker


class TestMlflow(TrackerContract):
    def open_tracker(self, folder: Path) -> Tracker:
        return MlflowTracker(self._uri(folder), "contract", folder / "artifacts")

    def logged_steps(self, folder: Path) -> Logged:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self._uri(folder))
        experiment = client.get_experiment_by_name("contract")
        assert experiment is not None
        found: Logged = {}
        for run in client.search_runs([experiment.experiment_id],
                                      "tags.`searchsvc.kind` = 'trial'"):
            history = sorted(client.get_metric_history(run.info.run_id, METRIC),
                             key=lambda m: (m.step, m.timestamp))
            found.setdefault(int(run.data.tags["searchsvc.trial_number"]), []).extend(
                (m.step, m.value) for m in history)
        return found

    @staticmethod
    def _uri(folder: Path) -> str:
        return f"sqlite:///{folder / 'mlflow.db'}"


class TestTensorBoard(TrackerContract):
    def open_tracker(self, folder: Path) -> Tracker:
        return TensorBoardTracker(folder / "tb")

    def logged_steps(self, folder: Path) -> Logged:
        from tensorboard.backend.event_processing import plugin_event_multiplexer
        from tensorboard.util import tensor_util

        mux = plugin_event_multiplexer.EventMultiplexer()
        mux.AddRunsFromDirectory(str(folder / "tb"))
        mux.Reload()
        found: Logged = {}
        for run in mux.Runs():
            if run.startswith("trial_"):
                found[int(run.removeprefix("trial_"))] = [
                    (e.step, float(tensor_util.make_ndarray(e.tensor_proto)))
                    for e in mux.Tensors(run, METRIC)]
        return found


class TestWandb(TrackerContract):
    def open_tracker(self, folder: Path) -> Tracker:
        return WandbTracker(folder / "wandb", project="contract", group="contract")

    def logged_steps(self, folder: Path) -> Logged:
        from searchsvc.tracking.wandb_records import run_files

        # W&B's writer flushes a run's file shortly after its finish() returns.
        deadline = time.monotonic() + 60
        runs = run_files(folder / "wandb")
        while any(r.exit_code is None for r in runs):
            assert time.monotonic() < deadline, [r.path for r in runs if r.exit_code is None]
            time.sleep(0.2)
            runs = run_files(folder / "wandb")
        found: Logged = {}
        for run in sorted(runs, key=lambda r: r.steps[:1]):
            meta = run.config.get("searchsvc") or {}
            if meta.get("kind") == "trial":
                found.setdefault(meta["trial_number"], []).extend(
                    (int(row["_step"]), row[METRIC]) for row in run.history if METRIC in row)
        return found
