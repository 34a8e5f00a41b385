"""A tracking server that answers nothing never holds a study up: a real MLflow server on
loopback behind a proxy that holds every request until the test lets it through. The study's
trials all run and are all stored while the tracking server has answered none of the tracker's
requests (so Ray Tune's bookkeeping never waited for it); once it answers, every trial and
every step reaches MLflow, nothing lost."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from searchsvc.core import TrialState
from searchsvc.store import SqlStore
from searchsvc.testing.served import free_port

pytestmark = pytest.mark.slow
MLFLOW = str(Path(sys.executable).with_name("mlflow"))
TRIALS, STEPS = 3, 4


class HoldingProxy(http.server.ThreadingHTTPServer):
    """Forwards each request to ``target`` once ``release`` is set; counts what it held."""

    daemon_threads = True

    def __init__(self, target: str):
        super().__init__(("127.0.0.1", free_port()), _Forward)
        self.target, self.release = target, threading.Event()
        self.held = self.answered = 0
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(http.server.BaseHTTPRequestHandler):
    server: HoldingProxy

    def _forward(self) -> None:
        with self.server.lock:
            self.server.held += 1
        self.server.release.wait(timeout=300)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
        request = urllib.request.Request(self.server.target + self.path, data=body,
                                         method=self.command, headers=dict(self.headers))
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, headers, data = answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            status, headers, data = error.code, error.headers, error.read()
        self.send_response(status)
        self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        with self.server.lock:
            self.server.answered += 1

    do_GET = do_POST = do_PATCH = do_DELETE = _forward

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real MLflow tracking server on loopback (SQLite store), its URL."""
    port = free_port()
    server = subprocess.Popen(
        [MLFLOW, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
         "--default-artifact-root", (tmp_path / "artifacts").as_uri()],
        # Without MLflow's job runner: its queue consumers (processes of their own, polling)
        # serve features the tracker never uses.
        env={**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=5):
                    break
            except OSError:
                assert server.poll() is None, "the MLflow server exited"
                assert time.monotonic() < deadline, "the MLflow server did not start"
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(server.pid, 9)
        server.wait()


def test_a_tracking_server_that_answers_nothing_holds_no_trial_up_and_loses_nothing(
        mlflow_server: str, tmp_path: Path) -> None:
    proxy = HoldingProxy(mlflow_server)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    (tmp_path / "quick.py").write_text(textwrap.dedent(f"""\
        from searchsvc import sdk

        def train(config):
            for step in range(1, {STEPS} + 1):
                sdk.report({{"loss": config["x"] / step}})
        """))
    (tmp_path / "study.yaml").write_text(textwrap.dedent(f"""\
        study: slow-tracking
        objective: quick:train
        metric: loss
        mode: min
        searcher: random
        seed: 0
        budget: {{trials: {TRIALS}, max_concurrent: 2, max_steps: {STEPS}}}
        noise: off
        parameters:
          x: {{role: nuisance, low: 0.1, high: 1.0}}
        tracking:
          mlflow: {{tracking_uri: "{proxy.url}", experiment: slow}}
        """))
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    # Held requests must not time out in the client: the tracker would turn itself off.
    env = {**os.environ, "SEARCHSVC_HOME": str(tmp_path / "home"),
           "MLFLOW_HTTP_REQUEST_TIMEOUT": "600"}
    driver = subprocess.Popen(
        [sys.executable, "-m", "searchsvc.cli", "run", "study.yaml", "--storage", db,
         "--num-cpus", "2", "--no-preflight"], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    store = SqlStore(db)
    try:
        deadline = time.monotonic() + 240
        while True:  # every trial run and stored while the server has answered nothing
            assert driver.poll() is None, driver.communicate()[0]
            assert time.monotonic() < deadline, "the trials did not all finish in time"
            try:
                trials = store.get_trials("slow-tracking", measurements=True)
            except Exception:  # the study is not created yet
                trials = []
            if len(trials) == TRIALS and all(t.state == TrialState.COMPLETED for t in trials):
                break
            time.sleep(0.2)
        assert proxy.answered == 0 and proxy.held >= 1
        assert all([m.step for m in t.measurements] == list(range(1, STEPS + 1))
                   for t in trials)
    finally:
        proxy.release.set()
    output, _ = driver.communicate(timeout=300)
    assert driver.returncode == 0, output
    assert "warning: tracking" not in output, output  # the tracker stayed on
    proxy.shutdown()
    # Everything reached MLflow once the server answered.
    client = MlflowClient(mlflow_server)
    experiment = client.get_experiment_by_name("slow")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id],
                              "tags.`searchsvc.kind` = 'trial'")
    assert sorted(int(r.data.tags["searchsvc.trial_number"]) for r in runs) == list(
        range(TRIALS))
    for run in runs:
        trial = trials[int(run.data.tags["searchsvc.trial_number"])]
        history = sorted((m.step, m.value) for m in client.get_metric_history(
            run.info.run_id, "loss"))
        assert history == [(m.step, pytest.approx(m.metrics["loss"]))
                           for m in trial.measurements]
        assert run.info.status == "FINISHED"
