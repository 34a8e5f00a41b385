"""A real ``searchsvc serve`` process on a free loopback port, for the tests and benchmarks that
need one. Run from a source checkout: the server's folder and import path are :data:`ROOT`, whose
``objectives`` package the study templates name."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from searchsvc.driver.head import processes_naming
from searchsvc.store import SqlStore
from searchsvc.usecases import stop_ray_head

ROOT = Path(__file__).resolve().parents[2]  # the checkout searchsvc is installed from (-e)

SPEC = """
study: {name}
objective: objectives.synthetic:playbook
metric: val_loss
mode: min
searcher: quasi_random
budget: {{trials: {trials}, max_concurrent: 2, max_steps: 6}}
noise: off  # the service's tests count the search's trials; repeats have their own tests
parameters:
  depth: {{role: scientific, values: [1, 2]}}
  learning_rate: {{role: nuisance, low: 1.0e-4, high: 1.0e-1, scale: log}}
  weight_decay: {{role: nuisance, low: 1.0e-6, high: 1.0e-2, scale: log}}
"""

# A study whose trials take time (4 steps of ``step_s`` seconds, one CPU each, two at a
# time): the sharing tests and benchmarks/fair_share.py.
TIMED_STUDY = """
study: {name}
objective: objectives.synthetic:noisy
metric: loss
mode: min
searcher: random
budget: {{trials: {trials}, max_concurrent: 2, max_steps: 4}}
noise: off
parameters:
  variant: {{role: nuisance, values: [a, c]}}
  x: {{role: nuisance, low: 0.0, high: 1.0}}
  sleep_s: {{role: fixed, value: {step_s}}}
"""

# TIMED_STUDY whose trials save their step as a checkpoint at every report (so they can pause
# for a study of higher priority).
CHECKPOINTED_STUDY = TIMED_STUDY.replace(
    "  sleep_s:", "  checkpoint: {{role: fixed, value: true}}\n  sleep_s:") + (
    "checkpoints: {{keep_best: 1}}\n")

# TIMED_STUDY whose trials hold one GPU each (quotas).
GPU_STUDY = TIMED_STUDY + "resources: {{cpu: 1, gpu: 1}}\n"

# A keras_tuner study: two "module:callable" fields, the objective and backend_options.data.
KERAS_STUDY = """
study: keras-{n}
objective: {objective}
backend: keras_tuner
backend_options: {{data: "{data}"}}
metric: val_loss
mode: min
searcher: random
budget: {{trials: 2, max_steps: 1}}
parameters:
  units: {{role: nuisance, type: int, low: 4, high: 8}}
"""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    """`searchsvc serve` in its own process group, and a tiny HTTP client for it. By default
    its drivers run at the caller's priority (``--driver-niceness 0``): beside a test suite's
    other processes, which nothing lowers, niced drivers and their Ray get a tenth of a core
    and time out starting."""

    def __init__(self, tmp: Path, storage: str | None = None, user: str = "ada", *,
                 args: Sequence[str] = ("--num-cpus", "2", "--driver-niceness", "0"),
                 env: Mapping[str, str] = {},
                 pythonpath: Sequence[Path] = ()):
        self.url_db = storage or f"sqlite:///{tmp / 'service.db'}"
        self.home, self.port = tmp / "home", free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / "service.log"  # read it when a test fails
        self.store = SqlStore(self.url_db)
        self.token = self.store.create_token(user)
        self.args, self.pythonpath = list(args), [ROOT, *pythonpath]
        self.env = {**os.environ, **env, "SEARCHSVC_HOME": str(self.home),
                    "PYTHONPATH": os.pathsep.join(map(str, self.pythonpath))}
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "searchsvc.cli", "serve", "--port", str(self.port),
             "--storage", self.url_db, *self.args], cwd=ROOT, env=self.env,
            stdout=self.log.open("a"), stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                self.call("GET", "/health")
                return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError("the service did not start")

    def call(self, method: str, path: str, body: str | bytes | None = None,
             token: str | None = None) -> dict:
        """The JSON answer; urllib.error.HTTPError for a 4xx/5xx (``.code``, ``.read()``)."""
        request = urllib.request.Request(
            self.url + path, method=method,
            data=body.encode() if isinstance(body, str) else body,
            headers={"Authorization": f"Bearer {token or self.token}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def cli(self, *args: str, token: str | None = None, cwd: Path = ROOT,
            timeout: float = 300) -> subprocess.CompletedProcess:
        """``searchsvc ARGS`` against this server, as a user on this machine would run it."""
        env = {**self.env, "SEARCHSVC_SERVER": self.url, "SEARCHSVC_TOKEN": token or self.token}
        return subprocess.run([sys.executable, "-m", "searchsvc.cli", *args], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)

    def wait_for(self, name: str, state: str, timeout: float = 240,
                 token: str | None = None) -> dict:
        """Study ``name`` once it is in ``state`` (read with ``token``, default the
        service's user's)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            study = self.call("GET", f"/studies/{name}", token=token)
            if study["state"] == state:
                return study
            time.sleep(0.5)
        raise AssertionError(f"{name} did not become {state}: {study}")

    def wait_for_completed_trials(self, name: str, count: int, timeout: float = 300) -> None:
        deadline = time.time() + timeout
        while self.call("GET", f"/studies/{name}")["trial_counts"].get("completed", 0) < count:
            assert time.time() < deadline, f"{name} did not complete {count} trials in time"
            time.sleep(0.3)

    def kill(self) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()


@contextlib.contextmanager
def running_service(tmp: Path, storage: str | None = None, user: str = "ada",
                    before_start: Callable[[Service], Any] | None = None,
                    **options: Any) -> Iterator[Service]:
    """A started service on ``storage`` (default: SQLite in ``tmp``) with a token for ``user``
    (``options``: see :class:`Service`); ``before_start`` is called with it first, for what must
    be in the store before the service looks (a study written as the runner writes it is
    "running" meanwhile, and a started service would drive it). It and every study driver it
    launched are killed
    afterwards, with their Ray: those the store names and those still exiting after their
    study ended (found by the database in their command line), and the Ray the service
    started for its studies."""
    s = Service(tmp, storage, user, **options)
    try:
        if before_start is not None:
            before_start(s)
        s.start()
        yield s
    finally:
        s.stop()
        pids = {int(study.driver["pid"]) for study in s.store.list_studies()
                if (study.driver or {}).get("pid")}
        pids.update(process.pid for process in processes_naming(s.url_db))
        for pid in pids:  # no driver outlives the test; each leads its process group
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        stop_ray_head(s.home)
        s.store.close()
